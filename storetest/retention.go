package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

// The retention cases: Sweep beside writers, and the ConditionalRemover
// of the stores that have it.

// testSweepWithWriters sweeps a store where every session has expired
// (the sweep's clock is two hours ahead) while writers append to half of
// them: each of those gets its first append after the sweep listed the
// store and before it acts on any session, and appends go on through the
// sweep. Those sessions are kept, with every acknowledged entry; the
// others are deleted.
func testSweepWithWriters(t *testing.T, s session.Store) {
	ctx := context.Background()
	const n = 12
	for i := range n {
		id := fmt.Sprintf("sw-%02d", i)
		if err := s.Create(ctx, header(id, "/work")); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, id, session.AppendOptions{}, entry(t, id+"-0", "", 0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	written := func(i int) bool { return i%2 == 1 }
	var (
		wg      sync.WaitGroup
		stop    = make(chan struct{})
		started bool
		mu      sync.Mutex
		acked   = map[string]int{}
	)
	appendTo := func(id string, k int) error {
		return s.Append(ctx, id, session.AppendOptions{}, entry(t, fmt.Sprintf("%s-%d", id, k), fmt.Sprintf("%s-%d", id, k-1), 1, k))
	}
	progress := func(done, total int) {
		if started {
			return
		}
		started = true
		// The sweep has listed and decided: change the written sessions
		// now, then keep changing them while it acts.
		for i := range n {
			if !written(i) {
				continue
			}
			id := fmt.Sprintf("sw-%02d", i)
			if err := appendTo(id, 1); err != nil {
				t.Error(err)
			}
			mu.Lock()
			acked[id] = 1
			mu.Unlock()
			wg.Go(func() {
				for k := 2; ; k++ {
					select {
					case <-stop:
						return
					default:
					}
					if err := appendTo(id, k); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					acked[id] = k
					mu.Unlock()
					if k >= 200 {
						return
					}
				}
			})
		}
	}
	res, err := session.Sweep(ctx, s, &session.SweepPolicy{
		OlderThan: time.Hour,
		Now:       func() time.Time { return time.Now().Add(2 * time.Hour) },
		Progress:  progress,
	})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	for i := range n {
		id := fmt.Sprintf("sw-%02d", i)
		l, err := s.Load(ctx, id)
		if written(i) {
			if err != nil {
				t.Fatalf("%s, appended to during the sweep: %v", id, err)
			}
			if got, want := len(l.Entries), acked[id]+1; got != want {
				t.Fatalf("%s: %d entries, %d acknowledged", id, got, want)
			}
			if !slices.Contains(res.Skipped, id) {
				t.Fatalf("%s not reported skipped: %+v", id, res)
			}
			continue
		}
		if !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("%s, expired and untouched, not deleted: %v", id, err)
		}
		if !slices.Contains(res.Deleted, id) {
			t.Fatalf("%s not reported deleted: %+v", id, res)
		}
	}
	if len(res.Deleted) != n/2 || len(res.Skipped) != n/2 {
		t.Fatalf("deleted %v, skipped %v", res.Deleted, res.Skipped)
	}
}

// testSweepArchive archives the expired sessions, then deletes them
// from the archive; a dry run changes nothing.
func testSweepArchive(t *testing.T, s session.Store) {
	ctx := context.Background()
	if _, ok := s.(session.Archiver); !ok {
		t.Skipf("%T is no session.Archiver: Sweep with ArchiveAfter not checked", s)
	}
	for _, id := range []string{"sa-1", "sa-2"} {
		create(t, s, id)
		if err := s.Append(ctx, id, session.AppendOptions{}, entry(t, id+"-0", "", 0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	later := func(d time.Duration) func() time.Time {
		return func() time.Time { return time.Now().Add(d) }
	}
	pol := session.SweepPolicy{OlderThan: time.Hour, ArchiveOnly: true, Now: later(2 * time.Hour), DryRun: true}
	res := check(session.Sweep(ctx, s, &pol))(t)
	if len(res.Archived) != 2 {
		t.Fatalf("dry run: %+v", res)
	}
	if got := infoIDs(listAll(t, s, session.ListOptions{OnlyArchived: true})); len(got) != 0 {
		t.Fatalf("a dry run archived %v", got)
	}
	pol.DryRun = false
	res = check(session.Sweep(ctx, s, &pol))(t)
	if len(res.Archived) != 2 || len(res.Deleted) != 0 {
		t.Fatalf("archive: %+v", res)
	}
	if got := infoIDs(listAll(t, s, session.ListOptions{OnlyArchived: true})); len(got) != 2 {
		t.Fatalf("archived: %v", got)
	}
	// Archived an hour ago (by the sweep's clock): kept for a day.
	pol = session.SweepPolicy{OlderThan: time.Hour, DeleteArchivedAfter: 24 * time.Hour, Now: later(time.Hour)}
	res = check(session.Sweep(ctx, s, &pol))(t)
	if len(res.Deleted) != 0 || len(res.Kept) != 2 {
		t.Fatalf("young archive: %+v", res)
	}
	pol.Now = later(25 * time.Hour)
	res = check(session.Sweep(ctx, s, &pol))(t)
	if len(res.Deleted) != 2 {
		t.Fatalf("old archive: %+v", res)
	}
	if got := listAll(t, s, session.ListOptions{Archived: true}); len(got) != 0 {
		t.Fatalf("left: %v", infoIDs(got))
	}
}

// testConditionalRemover: a delete or archive conditional on a log that
// changed since is refused and changes nothing; on the log as it is, it
// happens.
func testConditionalRemover(t *testing.T, s session.Store) {
	cr, ok := s.(session.ConditionalRemover)
	if !ok {
		t.Skipf("%T is no session.ConditionalRemover: DeleteIfUnchanged and ArchiveIfUnchanged not checked", s)
	}
	ctx := context.Background()
	create(t, s, "cr-1")
	if err := s.Append(ctx, "cr-1", session.AppendOptions{}, entries(t, "cra", 2)...); err != nil {
		t.Fatal(err)
	}
	seen := session.MarkOf(load(t, s, "cr-1"))
	if err := s.Append(ctx, "cr-1", session.AppendOptions{}, entry(t, "crb", "cra0001", 1, 9)); err != nil {
		t.Fatal(err)
	}
	if err := cr.DeleteIfUnchanged(ctx, "cr-1", seen); errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("%T wraps a store that is no session.ConditionalRemover (errors.ErrUnsupported): DeleteIfUnchanged and ArchiveIfUnchanged not checked", s)
	} else {
		wantErr(t, err, session.ErrConflict, "delete of a changed session")
	}
	wantErr(t, cr.ArchiveIfUnchanged(ctx, "cr-1", seen), session.ErrConflict, "archive of a changed session")
	if got := len(load(t, s, "cr-1").Entries); got != 3 {
		t.Fatalf("%d entries after refused removals", got)
	}
	if info, ok := infoOf(t, s, "cr-1", session.ListOptions{Archived: true}); !ok || info.Archived {
		t.Fatalf("after a refused archive: %+v %v", info, ok)
	}
	// An empty session's mark.
	create(t, s, "cr-empty")
	if err := cr.DeleteIfUnchanged(ctx, "cr-empty", session.LogMark{}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, cr.DeleteIfUnchanged(ctx, "cr-empty", session.LogMark{}), session.ErrNotFound, "delete of a deleted session")
	seen = session.MarkOf(load(t, s, "cr-1"))
	if err := cr.ArchiveIfUnchanged(ctx, "cr-1", seen); err != nil {
		t.Fatal(err)
	}
	if info, ok := infoOf(t, s, "cr-1", session.ListOptions{Archived: true}); !ok || !info.Archived {
		t.Fatalf("not archived: %+v %v", info, ok)
	}
	if err := cr.DeleteIfUnchanged(ctx, "cr-1", seen); err != nil {
		t.Fatal(err)
	}
	wantErr(t, func() error { _, err := s.Load(ctx, "cr-1"); return err }(), session.ErrNotFound, "load after delete")
}
