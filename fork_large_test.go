package session_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
)

// TestForkLargeSessionBytes: a fork of a long session, read back from
// its file (its entries compact: long strings cut out of templates and
// escaped again as the fork is written, past a few megabytes on two
// goroutines), holds the source's lines byte for byte, in order, at
// every size around the point where the work is split.
func TestForkLargeSessionBytes(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store, err := session.OpenFileStore(root, &session.FileStoreOptions{Sync: session.SyncNever})
	require.NoError(t, err)
	s, err := session.Create(ctx, store, nil)
	require.NoError(t, err)
	msgs := workload.Messages(0, 1200) // about 8 MB
	// One at a time: lines without an append's marker, which a fork
	// leaves out.
	for _, m := range msgs {
		_, err := s.Append(ctx, m)
		require.NoError(t, err)
	}
	require.NoError(t, s.Flush(ctx))
	require.NoError(t, store.Close())

	store, err = session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	src, err := session.Open(ctx, store, s.ID())
	require.NoError(t, err)
	data, err := os.ReadFile(sessionFileOf(t, root, s.ID()))
	require.NoError(t, err)
	lines := bytes.SplitAfter(data, []byte("\n"))[1:] // the entries'
	path, err := src.PathTo(src.LeafID())
	require.NoError(t, err)
	for _, n := range []int{1, 300, 1700, 1801, 2500, len(path)} {
		f, err := src.Fork(ctx, &session.ForkOptions{At: path[n-1].ID()})
		require.NoError(t, err)
		require.NoError(t, f.Flush(ctx))
		got, err := os.ReadFile(sessionFileOf(t, root, f.ID()))
		require.NoError(t, err)
		want := bytes.Join(lines[:n], nil)
		got = got[bytes.IndexByte(got, '\n')+1:]
		require.Equal(t, len(want), len(got), "fork of %d entries", n)
		require.True(t, bytes.Equal(want, got), "fork of %d entries: the lines differ", n)
	}
}
