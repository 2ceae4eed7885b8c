package session_test

// A session file's name changes only under its lock, and who holds the
// lock checks the name leads to its file (lockAtName): several stores on
// one root (each another process's view: its own descriptors and locks)
// moving, compressing, rewriting and appending to one session. From an
// independent review of the compressed archives.

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
)

// twoStores opens two stores on root (the second with opts), closed
// when the test ends.
func twoStores(t *testing.T, root string, opts *session.FileStoreOptions) (a, b *session.FileStore) {
	t.Helper()
	a, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	b, err = session.OpenFileStore(root, opts)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return a, b
}

// A v1 log archived and compressed: Load must not spin.
func TestNameLockCompressedV1Load(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-v1", Cwd: "/w"})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	p, err := store.Path("s-v1")
	require.NoError(t, err)
	require.NoError(t, store.Close())
	v1 := `{"type":"session","version":1,"id":"s-v1","timestamp":"2025-01-01T00:00:00Z","cwd":"/w"}` + "\n" +
		`{"type":"message","timestamp":"2025-01-01T00:00:01Z","message":{"role":"user","content":"hi"}}` + "\n"
	require.NoError(t, os.WriteFile(p, []byte(v1), 0o600))

	store, err = session.OpenFileStore(root, &session.FileStoreOptions{CompressArchive: true})
	require.NoError(t, err)
	require.NoError(t, store.Archive(ctx, "s-v1"))
	t.Logf("files: %v", sessionFiles(t, root)["s-v1"])
	done := make(chan error, 1)
	go func() { _, err := store.Load(ctx, "s-v1"); done <- err }()
	select {
	case err := <-done:
		store.Close()
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Load of a compressed v1 archive did not return in 5s (migrate loop)")
	}
}

// Store a holds the session open; store b archives it (plain); a rewrites.
func TestNameLockRewriteAfterOtherArchive(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	a, b := twoStores(t, root, nil)
	s, err := session.Create(ctx, a, &session.CreateOptions{ID: "s-rw", Cwd: "/w"})
	require.NoError(t, err)
	_, err = s.Append(ctx, session.UserText("one"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	log, err := a.Load(ctx, "s-rw") // a keeps the file open
	require.NoError(t, err)
	require.NoError(t, b.Archive(ctx, "s-rw"))
	err = a.Rewrite(ctx, "s-rw", session.RewriteOptions{}, log.Header, log.Entries)
	t.Logf("rewrite: %v", err)
	files := sessionFiles(t, root)["s-rw"]
	require.Len(t, files, 1, "session in one file: %v", files)
}

// Store a holds an empty session open; store b archives it; a appends the
// first turn (appendWhole).
func TestNameLockAppendWholeAfterOtherArchive(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	a, b := twoStores(t, root, nil)
	s, err := session.Create(ctx, a, &session.CreateOptions{ID: "s-aw", Cwd: "/w"})
	require.NoError(t, err)
	_, err = a.Load(ctx, "s-aw")
	require.NoError(t, err)
	require.NoError(t, b.Archive(ctx, "s-aw"))
	err = s.SaveTurn(ctx, workload.Messages(0, 1), nil)
	t.Logf("append: %v", err)
	files := sessionFiles(t, root)["s-aw"]
	require.Len(t, files, 1, "session in one file: %v", files)
}

// Store a appended (its listing entry not yet made); b archives and
// compresses; a loads it and lists: the listing must say compressed.
func TestNameLockListAfterOtherCompress(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	a, b := twoStores(t, root, &session.FileStoreOptions{CompressArchive: true})
	s, err := session.Create(ctx, a, &session.CreateOptions{ID: "s-l", Cwd: "/w"})
	require.NoError(t, err)
	_, err = s.Append(ctx, session.UserText("x"))
	require.NoError(t, err)
	p, _ := a.Path("s-l")
	plain, _ := os.ReadFile(p)
	require.NoError(t, b.Archive(ctx, "s-l"))
	comp, _ := os.ReadFile(sessionFiles(t, root)["s-l"][0])
	t.Logf("plain %d compressed %d", len(plain), len(comp))
	_, err = a.Load(ctx, "s-l")
	require.NoError(t, err)
	info := listAll(t, a, session.ListOptions{Archived: true})["s-l"]
	t.Logf("info: %+v", info)
	require.True(t, info.Compressed)
	require.Equal(t, 1, info.Entries)
}

// Store a knows the session archived (file open); b unarchives it; a's
// CompressArchived must not compress the live file.
func TestNameLockCompressAfterOtherUnarchive(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	a, b := twoStores(t, root, nil)
	s, err := session.Create(ctx, a, &session.CreateOptions{ID: "s-u", Cwd: "/w"})
	require.NoError(t, err)
	_, err = s.Append(ctx, session.UserText("x"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, a.Archive(ctx, "s-u"))
	_, err = a.Load(ctx, "s-u") // a holds the archived file open
	require.NoError(t, err)
	require.NoError(t, b.Unarchive(ctx, "s-u"))
	err = a.CompressArchived(ctx, "s-u")
	files := sessionFiles(t, root)["s-u"]
	data, _ := os.ReadFile(files[0])
	t.Logf("CompressArchived: %v; files %v; head %x", err, files, data[:4])
	require.NotContains(t, files[0], ".archive")
	require.Equal(t, byte('{'), data[0], "a live session was compressed")
}

// Store a (SyncNever) has the session open at its live name; b archives
// it; a appends (gathered under the lease) and archives at once: the
// appended entry must survive.
func TestNameLockPendingDroppedByLockAtName(t *testing.T) {
	ctx := context.Background()
	lost := 0
	for i := 0; i < 20; i++ {
		root := filepath.Join(t.TempDir(), "sessions")
		a, err := session.OpenFileStore(root, &session.FileStoreOptions{Sync: session.SyncNever})
		require.NoError(t, err)
		b, err := session.OpenFileStore(root, nil)
		require.NoError(t, err)
		s, err := session.Create(ctx, a, &session.CreateOptions{ID: "s-p", Cwd: "/w"})
		require.NoError(t, err)
		_, err = s.Append(ctx, session.UserText("one"))
		require.NoError(t, err)
		require.NoError(t, s.Flush(ctx))
		time.Sleep(5 * time.Millisecond) // lease over
		require.NoError(t, b.Archive(ctx, "s-p"))
		e, err := s.Append(ctx, session.UserText("two"))
		require.NoError(t, err)
		require.NoError(t, a.Archive(ctx, "s-p"))
		require.NoError(t, a.Close())
		c, err := session.OpenFileStore(root, nil)
		require.NoError(t, err)
		log, err := c.Load(ctx, "s-p")
		require.NoError(t, err)
		if log.Entries[len(log.Entries)-1].ID() != e.ID() {
			lost++
		}
		c.Close()
		b.Close()
	}
	require.Zero(t, lost, "acknowledged appends lost in %d of 20 runs", lost)
}

// A v1 log compressed by hand (or by anything that did not migrate it)
// in the archive: it loads, migrated and written back plain.
func TestNameLockHandCompressedV1(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-h1", Cwd: "/w"})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, store.Archive(ctx, "s-h1"))
	p, err := store.Path("s-h1")
	require.NoError(t, err)
	require.NoError(t, store.Close())
	v1 := `{"type":"session","version":1,"id":"s-h1","timestamp":"2025-01-01T00:00:00Z","cwd":"/w"}` + "\n" +
		`{"type":"message","timestamp":"2025-01-01T00:00:01Z","message":{"role":"user","content":"hi"}}` + "\n"
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, enc.EncodeAll([]byte(v1), nil), 0o600))

	store, err = session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	log, err := store.Load(ctx, "s-h1")
	require.NoError(t, err)
	require.Len(t, log.Entries, 1)
	data := must(os.ReadFile(p))
	require.Equal(t, byte('{'), data[0], "migrated, written plain")
	require.NoError(t, store.CompressArchived(ctx, "s-h1"))
	log, err = store.Load(ctx, "s-h1")
	require.NoError(t, err)
	require.Len(t, log.Entries, 1)
}

// Sweep's Compress through ForUser and Observe reaches the FileStore.
func TestNameLockCompressThroughWrappers(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	fs, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer fs.Close()
	user, err := session.ForUser(fs, "ann")
	require.NoError(t, err)
	nop := session.ObserverFunc(func(context.Context, session.Event) {})
	for _, store := range []session.Store{user, session.Observe(fs, nop)} {
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-w", Cwd: "/w"})
		require.NoError(t, err)
		_, err = s.Append(ctx, session.UserText("x"))
		require.NoError(t, err)
		require.NoError(t, s.Close())
		res, err := session.Sweep(ctx, store, &session.SweepPolicy{OlderThan: time.Hour, ArchiveOnly: true, Compress: true,
			Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
		require.NoError(t, err)
		require.Empty(t, res.Errors)
		require.Equal(t, []string{"s-w"}, res.Compressed)
		require.NoError(t, store.Delete(ctx, "s-w"))
	}
}
