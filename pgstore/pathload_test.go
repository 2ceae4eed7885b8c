package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
)

// Shapes of sessions for the load by path: each a log, in order. The
// ids say what an entry is.
func pathShapes(t testing.TB) map[string][]session.Entry {
	e := func(typ, id, parent, rest string) session.Entry {
		p := "null"
		if parent != "" {
			p = fmt.Sprintf("%q", parent)
		}
		return line(t, fmt.Sprintf(`{"type":%q,"id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:00Z"%s}`, typ, id, p, rest))
	}
	u := func(id, parent string) session.Entry {
		return e("message", id, parent, fmt.Sprintf(`,"message":{"role":"user","content":"question %s"}`, id))
	}
	a := func(id, parent string) session.Entry {
		return e("message", id, parent, fmt.Sprintf(`,"message":{"role":"assistant","content":[{"type":"text","text":"answer %s"}]}`, id))
	}
	am := func(id, parent, model string) session.Entry {
		return e("message", id, parent, fmt.Sprintf(`,"message":{"role":"assistant","content":[{"type":"text","text":"answer %s"}],"provider":"prov","model":%q}`, id, model))
	}
	bad := func(id, parent string) session.Entry { // an assistant message that does not decode
		return e("message", id, parent, `,"message":{"role":"assistant","content":7,"provider":"p","model":"odd"}`)
	}
	comp := func(id, parent, kept string) session.Entry {
		return e("compaction", id, parent, fmt.Sprintf(`,"summary":"summary %s","firstKeptEntryId":%q,"tokensBefore":1000`, id, kept))
	}
	model := func(id, parent, m string) session.Entry {
		return e("model_change", id, parent, fmt.Sprintf(`,"provider":"prov","modelId":%q`, m))
	}
	think := func(id, parent, lvl string) session.Entry {
		return e("thinking_level_change", id, parent, fmt.Sprintf(`,"thinkingLevel":%q`, lvl))
	}
	marker := func(id, parent string) session.Entry {
		return e("custom", id, parent, `,"customType":"agentsession.leaf"`)
	}
	// chain appends n user/assistant pairs after parent, ids prefix1...
	chain := func(log []session.Entry, prefix, parent string, n int) ([]session.Entry, string) {
		for i := range n {
			uid, aid := fmt.Sprintf("%su%d", prefix, i), fmt.Sprintf("%sa%d", prefix, i)
			log = append(log, u(uid, parent), a(aid, uid))
			parent = aid
		}
		return log, parent
	}
	shapes := map[string][]session.Entry{}

	log, last := chain(nil, "x", "", 5)
	shapes["no compaction"] = log

	log, last = chain(nil, "x", "", 5) // kept: xu3
	log = append(log, comp("c1", last, "xu3"))
	log, _ = chain(log, "y", "c1", 3)
	shapes["linear"] = log

	log = []session.Entry{model("m1", "", "early"), think("t1", "m1", "high")}
	log, last = chain(log, "x", "t1", 6)
	log = append(log, model("m2", last, "later"))
	log, last = chain(log, "w", "m2", 4)
	log = append(log, comp("c1", last, "wu2"))
	log, _ = chain(log, "y", "c1", 2)
	shapes["settings long before"] = log

	log, last = chain(nil, "x", "", 2)
	log = append(log, am("named", last, "model-a"))
	log, last = chain(log, "z", "named", 4)
	log = append(log, comp("c1", last, "zu3"))
	log, _ = chain(log, "y", "c1", 2)
	shapes["assistant with model before"] = log

	log, last = chain(nil, "x", "", 3)
	log = append(log, am("named", last, "model-a"), bad("odd", "named"))
	log, last = chain(log, "z", "odd", 3)
	log = append(log, comp("c1", last, "zu2"))
	log, _ = chain(log, "y", "c1", 2)
	shapes["undecodable assistant before"] = log

	log, last = chain(nil, "x", "", 4)
	log = append(log, comp("c1", last, "xu2"))
	log, last = chain(log, "y", "c1", 4)
	log = append(log, comp("c2", last, "yu3"))
	log, last = chain(log, "z", "c2", 3)
	log = append(log, comp("c3", last, "za1"))
	log, _ = chain(log, "v", "c3", 2)
	shapes["several compactions"] = log

	// Branched: a compaction on each branch; the leaf marker goes back to
	// the older branch.
	log, last = chain(nil, "x", "", 4)
	fork := last
	log, last = chain(log, "old", fork, 3)
	log = append(log, comp("cold", last, "oldu1"))
	log, oldLeaf := chain(log, "oy", "cold", 2)
	log, last = chain(log, "new", fork, 3)
	log = append(log, comp("cnew", last, "newu2"))
	log, newLeaf := chain(log, "ny", "cnew", 2)
	shapes["branched, newer leaf"] = slices.Clone(log)
	shapes["branched, leaf on the older branch"] = append(slices.Clone(log), marker("mk", oldLeaf))
	shapes["leaf marker last"] = append(append(slices.Clone(log), marker("mk1", oldLeaf)), marker("mk2", newLeaf))
	shapes["leaf marker to the root"] = append(slices.Clone(log), marker("mk", ""))

	// The first kept entry is the root: the path is the whole history
	// but for a side branch.
	log, last = chain(nil, "x", "", 3)
	log, _ = chain(log, "side", "xa0", 2)
	log = append(log, comp("c1", last, "xu0"))
	log, _ = chain(log, "y", "c1", 2)
	shapes["first kept is the root"] = log

	// An id repeated (a rewrite keeps such a log; the later line wins).
	log, last = chain(nil, "x", "", 3)
	log = append(log, comp("c1", last, "xu2"))
	log, last = chain(log, "y", "c1", 2)
	log = append(log, u("xa1", last))
	log, _ = chain(log, "z", "xa1", 2)
	shapes["repeated id (rewrite only)"] = log

	// The first kept entry on another branch, or not there at all.
	log, last = chain(nil, "x", "", 3)
	fork = last
	log, _ = chain(log, "side", fork, 2)
	log, last = chain(log, "main", fork, 3)
	log = append(log, comp("c1", last, "sideu1"))
	log, last = chain(log, "y", "c1", 2)
	log = append(log, comp("c2", last, "nowhere"))
	log, _ = chain(log, "z", "c2", 2)
	shapes["first kept not on the path"] = log

	log, last = chain(nil, "x", "", 3)
	log = append(log, comp("c1", last, "xu2"))
	shapes["compaction as leaf"] = log

	// A missing parent: its subtree's place is unknown until it comes.
	log, last = chain(nil, "x", "", 3)
	log = append(log, comp("c1", last, "xa1"))
	log, last = chain(log, "y", "c1", 2)
	log = append(log, u("orphan", "later"))
	log, _ = chain(log, "o", "orphan", 2)
	log = append(log, a("later", last))
	shapes["parent appended after its child"] = log
	return shapes
}

// wholeOnly hides a store's abilities: session.Open reads it whole.
type wholeOnly struct{ session.Store }

// memOf returns a MemoryStore holding a copy of session id of src.
func memOf(t *testing.T, src session.Store, id string) *session.MemoryStore {
	t.Helper()
	mem := session.NewMemoryStore()
	if err := session.Copy(context.Background(), mem, wholeOnly{src}, id); err != nil {
		t.Fatal(err)
	}
	return mem
}

// writeWays writes a log to a store as its callers do: entry by entry,
// in one append, in batches of appends (group commit), by a rewrite.
var writeWays = []string{"one by one", "one append", "batches", "rewrite"}

func writeLog(t *testing.T, pg *pgstore.Store, id, way string, log []session.Entry) {
	t.Helper()
	ctx := context.Background()
	if err := pg.Create(ctx, session.Header{ID: id, Cwd: "/w", Version: session.CurrentVersion}); err != nil {
		t.Fatal(err)
	}
	switch way {
	case "one by one":
		for _, e := range log {
			if err := pg.Append(ctx, id, session.AppendOptions{}, e); err != nil {
				t.Fatal(err)
			}
		}
	case "one append":
		if err := pg.Append(ctx, id, session.AppendOptions{}, log...); err != nil {
			t.Fatal(err)
		}
	case "rewrite":
		if err := pg.Rewrite(ctx, id, session.RewriteOptions{}, session.Header{ID: id, Cwd: "/w", Version: session.CurrentVersion}, log); err != nil {
			t.Fatal(err)
		}
	case "batches":
		// Messages wait while the flights are held, and go together,
		// in the order they came; anything else goes alone between.
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		release, held := func() {}, false
		flush := func() {
			if held {
				release()
				held = false
			}
			wg.Wait()
		}
		for _, e := range log {
			if e.Type() != "message" {
				flush()
				if err := pg.Append(ctx, id, session.AppendOptions{}, e); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if !held {
				var ok bool
				if release, ok = pgstore.HoldAppends(pg); !ok {
					t.Fatal("could not hold the appends")
				}
				held = true
			}
			n := pgstore.QueuedAppends(pg)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := pg.Append(ctx, id, session.AppendOptions{}, e); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
			waitQueued(t, pg, n+1)
		}
		flush()
		if len(errs) > 0 {
			t.Fatal(errs)
		}
	}
}

// ids returns the ids of entries.
func ids(entries []session.Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ID()
	}
	return out
}

// samePath checks that pg's LoadPath of id gives what a MemoryStore's
// does on the same log, and that a session opened through pg gives the
// Context and Messages of one opened whole; it returns the handle.
func samePath(t *testing.T, pg session.Store, id string) *session.Session {
	t.Helper()
	return samePathOr(t, pg, id, false)
}

// samePathOr is samePath; orWhole lets LoadPath give the whole log
// (Complete), as it does for rows whose places are not known.
func samePathOr(t *testing.T, pg session.Store, id string, orWhole bool) *session.Session {
	t.Helper()
	ctx := context.Background()
	mem := memOf(t, pg, id)
	want, err := mem.LoadPath(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pg.(session.PathLoader).LoadPath(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := ids(want.Log.Entries)
	if orWhole && got.Complete {
		all, err := pg.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		wantIDs, want.Complete = ids(all.Entries), true
	}
	if !slices.Equal(ids(got.Log.Entries), wantIDs) || got.Complete != want.Complete || got.Last != want.Last {
		t.Fatalf("LoadPath: %v complete=%v last=%s\nwant %v complete=%v last=%s",
			ids(got.Log.Entries), got.Complete, got.Last, ids(want.Log.Entries), want.Complete, want.Last)
	}
	s, err := session.Open(ctx, pg, id)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := session.Open(ctx, wholeOnly{mem}, id)
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	if g, w := asJSON(t, s.Context()), asJSON(t, whole.Context()); g != w {
		t.Fatalf("Context:\n%s\nwant\n%s", g, w)
	}
	gm, err := s.Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wm, err := whole.Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := asJSON(t, gm), asJSON(t, wm); g != w {
		t.Fatalf("Messages:\n%s\nwant\n%s", g, w)
	}
	return s
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLoadPathShapes: for every shape, written every way, LoadPath gives
// the entries the MemoryStore's (the reference rule) gives, and a
// session opened through it the Context and Messages of one opened
// whole; after an append on that handle, the same again.
func TestLoadPathShapes(t *testing.T) {
	ctx := context.Background()
	pg, _ := newStore(t)
	shapes := pathShapes(t)
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range shapes {
			if !yield(k) {
				return
			}
		}
	})
	n := 0
	for _, name := range names {
		for _, way := range writeWays {
			if strings.HasSuffix(name, "(rewrite only)") && way != "rewrite" {
				continue
			}
			t.Run(name+"/"+way, func(t *testing.T) {
				n++
				id := fmt.Sprintf("shape-%d", n)
				writeLog(t, pg, id, way, shapes[name])
				s := samePath(t, pg, id)
				if _, err := s.Append(ctx, &session.Message{Role: session.RoleUser, Content: []session.Block{session.Text("and then?")}}); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				samePath(t, pg, id).Close()
			})
		}
	}
}

// TestLoadPathReadsThePath: a compacted session's open reads the path,
// not the session (the handle is partial: the history is not in it).
func TestLoadPathReadsThePath(t *testing.T) {
	ctx := context.Background()
	pg, _ := newStore(t)
	log := pathShapes(t)["several compactions"]
	writeLog(t, pg, "p1", "one by one", log)
	pl, err := pg.LoadPath(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if pl.Complete || len(pl.Log.Entries) >= len(log)/2 {
		t.Fatalf("LoadPath read %d of %d entries (complete=%v)", len(pl.Log.Entries), len(log), pl.Complete)
	}
	if _, err := pg.LoadPath(ctx, "nope"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("LoadPath of a missing session: %v", err)
	}
}

// TestLoadPathRowsFromBefore: sessions written by a version 8 package
// (rows without places, before the migration and after it) open as a
// whole read does; the open fills their places, and the next one reads
// the path.
func TestLoadPathRowsFromBefore(t *testing.T) {
	ctx := context.Background()
	pool := poolIn(t, newSchema(t), 4)
	createVersion(t, pool, 8)
	v8Append := func(id string, entries ...session.Entry) {
		t.Helper()
		appendV8(t, pool, id, entries...)
	}
	shapes := pathShapes(t)
	names := []string{"several compactions", "branched, leaf on the older branch", "settings long before", "no compaction"}
	for i, name := range names {
		id := fmt.Sprintf("old-%d", i)
		insertSessionRow(t, pool, id)
		log := shapes[name]
		v8Append(id, log[:len(log)/2]...)
	}
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	// The rest as a version 8 replica appends it after the migration.
	for i, name := range names {
		log := shapes[name]
		v8Append(fmt.Sprintf("old-%d", i), log[len(log)/2:]...)
	}
	pg, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	for i, name := range names {
		id := fmt.Sprintf("old-%d", i)
		pl, err := pg.LoadPath(ctx, id)
		if err != nil || !pl.Complete {
			t.Fatalf("%s: LoadPath of rows from before: complete=%v, %v", name, pl != nil && pl.Complete, err)
		}
		samePathOr(t, pg, id, true).Close()
		pgstore.WaitFills(pg)
		pl, err = pg.LoadPath(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if want := name == "no compaction"; pl.Complete != want {
			t.Fatalf("%s: after the fill, complete=%v", name, pl.Complete)
		}
		s := samePath(t, pg, id)
		if _, err := s.Append(ctx, &session.Message{Role: session.RoleUser, Content: []session.Block{session.Text("more")}}); err != nil {
			t.Fatal(err)
		}
		s.Close()
		samePath(t, pg, id).Close()
	}
}

func raws(entries []session.Entry) [][]byte {
	out := make([][]byte, len(entries))
	for i, e := range entries {
		out[i] = e.AppendJSON(nil)
	}
	return out
}

// TestFillAskedAgainWhileInFlight: an open that finds rows without
// places while a fill of the session is in flight, whose snapshot is
// older than those rows, gets them filled too: the fill runs again when
// it is done (it once dropped the request, and the session was read
// whole until the next open after it).
func TestFillAskedAgainWhileInFlight(t *testing.T) {
	ctx := context.Background()
	pg, pool := newStore(t)
	ent := func(s string) session.Entry { return line(t, s) }
	writeLog(t, pg, "again", "one by one", pathShapes(t)["branched, newer leaf"])
	// A version 8 replica's rows: no places.
	appendV8(t, pool, "again",
		ent(`{"type":"message","id":"v8u","parentId":"nya1","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"from v8"}}`),
		ent(`{"type":"compaction","id":"v8c","parentId":"v8u","timestamp":"2026-01-01T00:00:00Z","summary":"v8 summary","firstKeptEntryId":"nyu1","tokensBefore":5}`),
	)
	reached, release := pgstore.HoldFill(pg)
	if pl, err := pg.LoadPath(ctx, "again"); err != nil || !pl.Complete {
		t.Fatalf("rows without places: complete=%v %v, want a whole read", pl != nil && pl.Complete, err)
	}
	<-reached // the fill has read the session
	// This version's rows, children of rows without places: none either.
	if err := pg.Append(ctx, "again", session.AppendOptions{},
		ent(`{"type":"message","id":"v9u","parentId":"v8c","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"from v9"}}`),
	); err != nil {
		t.Fatal(err)
	}
	if pl, err := pg.LoadPath(ctx, "again"); err != nil || !pl.Complete {
		t.Fatalf("during the fill: complete=%v %v, want a whole read", pl != nil && pl.Complete, err)
	}
	release()
	pgstore.WaitFills(pg)
	pl, err := pg.LoadPath(ctx, "again")
	if err != nil || pl.Complete {
		t.Fatalf("after the fills, an open by path: complete=%v %v", pl != nil && pl.Complete, err)
	}
	samePath(t, pg, "again").Close()
}
