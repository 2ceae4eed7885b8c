package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
)

// The group commit of appends (group.go): appends that come while the
// store's flights are out go together, each with its own answer.

// hold holds the flights of s (pgstore.HoldAppends) once those in
// flight have landed (a batch's last answer comes before its flight
// does).
func hold(t *testing.T, s *pgstore.Store) (release func()) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if release, ok := pgstore.HoldAppends(s); ok {
			return release
		}
		if time.Now().After(deadline) {
			t.Fatal("appends stay in flight")
		}
		time.Sleep(time.Millisecond)
	}
}

// held runs the appends of calls while s holds its flights, so that
// they wait together, and then lets them go: one batch. It returns each
// call's error, in order.
func held(t *testing.T, s *pgstore.Store, calls ...func() error) []error {
	t.Helper()
	release := hold(t, s)
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Go(func() { errs[i] = call() })
	}
	waitQueued(t, s, len(calls))
	release()
	wg.Wait()
	return errs
}

// waitQueued waits until n appends of s wait for a batch.
func waitQueued(t *testing.T, s *pgstore.Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for pgstore.QueuedAppends(s) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d appends wait, want %d", pgstore.QueuedAppends(s), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// entryIDs returns the ids of session id's entries, in log order.
func entryIDs(t *testing.T, s session.Store, id string) []string {
	t.Helper()
	l, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(l.Entries))
	for i, e := range l.Entries {
		ids[i] = e.ID()
	}
	return ids
}

// pgEntry is an entry of the tests' own type.
func pgEntry(t testing.TB, id, parent string) session.Entry {
	t.Helper()
	e, err := session.NewEntry("pgtest", id, parent, time.Unix(1700000000, 0), map[string]string{"name": id})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestGroupDifferentSessions: appends to twenty sessions that wait
// together go in one batch; each is made, with its first user message
// as the listing's derived title, and the session's row (count, last
// entry) is as after an append alone.
func TestGroupDifferentSessions(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	const n = 20
	var calls []func() error
	for i := range n {
		id := fmt.Sprintf("d%02d", i)
		if err := s.Create(ctx, session.Header{ID: id, Cwd: "/w"}); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, func() error {
			return s.Append(ctx, id, session.AppendOptions{IfEmpty: true},
				userMsg(t, id+"-u", "", "question "+id), pgEntry(t, id+"-a", id+"-u"), pgEntry(t, id+"-r", id+"-a"))
		})
	}
	for i, err := range held(t, s, calls...) {
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if g := pgstore.Grouped(s); g.Batches != 1 || g.Batched != n || g.Failed != 0 || g.Busy != 0 {
		t.Fatalf("group stats %+v, want one batch of %d", g, n)
	}
	infos := listed(t, s, session.ListOptions{})
	for i := range n {
		id := fmt.Sprintf("d%02d", i)
		if got := entryIDs(t, s, id); fmt.Sprint(got) != fmt.Sprintf("[%s-u %s-a %s-r]", id, id, id) {
			t.Fatalf("%s holds %v", id, got)
		}
		if in := infos[id]; in.Entries != 3 || in.Title != "question "+id || !in.TitleDerived {
			t.Fatalf("%s listed as %+v", id, in)
		}
		// The row knows its last entry: an append conditional on it is
		// made, one on the first entry refused.
		if err := s.Append(ctx, id, session.AppendOptions{IfLast: id + "-u"}, pgEntry(t, id+"-x", id+"-r")); !errors.Is(err, session.ErrConflict) {
			t.Fatalf("%s: append after a stale last entry: %v", id, err)
		}
		if err := s.Append(ctx, id, session.AppendOptions{IfLast: id + "-r"}, pgEntry(t, id+"-x", id+"-r")); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGroupIfLastRace: conditional appends racing on the same sessions,
// in one batch and then free-running: on each session exactly one of
// those that expected the same last entry is made, the others are
// refused with ErrConflict, and nothing else is stored.
func TestGroupIfLastRace(t *testing.T) {
	ctx := context.Background()
	s, _ := newStoreConns(t, 12)
	const sessions, racers = 6, 4
	for k := range sessions {
		id := fmt.Sprintf("r%d", k)
		if err := s.Create(ctx, session.Header{ID: id, Cwd: "/w"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, id, session.AppendOptions{IfEmpty: true}, pgEntry(t, id+"-0", "")); err != nil {
			t.Fatal(err)
		}
	}

	// One round: every racer of every session appends after last[k].
	last := make([]string, sessions)
	for k := range last {
		last[k] = fmt.Sprintf("r%d-0", k)
	}
	round := func(r int, together bool) {
		t.Helper()
		var calls []func() error
		for k := range sessions {
			id := fmt.Sprintf("r%d", k)
			for j := range racers {
				eid := fmt.Sprintf("%s-%d-%d", id, r, j)
				after := last[k]
				calls = append(calls, func() error {
					return s.Append(ctx, id, session.AppendOptions{IfLast: after}, pgEntry(t, eid, after))
				})
			}
		}
		var errs []error
		if together {
			errs = held(t, s, calls...)
		} else {
			errs = make([]error, len(calls))
			var wg sync.WaitGroup
			for i, call := range calls {
				wg.Go(func() { errs[i] = call() })
			}
			wg.Wait()
		}
		for k := range sessions {
			id := fmt.Sprintf("r%d", k)
			won := ""
			for j := range racers {
				switch err := errs[k*racers+j]; {
				case err == nil && won == "":
					won = fmt.Sprintf("%s-%d-%d", id, r, j)
				case err == nil:
					t.Fatalf("round %d, %s: two racers made it", r, id)
				case !errors.Is(err, session.ErrConflict):
					t.Fatalf("round %d, %s: %v", r, id, err)
				}
			}
			if won == "" {
				t.Fatalf("round %d, %s: no racer made it", r, id)
			}
			ids := entryIDs(t, s, id)
			if len(ids) != r+2 || ids[len(ids)-1] != won {
				t.Fatalf("round %d, %s holds %v, want %d entries ending with %s", r, id, ids, r+2, won)
			}
			last[k] = won
		}
	}
	round(0, true)
	if g := pgstore.Grouped(s); g.Batches != 1 || g.Batched != sessions*racers {
		t.Fatalf("group stats %+v, want one batch of %d", g, sessions*racers)
	}
	for r := 1; r < 20; r++ {
		round(r, false)
	}

	// In one batch, appends to one session see those before them: a
	// chain of conditional appends is made whole; of two IfEmpty on an
	// empty session, one is made.
	if err := s.Create(ctx, session.Header{ID: "chain", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, session.Header{ID: "empty", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	errs := held(t, s,
		func() error {
			return s.Append(ctx, "chain", session.AppendOptions{IfEmpty: true}, pgEntry(t, "c1", ""))
		},
		func() error {
			return s.Append(ctx, "empty", session.AppendOptions{IfEmpty: true}, pgEntry(t, "e1", ""))
		},
		func() error {
			return s.Append(ctx, "empty", session.AppendOptions{IfEmpty: true}, pgEntry(t, "e2", ""))
		},
	)
	// The order of the queue is the order the calls came: know it only
	// from the answers.
	if errs[0] != nil || (errs[1] == nil) == (errs[2] == nil) {
		t.Fatalf("chain and IfEmpty pair: %v", errs)
	}
	errs = held(t, s,
		func() error {
			return s.Append(ctx, "chain", session.AppendOptions{IfLast: "c1"}, pgEntry(t, "c2", "c1"))
		},
	)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	release := hold(t, s)
	var wg sync.WaitGroup
	var second error
	wg.Go(func() {
		if err := s.Append(ctx, "chain", session.AppendOptions{IfLast: "c2"}, pgEntry(t, "c3", "c2")); err != nil {
			t.Error(err)
		}
	})
	waitQueued(t, s, 1)
	wg.Go(func() { second = s.Append(ctx, "chain", session.AppendOptions{IfLast: "c3"}, pgEntry(t, "c4", "c3")) })
	waitQueued(t, s, 2)
	release()
	wg.Wait()
	if second != nil {
		t.Fatalf("an append conditional on the member before it in the batch: %v", second)
	}
	if got := entryIDs(t, s, "chain"); fmt.Sprint(got) != "[c1 c2 c3 c4]" {
		t.Fatalf("chain holds %v", got)
	}
}

// TestGroupDuplicates: in one batch, the same entries twice (a retry
// racing its first attempt) are stored once and both calls succeed;
// the same ids with other content are refused; an append whose entries
// are stored already succeeds without writing.
func TestGroupDuplicates(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	for _, id := range []string{"a", "b"} {
		if err := s.Create(ctx, session.Header{ID: id, Cwd: "/w"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(ctx, "b", session.AppendOptions{}, pgEntry(t, "b1", "")); err != nil {
		t.Fatal(err)
	}
	other, err := session.NewEntry("pgtest", "a1", "", time.Unix(1700000000, 0), map[string]string{"other": "content"})
	if err != nil {
		t.Fatal(err)
	}
	errs := held(t, s,
		func() error {
			return s.Append(ctx, "a", session.AppendOptions{}, pgEntry(t, "a1", ""), pgEntry(t, "a2", "a1"))
		},
		func() error {
			return s.Append(ctx, "a", session.AppendOptions{}, pgEntry(t, "a1", ""), pgEntry(t, "a2", "a1"))
		},
		func() error { return s.Append(ctx, "b", session.AppendOptions{}, pgEntry(t, "b1", "")) },
	)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	errs = held(t, s,
		func() error { return s.Append(ctx, "a", session.AppendOptions{}, other) },
		func() error { return s.Append(ctx, "b", session.AppendOptions{}, pgEntry(t, "b2", "b1")) },
	)
	if !errors.Is(errs[0], session.ErrConflict) || errs[1] != nil {
		t.Fatalf("other content under a stored id, and a good append beside it: %v", errs)
	}
	if got := entryIDs(t, s, "a"); fmt.Sprint(got) != "[a1 a2]" {
		t.Fatalf("a holds %v", got)
	}
	if got := entryIDs(t, s, "b"); fmt.Sprint(got) != "[b1 b2]" {
		t.Fatalf("b holds %v", got)
	}
}

// TestGroupFailingMember: one member of a batch fails in the database
// (a trigger raises): the batch commits nothing, every member is made
// alone, the good ones are stored once and the bad one gets its error.
// Members refused (a stale condition, a limit, a missing session) get
// their own refusals, and the batch beside them commits.
func TestGroupFailingMember(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	if _, err := pool.Exec(ctx, `CREATE FUNCTION refuse_bad() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
		CREATE TRIGGER refuse_bad BEFORE INSERT ON agentsession_entries
		FOR EACH ROW WHEN (NEW.session_id = 'bad') EXECUTE FUNCTION refuse_bad()`); err != nil {
		t.Fatal(err)
	}
	small, err := pgstore.New(ctx, pool, &pgstore.Options{Limits: session.Limits{MaxEntries: 2}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"bad", "g1", "g2", "g3", "full"} {
		if err := s.Create(ctx, session.Header{ID: id, Cwd: "/w"}); err != nil {
			t.Fatal(err)
		}
	}

	errs := held(t, s,
		func() error { return s.Append(ctx, "g1", session.AppendOptions{}, pgEntry(t, "g1-1", "")) },
		func() error { return s.Append(ctx, "bad", session.AppendOptions{}, pgEntry(t, "bad-1", "")) },
		func() error { return s.Append(ctx, "g2", session.AppendOptions{}, pgEntry(t, "g2-1", "")) },
		func() error { return s.Append(ctx, "g3", session.AppendOptions{IfEmpty: true}, pgEntry(t, "g3-1", "")) },
	)
	if errs[0] != nil || errs[2] != nil || errs[3] != nil {
		t.Fatalf("the good members: %v", errs)
	}
	if errs[1] == nil || errors.Is(errs[1], session.ErrConflict) || !bytes.Contains([]byte(errs[1].Error()), []byte("refused by the test")) {
		t.Fatalf("the failing member: %v", errs[1])
	}
	if g := pgstore.Grouped(s); g.Batches != 1 || g.Failed != 1 {
		t.Fatalf("group stats %+v, want one batch, failed", g)
	}
	for _, c := range []struct{ id, want string }{{"g1", "[g1-1]"}, {"g2", "[g2-1]"}, {"g3", "[g3-1]"}, {"bad", "[]"}} {
		if got := entryIDs(t, s, c.id); fmt.Sprint(got) != c.want {
			t.Fatalf("%s holds %v, want %s", c.id, got, c.want)
		}
	}

	// Refusals are answers: the batch beside them commits.
	if err := small.Append(ctx, "full", session.AppendOptions{}, pgEntry(t, "f1", ""), pgEntry(t, "f2", "f1")); err != nil {
		t.Fatal(err)
	}
	errs = held(t, small,
		func() error {
			return small.Append(ctx, "g1", session.AppendOptions{IfLast: "stale"}, pgEntry(t, "g1-2", ""))
		},
		func() error { return small.Append(ctx, "full", session.AppendOptions{}, pgEntry(t, "f3", "f2")) },
		func() error { return small.Append(ctx, "gone", session.AppendOptions{}, pgEntry(t, "x1", "")) },
		func() error {
			return small.Append(ctx, "g2", session.AppendOptions{IfLast: "g2-1"}, pgEntry(t, "g2-2", "g2-1"))
		},
	)
	var le *session.LimitError
	if !errors.Is(errs[0], session.ErrConflict) || !errors.As(errs[1], &le) || le.What != "entries" ||
		!errors.Is(errs[2], session.ErrNotFound) || errs[3] != nil {
		t.Fatalf("stale, over the limit, missing, good: %v", errs)
	}
	if g := pgstore.Grouped(small); g.Batches != 1 || g.Failed != 0 || g.Busy != 1 {
		t.Fatalf("group stats %+v, want one batch that did not fail, the missing session busy", g)
	}
	if got := entryIDs(t, s, "g2"); fmt.Sprint(got) != "[g2-1 g2-2]" {
		t.Fatalf("g2 holds %v", got)
	}
}

// TestGroupCancel: a caller whose context ends while its append waits
// returns at once, and its append is never sent; one whose context ends
// while its batch is in flight returns at once too, and the batch goes
// on for the others (it commits that append as well: a retry then finds
// it stored). When every member has gone, the batch is cancelled and
// the store goes on.
func TestGroupCancel(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	if _, err := pool.Exec(ctx, `CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep(2); RETURN NEW; END $$;
		CREATE TRIGGER slow_insert BEFORE INSERT ON agentsession_entries
		FOR EACH ROW WHEN (NEW.session_id = 'slow') EXECUTE FUNCTION slow_insert()`); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c", "slow"} {
		if err := s.Create(ctx, session.Header{ID: id, Cwd: "/w"}); err != nil {
			t.Fatal(err)
		}
	}

	// Waiting: cancelled before the batch goes.
	release := hold(t, s)
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var errA, errB, errC error
	bDone := make(chan error, 1)
	wg.Go(func() { errA = s.Append(ctx, "a", session.AppendOptions{}, pgEntry(t, "a1", "")) })
	go func() { bDone <- s.Append(cctx, "b", session.AppendOptions{}, pgEntry(t, "b1", "")) }()
	wg.Go(func() { errC = s.Append(ctx, "c", session.AppendOptions{}, pgEntry(t, "c1", "")) })
	waitQueued(t, s, 3)
	cancel()
	select {
	case errB = <-bDone: // while the flights are still held
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled caller still waits for its batch")
	}
	release()
	wg.Wait()
	if errA != nil || errC != nil || !errors.Is(errB, context.Canceled) {
		t.Fatalf("a, b (cancelled while waiting), c: %v, %v, %v", errA, errB, errC)
	}
	for _, c := range []struct{ id, want string }{{"a", "[a1]"}, {"b", "[]"}, {"c", "[c1]"}} {
		if got := entryIDs(t, s, c.id); fmt.Sprint(got) != c.want {
			t.Fatalf("%s holds %v, want %s", c.id, got, c.want)
		}
	}

	// In flight: the caller returns, the batch commits for all.
	slow := pgEntry(t, "s1", "")
	cctx, cancel = context.WithCancel(ctx)
	release = hold(t, s)
	var errSlow error
	var returned atomic.Int64
	wg.Go(func() { errA = s.Append(ctx, "a", session.AppendOptions{IfLast: "a1"}, pgEntry(t, "a2", "a1")) })
	wg.Go(func() {
		errSlow = s.Append(cctx, "slow", session.AppendOptions{IfEmpty: true}, slow)
		returned.Store(time.Now().UnixNano())
	})
	wg.Go(func() { errC = s.Append(ctx, "c", session.AppendOptions{IfLast: "c1"}, pgEntry(t, "c2", "c1")) })
	waitQueued(t, s, 3)
	release()
	waitQueued(t, s, 0)
	time.Sleep(100 * time.Millisecond) // the batch is in the slow trigger
	cancelled := time.Now()
	cancel()
	wg.Wait()
	if errA != nil || errC != nil || !errors.Is(errSlow, context.Canceled) {
		t.Fatalf("a, slow (cancelled in flight), c: %v, %v, %v", errA, errSlow, errC)
	}
	if d := time.Duration(returned.Load() - cancelled.UnixNano()); d > time.Second {
		t.Fatalf("the cancelled caller returned %v after its cancel, with its batch", d)
	}
	for _, c := range []struct{ id, want string }{{"a", "[a1 a2]"}, {"slow", "[s1]"}, {"c", "[c1 c2]"}} {
		if got := entryIDs(t, s, c.id); fmt.Sprint(got) != c.want {
			t.Fatalf("%s holds %v, want %s", c.id, got, c.want)
		}
	}
	// The host retries the call whose answer it lost: made, once.
	if err := s.Append(ctx, "slow", session.AppendOptions{IfEmpty: true}, slow); err != nil {
		t.Fatalf("retry of the cancelled append: %v", err)
	}
	if got := entryIDs(t, s, "slow"); fmt.Sprint(got) != "[s1]" {
		t.Fatalf("slow holds %v after the retry", got)
	}

	// Every member gone: the batch is cancelled, the flight comes back.
	cctx, cancel = context.WithCancel(ctx)
	errs := make([]error, 2)
	release = hold(t, s)
	wg.Go(func() {
		errs[0] = s.Append(cctx, "slow", session.AppendOptions{IfLast: "s1"}, pgEntry(t, "s2", "s1"), pgEntry(t, "s3", "s2"))
	})
	wg.Go(func() { errs[1] = s.Append(cctx, "a", session.AppendOptions{IfLast: "a2"}, pgEntry(t, "a3", "a2")) })
	waitQueued(t, s, 2)
	release()
	waitQueued(t, s, 0)
	time.Sleep(100 * time.Millisecond)
	cancel()
	wg.Wait()
	for _, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled members: %v", errs)
		}
	}
	// The flights are back: appends go, and the cancelled batch left
	// nothing (it was rolled back) or all of it.
	if err := s.Append(ctx, "c", session.AppendOptions{IfLast: "c2"}, pgEntry(t, "c3", "c2")); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(entryIDs(t, s, "slow")); got != "[s1]" && got != "[s1 s2 s3]" {
		t.Fatalf("slow holds %s after its batch was cancelled", got)
	}
	hold(t, s)() // the cancelled batch's flight came back
}

// TestGroupBusy: a member whose session row another transaction holds
// does not hold up its batch: the others are made at once, and it is
// made alone once the lock is released.
func TestGroupBusy(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	for _, id := range []string{"locked", "free"} {
		if err := s.Create(ctx, session.Header{ID: id, Cwd: "/w"}); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM agentsession_sessions WHERE id = 'locked' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	release := hold(t, s)
	lockedDone, freeDone := make(chan error, 1), make(chan error, 1)
	go func() { lockedDone <- s.Append(ctx, "locked", session.AppendOptions{}, pgEntry(t, "l1", "")) }()
	waitQueued(t, s, 1)
	go func() { freeDone <- s.Append(ctx, "free", session.AppendOptions{}, pgEntry(t, "f1", "")) }()
	waitQueued(t, s, 2)
	release()
	select {
	case err := <-freeDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an append waited for the lock on another session of its batch")
	}
	select {
	case err := <-lockedDone:
		t.Fatalf("the append to the locked session returned while it was locked: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-lockedDone; err != nil {
		t.Fatal(err)
	}
	if g := pgstore.Grouped(s); g.Batches != 1 || g.Busy != 1 {
		t.Fatalf("group stats %+v, want one batch, one member busy", g)
	}
	if got := entryIDs(t, s, "locked"); fmt.Sprint(got) != "[l1]" {
		t.Fatalf("locked holds %v", got)
	}
}

// TestGroupStrings: entry ids and lines that need quoting go through a
// batch unchanged, over the binary protocol and over the simple
// protocol poolers need.
func TestGroupStrings(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		t.Run(mode.String(), func(t *testing.T) {
			schema := newSchema(t)
			cfg, err := pgxpool.ParseConfig(dsn(t))
			if err != nil {
				t.Fatal(err)
			}
			cfg.ConnConfig.RuntimeParams["search_path"] = schema
			cfg.ConnConfig.DefaultQueryExecMode = mode
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			if err := pgstore.Migrate(ctx, pool); err != nil {
				t.Fatal(err)
			}
			s, err := pgstore.New(ctx, pool, nil)
			if err != nil {
				t.Fatal(err)
			}
			ids := []string{`a"b`, `c\d`, `e,f`, `{g}`, `NULL`, ` h `, `ü'`, `i;j`}
			var calls []func() error
			var want [][]byte
			for i, eid := range ids {
				sid := "s" + strconv.Itoa(i)
				if err := s.Create(ctx, session.Header{ID: sid, Cwd: "/w"}); err != nil {
					t.Fatal(err)
				}
				e := line(t, fmt.Sprintf(`{"type":"message","id":%q,"parentId":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"caf\u00e9 \\ \"%d\" \u0000"}}`, eid, i))
				want = append(want, e.JSON())
				calls = append(calls, func() error { return s.Append(ctx, sid, session.AppendOptions{IfEmpty: true}, e) })
			}
			for i, err := range held(t, s, calls...) {
				if err != nil {
					t.Fatalf("append %d: %v", i, err)
				}
			}
			if g := pgstore.Grouped(s); g.Batches != 1 || g.Failed != 0 {
				t.Fatalf("group stats %+v", g)
			}
			for i, eid := range ids {
				l, err := s.Load(ctx, "s"+strconv.Itoa(i))
				if err != nil {
					t.Fatal(err)
				}
				if len(l.Entries) != 1 || l.Entries[0].ID() != eid || !bytes.Equal(l.Entries[0].JSON(), want[i]) {
					t.Fatalf("session %d holds %v", i, l.Entries)
				}
			}
		})
	}
}

// TestGroupLostReply: the answer of a committed batch is lost and its
// backend terminated: every member gets ErrUnavailable (nothing is
// acknowledged), and each retry succeeds with the entries stored once.
func TestGroupLostReply(t *testing.T) {
	ctx := context.Background()
	r := newLostRig(t, "grouplost_", 0)
	s := r.store
	const n = 4
	entries := make([]session.Entry, n)
	var calls []func() error
	for i := range n {
		id := "l" + strconv.Itoa(i)
		if err := s.Create(ctx, session.Header{ID: id, Cwd: "/w"}); err != nil {
			t.Fatal(err)
		}
		entries[i] = pgEntry(t, id+"-1", "")
		calls = append(calls, func() error { return s.Append(ctx, id, session.AppendOptions{IfEmpty: true}, entries[i]) })
	}
	release := hold(t, s)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Go(func() { errs[i] = call() })
	}
	waitQueued(t, s, n)
	r.proxy.armed.Store(true)
	release()
	r.terminateWhenCommitted("", n)
	wg.Wait()
	r.disarm()
	for i, err := range errs {
		if !errors.Is(err, pgstore.ErrUnavailable) {
			t.Fatalf("member %d of the batch whose answer was lost: %v, want ErrUnavailable", i, err)
		}
	}
	if g := pgstore.Grouped(s); g.Batches != 1 {
		t.Fatalf("group stats %+v, want one batch", g)
	}
	for i := range n {
		id := "l" + strconv.Itoa(i)
		if err := s.Append(ctx, id, session.AppendOptions{IfEmpty: true}, entries[i]); err != nil {
			t.Fatalf("retry %d: %v", i, err)
		}
		if got := entryIDs(t, s, id); len(got) != 1 {
			t.Fatalf("%s holds %v after the retry", id, got)
		}
	}
}

// TestGroupReopen: many writers append to a few sessions at once, each
// conditional on the last entry it knows, reloading on conflicts; the
// store is then closed and the database read by a new pool and Store:
// every acknowledged append is there exactly once, in the order of its
// writer, and nothing else.
func TestGroupReopen(t *testing.T) {
	ctx := context.Background()
	s, pool := newStoreConns(t, 12)
	schema := schemaOf(t, pool)
	const sessions, writers, appends = 6, 24, 25
	for k := range sessions {
		if err := s.Create(ctx, session.Header{ID: "o" + strconv.Itoa(k), Cwd: "/w"}); err != nil {
			t.Fatal(err)
		}
	}
	acked := make([][]string, writers) // the entry ids each writer had acknowledged, in order
	var wg sync.WaitGroup
	for w := range writers {
		id := "o" + strconv.Itoa(w%sessions)
		wg.Go(func() {
			last := ""
			for i := 0; i < appends; {
				a, b := fmt.Sprintf("w%d-%d-a", w, i), fmt.Sprintf("w%d-%d-b", w, i)
				err := s.Append(ctx, id, session.AppendOptions{IfLast: last, IfEmpty: last == ""},
					pgEntry(t, a, last), pgEntry(t, b, a))
				switch {
				case err == nil:
					acked[w] = append(acked[w], a, b)
					last = b
					i++
				case errors.Is(err, session.ErrConflict):
					l, err := s.Load(ctx, id)
					if err != nil {
						t.Error(err)
						return
					}
					last = l.Entries[len(l.Entries)-1].ID()
				default:
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("group stats: %+v", pgstore.Grouped(s))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	pool.Close()

	re, err := pgstore.New(ctx, poolIn(t, schema, 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	where := map[string]string{} // entry id: session
	for k := range sessions {
		id := "o" + strconv.Itoa(k)
		for _, eid := range entryIDs(t, re, id) {
			if _, dup := where[eid]; dup {
				t.Fatalf("entry %s is stored twice", eid)
			}
			where[eid] = id
		}
	}
	total := 0
	for w, ids := range acked {
		total += len(ids)
		id := "o" + strconv.Itoa(w%sessions)
		stored := entryIDs(t, re, id)
		pos := -1
		for _, eid := range ids {
			if where[eid] != id {
				t.Fatalf("acknowledged entry %s of writer %d is not in %s", eid, w, id)
			}
			at := slices.Index(stored, eid)
			if at <= pos {
				t.Fatalf("writer %d's entry %s is out of its order", w, eid)
			}
			pos = at
		}
	}
	if len(where) != total {
		t.Fatalf("%d entries stored, %d acknowledged", len(where), total)
	}
}

// TestGroupEvents: a subscriber hears of every member of a batch, each
// append once with its entries, in the order of the batch.
func TestGroupEvents(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	t.Cleanup(func() { _ = s.Close() })
	ls, err := pgstore.New(ctx, poolIn(t, schemaOf(t, pool), 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ls.Close() })
	for _, id := range []string{"ev1", "ev2"} {
		if err := s.Create(ctx, session.Header{ID: id, Cwd: "/w"}); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := ls.Subscribe(ctx, session.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	release := hold(t, s)
	var wg sync.WaitGroup
	for _, c := range []struct {
		id    string
		opts  session.AppendOptions
		after string
		eids  []string
	}{
		{"ev1", session.AppendOptions{IfEmpty: true}, "", []string{"a1", "a2"}},
		{"ev2", session.AppendOptions{}, "", []string{"b1"}},
		{"ev1", session.AppendOptions{IfLast: "a2"}, "a2", []string{"a3"}},
	} {
		var es []session.Entry
		parent := c.after
		for _, eid := range c.eids {
			es = append(es, pgEntry(t, eid, parent))
			parent = eid
		}
		n := pgstore.QueuedAppends(s)
		wg.Go(func() {
			if err := s.Append(ctx, c.id, c.opts, es...); err != nil {
				t.Error(err)
			}
		})
		waitQueued(t, s, n+1) // the queue's order is the batch's
	}
	release()
	wg.Wait()
	if g := pgstore.Grouped(s); g.Batches != 1 || g.Batched != 3 {
		t.Fatalf("group stats %+v, want one batch of 3", g)
	}
	var got []string
	for range 3 {
		c := next(t, sub)
		if c.Kind != session.ChangeAppended {
			t.Fatalf("change %+v", c)
		}
		var ids []string
		for _, e := range c.Entries {
			ids = append(ids, e.ID)
		}
		got = append(got, fmt.Sprintf("%s%v", c.Session, ids))
	}
	if want := "[ev1[a1 a2] ev2[b1] ev1[a3]]"; fmt.Sprint(got) != want {
		t.Fatalf("changes %v, want %s", got, want)
	}
}
