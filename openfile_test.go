package session_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// dirNames lists a directory's entries.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}

// TestOpenFileTouchesNothingElse: opening, appending to and closing a
// session file in an ordinary directory of the user's leaves every other
// file there and in the directory above alone (temp-looking ones
// included, however old), and adds no file of its own.
func TestOpenFileTouchesNothingElse(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	notes := filepath.Join(home, "notes")
	require.NoError(t, os.Mkdir(notes, 0o700))
	// A session file, made elsewhere and copied in.
	src := openFS(t, t.TempDir(), nil)
	s, err := session.Create(ctx, src, &session.CreateOptions{Cwd: "/w"})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("q"), reply("a"))
	from, err := src.Path(s.ID())
	require.NoError(t, err)
	path := filepath.Join(notes, "talk.jsonl")
	require.NoError(t, os.WriteFile(path, mustRead(t, from), 0o600))
	// The user's own files, some named as temp files are.
	old := time.Now().Add(-time.Hour)
	users := []string{
		filepath.Join(home, ".notes.txt.tmp-draft"),
		filepath.Join(home, ".index.tmp-1"),
		filepath.Join(notes, ".talk.jsonl.tmp-mine"),
		filepath.Join(notes, ".plan.md.tmp-x"),
		filepath.Join(notes, "--scratch--"),
	}
	for _, p := range users {
		require.NoError(t, os.WriteFile(p, []byte("mine"), 0o600))
		require.NoError(t, os.Chtimes(p, old, old))
	}
	beforeHome, beforeNotes := dirNames(t, home), dirNames(t, notes)

	r, store, err := session.OpenFile(ctx, path, nil)
	require.NoError(t, err)
	appendAll(t, r, session.UserText("more"))
	require.NoError(t, r.Close())
	_, err = store.List(ctx, session.ListOptions{})
	require.NoError(t, err)
	require.NoError(t, store.Close())

	for _, p := range users {
		assert.FileExists(t, p, "a file of the user's was removed")
	}
	assert.Equal(t, beforeHome, dirNames(t, home), "files were added to or removed from %s", home)
	assert.Equal(t, beforeNotes, dirNames(t, notes), "files were added to or removed from %s", notes)
	again, err := session.ReadLog(mustOpen(t, path), nil)
	require.NoError(t, err)
	assert.Len(t, again.Entries, 3)
}

// TestStoreRemovesOnlyItsOwnTemps: a store removes its own stale temp
// files (exact names, in its own directories), nothing else.
func TestStoreRemovesOnlyItsOwnTemps(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-own", Cwd: "/w"})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("q"))
	require.NoError(t, s.Close())
	require.NoError(t, store.Close())
	file := sessionFileOf(t, root, "s-own")
	dir := filepath.Dir(file)
	ours := []string{
		filepath.Join(dir, "."+filepath.Base(file)+".tmp-3k2j9x1q0a"),
		filepath.Join(root, "..index.tmp-1z"),
	}
	theirs := []string{
		filepath.Join(dir, ".notes.txt.tmp-draft"),
		filepath.Join(dir, "."+filepath.Base(file)+".tmp-Draft!"),
		filepath.Join(root, ".notes.txt.tmp-draft"),
		filepath.Join(root, ".index.tmp-1"),
	}
	old := time.Now().Add(-time.Hour)
	for _, p := range append(slices.Clone(ours), theirs...) {
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
		require.NoError(t, os.Chtimes(p, old, old))
	}
	openFS(t, root, nil)
	for _, p := range ours {
		assert.NoFileExists(t, p, "a stale temp file of the store's stays")
	}
	for _, p := range theirs {
		assert.FileExists(t, p, "a file that is not the store's was removed")
	}
	_ = ctx
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}
