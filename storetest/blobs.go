package storetest

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

// The cases for stores that keep blobs (session.BlobsOf): round trips and
// the time a put refreshes; and for those that can list and delete them
// (session.BlobCollector), garbage collection (session.CollectBlobs).
// They skip on stores that keep none.

func blobsOf(t *testing.T, s session.Store) session.BlobStore {
	t.Helper()
	b, ok := session.BlobsOf(s)
	if !ok {
		t.Skipf("%T keeps no blobs (session.BlobsOf finds no session.BlobStore): blob cases not checked", s)
	}
	return b
}

func collectorOf(t *testing.T, s session.Store) (session.BlobStore, session.BlobCollector) {
	t.Helper()
	b := blobsOf(t, s)
	c, ok := b.(session.BlobCollector)
	if !ok {
		t.Skipf("%T is no session.BlobCollector: CollectBlobs not checked", b)
	}
	return b, c
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = crand.Read(b)
	return b
}

func put(t *testing.T, b session.BlobStore, data []byte) string {
	t.Helper()
	ref, err := b.PutBlob(context.Background(), data)
	if err != nil {
		t.Fatalf("PutBlob: %v", err)
	}
	return ref
}

// listBlobs returns the store's blobs by reference.
func listBlobs(t *testing.T, c session.BlobCollector) map[string]session.BlobInfo {
	t.Helper()
	out := map[string]session.BlobInfo{}
	err := c.ListBlobs(context.Background(), func(b session.BlobInfo) error {
		if _, dup := out[b.Ref]; dup {
			return fmt.Errorf("blob %s listed twice", b.Ref)
		}
		out[b.Ref] = b
		return nil
	})
	if err != nil {
		t.Fatalf("ListBlobs: %v", err)
	}
	return out
}

func testBlobs(t *testing.T, s session.Store) {
	b := blobsOf(t, s)
	ctx := context.Background()
	data := randomBytes(3000)
	ref := put(t, b, data)
	if ref != session.BlobRef(data) {
		t.Fatalf("PutBlob returned %s, want %s", ref, session.BlobRef(data))
	}
	got, err := b.GetBlob(ctx, ref)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("GetBlob: %d bytes, %v; want the %d put", len(got), err, len(data))
	}
	if again := put(t, b, slices.Clone(data)); again != ref {
		t.Fatalf("the same bytes put again: %s, want %s", again, ref)
	}
	other := put(t, b, []byte("other content"))
	empty := put(t, b, nil)
	if got, err := b.GetBlob(ctx, empty); err != nil || len(got) != 0 {
		t.Fatalf("GetBlob of the empty blob: %q, %v", got, err)
	}
	if _, err := b.GetBlob(ctx, session.BlobRef([]byte("never stored"))); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("GetBlob of a blob never put: %v, want ErrNotFound", err)
	}
	if _, err := b.GetBlob(ctx, "blob:sha256:../../etc/passwd"); err == nil {
		t.Fatal("GetBlob of a malformed reference succeeded")
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.PutBlob(canceled, []byte("late")); err == nil {
		t.Fatal("PutBlob with a canceled context succeeded")
	}
	c, ok := b.(session.BlobCollector)
	if !ok {
		return
	}
	listed := listBlobs(t, c)
	want := []string{ref, other, empty}
	slices.Sort(want)
	refs := slices.Sorted(maps.Keys(listed))
	if !slices.Equal(refs, want) {
		t.Fatalf("ListBlobs: %v, want one of each blob put: %v", refs, want)
	}
	if listed[ref].Size <= 0 || listed[ref].Touched.IsZero() {
		t.Fatalf("ListBlobs: %+v, want a size and a time", listed[ref])
	}
	if err := c.DeleteBlob(ctx, other); err != nil {
		t.Fatalf("DeleteBlob: %v", err)
	}
	if _, err := b.GetBlob(ctx, other); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("GetBlob after DeleteBlob: %v, want ErrNotFound", err)
	}
	if err := c.DeleteBlob(ctx, other); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("DeleteBlob of a deleted blob: %v, want ErrNotFound", err)
	}
	if again := put(t, b, []byte("other content")); again != other {
		t.Fatal("a deleted blob put again has another reference")
	}
	if got, err := b.GetBlob(ctx, other); err != nil || string(got) != "other content" {
		t.Fatalf("GetBlob of a blob put again after its delete: %q, %v", got, err)
	}
}

// A put of bytes already stored refreshes the blob's Touched time: what
// keeps a collection beside a writer from taking content the writer
// reuses.
func testBlobTouch(t *testing.T, s session.Store) {
	b, c := collectorOf(t, s)
	ref := put(t, b, []byte("reused content"))
	first := listBlobs(t, c)[ref].Touched
	time.Sleep(20 * time.Millisecond)
	put(t, b, []byte("reused content"))
	second := listBlobs(t, c)[ref].Touched
	if second.Equal(first) {
		// A store whose times are whole seconds (S3's LastModified):
		// once more, in the next second.
		time.Sleep(1100 * time.Millisecond)
		put(t, b, []byte("reused content"))
		second = listBlobs(t, c)[ref].Touched
	}
	if !second.After(first) {
		t.Fatalf("Touched after a second put: %v, want later than %v", second, first)
	}
	sw, ok := b.(session.BlobSweeper)
	if !ok {
		without(t, b, "session.BlobSweeper", "DeleteBlobIfOlder")
	}
	if ok {
		ctx := context.Background()
		if deleted, err := sw.DeleteBlobIfOlder(ctx, ref, second); err != nil || deleted {
			t.Fatalf("DeleteBlobIfOlder with the cutoff at its time: deleted %v, %v; want it kept", deleted, err)
		}
		if deleted, err := sw.DeleteBlobIfOlder(ctx, ref, second.Add(time.Millisecond)); err != nil || !deleted {
			t.Fatalf("DeleteBlobIfOlder with the cutoff after its time: deleted %v, %v; want it deleted", deleted, err)
		}
		if deleted, err := sw.DeleteBlobIfOlder(ctx, ref, time.Now().Add(time.Hour)); err != nil || deleted {
			t.Fatalf("DeleteBlobIfOlder of a deleted blob: deleted %v, %v", deleted, err)
		}
	}
}

// archiver returns the store's Archive method, looking through wrappers.
func archiver(s session.Store) func(context.Context, string) error {
	for {
		if a, ok := s.(interface {
			Archive(context.Context, string) error
		}); ok {
			return a.Archive
		}
		u, ok := s.(interface{ Unwrap() session.Store })
		if !ok {
			return nil
		}
		s = u.Unwrap()
	}
}

// snapshot puts contents and a manifest that lists them, and returns the
// manifest's reference.
func snapshot(t *testing.T, b session.BlobStore, contents ...string) (manifest string, refs []string) {
	t.Helper()
	var m bytes.Buffer
	m.WriteString(`{"files":[`)
	for i, c := range contents {
		ref := put(t, b, []byte(c))
		refs = append(refs, ref)
		if i > 0 {
			m.WriteByte(',')
		}
		fmt.Fprintf(&m, `{"path":"f%d","content":%q}`, i, ref)
	}
	m.WriteString(`]}`)
	return put(t, b, m.Bytes()), refs
}

func collect(t *testing.T, s session.Store, opts *session.CollectOptions) *session.CollectResult {
	t.Helper()
	res, err := session.CollectBlobs(context.Background(), s, opts)
	if err != nil {
		t.Fatalf("CollectBlobs(%+v): %v", opts, err)
	}
	return res
}

func mustHave(t *testing.T, b session.BlobStore, what string, refs ...string) {
	t.Helper()
	for _, ref := range refs {
		if _, err := b.GetBlob(context.Background(), ref); err != nil {
			t.Fatalf("%s %s: %v", what, ref, err)
		}
	}
}

func mustNotHave(t *testing.T, b session.BlobStore, what string, refs ...string) {
	t.Helper()
	for _, ref := range refs {
		if _, err := b.GetBlob(context.Background(), ref); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("%s %s: %v, want ErrNotFound", what, ref, err)
		}
	}
}

// CollectBlobs keeps what sessions refer to (in entries, through the
// manifests of workspace snapshots, Snapshot and Previous, in archived
// sessions), spares young unreferenced blobs (the grace), and deletes
// old unreferenced ones.
func testCollectBlobs(t *testing.T, s session.Store) {
	b, _ := collectorOf(t, s)
	ctx := context.Background()
	sess, err := session.Create(ctx, s, &session.CreateOptions{ID: "s-gc-keep", Cwd: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	direct := put(t, b, []byte("referred to from a custom entry"))
	if _, err := sess.AppendCustom(ctx, "storetest.blobref", map[string]string{"ref": direct}); err != nil {
		t.Fatal(err)
	}
	// An image: a store may move it to a blob of its own, and put its
	// data back when it reads the session (FileStore).
	img := randomBytes(4096)
	if _, err := sess.Append(ctx, session.User(session.Text("look"), session.Image("image/png", img))); err != nil {
		t.Fatal(err)
	}
	m1, c1 := snapshot(t, b, "package main\n", "first version\n")
	if _, err := sess.AppendSnapshot(ctx, session.WorkspaceSnapshot{Snapshot: m1, Files: 2}); err != nil {
		t.Fatal(err)
	}
	m2, c2 := snapshot(t, b, "package main\n", "second version\n")
	if _, err := sess.AppendSnapshot(ctx, session.WorkspaceSnapshot{Snapshot: m2, Files: 1}); err != nil {
		t.Fatal(err)
	}
	// A revert back to m1: the workspace held mPrev before it, named
	// only as Previous.
	mPrev, cPrev := snapshot(t, b, "a change made outside the agent\n")
	if _, err := sess.AppendSnapshot(ctx, session.WorkspaceSnapshot{Kind: session.SnapshotRevert, Snapshot: m1, Previous: mPrev}); err != nil {
		t.Fatal(err)
	}
	// References to blobs the store does not have: an entry's, and a
	// snapshot's whose manifest is missing.
	lost := session.BlobRef([]byte("lost content"))
	lostManifest := session.BlobRef([]byte("lost manifest"))
	if _, err := sess.AppendCustom(ctx, "storetest.blobref", map[string]string{"ref": lost}); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.AppendSnapshot(ctx, session.WorkspaceSnapshot{Snapshot: lostManifest}); err != nil {
		t.Fatal(err)
	}
	if err := sess.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	kept := slices.Concat([]string{direct, m1, m2, mPrev}, c1, c2, cPrev)

	var archived []string
	if archive := archiver(s); archive != nil {
		as, err := session.Create(ctx, s, &session.CreateOptions{ID: "s-gc-archived", Cwd: "/work"})
		if err != nil {
			t.Fatal(err)
		}
		ma, ca := snapshot(t, b, "archived content\n")
		if _, err := as.AppendSnapshot(ctx, session.WorkspaceSnapshot{Snapshot: ma}); err != nil {
			t.Fatal(err)
		}
		if err := as.Close(); err != nil {
			t.Fatal(err)
		}
		if err := archive(ctx, "s-gc-archived"); err != nil {
			t.Fatal(err)
		}
		archived = append([]string{ma}, ca...)
	}
	garbage := []string{put(t, b, []byte("nobody refers to this")), put(t, b, randomBytes(2000))}
	slices.Sort(garbage)

	// The default grace (an hour) spares what was just put.
	res := collect(t, s, nil)
	if len(res.Deleted) != 0 || res.Young < len(garbage) {
		t.Fatalf("collection within the grace: deleted %v, young %d; want nothing deleted, %d young", res.Deleted, res.Young, len(garbage))
	}
	mustHave(t, b, "within the grace, unreferenced blob", garbage...)
	if want := []string{lost, lostManifest}; !slices.Equal(res.Missing, sortedCopy(want)) {
		t.Fatalf("Missing: %v, want %v", res.Missing, sortedCopy(want))
	}

	// A dry run lists, and deletes nothing.
	res = collect(t, s, &session.CollectOptions{Grace: -1, DryRun: true})
	if !slices.Equal(res.Deleted, garbage) {
		t.Fatalf("dry run: would delete %v, want %v", res.Deleted, garbage)
	}
	mustHave(t, b, "after a dry run, blob", garbage...)

	res = collect(t, s, &session.CollectOptions{Grace: -1})
	if !slices.Equal(res.Deleted, garbage) || res.DeletedBytes <= 0 {
		t.Fatalf("collection: deleted %v (%d bytes), want %v", res.Deleted, res.DeletedBytes, garbage)
	}
	mustNotHave(t, b, "collected blob", garbage...)
	mustHave(t, b, "referenced blob", kept...)
	mustHave(t, b, "blob of an archived session", archived...)
	if want := 1 + min(len(archived), 1); res.Sessions != want || res.Manifests != 3+min(len(archived), 1) || res.Young != 0 {
		t.Fatalf("collection: %d sessions read, %d manifests, %d young; want %d sessions, %d manifests, none young",
			res.Sessions, res.Manifests, res.Young, want, 3+min(len(archived), 1))
	}
	if res.Kept < len(kept)-2 { // contents shared by snapshots are one blob
		t.Fatalf("collection: %d blobs kept, want at least %d", res.Kept, len(kept)-2)
	}
	// The image, wherever the store keeps it, reads back whole.
	log := load(t, s, "s-gc-keep")
	found := false
	for _, e := range log.Entries {
		if m, err := e.Message(); err == nil && m != nil {
			for _, blk := range m.Content {
				if blk.Type == session.BlockImage {
					found = found || blk.Data == base64.StdEncoding.EncodeToString(img)
				}
			}
		}
	}
	if !found {
		t.Fatal("the image does not read back after a collection")
	}
	// Nothing left to collect.
	if res := collect(t, s, &session.CollectOptions{Grace: -1}); len(res.Deleted) != 0 {
		t.Fatalf("second collection deleted %v", res.Deleted)
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// A session's blobs are freed once it is deleted, but for those another
// session shares.
func testCollectDeletedSession(t *testing.T, s session.Store) {
	b, _ := collectorOf(t, s)
	ctx := context.Background()
	write := func(id string, contents ...string) (string, []string) {
		sess, err := session.Create(ctx, s, &session.CreateOptions{ID: id, Cwd: "/work"})
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		m, refs := snapshot(t, b, contents...)
		if _, err := sess.AppendSnapshot(ctx, session.WorkspaceSnapshot{Snapshot: m}); err != nil {
			t.Fatal(err)
		}
		if err := sess.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		return m, refs
	}
	m1, c1 := write("s-gc-one", "own content\n", "shared content\n")
	m2, c2 := write("s-gc-two", "shared content\n")
	if err := s.Delete(ctx, "s-gc-one"); err != nil {
		t.Fatal(err)
	}
	res := collect(t, s, &session.CollectOptions{Grace: -1})
	if want := sortedCopy([]string{m1, c1[0]}); !slices.Equal(res.Deleted, want) {
		t.Fatalf("after deleting one session: deleted %v, want its own blobs %v", res.Deleted, want)
	}
	mustHave(t, b, "blob of the remaining session", append([]string{m2}, c2...)...)
	if err := s.Delete(ctx, "s-gc-two"); err != nil {
		t.Fatal(err)
	}
	res = collect(t, s, &session.CollectOptions{Grace: -1})
	if want := sortedCopy([]string{m2, c2[0]}); !slices.Equal(res.Deleted, want) || res.Sessions != 0 {
		t.Fatalf("after deleting both: deleted %v, %d sessions read; want %v, none", res.Deleted, res.Sessions, want)
	}
}

// A writer puts blobs, some of them old and unreferenced (content
// reused from long ago), then a manifest, then appends the snapshot
// entry, while collections run beside it with a short grace: no blob a
// snapshot refers to is ever deleted. Then the worst interleaving, made
// on purpose: the put again and the append come after a collection
// listed the old blob as garbage and before it deletes it.
func testCollectConcurrentWriter(t *testing.T, s session.Store) {
	b, c := collectorOf(t, s)
	ctx := context.Background()
	const grace = time.Second
	var pool []string
	for i := range 200 {
		pool = append(pool, fmt.Sprintf("old content %d\n", i))
		put(t, b, []byte(pool[i]))
	}
	time.Sleep(grace + 100*time.Millisecond) // the pool is now old, and no session refers to it
	sess, err := session.Create(ctx, s, &session.CreateOptions{ID: "s-gc-writer", Cwd: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()

	type snap struct {
		manifest string
		contents []string
	}
	var (
		wg        sync.WaitGroup
		done      = make(chan struct{})
		snaps     []snap
		rounds    int
		collected int
	)
	wg.Go(func() {
		defer close(done)
		for i := range 40 {
			m, refs := snapshot(t, b, pool[(i*37)%len(pool)], fmt.Sprintf("new content %d\n", i), pool[(i*101+7)%len(pool)],
				pool[len(pool)-1-i])
			if _, err := sess.AppendSnapshot(ctx, session.WorkspaceSnapshot{Snapshot: m}); err != nil {
				t.Error(err)
				return
			}
			snaps = append(snaps, snap{m, refs})
		}
	})
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			res, err := session.CollectBlobs(ctx, s, &session.CollectOptions{Grace: grace})
			if err != nil {
				t.Error(err)
				return
			}
			rounds++
			collected += len(res.Deleted)
		}
	})
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, sn := range snaps {
		mustHave(t, b, "blob of a snapshot written during collections", append([]string{sn.manifest}, sn.contents...)...)
	}
	t.Logf("%d snapshots, %d collections beside them, %d blobs collected", len(snaps), rounds, collected)
	// With no grace, once the writer is done, nothing it refers to goes
	// either.
	collect(t, s, &session.CollectOptions{Grace: -1})
	for _, sn := range snaps {
		mustHave(t, b, "blob of a snapshot after the last collection", append([]string{sn.manifest}, sn.contents...)...)
	}

	// The interleaving: with no grace, every unreferenced blob put
	// before the collection started is garbage when it lists them.
	reused := []byte("old content reused between the listing and the delete\n")
	put(t, b, reused)
	var manifest string
	il := &interleaved{Store: s, BlobStore: b, c: c, after: func() {
		manifest, _ = snapshot(t, b, string(reused))
		if _, err := sess.AppendSnapshot(ctx, session.WorkspaceSnapshot{Snapshot: manifest}); err != nil {
			t.Fatal(err)
		}
	}}
	var racy session.Store = il
	if sw, ok := b.(session.BlobSweeper); ok {
		racy = &interleavedSweeper{il, sw}
	} else {
		without(t, b, "session.BlobSweeper", "a collection racing a put through DeleteBlobIfOlder")
	}
	collect(t, racy, &session.CollectOptions{Grace: -1})
	mustHave(t, b, "blob put again between a collection's listing and its delete", session.BlobRef(reused), manifest)
	collect(t, s, &session.CollectOptions{Grace: -1})
	mustHave(t, b, "blob of the last snapshot", session.BlobRef(reused), manifest)
}

// interleaved is a store whose blob listing runs after() once it has
// listed, before the collection that asked deletes anything.
type interleaved struct {
	session.Store
	session.BlobStore
	c     session.BlobCollector
	after func()
}

func (s *interleaved) ListBlobs(ctx context.Context, fn func(session.BlobInfo) error) error {
	if err := s.c.ListBlobs(ctx, fn); err != nil {
		return err
	}
	if s.after != nil {
		s.after()
		s.after = nil
	}
	return nil
}

func (s *interleaved) DeleteBlob(ctx context.Context, ref string) error {
	return s.c.DeleteBlob(ctx, ref)
}

type interleavedSweeper struct {
	*interleaved
	sw session.BlobSweeper
}

func (s *interleavedSweeper) DeleteBlobIfOlder(ctx context.Context, ref string, cutoff time.Time) (bool, error) {
	return s.sw.DeleteBlobIfOlder(ctx, ref, cutoff)
}
