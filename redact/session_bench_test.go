package redact_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/agentsession/session/redact"
)

// benchSession builds a realistic coding session of about 1.5 MB, one
// JSON entry a line, without secrets: assistant turns with thinking and
// tool calls, tool results holding source code full of the words the
// rules look for (token, key, password, secret, auth), build and test
// output, git logs, a lockfile with integrity hashes, minified
// JavaScript and an image. It is made from a fixed seed, so that the
// figures before and after a change compare.
func benchSession() [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	hex := func(n int) string {
		const digits = "0123456789abcdef"
		b := make([]byte, n)
		for i := range b {
			b[i] = digits[rng.IntN(16)]
		}
		return string(b)
	}
	b64 := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	var lines [][]byte
	id := 0
	add := func(role string, content any) {
		id++
		e := map[string]any{
			"type": "message", "id": fmt.Sprintf("%08x", id), "parentId": fmt.Sprintf("%08x", id-1),
			"timestamp": "2025-12-08T22:56:02.144Z",
			"message":   map[string]any{"role": role, "content": content, "timestamp": 1765234554205 + id},
		}
		b, err := json.Marshal(e)
		if err != nil {
			panic(err)
		}
		lines = append(lines, b)
	}
	text := func(s string) []map[string]any { return []map[string]any{{"type": "text", "text": s}} }
	code := `package auth

import (
	"context"
	"errors"
	"net/http"
)

// Client calls the API with a token it refreshes before it expires.
type Client struct {
	baseURL  string
	token    string
	apiKey   string
	password string
	secret   []byte
}

var ErrNoToken = errors.New("auth: no token")

func (c *Client) authHeader() string { return "Bearer " + c.token }

func (c *Client) Do(ctx context.Context, req *http.Request) (*http.Response, error) {
	if c.token == "" {
		return nil, ErrNoToken
	}
	req.Header.Set("Authorization", c.authHeader())
	req.Header.Set("X-API-Key", c.apiKey)
	key := cacheKey(req.URL.Path, req.Method)
	if v, ok := c.cache.Get(key); ok {
		return v, nil
	}
	token, err := c.refresh(ctx, c.password)
	if err != nil {
		return nil, fmt.Errorf("refresh token: %w", err)
	}
	c.token = token.AccessToken
	accessKey := os.Getenv("ACCESS_KEY_ID")
	secretKey := os.Getenv("SECRET_ACCESS_KEY")
	return c.http.Do(req.WithContext(ctx))
}
`
	tsCode := `export async function login(username: string, password: string): Promise<Session> {
  const apiKey = await getApiKeyForModel(model);
  const res = await fetch(` + "`${baseUrl}/auth/token`" + `, { method: "POST", headers: { "Content-Type": "application/json", Authorization: ` + "`Bearer ${apiKey}`" + ` }, body: JSON.stringify({ username, password }) });
  if (!res.ok) throw new AuthError("login failed", { status: res.status });
  const { access_token: accessToken, refresh_token: refreshToken, expires_in: expiresIn } = await res.json();
  return { accessToken, refreshToken, expiresAt: Date.now() + expiresIn * 1000, keyId: session.keyId };
}
`
	for turn := range 60 {
		add("user", text(fmt.Sprintf("Turn %d: the token refresh fails when the key rotates; please check auth.go and the password reset flow, then run the tests.", turn)))
		add("assistant", []map[string]any{
			{"type": "thinking", "thinking": "The user wants the token refresh fixed. I should read auth.go, find where the access key and the secret are read, and check how the password is passed to refresh.", "thinkingSignature": b64(300)},
			{"type": "text", "text": "Let me read the client and run the tests."},
			{"type": "toolCall", "id": "toolu_01" + b64(18)[:22], "name": "read", "arguments": map[string]any{"path": "internal/auth/client.go"}},
		})
		add("toolResult", text(strings.Repeat(code, 2)))
		add("toolResult", text(tsCode))
		var log strings.Builder
		for range 12 {
			fmt.Fprintf(&log, "commit %s\nAuthor: Dev <dev@example.com>\nDate:   Mon Dec 8 22:56:02 2025 +0000\n\n    auth: refresh the token before it expires (key %s)\n\n", hex(40), hex(7))
		}
		add("toolResult", text(log.String()))
		var test strings.Builder
		for i := range 30 {
			fmt.Fprintf(&test, "=== RUN   TestTokenRefresh/case_%d\n--- PASS: TestTokenRefresh/case_%d (0.%02ds)\n", i, i, i)
		}
		test.WriteString("PASS\nok  \texample.com/app/internal/auth\t0.412s\tcoverage: 81.2% of statements\n")
		add("toolResult", text(test.String()))
		if turn%6 == 0 {
			var lock strings.Builder
			lock.WriteString("{\n  \"name\": \"app\",\n  \"lockfileVersion\": 3,\n  \"packages\": {\n")
			for i := range 40 {
				fmt.Fprintf(&lock, "    \"node_modules/pkg-%d\": {\n      \"version\": \"1.%d.0\",\n      \"resolved\": \"https://registry.npmjs.org/pkg-%d/-/pkg-%d-1.%d.0.tgz\",\n      \"integrity\": \"sha512-%s\"\n    },\n", i, i, i, i, i, b64(64))
			}
			lock.WriteString("  }\n}\n")
			add("toolResult", text(lock.String()))
			var js strings.Builder
			for i := range 400 {
				fmt.Fprintf(&js, "function a%d(t,e){var n=t.key||e.token;return n?{k:n,h:\"%s\"}:null}", i, hex(16))
			}
			add("toolResult", text(js.String()))
			add("user", []map[string]any{
				{"type": "text", "text": "here is the screenshot"},
				{"type": "image", "data": b64(30 << 10), "mimeType": "image/png"},
			})
		}
	}
	return lines
}

// benchLines is benchSession, made once when a benchmark needs it.
var benchLines = sync.OnceValue(benchSession)

// BenchmarkSession redacts a realistic session of about 1.5 MB line by
// line (Redactor.JSON), the cost of an export --redact or of writing it
// through session.Redact.
func BenchmarkSession(b *testing.B) {
	r := redact.New(&redact.Options{Home: []string{"/home/bench"}})
	lines := benchLines()
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			if _, rep, err := r.JSON(l); err != nil || rep.Total() != 0 {
				b.Fatal(err, rep.Counts)
			}
		}
	}
}
