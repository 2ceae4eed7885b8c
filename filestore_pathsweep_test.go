package session_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPathIndexOfDeletedSession: the path index of a session another
// program deleted is removed when a store that read the tree closes, if
// it is an hour old; the indexes of live and archived sessions, a young
// orphan's, and files in the directory that are no index stay.
func TestPathIndexOfDeletedSession(t *testing.T) {
	withPathIndexes(t)
	ctx := context.Background()
	old := time.Now().Add(-2 * time.Hour)
	cases := []struct {
		name     string
		change   func(t *testing.T, dir, id, index string) // after the index is made
		first    func(st *session.FileStore) error         // the call before Close
		removed  bool
		keepFile string // a file of .pathindex that must stay, if any
	}{
		{name: "session deleted by another program", removed: true,
			change: func(t *testing.T, dir, id, index string) { removeSessionFile(t, dir, id); age(t, index, old) }},
		{name: "deleted, its index young",
			change: func(t *testing.T, dir, id, index string) { removeSessionFile(t, dir, id) }},
		{name: "session alive",
			change: func(t *testing.T, dir, id, index string) { age(t, index, old) }},
		{name: "session archived by another store",
			change: func(t *testing.T, dir, id, index string) {
				st, err := session.OpenFileStore(dir, nil)
				require.NoError(t, err)
				require.NoError(t, st.Archive(ctx, id))
				require.NoError(t, st.Close())
				age(t, index, old)
			}},
		{name: "store that did not read the tree", first: func(*session.FileStore) error { return nil },
			change: func(t *testing.T, dir, id, index string) { removeSessionFile(t, dir, id); age(t, index, old) }},
		{name: "not an index", removed: true, keepFile: "notes.txt",
			change: func(t *testing.T, dir, id, index string) {
				removeSessionFile(t, dir, id)
				age(t, index, old)
				p := filepath.Join(filepath.Dir(index), "notes.txt")
				require.NoError(t, os.WriteFile(p, []byte("mine"), 0o600))
				age(t, p, old)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fs, id := indexedStore(t, dir, "linear")
			index := session.PathIndexFile(fs, id)
			require.NoError(t, fs.Close())
			tc.change(t, dir, id, index)
			st, err := session.OpenFileStore(dir, nil)
			require.NoError(t, err)
			first := tc.first
			if first == nil {
				first = func(st *session.FileStore) error {
					_, err := st.List(ctx, session.ListOptions{Archived: true})
					return err
				}
			}
			require.NoError(t, first(st))
			require.NoError(t, st.Close())
			_, err = os.Stat(index)
			if tc.removed {
				assert.ErrorIs(t, err, os.ErrNotExist, "the index of a deleted session stays")
			} else {
				assert.NoError(t, err, "an index that may be needed was removed")
			}
			if tc.keepFile != "" {
				assert.FileExists(t, filepath.Join(filepath.Dir(index), tc.keepFile))
			}
		})
	}
}

func removeSessionFile(t *testing.T, dir, id string) {
	t.Helper()
	require.NoError(t, os.Remove(sessionFileOf(t, dir, id)))
}

func age(t *testing.T, path string, when time.Time) {
	t.Helper()
	require.NoError(t, os.Chtimes(path, when, when))
}

// TestPathIndexTooLong: a session whose index would be over the bound
// gets none, and is not read again for one at each open while its file
// only grows (each open reads it whole, as without an index); opens
// answer as before.
func TestPathIndexTooLong(t *testing.T) {
	withPathIndexes(t)
	ctx := context.Background()
	dir := t.TempDir()
	fs, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	id := buildCompacted(t, fs, "linear")
	require.NoError(t, fs.Close())
	old := session.SetMaxPathIndexBytes(512)
	t.Cleanup(func() { session.SetMaxPathIndexBytes(old) })
	fs, err = session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	t.Cleanup(func() { fs.Close() })
	builds := session.PathIndexBuilds()
	for turn := range 3 {
		s, err := session.Open(ctx, fs, id)
		require.NoError(t, err)
		require.False(t, session.IsPartial(s), "no index: a whole read")
		require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText("more"), session.AssistantText("ok")}, nil))
		msgs, err := s.Messages(ctx)
		require.NoError(t, err)
		assert.Equal(t, "more", msgs[len(msgs)-2].Text())
		require.NoError(t, s.Close())
		session.WaitPathIndexes(fs)
		_, err = os.Stat(session.PathIndexFile(fs, id))
		assert.ErrorIs(t, err, os.ErrNotExist, "an index over the bound was written")
		assert.Equal(t, int64(1), session.PathIndexBuilds()-builds, "turn %d: the log was read for an index again", turn)
	}
}
