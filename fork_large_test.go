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
// its file (its entries compact: long strings cut out of templates),
// holds the source's lines byte for byte, in order, at every size around
// the points where the work changes: runs of lines copied from the
// source's file (from 16 KiB up, in pieces of 1 MiB), and, with the
// copying off, lines built from the entries.
func TestForkLargeSessionBytes(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	id, lines := writeLongSession(t, root, 1200) // about 8 MB
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	src, err := session.Open(ctx, store, id)
	require.NoError(t, err)
	path, err := src.PathTo(src.LeafID())
	require.NoError(t, err)
	defer session.CopyFromFiles(true)
	for _, copying := range []bool{true, false} {
		session.CopyFromFiles(copying)
		for _, n := range []int{1, 5, 300, 1700, 1801, 2500, len(path)} {
			before := session.CopiedBytes()
			f, err := src.Fork(ctx, &session.ForkOptions{At: path[n-1].ID()})
			require.NoError(t, err)
			require.NoError(t, f.Flush(ctx))
			got, err := os.ReadFile(sessionFileOf(t, root, f.ID()))
			require.NoError(t, err)
			want := bytes.Join(lines[:n], nil)
			got = got[bytes.IndexByte(got, '\n')+1:]
			require.Equal(t, len(want), len(got), "fork of %d entries", n)
			require.True(t, bytes.Equal(want, got), "fork of %d entries: the lines differ", n)
			copied := session.CopiedBytes() - before
			if copying && len(want) >= 16<<10 {
				require.EqualValues(t, len(want), copied, "fork of %d entries: bytes copied from the file", n)
			} else {
				require.Zero(t, copied, "fork of %d entries: bytes copied from the file", n)
			}
		}
	}
}

// TestForkSourceChanged: a fork copies its lines from the source's file
// only while that file holds them as they were read. Changed in place
// after the open (a byte of a long string, a line cut and written again
// longer, the file cut short), the fork still holds the entries' bytes,
// rebuilt from them; replaced by a rename, the file the session read is
// still there to copy from.
func TestForkSourceChanged(t *testing.T) {
	ctx := context.Background()
	const all, none, some = "all", "none", "some" // of the lines copied from the file
	flip := func(k int) func(t *testing.T, path string, lines [][]byte) {
		return func(t *testing.T, path string, lines [][]byte) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			require.NoError(t, err)
			defer f.Close()
			at := bytes.Index(lines[k], []byte("return ")) // k is a tool result: code
			require.Greater(t, at, 0)
			_, err = f.WriteAt([]byte("R"), offsetOf(t, path, lines, k)+int64(at))
			require.NoError(t, err)
		}
	}
	cases := []struct {
		name   string
		turns  int
		change func(t *testing.T, path string, lines [][]byte)
		copied string
	}{
		{"unchanged", 60, func(*testing.T, string, [][]byte) {}, all},
		{"a byte of a long string", 60, flip(41), none},
		// Pieces of 1 MiB: those before the change are copied.
		{"a byte of a long string, past the first piece", 300, flip(701), some},
		{"a line cut and written again", 60, func(t *testing.T, path string, lines [][]byte) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			require.NoError(t, err)
			defer f.Close()
			off := offsetOf(t, path, lines, 40)
			require.NoError(t, f.Truncate(off))
			longer := append(bytes.TrimSuffix(lines[40], []byte("}\n")), []byte(`,"x":1}`+"\n")...)
			rest := append(longer, bytes.Join(lines[41:], nil)...)
			_, err = f.WriteAt(rest, off)
			require.NoError(t, err)
		}, none},
		{"cut short", 60, func(t *testing.T, path string, lines [][]byte) {
			require.NoError(t, os.Truncate(path, offsetOf(t, path, lines, 50)))
		}, none},
		{"replaced by a rename", 60, func(t *testing.T, path string, lines [][]byte) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			tmp := path + ".new"
			require.NoError(t, os.WriteFile(tmp, bytes.ReplaceAll(data, []byte("return "), []byte("Return ")), 0o600))
			require.NoError(t, os.Rename(tmp, path))
		}, all},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			id, lines := writeLongSession(t, root, tc.turns)
			store, err := session.OpenFileStore(root, nil)
			require.NoError(t, err)
			defer store.Close()
			src, err := session.Open(ctx, store, id)
			require.NoError(t, err)
			tc.change(t, sessionFileOf(t, root, id), lines)
			before := session.CopiedBytes()
			f, err := src.Fork(ctx, &session.ForkOptions{ID: "fork"})
			require.NoError(t, err)
			want := bytes.Join(lines, nil)
			switch copied := session.CopiedBytes() - before; tc.copied {
			case all:
				require.EqualValues(t, len(want), copied, "bytes copied from the file")
			case none:
				require.Zero(t, copied, "bytes copied from the file")
			default:
				require.Greater(t, copied, int64(0), "bytes copied from the file")
				require.Less(t, copied, int64(len(want)), "bytes copied from the file")
			}
			require.NoError(t, store.Close())

			// What the fork wrote, read back by a new store.
			got, err := os.ReadFile(sessionFileOf(t, root, f.ID()))
			require.NoError(t, err)
			got = got[bytes.IndexByte(got, '\n')+1:]
			require.True(t, bytes.Equal(want, got), "the fork's lines differ from the session's")
			store2, err := session.OpenFileStore(root, nil)
			require.NoError(t, err)
			defer store2.Close()
			g, err := session.Open(ctx, store2, "fork")
			require.NoError(t, err)
			require.Equal(t, len(lines), g.Len())
		})
	}
}

// writeLongSession writes a session of the first turns of W10k to a
// FileStore at root, one entry per append (lines without an append's
// marker, which a fork leaves out), and returns its id and its entries'
// lines, newlines included.
func writeLongSession(t *testing.T, root string, turns int) (id string, lines [][]byte) {
	t.Helper()
	ctx := context.Background()
	store, err := session.OpenFileStore(root, &session.FileStoreOptions{Sync: session.SyncNever})
	require.NoError(t, err)
	s, err := session.Create(ctx, store, nil)
	require.NoError(t, err)
	for _, m := range workload.Messages(0, turns) {
		_, err := s.Append(ctx, m)
		require.NoError(t, err)
	}
	require.NoError(t, s.Flush(ctx))
	require.NoError(t, store.Close())
	data, err := os.ReadFile(sessionFileOf(t, root, s.ID()))
	require.NoError(t, err)
	all := bytes.SplitAfter(data, []byte("\n"))
	return s.ID(), all[1 : len(all)-1] // the entries': not the header, nor the empty piece after the last newline
}

// offsetOf returns the file offset of entry line k in the file at path,
// whose entries' lines are lines.
func offsetOf(t *testing.T, path string, lines [][]byte, k int) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Size() - int64(len(bytes.Join(lines[k:], nil)))
}
