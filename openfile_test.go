package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/storekit"
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
// TestStoreRemovesOnlyItsOwnTemps: the store's first read of the tree,
// whichever call makes it, removes its own stale temporary files and no
// one else's.
func TestStoreRemovesOnlyItsOwnTemps(t *testing.T) {
	ctx := context.Background()
	firsts := []struct {
		name string
		call func(st *session.FileStore) error
	}{
		{"list", func(st *session.FileStore) error { _, err := st.List(ctx, session.ListOptions{}); return err }},
		{"load", func(st *session.FileStore) error { _, err := st.Load(ctx, "s-own"); return err }},
		{"load unknown", func(st *session.FileStore) error {
			if _, err := st.Load(ctx, "s-none"); !errors.Is(err, session.ErrNotFound) {
				return fmt.Errorf("load of an unknown session: %v", err)
			}
			return nil
		}},
		{"create", func(st *session.FileStore) error {
			_, err := session.Create(ctx, st, &session.CreateOptions{ID: "s-new", Cwd: "/w"})
			return err
		}},
	}
	for _, first := range firsts {
		t.Run(first.name, func(t *testing.T) {
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
			require.NoError(t, first.call(openFS(t, root, nil)))
			for _, p := range ours {
				assert.NoFileExists(t, p, "a stale temp file of the store's stays")
			}
			for _, p := range theirs {
				assert.FileExists(t, p, "a file that is not the store's was removed")
			}
		})
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// TestArchiveOutsideRoot: an archive directory the store cannot read (a
// symlink out of its root) costs only the archived sessions, never the
// store.
func TestArchiveOutsideRoot(t *testing.T) {
	ctx := context.Background()
	root, elsewhere := t.TempDir(), t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-live", Cwd: "/w"})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("q"))
	require.NoError(t, s.Close())
	require.NoError(t, store.Close())
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(root, ".archive")))

	again, err := session.OpenFileStore(root, nil)
	require.NoError(t, err, "the store opens")
	defer again.Close()
	r, err := session.Open(ctx, again, "s-live")
	require.NoError(t, err)
	assert.Equal(t, 1, r.Len())
	page, err := again.List(ctx, session.ListOptions{Archived: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"s-live"}, infoIDs(page.Sessions))
	// Archiving into it is refused with an error, not done elsewhere.
	err = again.Archive(ctx, "s-live")
	assert.Error(t, err)
	entries, err := os.ReadDir(elsewhere)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing went out of the root")
}

// TestDeepWorkingDirectory: a session of a working directory of 4 KB,
// deeper than a file name can be long, is created, listed by its cwd and
// reopened.
func TestDeepWorkingDirectory(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	cwd := "/" + strings.Repeat("deep/é/", 4096/9)
	for _, c := range []string{cwd, cwd + "x", "/short"} {
		store := openFS(t, root, nil)
		s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: c})
		require.NoError(t, err, "cwd of %d bytes", len(c))
		appendAll(t, s, session.UserText("q"))
		path, err := store.Path(s.ID())
		require.NoError(t, err)
		assert.LessOrEqual(t, len(filepath.Base(filepath.Dir(path))), 255)
		require.NoError(t, s.Close())
		require.NoError(t, store.Close())

		again := openFS(t, root, nil)
		page, err := again.List(ctx, session.ListOptions{Cwd: c})
		require.NoError(t, err)
		assert.Equal(t, []string{s.ID()}, infoIDs(page.Sessions), "listed by its cwd")
		r, err := session.Continue(ctx, again, c)
		require.NoError(t, err)
		assert.Equal(t, s.ID(), r.ID())
		assert.Equal(t, c, r.Header().Cwd)
	}
	assert.NotEqual(t, storekit.CwdDir(cwd), storekit.CwdDir(cwd+"x"), "two deep directories get two names")
	assert.Equal(t, "--short--", storekit.CwdDir("/short"))
}
