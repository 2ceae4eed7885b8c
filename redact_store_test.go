package session_test

import (
	"bytes"
	"context"
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
	assert.Equal(t, "/home/me/"+testSecret, log.Header.Cwd, "the working directory is an index key, kept")
	assert.Equal(t, 1, rs.Report().Counts["custom"])

	// Shared state is redacted on its way in.
	require.NoError(t, rs.UpdateState(ctx, session.ScopeUser, "u1", session.State{"db": json.RawMessage(`{"pass":"` + testSecret + `"}`)}))
	st, err := mem.LoadState(ctx, session.ScopeUser, "u1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"pass":"[REDACTED]"}`, string(st["db"]))
	assert.Equal(t, 2, rs.Report().Counts["custom"])
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
