package session_test

import (
	"bytes"
	"context"
	"os"
	"strings"
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

// TestForkBranchedSource: a fork whose path runs over two stretches of
// its source's file (a branch taken back at an earlier entry), with a
// line longer than a piece and one cut to the store's
// FileStoreOptions.MaxStringChars, copies each stretch from the file and
// writes the same lines as a fork built from the entries, with the
// file's line ends LF or CRLF. Under the default limit the two long
// lines are written as an append would write them (lines over the limit
// in bytes are checked again), not copied; with no limit they are
// copied too.
func TestForkBranchedSource(t *testing.T) {
	for _, tc := range []struct {
		name    string
		crlf    bool
		noLimit bool
	}{{"LF", false, false}, {"CRLF", true, false}, {"LF, no limit", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			crlf := tc.crlf
			ctx := context.Background()
			root := t.TempDir()
			store, err := session.OpenFileStore(root, &session.FileStoreOptions{Sync: session.SyncNever})
			require.NoError(t, err)
			s, err := session.Create(ctx, store, nil)
			require.NoError(t, err)
			add := func(msgs ...*session.Message) {
				for _, m := range msgs {
					_, err := s.Append(ctx, m)
					require.NoError(t, err)
				}
			}
			msgs := workload.Messages(0, 60)
			add(msgs[:90]...)
			// 450,000 characters, escaped to 1.1 MB: over a piece, under
			// the cut.
			add(session.UserText(strings.Repeat("text \x01\x02\x03 ", 45000)))
			// 1.9 million characters: written cut, which a create checks
			// again and writes as an append would.
			cut := strings.Repeat("a line of text with \"quotes\"\n", 60000)
			add(session.UserText(cut))
			add(msgs[90:]...)
			path, err := s.PathTo(s.LeafID())
			require.NoError(t, err)
			// The branch starts after a tool result, 122 entries in, so
			// that the fork's path is the file's first 122 lines and its
			// last 60.
			require.NoError(t, s.Branch(ctx, path[121].ID()))
			add(workload.Messages(60, 80)...)
			require.NoError(t, s.Flush(ctx))
			require.NoError(t, store.Close())
			if crlf {
				file := sessionFileOf(t, root, s.ID())
				data, err := os.ReadFile(file)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(file, bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n")), 0o600))
			}

			var opts *session.FileStoreOptions
			if tc.noLimit {
				opts = &session.FileStoreOptions{MaxStringChars: -1}
			}
			store, err = session.OpenFileStore(root, opts)
			require.NoError(t, err)
			defer store.Close()
			src, err := session.Open(ctx, store, s.ID())
			require.NoError(t, err)
			defer session.CopyFromFiles(true)
			forkLines := func(copying bool) (lines []byte, copied int64) {
				session.CopyFromFiles(copying)
				before := session.CopiedBytes()
				f, err := src.Fork(ctx, nil)
				require.NoError(t, err)
				require.Equal(t, 182, f.Len())
				data, err := os.ReadFile(sessionFileOf(t, root, f.ID()))
				require.NoError(t, err)
				return data[bytes.IndexByte(data, '\n')+1:], session.CopiedBytes() - before
			}
			built, none := forkLines(false)
			copiedLines, copied := forkLines(true)
			require.Zero(t, none)
			require.True(t, bytes.Equal(built, copiedLines), "a fork copied from the file differs from one built from the entries")
			want := len(copiedLines)
			if !tc.noLimit {
				for _, l := range bytes.SplitAfter(copiedLines, []byte("\n")) {
					if len(l) > 500_000 {
						want -= len(l)
					}
				}
				require.Less(t, want, len(copiedLines)-1_500_000, "the two long lines")
			}
			require.EqualValues(t, want, copied, "bytes copied from the file")
			if crlf {
				require.Equal(t, 182, bytes.Count(copiedLines, []byte("\r\n")))
			}
		})
	}
}

// TestForkImagesToBlobs: a fork of a session read from a file that holds
// an image inline (its store keeps no blobs), into a store that moves
// large images to blobs, writes the image as a blob reference rather
// than copying its line, and reads back the same image; the lines
// around it are copied from the source's file.
func TestForkImagesToBlobs(t *testing.T) {
	ctx := context.Background()
	rootA, rootB := t.TempDir(), t.TempDir()
	a, err := session.OpenFileStore(rootA, &session.FileStoreOptions{MinBlobBytes: -1})
	require.NoError(t, err)
	s, err := session.Create(ctx, a, nil)
	require.NoError(t, err)
	img := bytes.Repeat([]byte{1, 2, 3, 4, 5}, 20_000)
	msgs := workload.Messages(0, 10)
	msgs = append(msgs[:15:15], append([]*session.Message{session.User(session.Text("look"), session.Image("image/png", img))}, msgs[15:]...)...)
	for _, m := range msgs {
		_, err := s.Append(ctx, m)
		require.NoError(t, err)
	}
	require.NoError(t, a.Close())
	data, err := os.ReadFile(sessionFileOf(t, rootA, s.ID()))
	require.NoError(t, err)
	require.False(t, bytes.Contains(data, []byte(session.BlobPrefix)), "the source holds the image inline")

	a, err = session.OpenFileStore(rootA, &session.FileStoreOptions{MinBlobBytes: -1})
	require.NoError(t, err)
	defer a.Close()
	src, err := session.Open(ctx, a, s.ID())
	require.NoError(t, err)
	b, err := session.OpenFileStore(rootB, nil)
	require.NoError(t, err)
	defer b.Close()
	before := session.CopiedBytes()
	f, err := src.Fork(ctx, &session.ForkOptions{Store: b})
	require.NoError(t, err)
	require.Positive(t, session.CopiedBytes()-before, "the lines around the image are copied")
	forked, err := os.ReadFile(sessionFileOf(t, rootB, f.ID()))
	require.NoError(t, err)
	require.True(t, bytes.Contains(forked, []byte(session.BlobPrefix)), "the image went to a blob")
	require.Less(t, len(forked), len(data)-100_000, "the image's data is not in the fork's file")

	g, err := session.Open(ctx, b, f.ID())
	require.NoError(t, err)
	m := g.Context().Messages[15]
	require.Equal(t, session.BlockImage, m.Content[1].Type)
	want := session.Image("image/png", img)
	require.Equal(t, want.Data, m.Content[1].Data)
}
