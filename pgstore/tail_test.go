package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsession/session"
)

// TestLoadTailUsesIndex: LoadTail's queries read the (session_id, seq)
// primary key, with the plan PostgreSQL makes for the given values and
// with the generic plan a cached statement may switch to, so that their
// cost does not depend on the session's length.
func TestLoadTailUsesIndex(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	for _, id := range []string{"big", "other"} {
		if err := s.Create(ctx, session.Header{ID: id, Cwd: "/w"}); err != nil {
			t.Fatal(err)
		}
	}
	// Rows written directly: what matters is the table's size.
	if _, err := pool.Exec(ctx, `INSERT INTO agentsession_entries (session_id, seq, entry_id, raw)
		SELECT s.id, g, 'e' || g, convert_to('{"type":"x","id":"e' || g || '","pad":"' || repeat('p', 200) || '"}', 'UTF8')
		FROM (VALUES ('big', 20000), ('other', 5000)) AS s (id, n), generate_series(1, s.n) AS g`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE agentsession_sessions SET entry_count = CASE id WHEN 'big' THEN 20000 ELSE 5000 END`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE agentsession_entries`); err != nil {
		t.Fatal(err)
	}
	queries := map[string]string{ // as in LoadTail
		"nth": `SELECT s.header, s.size, s.entry_count, e.entry_id
			FROM agentsession_sessions s
			LEFT JOIN agentsession_entries e ON e.session_id = s.id AND e.seq = $2
			WHERE s.id = $1`,
		"tail": `SELECT raw FROM agentsession_entries WHERE session_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq`,
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for name, q := range queries {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := ""
			stmt := "explain_" + name + "_" + mode
			if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode+"; PREPARE "+stmt+" (text, integer, integer) AS "+q); err != nil {
				t.Fatal(err)
			}
			rows, err := conn.Query(ctx, "EXPLAIN EXECUTE "+stmt+" ('big', 19990, 20000)")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					t.Fatal(err)
				}
				plan += line + "\n"
			}
			if rows.Err() != nil {
				t.Fatal(rows.Err())
			}
			if _, err := conn.Exec(ctx, "DEALLOCATE "+stmt+"; RESET plan_cache_mode"); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(plan, "Index Scan using agentsession_entries_pkey") || strings.Contains(plan, "Seq Scan on agentsession_entries") {
				t.Errorf("%s (%s) does not scan the primary key of the entries:\n%s", name, mode, plan)
			}
		}
	}
	l, err := s.LoadTail(ctx, "big", 19990, "e19990")
	if err != nil || len(l.Entries) != 10 || l.Entries[0].ID() != "e19991" {
		t.Fatalf("LoadTail near the end of the big session: %v", err)
	}
}

// TestLoadTailOlderFormat: a session whose header is of an older format
// version is migrated when read, which may give its entries new ids (a
// version 1 log has none); LoadTail then answers with the ids Load
// gives.
func TestLoadTailOlderFormat(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	if err := s.Create(ctx, session.Header{ID: "v1", Version: 1, Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	var es []session.Entry
	for i := range 4 {
		e, err := session.NewEntry("note", fmt.Sprintf("n%d", i), "", time.Now(), map[string]int{"i": i})
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	if err := s.Append(ctx, "v1", session.AppendOptions{}, es...); err != nil {
		t.Fatal(err)
	}
	whole, err := s.Load(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if whole.MigratedFrom != 1 || len(whole.Entries) != 4 {
		t.Fatalf("Load: migrated from %d, %d entries", whole.MigratedFrom, len(whole.Entries))
	}
	for n := range 5 {
		last := ""
		if n > 0 {
			last = whole.Entries[n-1].ID()
		}
		l, err := s.LoadTail(ctx, "v1", n, last)
		if err != nil {
			t.Fatalf("LoadTail(%d, %s): %v", n, last, err)
		}
		if !slices.EqualFunc(l.Entries, whole.Entries[n:], func(a, b session.Entry) bool { return bytes.Equal(a.JSON(), b.JSON()) }) {
			t.Fatalf("LoadTail(%d) differs from Load", n)
		}
	}
	if _, err := s.LoadTail(ctx, "v1", 2, "n1"); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("LoadTail after the stored, not the migrated id: %v, want ErrConflict", err)
	}
}

// TestLoadTailCorruptRow: a row written around the store is reported
// with its line in the whole log, by LoadTail as by Load.
func TestLoadTailCorruptRow(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	if err := s.Create(ctx, session.Header{ID: "c", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	var es []session.Entry
	for i := range 4 {
		e, err := session.NewEntry("note", fmt.Sprintf("n%d", i), "", time.Now(), map[string]int{"i": i})
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	if err := s.Append(ctx, "c", session.AppendOptions{}, es...); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{`{"type":"note","id":"n2",`, "{\"type\":\"note\",\n\"id\":\"n2\"}"} {
		if _, err := pool.Exec(ctx, `UPDATE agentsession_entries SET raw = convert_to($1, 'UTF8') WHERE session_id = 'c' AND seq = 3`, raw); err != nil {
			t.Fatal(err)
		}
		_, lerr := s.Load(ctx, "c")
		_, terr := s.LoadTail(ctx, "c", 1, "n0")
		for what, err := range map[string]error{"Load": lerr, "LoadTail": terr} {
			var ce *session.CorruptError
			if !errors.As(err, &ce) || ce.Line != 4 {
				t.Errorf("%s of a session whose third entry is %q: %v, want line 4 corrupt", what, raw, err)
			}
		}
		if _, err := s.LoadTail(ctx, "c", 3, "n2"); err != nil {
			t.Errorf("LoadTail after the corrupt row: %v", err)
		}
	}
}
