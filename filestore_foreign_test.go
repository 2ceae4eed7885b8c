package session_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestFileStoreForeignSession: a session of that id in a file the store
// does not own (another agent's format, or one of ours outside the
// layout) makes Open, OpenOrCreate and Create say so instead of starting
// a new empty session elsewhere; the file is left as it was.
func TestFileStoreForeignSession(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, file, first, format string
	}{
		{"dive", "s1.jsonl", `{"line_type":"header","data":{"id":"s1","created_at":"2026-01-01T00:00:00Z"}}`, "Dive"},
		{"codex", "s1.jsonl", `{"timestamp":"2025-10-29T00:00:00Z","type":"session_meta","payload":{"id":"s1"}}`, "Codex"},
		{"claude", "s1.jsonl", `{"type":"user","uuid":"u1","sessionId":"s1","message":{"role":"user","content":"hi"}}`, "Claude Code"},
		{"real dive", "dive-main.jsonl", "", "Dive"},
		{"ours outside the layout", "s1.jsonl", `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`, "agentsession"},
		{"escaped id", "user%3A42.jsonl", `{"line_type":"header","data":{"id":"user:42"}}`, "Dive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, c.file)
			body := c.first + "\n" + `{"type":"event"}` + "\n"
			id := "s1"
			switch c.name {
			case "escaped id":
				id = "user:42"
			case "real dive": // written by Dive v1.26.0's FileStore
				raw, err := os.ReadFile(filepath.Join("importer", "testdata", "dive", c.file))
				require.NoError(t, err)
				body, id = string(raw), "dive-main"
			}
			require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
			store := openFS(t, root, nil)
			_, err := session.Open(ctx, store, id)
			var fe *session.ForeignError
			require.ErrorIs(t, err, session.ErrForeignFormat)
			require.True(t, errors.As(err, &fe))
			assert.Equal(t, path, fe.Path)
			assert.Equal(t, c.format, fe.Format)
			assert.Contains(t, err.Error(), path)
			assert.NotErrorIs(t, err, session.ErrNotFound, "OpenOrCreate must not take it for a new session")
			_, _, err = session.OpenOrCreate(ctx, store, &session.CreateOptions{ID: id})
			assert.ErrorIs(t, err, session.ErrForeignFormat)
			_, err = session.Create(ctx, store, &session.CreateOptions{ID: id})
			assert.ErrorIs(t, err, session.ErrForeignFormat)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, body, string(got), "the file is left as it was")
			assert.Empty(t, listAll(t, store, session.ListOptions{}))
			// Other ids are not affected.
			_, err = session.Create(ctx, store, &session.CreateOptions{ID: "s2"})
			assert.NoError(t, err)
		})
	}
}

// TestFileStoreForeignOtherID: a file of another session's id (or of
// another case, on a file system that folds it), or no file at all (a
// directory, a FIFO), does not stand in the way of the id.
func TestFileStoreForeignOtherID(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "s1.jsonl"), []byte(`{"line_type":"header","data":{"id":"other"}}`+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(root, "S3.jsonl"), []byte(`{"line_type":"header","data":{"id":"S3"}}`+"\n"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(root, "s2.jsonl"), 0o700))
	mkfifo(t, filepath.Join(root, "s4.jsonl"))
	store := openFS(t, root, nil)
	for _, id := range []string{"s1", "s2", "s3", "s4"} {
		_, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w"})
		assert.NoError(t, err, id)
	}
	_, err := session.Open(ctx, store, "S3")
	assert.ErrorIs(t, err, session.ErrForeignFormat, "its own id")
}

// Delete and Archive never drop or move a file the store does not own: a
// session file another agent wrote where the flat layout would keep the
// id's (Dive's <dir>/<id>.jsonl) is refused with a *ForeignError and left
// as it is, byte for byte.
func TestFileStoreForeignFileNotDropped(t *testing.T) {
	ctx := context.Background()
	// First lines longer than any buffer (a suspended Dive session's
	// header holds its pending calls' inputs), and first lines that name
	// no agent but are another program's JSON.
	big := strings.Repeat("x", 300<<10)
	foreign := map[string]string{
		"Dive":            `{"line_type":"header","data":{"id":"s1","created_at":"2026-01-01T00:00:00Z"}}` + "\n",
		"Dive long":       `{"line_type":"header","data":{"title":"` + big + `","id":"s1","pending_tool_calls":[{"input":{"content":"` + big + `"}}]}}` + "\n",
		"Codex":           `{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"s1"}}` + "\n",
		"Codex old":       `{"id":"s1","timestamp":"2025-04-01T00:00:00Z","instructions":"` + big + `"}` + "\n",
		"Claude Code":     `{"parentUuid":null,"uuid":"u","sessionId":"s1","type":"user"}` + "\n",
		"Claude summary":  `{"type":"summary","summary":"` + big + `","leafUuid":"u"}` + "\n" + `{"parentUuid":null,"uuid":"u","sessionId":"s1","type":"user"}` + "\n",
		"Claude snapshot": `{"type":"file-history-snapshot","messageId":"m","snapshot":{}}` + "\n",
	}
	formatOf := map[string]string{"Dive long": "Dive", "Codex old": "unknown", "Claude summary": "Claude Code", "Claude snapshot": "Claude Code"}
	ops := map[string]func(fs *session.FileStore) error{
		"Delete":  func(fs *session.FileStore) error { return fs.Delete(ctx, "s1") },
		"Archive": func(fs *session.FileStore) error { return fs.Archive(ctx, "s1") },
	}
	for format, data := range foreign {
		for name, op := range ops {
			t.Run(format+"/"+name, func(t *testing.T) {
				dir := t.TempDir()
				p := filepath.Join(dir, "s1.jsonl")
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
				fs, err := session.OpenFileStore(dir, &session.FileStoreOptions{Layout: session.LayoutFlat})
				if err != nil {
					t.Fatal(err)
				}
				defer fs.Close()
				err = op(fs)
				var fe *session.ForeignError
				want := format
				if f, ok := formatOf[format]; ok {
					want = f
				}
				if !errors.As(err, &fe) || fe.Format != want {
					t.Errorf("%s of a %s file: %v", name, format, err)
				}
				if b, err := os.ReadFile(p); err != nil || string(b) != data {
					t.Errorf("the %s file was dropped or changed: %v", format, err)
				}
			})
		}
	}
}
