package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
)

// Issue 40 break-it, third round: schema version 10 keeps each session's
// longest line (triggers on INSERT and on updates of raw), so that LoadPath refuses
// (session.ErrTooLarge) exactly what Load refuses, and otherwise answers
// as Load would.

// longestAgrees checks, for every session of pool, that its longest
// bounds its rows' longest line (the trigger's promise, which LoadPath
// relies on to refuse what Load refuses).
func longestAgrees(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT s.id, s.longest, coalesce(max(octet_length(e.raw)), 0)
		FROM agentsession_sessions s LEFT JOIN agentsession_entries e ON e.session_id = s.id GROUP BY s.id, s.longest`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var longest, actual int64
		if err := rows.Scan(&id, &longest, &actual); err != nil {
			t.Fatal(err)
		}
		if longest < actual {
			t.Errorf("session %s: longest %d, its rows hold a line of %d", id, longest, actual)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestBreakIt3LongestRawUpdated: a row's raw made longer by an UPDATE
// (a repair or a redaction run in SQL, a replica's conflict resolution).
// The trigger fired on INSERT only, so longest stayed as it was: Load
// refused the session (the line is over the store's MaxLineBytes) and an
// open by path, which reads the path's lines only, opened it. A row
// trigger on updates of raw keeps it now.
func TestBreakIt3LongestRawUpdated(t *testing.T) {
	ctx := context.Background()
	pg, pool := newStore(t)
	writeLog(t, pg, "upd", "one by one", pathShapes(t)["several compactions"])
	long := padded(t, pathShapes(t)["several compactions"], "xu0", 200_000)
	var raw []byte
	for _, e := range long {
		if e.ID() == "xu0" {
			raw = e.AppendJSON(nil)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE agentsession_entries SET raw = $1 WHERE session_id = 'upd' AND entry_id = 'xu0'`, raw); err != nil {
		t.Fatal(err)
	}
	longestAgrees(t, pool)
	wantTooLarge(t, newStoreLimits(t, pool, session.Limits{MaxLineBytes: 100_000}), "upd")
}

// TestBreakIt3LongestHeader: a header line over a store's MaxLineBytes
// (a long cwd): Load refuses the session, and so does an open by path.
func TestBreakIt3LongestHeader(t *testing.T) {
	ctx := context.Background()
	pg, pool := newStore(t)
	h := session.Header{ID: "hdr", Cwd: "/" + strings.Repeat("d", 150_000), Version: session.CurrentVersion}
	if err := pg.Create(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := pg.Append(ctx, "hdr", session.AppendOptions{}, pathShapes(t)["several compactions"]...); err != nil {
		t.Fatal(err)
	}
	wantTooLarge(t, newStoreLimits(t, pool, session.Limits{MaxLineBytes: 100_000}), "hdr")
}

// TestBreakIt3LongestDeletedRecreated: a session with a long line,
// deleted and created again with short ones, opens by its path in a
// store with a lower limit (its longest is the new rows').
func TestBreakIt3LongestDeletedRecreated(t *testing.T) {
	ctx := context.Background()
	pg, pool := newStore(t)
	small := newStoreLimits(t, pool, session.Limits{MaxLineBytes: 100_000})
	writeLog(t, pg, "again", "one append", padded(t, pathShapes(t)["several compactions"], "xu0", 200_000))
	wantTooLarge(t, small, "again")
	if err := pg.Delete(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	writeLog(t, pg, "again", "one append", pathShapes(t)["several compactions"])
	pl, err := small.LoadPath(ctx, "again")
	if err != nil || pl.Complete {
		t.Fatalf("LoadPath: complete %v, %v", pl != nil && pl.Complete, err)
	}
	longestAgrees(t, pool)
}

// TestBreakIt3LongestBatches: appends to many sessions that go in one
// batch (agentsession_append_batch, one INSERT for all: the trigger
// fires once for the statement), some of them long lines: each session's
// longest is its own rows'.
func TestBreakIt3LongestBatches(t *testing.T) {
	ctx := context.Background()
	pg, pool := newStore(t)
	const n = 12
	for i := range n {
		writeLog(t, pg, fmt.Sprintf("b%d", i), "one append", pathShapes(t)["several compactions"])
	}
	release, ok := pgstore.HoldAppends(pg)
	if !ok {
		t.Fatal("could not hold the appends")
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		id := fmt.Sprintf("b%d", i)
		text := fmt.Sprintf("short %d", i)
		if i%3 == 0 {
			text = strings.Repeat("x", 150_000+i*1000)
		}
		e := line(t, fmt.Sprintf(`{"type":"message","id":"late%d","parentId":"xa3","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":%q}}`, i, text))
		q := pgstore.QueuedAppends(pg)
		wg.Go(func() { errs[i] = pg.Append(ctx, id, session.AppendOptions{}, e) })
		waitQueued(t, pg, q+1)
	}
	release()
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	longestAgrees(t, pool)
	var exact int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM agentsession_sessions s WHERE s.longest =
		(SELECT max(octet_length(raw)) FROM agentsession_entries e WHERE e.session_id = s.id)`).Scan(&exact); err != nil {
		t.Fatal(err)
	}
	if exact != n {
		t.Fatalf("%d of %d sessions have their longest line exactly", exact, n)
	}
}

// TestBreakIt3LongestRewriteRacesAppends: Rewrites (longest set to 0,
// the rows copied again) and appends of long lines to one session at
// once: longest always bounds the rows' longest line.
func TestBreakIt3LongestRewriteRacesAppends(t *testing.T) {
	ctx := context.Background()
	pg, pool := newStore(t)
	base := pathShapes(t)["several compactions"]
	writeLog(t, pg, "race", "one append", base)
	h := session.Header{ID: "race", Cwd: "/w", Version: session.CurrentVersion}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() {
		for i := range 20 {
			if err := pg.Rewrite(ctx, "race", session.RewriteOptions{}, h, base); err != nil {
				errs[0] = fmt.Errorf("rewrite %d: %w", i, err)
				return
			}
		}
	})
	wg.Go(func() {
		for i := range 40 {
			e := line(t, fmt.Sprintf(`{"type":"message","id":"r%d","parentId":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":%q}}`, i, strings.Repeat("y", 120_000+i)))
			if err := pg.Append(ctx, "race", session.AppendOptions{}, e); err != nil {
				errs[1] = fmt.Errorf("append %d: %w", i, err)
				return
			}
			longestAgrees(t, pool)
		}
	})
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	longestAgrees(t, pool)
	small := newStoreLimits(t, pool, session.Limits{MaxLineBytes: 100_000})
	_, loadErr := small.Load(ctx, "race")
	_, pathErr := small.LoadPath(ctx, "race")
	if errors.Is(loadErr, session.ErrTooLarge) != errors.Is(pathErr, session.ErrTooLarge) {
		t.Fatalf("Load: %v; LoadPath: %v", loadErr, pathErr)
	}
}
