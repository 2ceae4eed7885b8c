package session_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// The collection's own cases; storetest runs the ones every store must
// pass (keeps, frees, grace, a concurrent writer).

func TestCollectBlobsNeedsACollector(t *testing.T) {
	hidden := struct{ session.Store }{session.NewMemoryStore()} // its blobs hidden
	_, err := session.CollectBlobs(context.Background(), hidden, nil)
	require.ErrorIs(t, err, session.ErrNoBlobCollector)
}

// movingStore runs move before its second listing: as if a session were
// appended to while a collection reads the pages.
type movingStore struct {
	*session.MemoryStore
	lists int
	move  func()
}

func (m *movingStore) List(ctx context.Context, opts session.ListOptions) (*session.ListPage, error) {
	if m.lists++; m.lists == 2 && m.move != nil {
		m.move()
	}
	return m.MemoryStore.List(ctx, opts)
}

// A session updated while a collection reads the pages of the listing
// moves to the first page, which was read already: the collection lists
// what was updated since, and keeps its blobs.
func TestCollectBlobsSessionMovesDuringListing(t *testing.T) {
	ctx := context.Background()
	mem := session.NewMemoryStore()
	ref, err := mem.PutBlob(ctx, []byte("referred to by the oldest session"))
	require.NoError(t, err)
	old, err := session.Create(ctx, mem, &session.CreateOptions{ID: "s-oldest", Cwd: "/w"})
	require.NoError(t, err)
	_, err = old.AppendCustom(ctx, "test.ref", map[string]string{"ref": ref})
	require.NoError(t, err)
	for i := range 700 { // more than a page of the collection's listing
		require.NoError(t, mem.Create(ctx, session.Header{Version: session.CurrentVersion, ID: fmt.Sprintf("s-newer-%03d", i), Cwd: "/w"}))
	}
	store := &movingStore{MemoryStore: mem, move: func() {
		_, err := old.AppendCustom(ctx, "test.note", "touched while listed")
		require.NoError(t, err)
	}}
	res, err := session.CollectBlobs(ctx, store, &session.CollectOptions{Grace: -1})
	require.NoError(t, err)
	require.Empty(t, res.Deleted)
	_, err = mem.GetBlob(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, 701, res.Sessions)
	require.GreaterOrEqual(t, store.lists, 3, "the listing of what changed meanwhile")
}

// failingStore cannot load one session.
type failingStore struct {
	*session.MemoryStore
	bad string
}

func (f *failingStore) Load(ctx context.Context, id string) (*session.Log, error) {
	if id == f.bad {
		return nil, &session.CorruptError{Line: 3, Err: errors.New("broken on purpose")}
	}
	return f.MemoryStore.Load(ctx, id)
}

// A session that cannot be read fails the collection, naming it, and
// nothing is deleted: what it refers to cannot be told.
func TestCollectBlobsUnreadableSession(t *testing.T) {
	ctx := context.Background()
	t.Run("load fails", func(t *testing.T) {
		mem := session.NewMemoryStore()
		garbage, err := mem.PutBlob(ctx, []byte("garbage"))
		require.NoError(t, err)
		for _, id := range []string{"s-good", "s-bad"} {
			require.NoError(t, mem.Create(ctx, session.Header{Version: session.CurrentVersion, ID: id, Cwd: "/w"}))
		}
		_, err = session.CollectBlobs(ctx, &failingStore{mem, "s-bad"}, &session.CollectOptions{Grace: -1})
		require.ErrorIs(t, err, session.ErrCorrupt)
		require.ErrorContains(t, err, "s-bad")
		_, err = mem.GetBlob(ctx, garbage)
		require.NoError(t, err, "deleted by a collection that failed")
	})
	t.Run("file store leaves it out of its listing", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "sessions")
		store := openFS(t, root, nil)
		ref, err := store.PutBlob(ctx, []byte("referred to by a session whose header broke"))
		require.NoError(t, err)
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-broken", Cwd: "/w"})
		require.NoError(t, err)
		_, err = s.AppendCustom(ctx, "test.ref", map[string]string{"ref": ref})
		require.NoError(t, err)
		require.NoError(t, s.Close())
		path, err := store.Path("s-broken")
		require.NoError(t, err)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		_, rest, _ := strings.Cut(string(data), "\n")
		require.NoError(t, os.WriteFile(path, []byte("not a header\n"+rest), 0o600))

		_, err = session.CollectBlobs(ctx, store, &session.CollectOptions{Grace: -1})
		require.ErrorContains(t, err, path)
		_, err = store.GetBlob(ctx, ref)
		require.NoError(t, err, "deleted by a collection that failed")
	})
}

// A manifest that cannot be read (corrupt) fails the collection; one
// that is missing is reported, and the collection goes on.
func TestCollectBlobsBrokenManifest(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	store := openFS(t, filepath.Join(base, "sessions"), nil)
	content, err := store.PutBlob(ctx, []byte("content"))
	require.NoError(t, err)
	manifest, err := store.PutBlob(ctx, []byte(`{"files":{"a":"`+content+`"}}`))
	require.NoError(t, err)
	garbage, err := store.PutBlob(ctx, []byte("garbage"))
	require.NoError(t, err)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-snap", Cwd: "/w"})
	require.NoError(t, err)
	_, err = s.AppendSnapshot(ctx, session.WorkspaceSnapshot{Snapshot: manifest})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	file := filepath.Join(base, "sessions", ".blobs", strings.TrimPrefix(manifest, session.BlobPrefix))
	require.NoError(t, os.WriteFile(file, []byte("damaged"), 0o600))
	_, err = session.CollectBlobs(ctx, store, &session.CollectOptions{Grace: -1})
	require.ErrorIs(t, err, session.ErrCorrupt)
	require.ErrorContains(t, err, manifest)
	require.ErrorContains(t, err, "s-snap")
	for _, ref := range []string{content, garbage} {
		_, err = store.GetBlob(ctx, ref)
		require.NoError(t, err, "deleted by a collection that failed")
	}

	// The way out: delete the damaged manifest, the snapshot is lost.
	require.NoError(t, store.DeleteBlob(ctx, manifest))
	res, err := session.CollectBlobs(ctx, store, &session.CollectOptions{Grace: -1})
	require.NoError(t, err)
	require.Equal(t, []string{manifest}, res.Missing)
	require.ElementsMatch(t, []string{content, garbage}, res.Deleted)
}

// A store OpenFile makes for a file outside any store reads a blob
// directory it does not own: it refuses to collect.
func TestCollectBlobsRefusedOnAFileAlone(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "session.jsonl")
	h := session.Header{Version: session.CurrentVersion, ID: "s-alone", Cwd: "/w", Timestamp: time.Now()}
	hb, err := h.MarshalJSON()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(hb, '\n'), 0o600))
	s, store, err := session.OpenFile(ctx, path, nil)
	require.NoError(t, err)
	defer store.Close()
	defer s.Close()
	_, err = session.CollectBlobs(ctx, store, nil)
	require.ErrorContains(t, err, "does not own")
}

// ListBlobs reports blob files only: not temporary files, other files,
// directories or symbolic links that happen to have a blob's name.
func TestBlobDirListsBlobsOnly(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "blobs")
	d := session.OpenBlobDir(dir, nil)
	ref, err := d.PutBlob(ctx, []byte("a blob"))
	require.NoError(t, err)
	name := strings.TrimPrefix(ref, session.BlobPrefix)
	other := strings.Repeat("ab", 32)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "."+name+".tmp-abc"), []byte("x"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("x"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, strings.ToUpper(other)), []byte("x"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, other), 0o700))
	_ = os.Symlink(filepath.Join(dir, name), filepath.Join(dir, strings.Repeat("cd", 32)))
	var got []session.BlobInfo
	require.NoError(t, d.ListBlobs(ctx, func(b session.BlobInfo) error { got = append(got, b); return nil }))
	require.Len(t, got, 1)
	require.Equal(t, ref, got[0].Ref)
	fi, err := os.Stat(filepath.Join(dir, name))
	require.NoError(t, err)
	require.Equal(t, fi.Size(), got[0].Size)
	require.True(t, fi.ModTime().Equal(got[0].Touched))

	stop := errors.New("stop")
	require.ErrorIs(t, d.ListBlobs(ctx, func(session.BlobInfo) error { return stop }), stop)
	missing := session.OpenBlobDir(filepath.Join(t.TempDir(), "none"), nil)
	require.NoError(t, missing.ListBlobs(ctx, func(session.BlobInfo) error { return stop }))
	_, err = missing.DeleteBlobIfOlder(ctx, ref, time.Now())
	require.NoError(t, err)
	require.ErrorIs(t, missing.DeleteBlob(ctx, ref), session.ErrNotFound)
	require.ErrorIs(t, d.DeleteBlob(ctx, "blob:sha256:../x"), session.ErrInvalidID)
}

// ---- A writer in another process ----

var refPattern = regexp.MustCompile(`blob:sha256:[0-9a-f]{64}`)

// gcPool is the content the child reuses, old and unreferenced when it
// starts.
func gcPool(i int) []byte { return []byte(fmt.Sprintf("pool content %d\n", i)) }

const gcPoolSize = 40

// checkSnapshots checks that every blob a snapshot recorded in session
// id refers to is in the store, and returns how many snapshots there are.
func checkSnapshots(t *testing.T, store *session.FileStore, id string) int {
	t.Helper()
	ctx := context.Background()
	log, err := store.Load(ctx, id)
	require.NoError(t, err)
	n := 0
	for _, e := range log.Entries {
		var c session.Custom
		if e.Type() != session.TypeCustom || e.Decode(&c) != nil || c.CustomType != session.CustomSnapshot {
			continue
		}
		var w session.WorkspaceSnapshot
		require.NoError(t, json.Unmarshal(c.Data, &w))
		manifest, err := store.GetBlob(ctx, w.Snapshot)
		require.NoError(t, err, "the manifest of a finished snapshot, entry %s", e.ID())
		for _, ref := range refPattern.FindAllString(string(manifest), -1) {
			_, err := store.GetBlob(ctx, ref)
			require.NoError(t, err, "content of a finished snapshot, entry %s", e.ID())
		}
		n++
	}
	return n
}

// gcWriter is a writer process of the tests below, driven line by line:
// it says what it did on its stdout, and waits on its stdin for the word
// to go on.
type gcWriter struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startGCWriter(t *testing.T, env ...string) *gcWriter {
	t.Helper()
	cmd := gcChild(t, env...)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	w := &gcWriter{t: t, cmd: cmd, in: in, out: bufio.NewScanner(out)}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return w
}

// expect reads the writer's next line, which must start with prefix, and
// returns the words after it.
func (w *gcWriter) expect(prefix string) []string {
	w.t.Helper()
	for w.out.Scan() {
		line := w.out.Text()
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			return strings.Fields(rest)
		}
		if strings.HasPrefix(line, "=== RUN") || strings.HasPrefix(line, "---") || line == "PASS" || line == "" {
			continue // the test binary's own lines
		}
		w.t.Fatalf("the writer said %q, want %q", line, prefix)
	}
	w.t.Fatalf("the writer ended (%v) before saying %q", w.out.Err(), prefix)
	return nil
}

// goOn lets the writer go on.
func (w *gcWriter) goOn() {
	w.t.Helper()
	_, err := io.WriteString(w.in, "go\n")
	require.NoError(w.t, err)
}

// A child process writes snapshots as the workspace package does
// (contents, some of them old content reused, then the manifest, then the
// entry), and stops between its puts and its append until this process
// says go on: as slow a writer as can be. Collections with no grace at
// all run in that gap, and, every other snapshot, from before the append
// to after it (the collection reads the session before the entry is
// there, and deletes after it is): no blob of a snapshot, finished or
// not yet appended, is ever missing. Without pins (only the grace) every
// one of those collections deleted the snapshot's blobs.
func TestCollectBlobsBesideAWriterProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	if !session.PinLocks {
		t.Skip("no pins across stores on this system")
	}
	ctx := context.Background()
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	store := openFS(t, root, nil)
	old := time.Now().Add(-time.Hour)
	for i := range gcPoolSize {
		ref, err := store.PutBlob(ctx, gcPool(i))
		require.NoError(t, err)
		require.NoError(t, os.Chtimes(filepath.Join(root, ".blobs", strings.TrimPrefix(ref, session.BlobPrefix)), old, old))
	}
	require.NoError(t, store.Close()) // its own puts: nothing pinned from here
	store = openFS(t, root, nil)
	const id = "s-gc-child"
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w"})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	const snapshots = 40
	w := startGCWriter(t, "AGENTSESSION_GC_CHILD=snapshots", "AGENTSESSION_ROOT="+root, "AGENTSESSION_ID="+id,
		"AGENTSESSION_EACH="+strconv.Itoa(snapshots))
	noGrace := &session.CollectOptions{Grace: -1}
	deleted := 0
	for i := range snapshots {
		put := w.expect("put ")
		require.Equal(t, strconv.Itoa(i), put[0])
		refs := put[1:] // the manifest, then its contents
		for range 2 {   // the writer is as slow as it gets: collections meanwhile
			res, err := session.CollectBlobs(ctx, store, noGrace)
			require.NoError(t, err)
			deleted += len(res.Deleted)
			for _, ref := range refs {
				_, err := store.GetBlob(ctx, ref)
				require.NoError(t, err, "snapshot %d, put and not yet appended: %s", i, ref)
			}
		}
		if i%2 == 0 {
			w.goOn()
			w.expect("appended " + strconv.Itoa(i))
			res, err := session.CollectBlobs(ctx, store, noGrace)
			require.NoError(t, err)
			deleted += len(res.Deleted)
		} else {
			// The append (and the pins' release) between the collection's
			// reading of the session and its deletes.
			marks := 0
			unset := session.SetCollectHook(func(string) {
				marks++
				w.goOn()
				w.expect("appended " + strconv.Itoa(i))
			})
			res, err := session.CollectBlobs(ctx, store, noGrace)
			unset()
			require.NoError(t, err)
			require.Equal(t, 1, marks)
			deleted += len(res.Deleted)
		}
		require.Equal(t, i+1, checkSnapshots(t, store, id))
	}
	require.NoError(t, w.in.Close())
	require.NoError(t, w.cmd.Wait(), "the writer")
	res, err := session.CollectBlobs(ctx, store, noGrace)
	require.NoError(t, err)
	require.Equal(t, snapshots, checkSnapshots(t, store, id))
	require.Positive(t, deleted, "the pool's content no snapshot reused is garbage")
	t.Logf("%d snapshots written by another process, %d blobs collected beside it (%d at the end)", snapshots, deleted, len(res.Deleted))
}

// A writer process killed (SIGKILL) between its put and its append: its
// pin dies with it, and the next collection reclaims the blob, as the
// garbage it is.
func TestCollectBlobsWriterKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	if !session.PinLocks {
		t.Skip("no pins across stores on this system")
	}
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	store := openFS(t, root, nil)
	w := startGCWriter(t, "AGENTSESSION_GC_CHILD=killed", "AGENTSESSION_ROOT="+root)
	ref := w.expect("put ")[0]
	noGrace := &session.CollectOptions{Grace: -1}
	res, err := session.CollectBlobs(ctx, store, noGrace)
	require.NoError(t, err)
	require.Empty(t, res.Deleted, "the writer lives: its blob is pinned")
	_, err = store.GetBlob(ctx, ref)
	require.NoError(t, err)

	require.NoError(t, w.cmd.Process.Kill()) // SIGKILL
	require.Error(t, w.cmd.Wait())
	res, err = session.CollectBlobs(ctx, store, noGrace)
	require.NoError(t, err)
	require.Equal(t, []string{ref}, res.Deleted, "the dead writer's blob")
	_, err = store.GetBlob(ctx, ref)
	require.ErrorIs(t, err, session.ErrNotFound)
	files, err := os.ReadDir(filepath.Join(root, ".blobs"))
	require.NoError(t, err)
	require.Empty(t, files, "nothing left behind")
}

func gcChild(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCollectBlobsChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// TestCollectBlobsChild is the writer of TestCollectBlobsBesideAWriterProcess
// and TestCollectBlobsWriterKilled, run as a process of its own; it does
// nothing in a normal run.
func TestCollectBlobsChild(t *testing.T) {
	mode := os.Getenv("AGENTSESSION_GC_CHILD")
	if mode == "" {
		t.Skip("run as a child process by TestCollectBlobsBesideAWriterProcess")
	}
	ctx := context.Background()
	store, err := session.OpenFileStore(os.Getenv("AGENTSESSION_ROOT"), nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	in := bufio.NewScanner(os.Stdin)
	if mode == "killed" {
		ref, err := store.PutBlob(ctx, []byte("put by a writer killed before its append"))
		if err != nil {
			panic(err)
		}
		fmt.Println("put", ref)
		in.Scan() // until killed
		return
	}
	s, err := session.Open(ctx, store, os.Getenv("AGENTSESSION_ID"))
	if err != nil {
		panic(err)
	}
	defer s.Close()
	each, _ := strconv.Atoi(os.Getenv("AGENTSESSION_EACH"))
	for i := range each {
		contents := [][]byte{gcPool(i % gcPoolSize), gcPool((i*7 + 3) % gcPoolSize), []byte(fmt.Sprintf("new content %d\n", i))}
		var m strings.Builder
		var refs []string
		m.WriteString(`{"files":[`)
		for k, c := range contents {
			ref, err := store.PutBlob(ctx, c)
			if err != nil {
				panic(err)
			}
			refs = append(refs, ref)
			if k > 0 {
				m.WriteByte(',')
			}
			fmt.Fprintf(&m, `{"path":"f%d","content":%q}`, k, ref)
		}
		m.WriteString(`]}`)
		manifest, err := store.PutBlob(ctx, []byte(m.String()))
		if err != nil {
			panic(err)
		}
		fmt.Println("put", i, manifest, strings.Join(refs, " "))
		if !in.Scan() || in.Text() != "go" {
			panic(fmt.Sprintf("no word to go on: %q %v", in.Text(), in.Err()))
		}
		if _, err := s.AppendSnapshot(ctx, session.WorkspaceSnapshot{Snapshot: manifest, Files: len(contents)}); err != nil {
			panic(err)
		}
		if err := s.Flush(ctx); err != nil {
			panic(err)
		}
		fmt.Println("appended", i)
	}
}

// A session a FileStore opened by path outside its tree is read by the
// store's collections too.
func TestCollectBlobsReadsSessionsOpenedByPath(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	store := openFS(t, filepath.Join(base, "sessions"), nil)
	ref, err := store.PutBlob(ctx, []byte("referred to by a session outside the tree"))
	require.NoError(t, err)
	h := session.Header{Version: session.CurrentVersion, ID: "s-outside", Cwd: "/w", Timestamp: time.Now()}
	hb, err := h.MarshalJSON()
	require.NoError(t, err)
	e, err := session.NewEntry("test.ref", "e1", "", time.Now(), map[string]string{"ref": ref})
	require.NoError(t, err)
	path := filepath.Join(base, "elsewhere.jsonl")
	require.NoError(t, os.WriteFile(path, append(append(append(hb, '\n'), e.JSON()...), '\n'), 0o600))
	s, err := store.OpenPath(ctx, path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	res, err := session.CollectBlobs(ctx, store, &session.CollectOptions{Grace: -1})
	require.NoError(t, err)
	require.Empty(t, res.Deleted)
	require.Equal(t, 1, res.Sessions)
}

// The pins of writers in this process: a collection honours those of
// another store (another OpenFileStore of the root), and, on its own
// store, those taken with PinBlobs; an append that refers to a blob
// releases its pin (and those of what the blob refers to, a manifest's
// contents); Close releases a store's pins.
func TestCollectBlobsPinsInProcess(t *testing.T) {
	if !session.PinLocks {
		t.Skip("no pins across stores on this system")
	}
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	collector := openFS(t, root, nil)
	writer := openFS(t, root, nil)
	noGrace := &session.CollectOptions{Grace: -1}
	collect := func(store session.Store) *session.CollectResult {
		t.Helper()
		res, err := session.CollectBlobs(ctx, store, noGrace)
		require.NoError(t, err)
		return res
	}
	have := func(want bool, refs ...string) {
		t.Helper()
		for _, ref := range refs {
			_, err := collector.GetBlob(ctx, ref)
			if want {
				require.NoError(t, err, ref)
			} else {
				require.ErrorIs(t, err, session.ErrNotFound, ref)
			}
		}
	}

	// Another store's put: pinned until its append, which releases the
	// manifest and its contents.
	c1, err := writer.PutBlob(ctx, []byte("content one"))
	require.NoError(t, err)
	c2, err := writer.PutBlob(ctx, []byte("content two"))
	require.NoError(t, err)
	m, err := writer.PutBlob(ctx, []byte(`{"files":{"a":"`+c1+`","b":"`+c2+`"}}`))
	require.NoError(t, err)
	require.Empty(t, collect(collector).Deleted)
	have(true, c1, c2, m)
	s, err := session.Create(ctx, writer, &session.CreateOptions{ID: "s-pins", Cwd: "/w"})
	require.NoError(t, err)
	_, err = s.AppendSnapshot(ctx, session.WorkspaceSnapshot{Snapshot: m, Files: 2})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.Empty(t, collect(collector).Deleted, "referred to")
	require.NoError(t, writer.Delete(ctx, "s-pins"))
	require.ElementsMatch(t, []string{c1, c2, m}, collect(collector).Deleted, "released by the append: garbage once the session is gone")

	// Garbage another store put and never referred to: pinned while that
	// store is open, collected once it is closed.
	g, err := writer.PutBlob(ctx, []byte("put, never referred to"))
	require.NoError(t, err)
	require.Empty(t, collect(collector).Deleted)
	require.NoError(t, writer.Close())
	require.Equal(t, []string{g}, collect(collector).Deleted)

	// The store's own put is not pinned for its own collection; PinBlobs
	// is, until the append that refers to it.
	own, err := collector.PutBlob(ctx, []byte("the collector's own garbage"))
	require.NoError(t, err)
	require.Equal(t, []string{own}, collect(collector).Deleted)
	held := session.BlobRef([]byte("pinned by the collector's own writer"))
	require.NoError(t, collector.PinBlobs(ctx, held))
	_, err = collector.PutBlob(ctx, []byte("pinned by the collector's own writer"))
	require.NoError(t, err)
	require.Empty(t, collect(collector).Deleted)
	have(true, held)
	s, err = session.Create(ctx, collector, &session.CreateOptions{ID: "s-held", Cwd: "/w"})
	require.NoError(t, err)
	_, err = s.AppendCustom(ctx, "test.ref", map[string]string{"ref": held})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, collector.Delete(ctx, "s-held"))
	require.Equal(t, []string{held}, collect(collector).Deleted, "released by the append")

	// ReleaseBlobs, for a writer that gives up.
	require.NoError(t, collector.PinBlobs(ctx, held))
	_, err = collector.PutBlob(ctx, []byte("pinned by the collector's own writer"))
	require.NoError(t, err)
	require.Empty(t, collect(collector).Deleted)
	require.NoError(t, collector.ReleaseBlobs(ctx, held))
	require.Equal(t, []string{held}, collect(collector).Deleted)
	require.ErrorIs(t, collector.PinBlobs(ctx, "blob:sha256:nope"), session.ErrInvalidID)
}

// A collection that read the sessions before the writer's append, and
// deletes after it (the pin released meanwhile), spares the blob: the
// release refreshed its time. On a MemoryStore, with PinBlobs.
func TestCollectBlobsReleaseDuringCollection(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"memory", "file"} {
		t.Run(kind, func(t *testing.T) {
			var store session.Store = session.NewMemoryStore()
			var writer session.BlobStore
			if kind == "file" {
				if !session.PinLocks {
					t.Skip("no pins across stores on this system")
				}
				root := filepath.Join(t.TempDir(), "sessions")
				store = openFS(t, root, nil)
				writer = openFS(t, root, nil)
			} else {
				writer = store.(session.BlobStore)
			}
			data := []byte("put before the collection, referred to during it")
			ref := session.BlobRef(data)
			if kind == "memory" {
				require.NoError(t, store.(session.BlobPinner).PinBlobs(ctx, ref))
			}
			_, err := writer.PutBlob(ctx, data)
			require.NoError(t, err)
			s, err := session.Create(ctx, writer.(session.Store), &session.CreateOptions{ID: "s-late", Cwd: "/w"})
			require.NoError(t, err)
			defer s.Close()
			// Pinned: a collection now spares it.
			res, err := session.CollectBlobs(ctx, store, &session.CollectOptions{Grace: -1})
			require.NoError(t, err)
			require.Empty(t, res.Deleted)
			unset := session.SetCollectHook(func(string) {
				_, err := s.AppendCustom(ctx, "test.ref", map[string]string{"ref": ref})
				require.NoError(t, err)
				require.NoError(t, s.Flush(ctx))
			})
			res, err = session.CollectBlobs(ctx, store, &session.CollectOptions{Grace: -1})
			unset()
			require.NoError(t, err)
			require.Empty(t, res.Deleted, "released after the collection read the session")
			_, err = writer.GetBlob(ctx, ref)
			require.NoError(t, err)
			res, err = session.CollectBlobs(ctx, store, &session.CollectOptions{Grace: -1})
			require.NoError(t, err)
			require.Empty(t, res.Deleted)
			require.Equal(t, 1, res.Kept)
		})
	}
}
