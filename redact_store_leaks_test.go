package session_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/redact"
)

// storeLeaks are what issue 38 saw reach disk through session.Redact:
// tool calls with passwords as arguments, credential files an agent
// prints, Authorization of other schemes, session cookies, hex secrets
// under unknown names and the formats no rule knew. Each is a command
// (the tool call's argument) and its output (the tool result), with the
// part of the secret that must not be found on disk. Made-up secrets.
var storeLeaks = []struct{ command, output, secret string }{
	{"mysql -u root -p'Xq81S3cr3tPw' prod -e 'select 1'", "1", "Xq81S3cr3tPw"},
	{"mysql -pXq82S3cr3tPw prod", "ok", "Xq82S3cr3tPw"},
	{"mysqldump --password Xq83S3cr3tPw prod > d.sql", "", "Xq83S3cr3tPw"},
	{"docker login -u bob -p Xq84D0ckerPw ghcr.io", "Login Succeeded", "Xq84D0ckerPw"},
	{"docker login --password Xq85D0ckerPw --username bob", "Login Succeeded", "Xq85D0ckerPw"},
	{"curl -u alice:Xq86CurlPw https://api.example.com/v1/me", "{}", "Xq86CurlPw"},
	{"sshpass -p Xq87SshPw ssh root@host uptime", "up 3 days", "Xq87SshPw"},
	{"PGPASSWORD=Xq88PgPw psql -h db -U app -c 'select 1'", "1", "Xq88PgPw"},
	{"cat ~/.netrc", "machine api.example.com login bob password Xq89NetrcPw\n", "Xq89NetrcPw"},
	{"cat ~/.docker/config.json", `{"auths": {"https://index.docker.io/v1/": {"auth": "` +
		base64.StdEncoding.EncodeToString([]byte("bob:Xq90DockerAuth")) + `"}}}`, base64.StdEncoding.EncodeToString([]byte("bob:Xq90DockerAuth"))},
	{"cat ~/.pgpass", "db.example.com:5432:prod:app:Xq91PgpassPw\n", "Xq91PgpassPw"},
	{"curl -H 'Authorization: Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b' https://x", "[]", "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"},
	{`curl -b "sid=s%3AXq92CookieVal0e.abcDEF123" https://app.example.com`, "ok", "Xq92CookieVal0e"},
	{"env | grep KEY", "SESSION_KEY=8f14e45fceea167a5a36dedd4bea2543\n", "8f14e45fceea167a5a36dedd4bea2543"},
	{"vault login hvs.Xq93VaultTok6j4cuewowBGit65rheNoceI", "Success!", "Xq93VaultTok6j4cuewowBGit65"},
	{"cat client_secret.json", `{"installed": {"client_secret": "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"}}`, "Xq94r0aNcG8gddWyEgR6RWaAiJKr"},
	{"az storage blob url", "https://acct.blob.core.windows.net/c/f?sv=2021-06-08&sp=r&sig=Xq95Qm%2FZx3Lp9vNk2R7tY4wB%3D", "Xq95Qm%2FZx3Lp9vNk2R7tY4wB"},
	{"curl -X POST https://discord.com/api/webhooks/1234567890123456789/Xq96AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdEfGhIjKlMnOpQrSt", "204", "Xq96AbCdEfGhIjKlMnOpQrStUvWxYz"},
	{"curl https://api.telegram.org/bot123456789:AAXq97dqTcvCH1vGWJxfSeofSAs0K5PALDs/getMe", "{}", "AAXq97dqTcvCH1vGWJxfSeofSAs0K5PALDs"},
}

// docSecret is in a text file the user attaches as a base64 document;
// argvSecret an argument of its own in an exec-style tool call.
const (
	docSecret  = "Xq98DocPassw0rd"
	argvSecret = "Xq99ArgvPassw0rd"
)

// writeLeaks writes one session through store: each leak as a tool call
// and its result, and text documents in base64 (pi's document block, and
// Anthropic's shape in a custom entry). It returns the session's id and
// the ids and parents of its entries as written.
func writeLeaks(t *testing.T, store session.Store) (string, [][2]string) {
	t.Helper()
	ctx := context.Background()
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/work"})
	require.NoError(t, err)
	doc := base64.StdEncoding.EncodeToString([]byte("# config\nDB_PASSWORD=" + docSecret + "\nDEBUG=1\n"))
	require.NoError(t, s.SaveTurn(ctx, []*session.Message{
		session.User(session.Text("here is the config"), session.DocumentBase64("text/plain", doc)),
		session.AssistantText("read it"),
	}, nil))
	for i, l := range storeLeaks {
		args, err := json.Marshal(map[string]string{"command": l.command})
		require.NoError(t, err)
		call := "call-" + string(rune('a'+i))
		require.NoError(t, s.SaveTurn(ctx, []*session.Message{
			session.UserText("go on"),
			session.Assistant(session.ToolCall(call, "bash", args)),
			session.ToolResult(call, "bash", l.output),
		}, nil))
	}
	// An exec-style call: the password is an argument of its own.
	argv, err := json.Marshal(map[string]any{"argv": []string{"docker", "login", "-u", "bob", "-p", argvSecret, "ghcr.io"}})
	require.NoError(t, err)
	require.NoError(t, s.SaveTurn(ctx, []*session.Message{
		session.UserText("log in"),
		session.Assistant(session.ToolCall("call-argv", "exec", argv)),
		session.ToolResult("call-argv", "exec", "Login Succeeded"),
	}, nil))
	_, err = s.AppendCustom(ctx, "app.upload", map[string]any{
		"type": "document", "source": map[string]any{"type": "base64", "media_type": "text/plain", "data": doc},
	})
	require.NoError(t, err)
	var tree [][2]string
	for e := range s.Entries() {
		tree = append(tree, [2]string{e.ID(), e.ParentID()})
	}
	require.NoError(t, s.Close())
	return s.ID(), tree
}

// TestRedactStoreIssueLeaks: none of issue 38's shapes reaches the files
// of a FileStore behind session.Redact with the default rules, and the
// log stays whole: every line JSON, the same ids and parents, the
// document still base64 of a text that reads.
func TestRedactStoreIssueLeaks(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	fs1, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	rs := session.Redact(fs1, redact.New(&redact.Options{Home: []string{}}))
	id, tree := writeLeaks(t, rs)
	require.NoError(t, fs1.Close())

	needles := []string{docSecret, argvSecret}
	for _, l := range storeLeaks {
		needles = append(needles, l.secret)
	}
	grepTree(t, filepath.Dir(root), needles...)

	// Every line of the files is JSON.
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		for n := 1; sc.Scan(); n++ {
			assert.True(t, json.Valid(sc.Bytes()), "%s:%d is not JSON: %.200s", p, n, sc.Text())
		}
		return sc.Err()
	})
	require.NoError(t, err)

	fs2 := openFS(t, root, nil)
	s, err := session.Open(ctx, fs2, id)
	require.NoError(t, err)
	defer s.Close()
	var got [][2]string
	for e := range s.Entries() {
		got = append(got, [2]string{e.ID(), e.ParentID()})
	}
	assert.Equal(t, tree, got, "ids and parents as written")
	c := s.Context()
	doc := c.Messages[0].Content[1]
	require.Equal(t, session.BlockDocument, doc.Type)
	text, err := base64.StdEncoding.DecodeString(doc.Data)
	require.NoError(t, err, "the document is still base64")
	assert.Equal(t, "# config\nDB_PASSWORD=[REDACTED:password]\nDEBUG=1\n", string(text))
	// The document of Anthropic's shape, in the custom entry.
	var custom struct {
		Data struct {
			Source struct {
				Data string `json:"data"`
			} `json:"source"`
		} `json:"data"`
	}
	entries := s.Log().Entries
	require.NoError(t, json.Unmarshal(entries[len(entries)-1].JSON(), &custom))
	text, err = base64.StdEncoding.DecodeString(custom.Data.Source.Data)
	require.NoError(t, err)
	assert.Equal(t, "# config\nDB_PASSWORD=[REDACTED:password]\nDEBUG=1\n", string(text))
	assert.Positive(t, rs.Report().Total())
}
