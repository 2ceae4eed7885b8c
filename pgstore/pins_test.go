package pgstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
)

// Pins on PostgreSQL: a collection through one Store spares what another
// Store (another process, another machine) put and has not yet referred
// to, however long that takes, with no grace at all; the append that
// refers to it releases it (and a manifest's contents with it); a
// writer whose connection dies (killed, lost) leaves no pin behind; a
// Store's own puts are not pinned for its own collections, PinBlobs is.
func TestBlobPins(t *testing.T) {
	ctx := context.Background()
	collector, pool := newStore(t)
	writer, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	noGrace := &session.CollectOptions{Grace: -1}
	collect := func(s session.Store) []string {
		t.Helper()
		res, err := session.CollectBlobs(ctx, s, noGrace)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(res.Deleted)
		return res.Deleted
	}
	put := func(s *pgstore.Store, data string) string {
		t.Helper()
		ref, err := s.PutBlob(ctx, []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	sorted := func(refs ...string) []string { slices.Sort(refs); return refs }

	c1, c2 := put(writer, "content one"), put(writer, "content two")
	m := put(writer, `{"files":{"a":"`+c1+`","b":"`+c2+`"}}`)
	if got := collect(collector); len(got) != 0 {
		t.Fatalf("collected %v, the writer's blobs before its append", got)
	}
	s, err := session.Create(ctx, writer, &session.CreateOptions{ID: "s-pins", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendSnapshot(ctx, session.WorkspaceSnapshot{Snapshot: m, Files: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := collect(collector); len(got) != 0 {
		t.Fatalf("collected %v, blobs a session refers to", got)
	}
	if err := writer.Delete(ctx, "s-pins"); err != nil {
		t.Fatal(err)
	}
	if got, want := collect(collector), sorted(c1, c2, m); !slices.Equal(got, want) {
		t.Fatalf("after the session's delete: collected %v, want %v (released by the append)", got, want)
	}

	// A writer whose connection of pins dies, as when its process is
	// killed: the next collection reclaims what it put.
	g := put(writer, "put by a writer that dies before its append")
	if got := collect(collector); len(got) != 0 {
		t.Fatalf("collected %v from a live writer", got)
	}
	var pids []int32
	rows, err := pool.Query(ctx, `SELECT DISTINCT pid FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 1 AND pid <> pg_backend_pid()`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var pid int32
		if err := rows.Scan(&pid); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	rows.Close()
	// pg_terminate_backend waits for the backend to exit (its timeout,
	// in ms): its locks are gone when it returns true.
	for _, pid := range pids {
		var done bool
		if err := pool.QueryRow(ctx, `SELECT pg_terminate_backend($1, 60000)`, pid).Scan(&done); err != nil || !done {
			t.Fatalf("terminate %d: %v, %v", pid, done, err)
		}
	}
	if got := collect(collector); !slices.Equal(got, []string{g}) {
		t.Fatalf("after the writer's death: collected %v, want %v", got, []string{g})
	}

	// Close lets a Store's pins go.
	g = put(writer, "put, never referred to, the store closed")
	if got := collect(collector); len(got) != 0 {
		t.Fatalf("collected %v from a live writer", got)
	}
	if err := writer.Close(); err != nil {
		t.Fatal(err)
	}
	if got := collect(collector); !slices.Equal(got, []string{g}) {
		t.Fatalf("after Close: collected %v, want %v", got, []string{g})
	}

	// The collector's own: a put is its caller's garbage; PinBlobs holds.
	own := put(collector, "the collector's own garbage")
	if got := collect(collector); !slices.Equal(got, []string{own}) {
		t.Fatalf("collected %v, want its own garbage %v", got, own)
	}
	held := session.BlobRef([]byte("pinned by the collector's own writer"))
	if err := collector.PinBlobs(ctx, held); err != nil {
		t.Fatal(err)
	}
	put(collector, "pinned by the collector's own writer")
	if got := collect(collector); len(got) != 0 {
		t.Fatalf("collected %v, pinned with PinBlobs", got)
	}
	if err := collector.ReleaseBlobs(ctx, held); err != nil {
		t.Fatal(err)
	}
	if got := collect(collector); !slices.Equal(got, []string{held}) {
		t.Fatalf("after ReleaseBlobs: collected %v, want %v", got, []string{held})
	}
	if err := collector.PinBlobs(ctx, "blob:sha256:nope"); !errors.Is(err, session.ErrInvalidID) {
		t.Fatalf("PinBlobs of a malformed reference: %v", err)
	}
}
