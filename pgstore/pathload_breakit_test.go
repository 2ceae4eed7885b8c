package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
)

// Issue 40 break-it, second round: pgstore's LoadPath against Load and
// a whole open, on sessions the load by path could read otherwise.

// padded returns log with the message of entry id padded by n bytes of
// text (a line that long).
func padded(t *testing.T, log []session.Entry, id string, n int) []session.Entry {
	t.Helper()
	out := make([]session.Entry, len(log))
	copy(out, log)
	for i, e := range out {
		if e.ID() != id {
			continue
		}
		raw := string(e.AppendJSON(nil))
		raw = strings.Replace(raw, `"question `+id, `"question `+id+strings.Repeat(" long", n/5), 1)
		out[i] = line(t, raw)
		return out
	}
	t.Fatalf("no entry %s", id)
	return nil
}

// TestBreakItLongLineOffThePath: a store whose MaxLineBytes is lower
// than the writer's: Load refuses the session (a line over the limit,
// long before the latest compaction); an open by path must too, not
// open it from the lines it happens to read.
func TestBreakItLongLineOffThePath(t *testing.T) {
	ctx := context.Background()
	pg, pool := newStore(t)
	log := padded(t, pathShapes(t)["several compactions"], "xu0", 200_000)
	writeLog(t, pg, "long1", "one by one", log)
	small, err := pgstore.New(ctx, pool, &pgstore.Options{Limits: session.Limits{MaxLineBytes: 100_000}})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	if _, err := small.Load(ctx, "long1"); !errors.Is(err, session.ErrTooLarge) {
		t.Fatalf("Load: %v, want ErrTooLarge", err)
	}
	s, err := session.Open(ctx, small, "long1")
	if err == nil {
		partial := fmt.Sprint(s.Len())
		s.Close()
		t.Fatalf("Open by path of a session Load refuses: no error (Len %s)", partial)
	}
	if !errors.Is(err, session.ErrTooLarge) {
		t.Fatalf("Open: %v, want ErrTooLarge", err)
	}
}

// TestBreakItVersion8Interleaved: a session written by this version, then
// by a version 8 replica (rows without places: a leaf marker back to the
// older branch, a compaction on it, a turn), then by this version again
// (children of rows without places), then filled in the background: at
// each step an open by path answers as a whole open.
func TestBreakItVersion8Interleaved(t *testing.T) {
	ctx := context.Background()
	pool := poolIn(t, newSchema(t), 4)
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	pg, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	v8Append := func(id string, entries ...session.Entry) {
		t.Helper()
		appendV8(t, pool, id, entries...)
	}
	ent := func(s string) session.Entry { return line(t, s) }
	log := pathShapes(t)["branched, newer leaf"]
	writeLog(t, pg, "mix", "one by one", log)
	samePath(t, pg, "mix").Close()
	// The older branch's leaf is "oya1" (chain "oy" of two turns).
	v8Append("mix",
		ent(`{"type":"custom","id":"mk8","parentId":"oya1","timestamp":"2026-01-01T00:00:00Z","customType":"agentsession.leaf"}`),
		ent(`{"type":"message","id":"v8u","parentId":"oya1","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"from v8"}}`),
		ent(`{"type":"compaction","id":"v8c","parentId":"v8u","timestamp":"2026-01-01T00:00:00Z","summary":"v8 summary","firstKeptEntryId":"oyu1","tokensBefore":5}`),
		ent(`{"type":"thinking_level_change","id":"v8t","parentId":"v8c","timestamp":"2026-01-01T00:00:00Z","thinkingLevel":"low"}`),
	)
	samePathOr(t, pg, "mix", true).Close()
	// This version appends after the rows without places.
	if err := pg.Append(ctx, "mix", session.AppendOptions{},
		ent(`{"type":"message","id":"v9u","parentId":"v8t","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"from v9"}}`),
		ent(`{"type":"message","id":"v9a","parentId":"v9u","timestamp":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"p","model":"m9"}}`),
	); err != nil {
		t.Fatal(err)
	}
	samePathOr(t, pg, "mix", true).Close()
	pgstore.WaitFills(pg)
	s := samePath(t, pg, "mix")
	if _, err := s.Append(ctx, &session.Message{Role: session.RoleUser, Content: []session.Block{session.Text("more")}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// A version 8 replica again, on the newer branch (a marker to it).
	v8Append("mix", ent(`{"type":"custom","id":"mk8b","parentId":"nya1","timestamp":"2026-01-01T00:00:00Z","customType":"agentsession.leaf"}`))
	samePathOr(t, pg, "mix", true).Close()
	pgstore.WaitFills(pg)
	samePath(t, pg, "mix").Close()
	pl, err := pg.LoadPath(ctx, "mix")
	if err != nil || pl.Complete {
		t.Fatalf("after the fills the open reads the path: complete=%v %v", pl != nil && pl.Complete, err)
	}
}
