package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
)

// TestMigrateToBlobs: a version 3 database is upgraded to version 4 in
// place, and its new blob table works; what was there is untouched.
func TestMigrateToBlobs(t *testing.T) {
	ctx := context.Background()
	pool := poolIn(t, newSchema(t), 2)
	createVersion(t, pool, 3)
	if _, err := pgstore.New(ctx, pool, nil); !errors.Is(err, pgstore.ErrSchema) {
		t.Fatalf("New on version 3: %v, want ErrSchema", err)
	}
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := s.PutBlob(ctx, []byte("after the upgrade"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetBlob(ctx, ref); err != nil || string(got) != "after the upgrade" {
		t.Fatalf("GetBlob: %q, %v", got, err)
	}
}

// TestBlobChecks: a row whose data does not match its reference, or is
// over the limit, is ErrCorrupt; a put over the limit is refused and
// writes nothing; a malformed reference never reaches the database.
func TestBlobChecks(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	ref, err := s.PutBlob(ctx, []byte("genuine"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE agentsession_blobs SET data = 'forged', size = 6 WHERE ref = $1`, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetBlob(ctx, ref); !errors.Is(err, session.ErrCorrupt) {
		t.Fatalf("GetBlob of forged content: %v, want ErrCorrupt", err)
	}
	// A put of the genuine bytes refreshes the row, and leaves its data.
	if _, err := s.PutBlob(ctx, []byte("genuine")); err != nil {
		t.Fatal(err)
	}
	small := newStoreLimitsBlob(t, pool, 4)
	if _, err := small.PutBlob(ctx, []byte("12345")); !errors.Is(err, session.ErrTooLarge) {
		t.Fatalf("PutBlob over MaxBlobBytes: %v, want ErrTooLarge", err)
	}
	if _, err := s.GetBlob(ctx, session.BlobRef([]byte("12345"))); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("a blob refused was written: %v", err)
	}
	if _, err := small.GetBlob(ctx, ref); !errors.Is(err, session.ErrCorrupt) || !errors.Is(err, session.ErrTooLarge) {
		t.Fatalf("GetBlob of a blob over MaxBlobBytes: %v, want ErrCorrupt", err)
	}
	for _, bad := range []string{"", "blob:sha256:", "blob:sha256:' OR true --", session.BlobRef(nil)[:20]} {
		if _, err := s.GetBlob(ctx, bad); !errors.Is(err, session.ErrInvalidID) {
			t.Errorf("GetBlob(%q): %v, want ErrInvalidID", bad, err)
		}
		if err := s.DeleteBlob(ctx, bad); !errors.Is(err, session.ErrInvalidID) {
			t.Errorf("DeleteBlob(%q): %v, want ErrInvalidID", bad, err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM agentsession_blobs`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d rows (%v), want the one blob put", n, err)
	}
}

func newStoreLimitsBlob(t *testing.T, pool *pgxpool.Pool, max int64) *pgstore.Store {
	t.Helper()
	s, err := pgstore.New(context.Background(), pool, &pgstore.Options{MaxBlobBytes: max})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBlobDeleteWaitsForAPut: a collection's conditional delete that
// meets a put in progress (the row locked by its transaction) waits for
// it, and then finds the blob refreshed: it stays.
func TestBlobDeleteWaitsForAPut(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	ref, err := s.PutBlob(ctx, []byte("reused"))
	if err != nil {
		t.Fatal(err)
	}
	cutoff := time.Now().Add(time.Second) // the blob is older than the cutoff
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// What PutBlob does, held open.
	if _, err := tx.Exec(ctx, `INSERT INTO agentsession_blobs (ref, data, size, touched_at) VALUES ($1, 'reused', 6, $2)
		ON CONFLICT (ref) DO UPDATE SET touched_at = $2`, ref, cutoff.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	type result struct {
		deleted bool
		err     error
	}
	done := make(chan result, 1)
	go func() {
		deleted, err := s.DeleteBlobIfOlder(ctx, ref, cutoff)
		done <- result{deleted, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("the delete did not wait for the put: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || r.deleted {
		t.Fatalf("the delete after the put: deleted %v, %v; want the blob kept", r.deleted, r.err)
	}
	if _, err := s.GetBlob(ctx, ref); err != nil {
		t.Fatal(err)
	}
}
