package session_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/storetest"
)

func openFlat(t *testing.T, root string) *session.FileStore {
	t.Helper()
	return openFS(t, root, &session.FileStoreOptions{Layout: session.LayoutFlat})
}

// TestFileStoreFlatConformance: the flat layout passes the store suite.
func TestFileStoreFlatConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) session.Store {
		return openFlat(t, filepath.Join(t.TempDir(), "sessions"))
	})
}

// TestFileStoreFlatLayout: a session is <root>/<escaped id>.jsonl, as Dive
// keeps its own; archived ones are in <root>/.archive; a store opened
// afresh finds them; a Dive file of the id is reported, not overwritten.
func TestFileStoreFlatLayout(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFlat(t, root)
	for _, id := range []string{"s1", "user:42", "chat 7"} {
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w/" + id})
		require.NoError(t, err)
		appendAll(t, s, session.UserText("hi "+id))
		require.NoError(t, s.Close())
	}
	for id, name := range map[string]string{"s1": "s1.jsonl", "user:42": "user%3A42.jsonl", "chat 7": "chat%207.jsonl"} {
		p, err := store.Path(id)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(root, name), p)
	}
	infos := listAll(t, store, session.ListOptions{Cwd: "/w/s1"})
	assert.Len(t, infos, 1, "listed by working directory from the header")
	require.NoError(t, store.Archive(ctx, "s1"))
	_, err := os.Stat(filepath.Join(root, ".archive", "s1.jsonl"))
	require.NoError(t, err)
	require.NoError(t, store.Close())

	again := openFlat(t, root)
	assert.Len(t, listAll(t, again, session.ListOptions{}), 2)
	assert.Len(t, listAll(t, again, session.ListOptions{Archived: true}), 3)
	s, err := session.Open(ctx, again, "user:42")
	require.NoError(t, err)
	msgs, err := s.Messages(ctx)
	require.NoError(t, err)
	assert.Equal(t, "hi user:42", msgs[0].Text())
	_, err = session.Create(ctx, again, &session.CreateOptions{ID: "user:42"})
	assert.ErrorIs(t, err, session.ErrExists)

	// Dive's own file where the flat layout would put ours.
	dive, err := os.ReadFile(filepath.Join("importer", "testdata", "dive", "dive-main.jsonl"))
	require.NoError(t, err)
	path := filepath.Join(root, "dive-main.jsonl")
	require.NoError(t, os.WriteFile(path, dive, 0o600))
	fresh := openFlat(t, root)
	_, err = session.Open(ctx, fresh, "dive-main")
	assert.ErrorIs(t, err, session.ErrForeignFormat)
	_, _, err = session.OpenOrCreate(ctx, fresh, &session.CreateOptions{ID: "dive-main"})
	assert.ErrorIs(t, err, session.ErrForeignFormat)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, dive, got, "left as it was")
	assert.Len(t, listAll(t, fresh, session.ListOptions{}), 2, "not listed as a session")

	// Dive's file of an id that escaping changes is at the raw id.
	require.NoError(t, os.WriteFile(filepath.Join(root, "chat 9.jsonl"), []byte(`{"line_type":"header","data":{"id":"chat 9"}}`+"\n"), 0o600))
	_, _, err = session.OpenOrCreate(ctx, fresh, &session.CreateOptions{ID: "chat 9"})
	assert.ErrorIs(t, err, session.ErrForeignFormat)
}
