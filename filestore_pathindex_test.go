package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/compattest"
	"github.com/stretchr/testify/require"
)

// A FileStore opens a long session through its path index: the first
// open reads the whole file and leaves the index; later opens read the
// path alone, after checking the index against the file, and extend it
// over what was appended since. Whatever happened to the file or the
// index, an open answers as a whole read of the file does.

func withPathIndexes(t *testing.T) {
	old := session.SetPathIndexMin(0)
	t.Cleanup(func() { session.SetPathIndexMin(old) })
}

// indexedStore builds a compacted session of the shape in a new
// FileStore of dir, opens it once so that its index is built, and
// returns the store and the id.
func indexedStore(t *testing.T, dir, shape string) (*session.FileStore, string) {
	t.Helper()
	fs, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	id := buildCompacted(t, fs, shape)
	require.NoError(t, fs.Close())
	fs, err = session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	t.Cleanup(func() { fs.Close() })
	s, err := session.Open(context.Background(), fs, id)
	require.NoError(t, err)
	require.False(t, session.IsPartial(s), "the first open reads the whole file")
	require.NoError(t, s.Close())
	session.WaitPathIndexes(fs)
	_, err = os.Stat(session.PathIndexFile(fs, id))
	require.NoError(t, err, "the first open leaves an index")
	return fs, id
}

func TestFileStorePathOpen(t *testing.T) {
	withPathIndexes(t)
	for _, shape := range []string{"linear", "branched", "moved", "modelEarly", "longTail"} {
		t.Run(shape, func(t *testing.T) {
			fs, id := indexedStore(t, t.TempDir(), shape)
			checkPartial(t, fs, id, true)
		})
	}
}

// TestFileStorePathOpenAfterOthersAppend: another store's appends are
// read from where the index ends, and the path opened includes them.
func TestFileStorePathOpenAfterOthersAppend(t *testing.T) {
	withPathIndexes(t)
	ctx := context.Background()
	dir := t.TempDir()
	fs, id := indexedStore(t, dir, "linear")
	other, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	o, err := session.Open(ctx, other, id)
	require.NoError(t, err)
	require.True(t, session.IsPartial(o))
	for i := range 5 {
		require.NoError(t, o.SaveTurn(ctx, []*session.Message{session.UserText(fmt.Sprintf("other %d", i)), session.AssistantText("ok")}, nil))
	}
	require.NoError(t, o.Close())
	require.NoError(t, other.Close())
	checkPartial(t, fs, id, true)
	s, err := session.Open(ctx, fs, id)
	require.NoError(t, err)
	msgs, err := s.Messages(ctx)
	require.NoError(t, err)
	require.Equal(t, "ok", msgs[len(msgs)-1].Text())
	// And this handle appends after them.
	require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText("mine"), session.AssistantText("yes")}, nil))
	require.NoError(t, s.Close())
	checkPartial(t, fs, id, true)
}

// TestFileStorePathIndexNotTrusted: a stale, damaged or lying index,
// and a file changed in place, give what a whole read gives.
func TestFileStorePathIndexNotTrusted(t *testing.T) {
	withPathIndexes(t)
	ctx := context.Background()
	cases := []struct {
		name    string
		change  func(t *testing.T, fs *session.FileStore, id, logPath, idxPath string)
		partial bool // the open after the change reads by path
	}{
		{"index truncated", func(t *testing.T, fs *session.FileStore, id, logPath, idxPath string) {
			data, err := os.ReadFile(idxPath)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(idxPath, data[:len(data)/2], 0o600))
		}, false},
		// The part every open reads (its checksum), and the last block
		// of records (the path's, with its own): a byte of the last
		// record's padding, which only that checksum covers.
		{"index byte flipped", func(t *testing.T, fs *session.FileStore, id, logPath, idxPath string) {
			data, err := os.ReadFile(idxPath)
			require.NoError(t, err)
			data[len(data)/10] ^= 0x40
			require.NoError(t, os.WriteFile(idxPath, data, 0o600))
		}, false},
		{"index record flipped", func(t *testing.T, fs *session.FileStore, id, logPath, idxPath string) {
			data, err := os.ReadFile(idxPath)
			require.NoError(t, err)
			data[len(data)-pathRecPad] ^= 0x40
			require.NoError(t, os.WriteFile(idxPath, data, 0o600))
		}, false},
		{"index of another session", func(t *testing.T, fs *session.FileStore, id, logPath, idxPath string) {
			other := buildCompacted(t, fs, "linear")
			s, err := session.Open(ctx, fs, other)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			session.WaitPathIndexes(fs)
			data, err := os.ReadFile(session.PathIndexFile(fs, other))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(idxPath, data, 0o600))
		}, false},
		{"log rewritten by a prune", func(t *testing.T, fs *session.FileStore, id, logPath, idxPath string) {
			s, err := session.Open(ctx, fs, id)
			require.NoError(t, err)
			_, err = s.Prune(ctx, nil)
			require.NoError(t, err)
			require.NoError(t, s.Close())
		}, false},
		{"log line near the end changed in place", func(t *testing.T, fs *session.FileStore, id, logPath, idxPath string) {
			editInPlace(t, logPath, func(lines []string) {
				// Within the 4 KiB the index sums.
				for i := len(lines) - 1; i > 0; i-- {
					if strings.Contains(lines[i], `"content"`) {
						lines[i] = strings.Replace(lines[i], `"content"`, `"contenu"`, 1)
						return
					}
				}
				t.Fatal("no line to change")
			})
		}, false},
		{"log line on the path changed in place", func(t *testing.T, fs *session.FileStore, id, logPath, idxPath string) {
			editInPlace(t, logPath, func(lines []string) {
				// Far from the end: the index still says where the line
				// is, and the open reads it as it is now.
				lines[lineWith(t, lines, "late 2 here")] = strings.Replace(lines[lineWith(t, lines, "late 2 here")], "late 2 here", "LATE 2 HERE", 1)
			})
		}, true},
		{"an id on the path changed in place", func(t *testing.T, fs *session.FileStore, id, logPath, idxPath string) {
			editInPlace(t, logPath, func(lines []string) {
				i := lineWith(t, lines, "late 2 here")
				lines[i] = swapIDChar(lines[i])
			})
		}, false},
		{"a parent on the path changed in place", func(t *testing.T, fs *session.FileStore, id, logPath, idxPath string) {
			editInPlace(t, logPath, func(lines []string) {
				i := lineWith(t, lines, "late 3 here")
				lines[i] = swapParentChar(lines[i])
			})
		}, false},
		{"log line before the path changed in place", func(t *testing.T, fs *session.FileStore, id, logPath, idxPath string) {
			editInPlace(t, logPath, func(lines []string) {
				for i, l := range lines[1:] {
					if strings.Contains(l, "question 2 ") {
						lines[i+1] = strings.Replace(l, "question 2 ", "QUESTION 2 ", 1)
						return
					}
				}
				t.Fatal("no line to change")
			})
		}, true},
		{"log cut short", func(t *testing.T, fs *session.FileStore, id, logPath, idxPath string) {
			st, err := os.Stat(logPath)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(logPath, st.Size()-10))
		}, false},
		{"log line of garbage appended", func(t *testing.T, fs *session.FileStore, id, logPath, idxPath string) {
			f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString("{not json\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			fs, id := indexedStore(t, dir, "longTail")
			logPath := sessionFileOf(t, dir, id)
			c.change(t, fs, id, logPath, session.PathIndexFile(fs, id))
			// A store that knows nothing of the file, as another process.
			fresh, err := session.OpenFileStore(dir, nil)
			require.NoError(t, err)
			defer fresh.Close()
			s, err := session.Open(ctx, fresh, id)
			require.NoError(t, err)
			require.Equal(t, c.partial, session.IsPartial(s))
			require.NoError(t, s.Close())
			data, err := os.ReadFile(sessionFileOf(t, dir, id))
			require.NoError(t, err)
			log, err := session.DecodeLog(data, nil)
			require.NoError(t, err)
			want := session.OpenLog(log)
			s, err = session.Open(ctx, fresh, id)
			require.NoError(t, err)
			require.Equal(t, contextView(want.Context()), contextView(s.Context()))
			require.Equal(t, want.Len(), s.Len())
			require.NoError(t, s.Close())
		})
	}
}

// lineWith returns the index of the one line holding s.
func lineWith(t *testing.T, lines []string, s string) int {
	t.Helper()
	for i, l := range lines {
		if strings.Contains(l, s) {
			return i
		}
	}
	t.Fatalf("no line holds %q", s)
	return -1
}

// swapParentChar changes one character of the parentId member.
func swapParentChar(line string) string {
	i := strings.Index(line, `"parentId":"`) + len(`"parentId":"`)
	return line[:i] + otherChar(line[i]) + line[i+1:]
}

func otherChar(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

// swapIDChar changes one character of the id member of the JSON line.
func swapIDChar(line string) string {
	i := strings.Index(line, `"id":"`) + len(`"id":"`)
	c := line[i]
	if c == 'a' {
		c = 'b'
	} else {
		c = 'a'
	}
	return line[:i] + string(c) + line[i+1:]
}

// editInPlace changes lines of the file at path without changing its
// inode, as an editor writing in place would.
func editInPlace(t *testing.T, path string, edit func(lines []string)) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	edit(lines)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestFileStorePathOpenCorpus: pi's sessions, in a FileStore, opened by
// their path once indexed.
func TestFileStorePathOpenCorpus(t *testing.T) {
	compattest.Need(t)
	withPathIndexes(t)
	names, err := filepath.Glob(compattest.Path("*.jsonl"))
	require.NoError(t, err)
	for _, path := range names {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			log, err := session.DecodeLog(data, nil)
			require.NoError(t, err)
			if log.MigratedFrom != 0 {
				t.Skip("an older version: migrated when opened")
			}
			fs, err := session.OpenFileStore(t.TempDir(), nil)
			require.NoError(t, err)
			defer fs.Close()
			require.NoError(t, fs.CreateWithEntries(context.Background(), log.Header, log.Entries))
			s, err := session.Open(context.Background(), fs, log.Header.ID)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			session.WaitPathIndexes(fs)
			checkPartial(t, fs, log.Header.ID, hasCompaction(log) && len(log.Malformed) == 0)
		})
	}
}

// pathRecPad: from the end of an index, a padding byte of its last
// record (bytes 26 and 27 of the 40 are zero; filestore_pathindex.go).
const pathRecPad = 40 - 26
