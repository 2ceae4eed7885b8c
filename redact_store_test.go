package session_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/redact"
	"github.com/agentsession/session/storetest"
)

// testSecret is a made-up secret that testRedactor replaces, so that the
// tests do not depend on the default rules of package redact.
const testSecret = "hunter2-XYZZY-7f3a"

func testRedactor() *redact.Redactor {
	return redact.New(&redact.Options{Rules: []redact.Rule{}, Home: []string{}, Custom: func(s string) (string, int) {
		n := strings.Count(s, testSecret)
		return strings.ReplaceAll(s, testSecret, "[REDACTED]"), n
	}})
}

func TestRedactStoreConformance(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) session.Store {
			return session.Redact(session.NewMemoryStore(), testRedactor())
		})
	})
	t.Run("file", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) session.Store {
			return session.Redact(openFS(t, filepath.Join(t.TempDir(), "sessions"), nil), testRedactor())
		})
	})
}

// grepTree fails the test for every file under root that holds needle.
func grepTree(t *testing.T, root string, needles ...string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range needles {
			if bytes.Contains(b, []byte(n)) {
				t.Errorf("%s holds %q", path, n)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.NotZero(t, files, "no file under %s", root)
}

// writeSecrets writes a session with the secret in every place a
// message can hold it, and returns its id.
func writeSecrets(t *testing.T, store session.Store, secret string) string {
	t.Helper()
	ctx := context.Background()
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/work", Title: "deploy with " + secret})
	require.NoError(t, err)
	args, _ := json.Marshal(map[string]any{"command": "curl -H 'Authorization: Bearer " + secret + "'", "env": []string{"TOKEN=" + secret}})
	turn := []*session.Message{
		session.UserText("my key is " + secret + ", use it"),
		session.Assistant(session.Thinking("the user gave "+secret, ""), session.ToolCall("call-1", "bash", args)),
		session.ToolResult("call-1", "bash", "export TOKEN="+secret+"\nok"),
		session.AssistantText("done"),
	}
	require.NoError(t, s.SaveTurn(ctx, turn, nil))
	_, err = s.Append(ctx, session.BashExecution("echo "+secret, secret, 0))
	require.NoError(t, err)
	require.NoError(t, s.SetTitle(ctx, "title "+secret))
	require.NoError(t, s.UpdateState(ctx, map[string]any{"cred": secret}))
	require.NoError(t, s.Close())
	return s.ID()
}

func TestRedactStoreNoSecretReachesDisk(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	fs1, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	rs := session.Redact(fs1, testRedactor())
	id := writeSecrets(t, rs, testSecret)
	rep := rs.Report()
	assert.GreaterOrEqual(t, rep.Counts["custom"], 9, "report %v", rep.Counts)
	require.NoError(t, fs1.Close())

	grepTree(t, filepath.Dir(root), testSecret) // the sessions, and the blobs beside them

	// Reopened, through the middleware and without it, the session works,
	// with the secret replaced where it was.
	fs2 := openFS(t, root, nil)
	for _, store := range []session.Store{fs2, session.Redact(fs2, testRedactor())} {
		s, err := session.Open(ctx, store, id)
		require.NoError(t, err)
		c := s.Context()
		require.Len(t, c.Messages, 5)
		assert.Equal(t, "my key is [REDACTED], use it", c.Messages[0].Text())
		call := c.Messages[1].Content[1]
		assert.Equal(t, session.BlockToolCall, call.Type)
		assert.Contains(t, string(call.Arguments), "Bearer [REDACTED]")
		assert.Equal(t, "export TOKEN=[REDACTED]\nok", c.Messages[2].Text())
		assert.Equal(t, "title [REDACTED]", s.Title())
		st, err := s.State(ctx)
		require.NoError(t, err)
		assert.JSONEq(t, `"[REDACTED]"`, string(st["cred"]))
		require.NoError(t, s.Close())
	}
	log, err := fs2.Load(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "deploy with [REDACTED]", log.Header.Title)
}

func TestRedactStoreKeepsCleanEntriesAndImages(t *testing.T) {
	ctx := context.Background()
	mem := session.NewMemoryStore()
	rs := session.Redact(mem, testRedactor())
	s, err := session.Create(ctx, rs, &session.CreateOptions{ID: "s1", Cwd: "/home/me/" + testSecret})
	require.NoError(t, err)
	clean, err := s.Append(ctx, session.UserText("nothing to hide, \"quoted\" é"))
	require.NoError(t, err)
	// Image data that happens to hold the secret is binary: left alone.
	img := session.ImageBase64("image/png", testSecret+"AAAA")
	withImage, err := s.Append(ctx, session.User(session.Text("see "+testSecret), img))
	require.NoError(t, err)

	log, err := mem.Load(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, log.Entries, 2)
	assert.Equal(t, clean.JSON(), log.Entries[0].JSON(), "an entry without secrets is stored byte for byte")
	m, err := log.Entries[1].Message()
	require.NoError(t, err)
	assert.Equal(t, "see [REDACTED]", m.Content[0].Text)
	assert.Equal(t, testSecret+"AAAA", m.Content[1].Data)
	assert.Equal(t, withImage.ID(), log.Entries[1].ID())
	assert.Equal(t, withImage.Timestamp(), log.Entries[1].Timestamp())
	assert.Equal(t, "/home/me/[REDACTED]", log.Header.Cwd, "the working directory keeps its home, not its secrets")
	assert.Equal(t, 2, rs.Report().Counts["custom"])

	// Shared state is redacted on its way in.
	require.NoError(t, rs.UpdateState(ctx, session.ScopeUser, "u1", session.State{"db": json.RawMessage(`{"pass":"` + testSecret + `"}`)}))
	st, err := mem.LoadState(ctx, session.ScopeUser, "u1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"pass":"[REDACTED]"}`, string(st["db"]))
	assert.Equal(t, 3, rs.Report().Counts["custom"])
}

// TestRedactStoreDefaultRules runs the default rules of package redact:
// an Anthropic key never reaches the store.
func TestRedactStoreDefaultRules(t *testing.T) {
	key := "sk-ant-api03-" + strings.Repeat("aB3_x-Z9", 10)
	root := filepath.Join(t.TempDir(), "sessions")
	fs1, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	rs := session.Redact(fs1, nil)
	writeSecrets(t, rs, key)
	require.NoError(t, fs1.Close())
	grepTree(t, filepath.Dir(root), key)
	assert.Positive(t, rs.Report().Total())
}

// A secret that only its member's name gives away (a tool call's
// {"password": ...}, a custom entry's {"apiKey": ...}) is redacted by the
// middleware as by redact's JSON: the key judges the value.
func TestRedactStoreKeyedMembers(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	fs1, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	rs := session.Redact(fs1, redact.New(&redact.Options{Home: []string{}}))
	s, err := session.Create(ctx, rs, nil)
	require.NoError(t, err)
	args, _ := json.Marshal(map[string]any{"user": "ops", "password": "hunter2secretpw"})
	require.NoError(t, s.SaveTurn(ctx, []*session.Message{
		session.UserText("log in"),
		session.Assistant(session.ToolCall("call-1", "login", args)),
		session.ToolResult("call-1", "login", "ok"),
	}, nil))
	_, err = s.AppendCustom(ctx, "app.config", map[string]any{"apiKey": "abcd1234efgh5678ijkl", "max_tokens": "4096"})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, fs1.Close())
	grepTree(t, filepath.Dir(root), "hunter2secretpw", "abcd1234efgh5678ijkl")
	assert.Equal(t, 2, rs.Report().Total(), "%v", rs.Report().Counts)

	// What is no secret stays: the user name and max_tokens.
	fs2 := openFS(t, root, nil)
	again, err := session.Open(ctx, fs2, s.ID())
	require.NoError(t, err)
	defer again.Close()
	m := again.Context().Messages[1]
	assert.Contains(t, string(m.Content[0].Arguments), `"user":"ops"`)
}

// reviewStoreCases are what a hostile review of the redaction saw reach
// disk through session.Redact(FileStore): documents and images whose
// media type hides their text, tool results in formats no rule read,
// markers glued to a secret, and the header's metadata. Each writes a
// session; none of the needles may be found under the store's root (its
// files and its index). Made-up secrets.
func reviewStoreCases() []struct {
	name    string
	create  *session.CreateOptions
	build   func(ctx context.Context, s *session.Session) error
	needles []string
} {
	const pw = "Tr0ub4dor9zQ"
	const ghp = "ghp_Zq8fVbH2kLmN4pR7sT9wYz1aB3cD5eFgH6iJ"
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	env := "DB_PASSWORD=" + pw + "\n"
	user := func(blocks ...session.Block) func(ctx context.Context, s *session.Session) error {
		return func(ctx context.Context, s *session.Session) error {
			return s.SaveTurn(ctx, []*session.Message{session.User(blocks...), session.AssistantText("ok")}, nil)
		}
	}
	tool := func(command, output string) func(ctx context.Context, s *session.Session) error {
		return func(ctx context.Context, s *session.Session) error {
			args, _ := json.Marshal(map[string]string{"command": command})
			return s.SaveTurn(ctx, []*session.Message{
				session.UserText("do it"),
				session.Assistant(session.ToolCall("toolu_01", "bash", args)),
				session.ToolResult("toolu_01", "bash", output),
				session.AssistantText("done"),
			}, nil)
		}
	}
	latin1 := string([]byte("# configuraci\xf3n\n" + env))
	key := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxKLxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo9z+40RQzuVaE8AkAFmxZzow3x\n-----END RSA PRIVATE KEY-----\n"
	svg := `<svg xmlns="http://www.w3.org/2000/svg"><!-- api_key=` + pw + ` --><text>GITHUB_TOKEN=` + ghp + `</text></svg>`
	return []struct {
		name    string
		create  *session.CreateOptions
		build   func(ctx context.Context, s *session.Session) error
		needles []string
	}{
		{name: "document octet-stream", build: user(session.Text("my .env"), session.Document("application/octet-stream", []byte(env))), needles: []string{b64(env)}},
		{name: "document pdf that is text", build: user(session.Document("application/pdf", []byte(env))), needles: []string{b64(env)}},
		{name: "document ansi", build: user(session.Document("text/plain", []byte("\x1b[32mOK\x1b[0m connecting with "+env))), needles: []string{b64("\x1b[32mOK\x1b[0m connecting with " + env)}},
		{name: "document latin-1", build: user(session.Document("text/plain; charset=iso-8859-1", []byte(latin1))), needles: []string{b64(latin1)}},
		{name: "document base64 of base64", build: user(session.Document("text/plain", []byte(b64(env)))), needles: []string{b64(b64(env))}},
		{name: "image svg", build: user(session.Image("image/svg+xml", []byte(svg))), needles: []string{b64(svg)}},
		{name: "image of text", build: user(session.ImageBase64("image/png", "GITHUB_TOKEN="+ghp)), needles: []string{ghp}},
		{name: "data uri octet-stream", build: user(session.Text("data:application/octet-stream;base64," + b64("password="+pw))), needles: []string{b64("password=" + pw)}},
		{name: "secretsmanager", build: tool("aws secretsmanager get-secret-value --secret-id prod/db",
			"{\n    \"Name\": \"prod/db\",\n    \"SecretString\": \"{\\\"username\\\":\\\"admin\\\",\\\"password\\\":\\\""+pw+"\\\"}\"\n}"), needles: []string{pw}},
		{name: "kubeconfig", build: tool("cat ~/.kube/config", "users:\n- name: admin\n  user:\n    client-key-data: "+b64(key)+"\n"), needles: []string{b64(key)[:60]}},
		{name: "k8s secret", build: tool("kubectl get secret db -o yaml", "apiVersion: v1\ndata:\n  DATABASE_URL: "+b64("postgres://app:"+pw+"@db:5432/app")+"\n  db-password: "+b64(pw)+"\nkind: Secret\n"),
			needles: []string{b64(pw), b64("postgres://app:" + pw + "@db:5432/app")}},
		{name: "ssm", build: tool("aws ssm get-parameter --name /prod/db/conn --with-decryption", `{"Parameter": {"Name": "/prod/db/conn", "Type": "SecureString", "Value": "`+pw+`"}}`), needles: []string{pw}},
		{name: "k8s env", build: tool("cat deploy.yaml", "        env:\n        - name: DB_PASSWORD\n          value: "+pw+"\n"), needles: []string{pw}},
		{name: "maven", build: tool("cat ~/.m2/settings.xml", "<server>\n  <id>nexus</id>\n  <password>"+pw+"</password>\n</server>\n"), needles: []string{pw}},
		{name: "putty", build: tool("cat k.ppk", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 1\nAAAAC3NzaC1lZDI1NTE5\nPrivate-Lines: 1\nAAAAIFq3vX8nR2kL9mT4wY1cZ6bH0jD5sA7eG3uN8pQ2rK4f\nPrivate-MAC: 7c2a7e9d1b3f5a6c8e0d2b4f6a8c0e2d4b6f8a0c\n"),
			needles: []string{"AAAAIFq3vX8nR2kL9mT4wY1c"}},
		{name: "oracle", build: tool("grep url app.properties", "spring.datasource.url=jdbc:oracle:thin:scott/"+pw+"@dbhost:1521:ORCL\n"), needles: []string{pw}},
		{name: "marker glued", build: tool("cat req.log", "Authorization: Bearer [REDACTED:x]"+pw+"\nSESSION_KEY=[REDACTED:x]3f9a2c7e8b1d4f6a0c5e9b2d7f1a3c8e\n"), needles: []string{pw, "3f9a2c7e8b1d4f6a0c5e9b2d7f1a3c8e"}},
		{name: "header metadata", create: &session.CreateOptions{Cwd: "/srv/app", ProjectID: "proj", Metadata: map[string]string{"db_password": pw, "note": "token " + ghp}},
			needles: []string{pw, ghp}},
		{name: "header metadata key", create: &session.CreateOptions{Cwd: "/srv/app", Metadata: map[string]string{ghp: "x"}}, needles: []string{ghp}},
		{name: "header cwd", create: &session.CreateOptions{Cwd: "/srv/" + ghp}, needles: []string{ghp}},
	}
}

func TestRedactStoreReviewLeaks(t *testing.T) {
	for _, c := range reviewStoreCases() {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			root := filepath.Join(t.TempDir(), "sessions")
			fs1, err := session.OpenFileStore(root, nil)
			require.NoError(t, err)
			store := session.Redact(fs1, nil)
			opts := c.create
			if opts == nil {
				opts = &session.CreateOptions{Cwd: "/srv/app"}
			}
			s, err := session.Create(ctx, store, opts)
			require.NoError(t, err)
			if c.build != nil {
				require.NoError(t, c.build(ctx, s))
			} else {
				require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText("hi"), session.AssistantText("ok")}, nil))
			}
			require.NoError(t, s.Close())
			_, err = fs1.List(ctx, session.ListOptions{}) // writes the index
			require.NoError(t, err)
			require.NoError(t, fs1.Close())
			grepTree(t, filepath.Dir(root), c.needles...)
			// The session opens again, whole.
			fs2 := openFS(t, root, nil)
			again, err := session.Open(ctx, fs2, s.ID())
			require.NoError(t, err)
			require.NoError(t, again.Close())
		})
	}
}

// The header's metadata is redacted on the store path too, but for home
// directories (listings filter by the working directory, and by
// metadata); an ordinary value stays as it was.
func TestRedactStoreHeaderMeta(t *testing.T) {
	ctx := context.Background()
	mem := session.NewMemoryStore()
	store := session.Redact(mem, nil)
	_, err := session.Create(ctx, store, &session.CreateOptions{ID: "s1", Cwd: "/home/ada/app", ProjectID: "proj-1", User: "ada",
		Metadata: map[string]string{"db_password": "Tr0ub4dor9zQ", "dir": "/home/ada/app", "team": "core"}})
	require.NoError(t, err)
	log, err := mem.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, "/home/ada/app", log.Header.Cwd)
	m := session.HeaderMeta(log.Header)
	assert.Equal(t, "proj-1", m.ProjectID)
	assert.Equal(t, "ada", m.User)
	assert.Equal(t, map[string]string{"db_password": "[REDACTED:password]", "dir": "/home/ada/app", "team": "core"}, m.Metadata)
	list, err := store.List(ctx, session.ListOptions{Cwd: "/home/ada/app"})
	require.NoError(t, err)
	assert.Len(t, list.Sessions, 1)
}

// Every member of an object is redacted, duplicates included: a second
// "data" does not spare the first.
func TestRedactEntryDuplicateMembers(t *testing.T) {
	r := redact.New(&redact.Options{Home: []string{}})
	for _, line := range []string{
		`{"type":"custom","id":"e1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","customType":"x","data":{"data":"GITHUB_TOKEN=ghp_Zq8fVbH2kLmN4pR7sT9wYz1aB3cD5eFgH6iJ","data":"ok"}}`,
		`{"type":"message","id":"e2","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"hi","data":"GITHUB_TOKEN=ghp_Zq8fVbH2kLmN4pR7sT9wYz1aB3cD5eFgH6iJ","data":""}],"timestamp":1}}`,
		`{"type":"custom","id":"e3","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","customType":"x","data":{"text":"GITHUB_TOKEN=ghp_Zq8fVbH2kLmN4pR7sT9wYz1aB3cD5eFgH6iJ","text":"ok"}}`,
		`{"type":"custom","id":"e4","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","customType":"x","data":{"type":"image","data":"GITHUB_TOKEN=ghp_Zq8fVbH2kLmN4pR7sT9wYz1aB3cD5eFgH6iJ"}}`,
	} {
		e, err := session.ParseEntry([]byte(line))
		require.NoError(t, err)
		out, rep, err := session.RedactEntry(r, e)
		require.NoError(t, err)
		assert.NotContains(t, string(out.JSON()), "Zq8fVbH2kLmN4pR7sT9w", "%s", line)
		assert.Positive(t, rep.Total())
	}
}
