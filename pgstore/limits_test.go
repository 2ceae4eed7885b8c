package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
)

// sizedEntry returns an entry with the id whose line is exactly n bytes.
func sizedEntry(t testing.TB, id string, n int) session.Entry {
	t.Helper()
	head := `{"type":"pgtest","id":"` + id + `","parentId":null,"timestamp":"2026-01-15T10:00:00.000Z","pad":"`
	tail := `"}`
	if n < len(head)+len(tail) {
		t.Fatalf("no entry %s of %d bytes", id, n)
	}
	line := make([]byte, n)
	copy(line, head)
	pad := line[len(head) : n-len(tail)]
	for i := range pad {
		pad[i] = 'p'
	}
	copy(line[n-len(tail):], tail)
	e, err := session.ParseEntry(line)
	if err != nil {
		t.Fatal(err)
	}
	if e.Len() != n {
		t.Fatalf("entry %s: %d bytes, want %d", id, e.Len(), n)
	}
	return e
}

// sizedEntries returns k entries of n bytes, ids prefix-0, prefix-1, ...
func sizedEntries(t testing.TB, prefix string, k, n int) []session.Entry {
	out := make([]session.Entry, k)
	for i := range out {
		out[i] = sizedEntry(t, fmt.Sprintf("%s-%d", prefix, i), n)
	}
	return out
}

// stored is a session as the database holds it: the log Load returns
// and the session row, updated_at and generation included, so that a
// write that changed anything shows.
func stored(t testing.TB, s *pgstore.Store, pool *pgxpool.Pool, id string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	var count int
	var size, gen int64
	var last, updated string
	err := pool.QueryRow(ctx, `SELECT entry_count, size, last_entry, generation, updated_at::text
		FROM agentsession_sessions WHERE id = $1`, id).Scan(&count, &size, &last, &gen, &updated)
	if err != nil {
		t.Fatalf("session row %s: %v", id, err)
	}
	fmt.Fprintf(&b, "row: %d entries, %d bytes, last %q, generation %d, updated %s\n", count, size, last, gen, updated)
	l, err := s.Load(ctx, id)
	if err != nil {
		t.Fatalf("Load %s: %v", id, err)
	}
	hb, err := l.Header.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	b.Write(hb)
	b.WriteByte('\n')
	logSize := int64(len(hb) + 1)
	for _, e := range l.Entries {
		b.Write(e.JSON())
		b.WriteByte('\n')
		logSize += int64(e.Len() + 1)
	}
	if len(l.Entries) != count || logSize != size {
		t.Fatalf("session %s: the row says %d entries and %d bytes, the log has %d and %d", id, count, size, len(l.Entries), logSize)
	}
	return b.String()
}

// wantLimit checks that err is a *session.LimitError of what, size and
// limit (size -1: any) that errors.Is ErrTooLarge.
func wantLimit(t testing.TB, err error, what string, size, limit int64, call string) {
	t.Helper()
	var le *session.LimitError
	if !errors.Is(err, session.ErrTooLarge) || !errors.As(err, &le) {
		t.Fatalf("%s: %v, want a *session.LimitError (ErrTooLarge)", call, err)
	}
	if le.What != what || le.Limit != limit || (size >= 0 && le.Size != size) {
		t.Fatalf("%s: %+v, want What %q Size %d Limit %d", call, *le, what, size, limit)
	}
}

// smallLimits are the limits of the tests' small stores.
var smallLimits = session.Limits{MaxLineBytes: 4 << 10, MaxEntries: 10, MaxLogBytes: 16 << 10}

func newStoreLimits(t testing.TB, pool *pgxpool.Pool, lim session.Limits) *pgstore.Store {
	t.Helper()
	s, err := pgstore.New(context.Background(), pool, &pgstore.Options{Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLimitsDefaultLine: with the default limits, a line over
// MaxLineBytes (64 MiB) is refused by Append and Rewrite, and nothing is
// written: the session still loads as it was. A store opened with a
// higher MaxLineBytes writes it and reads it back (not with -short: it
// moves the line to the server and back, seconds on a slow machine).
func TestLimitsDefaultLine(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	if err := s.Create(ctx, session.Header{ID: "big", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	small := sizedEntry(t, "small", 200)
	if err := s.Append(ctx, "big", session.AppendOptions{}, small); err != nil {
		t.Fatal(err)
	}
	before := stored(t, s, pool, "big")
	huge := sizedEntry(t, "huge", session.DefaultMaxLineBytes+1)

	err := s.Append(ctx, "big", session.AppendOptions{}, huge)
	wantLimit(t, err, "line", session.DefaultMaxLineBytes+1, session.DefaultMaxLineBytes, "Append")
	if got := stored(t, s, pool, "big"); got != before {
		t.Fatalf("after the refused Append:\n%s\nwant\n%s", got, before)
	}
	err = s.Rewrite(ctx, "big", session.RewriteOptions{}, session.Header{ID: "big", Cwd: "/w"}, []session.Entry{small, huge})
	wantLimit(t, err, "line", session.DefaultMaxLineBytes+1, session.DefaultMaxLineBytes, "Rewrite")
	if got := stored(t, s, pool, "big"); got != before {
		t.Fatalf("after the refused Rewrite:\n%s\nwant\n%s", got, before)
	}

	// Raised limits: written, and read back by that store.
	if testing.Short() {
		return
	}
	raised := newStoreLimits(t, pool, session.Limits{MaxLineBytes: session.DefaultMaxLineBytes + 1})
	if err := raised.Append(ctx, "big", session.AppendOptions{IfLast: "small"}, huge); err != nil {
		t.Fatal(err)
	}
	l, err := raised.Load(ctx, "big")
	if err != nil {
		t.Fatalf("Load with the raised limits: %v", err)
	}
	if len(l.Entries) != 2 || l.Entries[1].Len() != huge.Len() || string(l.Entries[1].JSON()) != string(huge.JSON()) {
		t.Fatalf("Load with the raised limits: %d entries", len(l.Entries))
	}
	// (That a store of lower limits refuses it is TestLimitsLoad's, on
	// smaller lines.)
}

// TestLimitsSmall: a store with small limits refuses the 11th entry, a
// line over 4 KiB and a log over 16 KiB, from Create, Append and
// Rewrite, all or nothing; what it accepted up to the limits loads.
func TestLimitsSmall(t *testing.T) {
	ctx := context.Background()
	_, pool := newStore(t)
	s := newStoreLimits(t, pool, smallLimits)
	h := session.Header{ID: "s", Cwd: "/w"}

	// Create: the header is a line.
	err := s.Create(ctx, session.Header{ID: "bighead", Cwd: "/w", Title: strings.Repeat("t", 5000)})
	wantLimit(t, err, "line", -1, 4<<10, "Create")
	if _, err := s.Load(ctx, "bighead"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Load of the refused session: %v, want ErrNotFound", err)
	}

	// Entries: ten go in, in batches and one by one; the 11th does not.
	if err := s.Create(ctx, h); err != nil {
		t.Fatal(err)
	}
	ten := sizedEntries(t, "e", 10, 100)
	if err := s.Append(ctx, "s", session.AppendOptions{}, ten[:4]...); err != nil {
		t.Fatal(err)
	}
	for _, e := range ten[4:9] {
		if err := s.Append(ctx, "s", session.AppendOptions{}, e); err != nil {
			t.Fatal(err)
		}
	}
	nine := stored(t, s, pool, "s")
	err = s.Append(ctx, "s", session.AppendOptions{}, ten[9], sizedEntry(t, "e-10", 100))
	wantLimit(t, err, "entries", 11, 10, "Append of two to nine entries")
	if got := stored(t, s, pool, "s"); got != nine {
		t.Fatalf("after the refused Append:\n%s\nwant\n%s", got, nine)
	}
	if err := s.Append(ctx, "s", session.AppendOptions{IfLast: "e-8"}, ten[9]); err != nil {
		t.Fatalf("the 10th entry: %v", err)
	}
	full := stored(t, s, pool, "s")
	err = s.Append(ctx, "s", session.AppendOptions{}, sizedEntry(t, "e-10", 100))
	wantLimit(t, err, "entries", 11, 10, "Append of the 11th entry")
	if got := stored(t, s, pool, "s"); got != full {
		t.Fatalf("after the refused Append:\n%s\nwant\n%s", got, full)
	}
	// An empty append to a full session changes nothing, and is no error.
	if err := s.Append(ctx, "s", session.AppendOptions{IfLast: "e-9"}); err != nil {
		t.Fatalf("empty append to a full session: %v", err)
	}

	// Rewrite: the new log is checked whole.
	eleven := append(append([]session.Entry(nil), ten...), sizedEntry(t, "e-10", 100))
	err = s.Rewrite(ctx, "s", session.RewriteOptions{}, h, eleven)
	wantLimit(t, err, "entries", 11, 10, "Rewrite with 11 entries")
	err = s.Rewrite(ctx, "s", session.RewriteOptions{}, session.Header{ID: "s", Cwd: "/w", Title: strings.Repeat("t", 5000)}, ten)
	wantLimit(t, err, "line", -1, 4<<10, "Rewrite with a header over the limit")
	err = s.Rewrite(ctx, "s", session.RewriteOptions{}, h, append(ten[:9:9], sizedEntry(t, "long", 4<<10+1)))
	wantLimit(t, err, "line", 4<<10+1, 4<<10, "Rewrite with a line over the limit")
	err = s.Rewrite(ctx, "s", session.RewriteOptions{}, h, sizedEntries(t, "r", 5, 4<<10))
	wantLimit(t, err, "log", -1, 16<<10, "Rewrite of a log over the limit")
	if got := stored(t, s, pool, "s"); got != full {
		t.Fatalf("after the refused Rewrites:\n%s\nwant\n%s", got, full)
	}
	if err := s.Rewrite(ctx, "s", session.RewriteOptions{}, h, ten[:5]); err != nil {
		t.Fatalf("Rewrite within the limits: %v", err)
	}

	// A line over MaxLineBytes; one of exactly MaxLineBytes goes in.
	if err := s.Create(ctx, session.Header{ID: "l", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	empty := stored(t, s, pool, "l")
	err = s.Append(ctx, "l", session.AppendOptions{}, sizedEntry(t, "a", 100), sizedEntry(t, "b", 4<<10+1))
	wantLimit(t, err, "line", 4<<10+1, 4<<10, "Append of a line over the limit")
	if got := stored(t, s, pool, "l"); got != empty {
		t.Fatalf("after the refused Append:\n%s\nwant\n%s", got, empty)
	}
	if err := s.Append(ctx, "l", session.AppendOptions{}, sizedEntry(t, "c", 4<<10)); err != nil {
		t.Fatalf("a line of MaxLineBytes: %v", err)
	}

	// The log's bytes: filled to exactly MaxLogBytes, and not one more.
	if err := s.Create(ctx, session.Header{ID: "b", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "b", session.AppendOptions{}, sizedEntries(t, "b", 3, 4<<10)...); err != nil {
		t.Fatal(err)
	}
	var size int64
	if err := pool.QueryRow(ctx, `SELECT size FROM agentsession_sessions WHERE id = 'b'`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	three := stored(t, s, pool, "b")
	err = s.Append(ctx, "b", session.AppendOptions{}, sizedEntry(t, "over", 4<<10))
	wantLimit(t, err, "log", size+4<<10+1, 16<<10, "Append past MaxLogBytes")
	if got := stored(t, s, pool, "b"); got != three {
		t.Fatalf("after the refused Append:\n%s\nwant\n%s", got, three)
	}
	rest := int(16<<10 - size - 1)
	if err := s.Append(ctx, "b", session.AppendOptions{}, sizedEntry(t, "fill", rest)); err != nil {
		t.Fatalf("an append to exactly MaxLogBytes: %v", err)
	}
	exact := stored(t, s, pool, "b")
	err = s.Append(ctx, "b", session.AppendOptions{}, sizedEntry(t, "x", 100))
	wantLimit(t, err, "log", 16<<10+101, 16<<10, "Append to a full log")
	if got := stored(t, s, pool, "b"); got != exact {
		t.Fatalf("after the refused Append:\n%s\nwant\n%s", got, exact)
	}

	// What was written loads, whole and by its tail.
	for _, id := range []string{"s", "l", "b"} {
		l, err := s.Load(ctx, id)
		if err != nil {
			t.Fatalf("Load %s: %v", id, err)
		}
		if n := len(l.Entries); n > 1 {
			if tail, err := s.LoadTail(ctx, id, n-1, l.Entries[n-2].ID()); err != nil || len(tail.Entries) != 1 {
				t.Fatalf("LoadTail %s: %v", id, err)
			}
		}
	}
}

// TestLimitsLoad: Load and LoadTail read with the store's limits, not the
// defaults: a store with small limits refuses a session a store of the
// default limits wrote over them.
func TestLimitsLoad(t *testing.T) {
	ctx := context.Background()
	def, pool := newStore(t)
	small := newStoreLimits(t, pool, smallLimits)
	for _, id := range []string{"many", "long", "ok"} {
		if err := def.Create(ctx, session.Header{ID: id, Cwd: "/w"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := def.Append(ctx, "many", session.AppendOptions{}, sizedEntries(t, "m", 11, 100)...); err != nil {
		t.Fatal(err)
	}
	if err := def.Append(ctx, "long", session.AppendOptions{}, sizedEntry(t, "long", 5000)); err != nil {
		t.Fatal(err)
	}
	if err := def.Append(ctx, "ok", session.AppendOptions{}, sizedEntries(t, "o", 10, 100)...); err != nil {
		t.Fatal(err)
	}
	_, err := small.Load(ctx, "many")
	wantLimit(t, err, "entries", -1, 10, "Load of 11 entries")
	_, err = small.Load(ctx, "long")
	wantLimit(t, err, "line", -1, 4<<10, "Load of a long line")
	_, err = small.LoadTail(ctx, "long", 0, "")
	wantLimit(t, err, "line", -1, 4<<10, "LoadTail of a long line")
	if l, err := small.Load(ctx, "ok"); err != nil || len(l.Entries) != 10 {
		t.Fatalf("Load of a session within the limits: %v", err)
	}
	if _, err := def.Load(ctx, "many"); err != nil {
		t.Fatalf("Load with the default limits: %v", err)
	}
}

// TestLimitsConcurrentAppends: appends from several goroutines near the
// limits are checked under the session row's lock: together they fill
// the session to its limit and never past it, and what they wrote loads.
func TestLimitsConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	_, pool := newStoreConns(t, 8)
	const writers, tries = 8, 8
	for _, tc := range []struct {
		name  string
		lim   session.Limits
		size  int // of an entry
		what  string
		check func(t *testing.T, count int, size int64)
	}{
		{"entries", session.Limits{MaxEntries: 20}, 100, "entries", func(t *testing.T, count int, _ int64) {
			if count != 20 {
				t.Errorf("%d entries stored, want the limit, 20", count)
			}
		}},
		{"bytes", session.Limits{MaxLogBytes: 16 << 10}, 1000, "log", func(t *testing.T, _ int, size int64) {
			if size > 16<<10 || size < 16<<10-2*1001 {
				t.Errorf("%d bytes stored, want at most 16384 and no room for another entry", size)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStoreLimits(t, pool, tc.lim)
			id := "c-" + tc.name
			if err := s.Create(ctx, session.Header{ID: id, Cwd: "/w"}); err != nil {
				t.Fatal(err)
			}
			if err := s.Append(ctx, id, session.AppendOptions{}, sizedEntries(t, "first", 5, tc.size)...); err != nil {
				t.Fatal(err)
			}
			// Each writer appends two entries at a time, then one, until
			// refused (a bounded number of tries).
			var wg sync.WaitGroup
			written := make([]int, writers)
			errs := make([]error, writers)
			for w := range writers {
				wg.Go(func() {
					batch := 2
					for k := range tries {
						err := s.Append(ctx, id, session.AppendOptions{}, sizedEntries(t, fmt.Sprintf("w%d-%d", w, k), batch, tc.size)...)
						var le *session.LimitError
						switch {
						case err == nil:
							written[w] += batch
						case errors.As(err, &le) && le.What == tc.what && batch == 2:
							batch = 1
						case errors.As(err, &le) && le.What == tc.what:
							return
						default:
							errs[w] = err
							return
						}
					}
				})
			}
			wg.Wait()
			total := 5
			for w, err := range errs {
				if err != nil {
					t.Fatalf("writer %d: %v", w, err)
				}
				total += written[w]
			}
			var count int
			var size int64
			if err := pool.QueryRow(ctx, `SELECT entry_count, size FROM agentsession_sessions WHERE id = $1`, id).Scan(&count, &size); err != nil {
				t.Fatal(err)
			}
			if count != total {
				t.Errorf("%d entries stored, the writers wrote %d", count, total)
			}
			tc.check(t, count, size)
			stored(t, s, pool, id) // loads, and the row agrees with the log
		})
	}
}

// TestMigrateFromVersion1: Migrate upgrades a database of schema version
// 1 in place (its sessions kept) to one whose append applies limits; the
// append function of version 1 keeps working for replicas not yet
// upgraded, within the default limits.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	pool := poolIn(t, newSchema(t), 2)
	// Version 1 as its Migrate left it, with a session its Store wrote.
	v1, err := os.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE agentsession_schema (
			version    integer     PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, string(v1)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO agentsession_schema (version, name) VALUES (1, '0001_init.sql')`); err != nil {
		t.Fatal(err)
	}
	hb, err := session.Header{ID: "old", Cwd: "/w"}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO agentsession_sessions (id, header, cwd, updated_at, size)
		VALUES ('old', $1, '/w', clock_timestamp(), $2)`, hb, len(hb)+1); err != nil {
		t.Fatal(err)
	}
	oldAppend := func(e session.Entry) string {
		t.Helper()
		var res string
		if err := pool.QueryRow(ctx, `SELECT agentsession_append($1, $2, $3, $4, $5, $6, $7)`,
			"old", "", false, []string{e.ID()}, [][]byte{e.JSON()}, nil, e.Len()+1).Scan(&res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := oldAppend(sizedEntry(t, "v1", 100)); res != "" {
		t.Fatalf("version 1 append: %q", res)
	}
	if _, err := pgstore.New(ctx, pool, nil); !errors.Is(err, pgstore.ErrSchema) {
		t.Fatalf("New on version 1: %v, want ErrSchema", err)
	}

	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	var versions []int32
	rows, err := pool.Query(ctx, `SELECT version FROM agentsession_schema ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v int32
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if rows.Err() != nil || len(versions) != pgstore.SchemaVersion || versions[0] != 1 || int(versions[len(versions)-1]) != pgstore.SchemaVersion {
		t.Fatalf("versions recorded: %v (%v)", versions, rows.Err())
	}
	s := newStoreLimits(t, pool, session.Limits{MaxEntries: 2})
	if err := s.Append(ctx, "old", session.AppendOptions{IfLast: "v1"}, sizedEntry(t, "v2", 100)); err != nil {
		t.Fatal(err)
	}
	err = s.Append(ctx, "old", session.AppendOptions{}, sizedEntry(t, "v2b", 100))
	wantLimit(t, err, "entries", 3, 2, "Append past MaxEntries after the upgrade")

	// A replica still on version 1 calls the old function: it appends,
	// within the default limits.
	if res := oldAppend(sizedEntry(t, "v1b", 100)); res != "" {
		t.Fatalf("version 1 append after the upgrade: %q", res)
	}
	if _, err := pool.Exec(ctx, `UPDATE agentsession_sessions SET size = size + $1 WHERE id = 'old'`, int64(session.DefaultMaxLogBytes)); err != nil {
		t.Fatal(err)
	}
	if res := oldAppend(sizedEntry(t, "v1c", 100)); !strings.HasPrefix(res, "toolarge:bytes:") {
		t.Fatalf("version 1 append past the default MaxLogBytes: %q, want toolarge", res)
	}
	if _, err := pool.Exec(ctx, `UPDATE agentsession_sessions SET size = size - $1 WHERE id = 'old'`, int64(session.DefaultMaxLogBytes)); err != nil {
		t.Fatal(err)
	}
	l, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := stored(t, l, pool, "old")
	if !strings.Contains(got, `"id":"v1b"`) || strings.Contains(got, `"id":"v1c"`) {
		t.Fatalf("after the upgrade:\n%s", got)
	}
}
