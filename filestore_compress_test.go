package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
)

// Compressed archived sessions (filestore_compress.go).

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// archivedFile returns the one file of session id under root's archive.
func archivedFile(t *testing.T, root, id string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, ".archive", "--*--", "*_"+id+".jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 1, "one copy of %s in the archive", id)
	plain, err := filepath.Glob(filepath.Join(root, "--*--", "*_"+id+".jsonl"))
	require.NoError(t, err)
	require.Empty(t, plain, "no copy of %s outside the archive", id)
	return files[0]
}

// compressFixture makes session id of n W10k turns with a branch and
// returns its file's bytes and its context's messages, as JSON.
func compressFixture(t *testing.T, store *session.FileStore, id string, n int) ([]byte, []byte) {
	t.Helper()
	ctx := context.Background()
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w"})
	require.NoError(t, err)
	for i := range n {
		require.NoError(t, s.SaveTurn(ctx, workload.Messages(i, i+1), nil))
	}
	require.NoError(t, s.Close())
	p, err := store.Path(id)
	require.NoError(t, err)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	msgs, err := json.Marshal(s.Context().Messages)
	require.NoError(t, err)
	return data, msgs
}

func TestCompressArchived(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		option   bool // FileStoreOptions.CompressArchive, else CompressArchived
		appendTo bool // then append (unarchives), else Unarchive
	}{
		{"option, then append", true, true},
		{"option, then unarchive", true, false},
		{"call, then append", false, true},
		{"call, then unarchive", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "sessions")
			store, err := session.OpenFileStore(root, &session.FileStoreOptions{CompressArchive: tc.option})
			require.NoError(t, err)
			plain, msgs := compressFixture(t, store, "s-c", 40)
			require.NoError(t, store.Archive(ctx, "s-c"))
			if !tc.option {
				require.False(t, bytes.HasPrefix(must(os.ReadFile(archivedFile(t, root, "s-c"))), zstdMagic), "plain until asked")
				require.NoError(t, store.CompressArchived(ctx, "s-c"))
				require.NoError(t, store.CompressArchived(ctx, "s-c"), "twice: nothing changes")
			}
			file := archivedFile(t, root, "s-c")
			comp := must(os.ReadFile(file))
			require.True(t, bytes.HasPrefix(comp, zstdMagic))
			require.Less(t, len(comp), len(plain)/3)

			// Read transparently: this store, and a new one (another
			// process's view), as a log, a tail, a session, a listing,
			// a stream and a verification.
			require.NoError(t, store.Close())
			store, err = session.OpenFileStore(root, &session.FileStoreOptions{CompressArchive: tc.option})
			require.NoError(t, err)
			defer store.Close()
			log, err := store.Load(ctx, "s-c")
			require.NoError(t, err)
			want, err := session.DecodeLog(plain, nil)
			require.NoError(t, err)
			require.Equal(t, len(want.Entries), len(log.Entries))
			for i := range want.Entries {
				require.JSONEq(t, string(want.Entries[i].JSON()), string(log.Entries[i].JSON()))
			}
			tail, err := store.LoadTail(ctx, "s-c", 5, want.Entries[4].ID())
			require.NoError(t, err)
			require.Len(t, tail.Entries, len(want.Entries)-5)
			require.Equal(t, want.Entries[len(want.Entries)-1].ID(), tail.Entries[len(tail.Entries)-1].ID())
			s, err := session.Open(ctx, store, "s-c")
			require.NoError(t, err)
			require.JSONEq(t, string(msgs), string(must(json.Marshal(s.Context().Messages))))
			info := listAll(t, store, session.ListOptions{Archived: true})["s-c"]
			require.True(t, info.Archived)
			require.True(t, info.Compressed)
			require.Equal(t, len(want.Entries), info.Entries)
			require.Equal(t, int64(len(comp)), info.Size)
			require.NotContains(t, listAll(t, store, session.ListOptions{}), "s-c", "archived: not listed by default")
			streamed, err := session.ReadLog(bytes.NewReader(comp), nil)
			require.NoError(t, err)
			require.Len(t, streamed.Entries, len(want.Entries))
			findings, n, err := session.VerifyReader(ctx, bytes.NewReader(comp), store.Blobs(), nil)
			require.NoError(t, err)
			require.Empty(t, findings)
			require.Equal(t, len(want.Entries), n)

			var after []byte
			if tc.appendTo {
				e, err := s.Append(ctx, session.UserText("back to work"))
				require.NoError(t, err)
				require.NoError(t, s.Close())
				after = append(append(bytes.Clone(plain), e.JSON()...), '\n')
				require.False(t, listAll(t, store, session.ListOptions{Archived: true})["s-c"].Archived, "an append unarchives")
			} else {
				require.NoError(t, s.Close())
				require.NoError(t, store.Unarchive(ctx, "s-c"))
				after = plain
			}
			// Back out of the archive, plain, byte for byte what was
			// archived (and the new line).
			p, err := store.Path("s-c")
			require.NoError(t, err)
			require.NotContains(t, p, ".archive")
			require.Equal(t, string(after), string(must(os.ReadFile(p))))
			left, err := filepath.Glob(filepath.Join(root, ".archive", "--*--", "*"))
			require.NoError(t, err)
			require.Empty(t, left, "nothing left in the archive")
			info = listAll(t, store, session.ListOptions{})["s-c"]
			require.False(t, info.Compressed)
			require.False(t, info.Archived)
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestCompressedBesideAnotherStore: a store that held the session open
// (another process's view: its own descriptor and lock) appends after
// the session was archived and compressed under it; the append lands,
// once, in the plain file out of the archive.
func TestCompressedBesideAnotherStore(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	a, err := session.OpenFileStore(root, &session.FileStoreOptions{CompressArchive: true})
	require.NoError(t, err)
	defer a.Close()
	b, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer b.Close()
	compressFixture(t, a, "s-x", 5)
	held, err := session.Open(ctx, b, "s-x")
	require.NoError(t, err)
	_, err = held.Append(ctx, session.UserText("before"))
	require.NoError(t, err)
	require.NoError(t, held.Flush(ctx))
	require.NoError(t, a.Archive(ctx, "s-x"))
	require.True(t, bytes.HasPrefix(must(os.ReadFile(archivedFile(t, root, "s-x"))), zstdMagic))
	e, err := held.Append(ctx, session.UserText("after"))
	require.NoError(t, err)
	require.NoError(t, held.Close())
	log, err := a.Load(ctx, "s-x")
	require.NoError(t, err)
	var texts []string
	for _, x := range log.Entries {
		if m, err := x.Message(); err == nil && m != nil && m.Role == session.RoleUser {
			texts = append(texts, m.Text())
		}
	}
	require.Equal(t, []string{"before", "after"}, texts[len(texts)-2:])
	require.Equal(t, e.ID(), log.Entries[len(log.Entries)-1].ID())
	p, err := a.Path("s-x")
	require.NoError(t, err)
	require.NotContains(t, p, ".archive")
	require.False(t, bytes.HasPrefix(must(os.ReadFile(p)), zstdMagic))
}

// TestCompressedDamaged: a damaged or oversized compressed log is
// refused with a clear error and never changed, by reads or writes.
func TestCompressedDamaged(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
		limits session.Limits
		want   any
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }, session.Limits{}, new(*session.CorruptError)},
		{"flipped", func(b []byte) []byte { b[len(b)/2] ^= 0xff; return b }, session.Limits{}, new(*session.CorruptError)},
		{"over the limit", func(b []byte) []byte { return b }, session.Limits{MaxLogBytes: 20 << 10}, new(*session.LimitError)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "sessions")
			store, err := session.OpenFileStore(root, &session.FileStoreOptions{CompressArchive: true})
			require.NoError(t, err)
			compressFixture(t, store, "s-d", 20)
			require.NoError(t, store.Archive(ctx, "s-d"))
			require.NoError(t, store.Close())
			file := archivedFile(t, root, "s-d")
			bad := tc.damage(must(os.ReadFile(file)))
			require.NoError(t, os.WriteFile(file, bad, 0o600))

			store, err = session.OpenFileStore(root, &session.FileStoreOptions{Limits: tc.limits})
			require.NoError(t, err)
			defer store.Close()
			_, err = store.Load(ctx, "s-d")
			require.ErrorAs(t, err, tc.want)
			require.Contains(t, err.Error(), "s-d")
			_, err = session.Open(ctx, store, "s-d")
			require.Error(t, err)
			e, err := session.NewEntry("custom", "x1", "", time.Now(), map[string]string{"customType": "t"})
			require.NoError(t, err)
			require.Error(t, store.Append(ctx, "s-d", session.AppendOptions{}, e))
			err = store.Unarchive(ctx, "s-d")
			require.ErrorAs(t, err, tc.want)
			require.Equal(t, bad, must(os.ReadFile(archivedFile(t, root, "s-d"))), "left as it was")
		})
	}
}

// TestCompressedRewrite: a rewrite of a compressed session (a prune)
// writes it plain, in place, keeping it archived.
func TestCompressedRewrite(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	store, err := session.OpenFileStore(root, &session.FileStoreOptions{CompressArchive: true})
	require.NoError(t, err)
	defer store.Close()
	_, _ = compressFixture(t, store, "s-r", 10)
	require.NoError(t, store.Archive(ctx, "s-r"))
	log, err := store.Load(ctx, "s-r")
	require.NoError(t, err)
	err = store.Rewrite(ctx, "s-r", session.RewriteOptions{IfLast: log.Entries[len(log.Entries)-1].ID(), IfEntries: len(log.Entries)}, log.Header, log.Entries[:6])
	require.NoError(t, err)
	data := must(os.ReadFile(archivedFile(t, root, "s-r")))
	require.False(t, bytes.HasPrefix(data, zstdMagic))
	require.Equal(t, 7, strings.Count(string(data), "\n"))
	again, err := store.Load(ctx, "s-r")
	require.NoError(t, err)
	require.Len(t, again.Entries, 6)
	require.NoError(t, store.CompressArchived(ctx, "s-r"))
	again, err = store.Load(ctx, "s-r")
	require.NoError(t, err)
	require.Len(t, again.Entries, 6)
}

// TestCompressedOpenedByPath: a compressed log opened by its path, out
// of any store's tree, reads, and an append writes it back plain where
// it is.
func TestCompressedOpenedByPath(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	store, err := session.OpenFileStore(root, &session.FileStoreOptions{CompressArchive: true})
	require.NoError(t, err)
	plain, _ := compressFixture(t, store, "s-p", 4)
	require.NoError(t, store.Archive(ctx, "s-p"))
	require.NoError(t, store.Close())
	out := filepath.Join(t.TempDir(), "copy.jsonl")
	require.NoError(t, os.WriteFile(out, must(os.ReadFile(archivedFile(t, root, "s-p"))), 0o600))

	other, err := session.OpenFileStore(filepath.Join(t.TempDir(), "other"), nil)
	require.NoError(t, err)
	defer other.Close()
	s, err := other.OpenPath(ctx, out)
	require.NoError(t, err)
	require.Len(t, s.Log().Entries, strings.Count(string(plain), "\n")-1)
	e, err := s.Append(ctx, session.UserText("more"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.Equal(t, string(plain)+string(e.JSON())+"\n", string(must(os.ReadFile(out))))
}
