package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
)

// line parses one seed-format line into an entry.
func line(t testing.TB, s string) session.Entry {
	t.Helper()
	e, err := session.ParseEntry([]byte(s))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return e
}

func userMsg(t testing.TB, id, parent, text string) session.Entry {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return line(t, fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":%q}}`, id, p, text))
}

func metaEntry(t testing.TB, id, parent, data string) session.Entry {
	return line(t, fmt.Sprintf(`{"type":"custom","id":%q,"parentId":%q,"timestamp":"2026-01-01T00:00:00Z","customType":"agentsession.meta","data":%s}`, id, parent, data))
}

func listed(t testing.TB, s session.Store, opts session.ListOptions) map[string]session.SessionInfo {
	t.Helper()
	opts.Limit = 1000
	p, err := s.List(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]session.SessionInfo{}
	for _, in := range p.Sessions {
		out[in.ID] = in
	}
	return out
}

func keys(m map[string]session.SessionInfo) []string { return slices.Sorted(maps.Keys(m)) }

// TestMigrateToLifecycle: a version 4 database holding sessions, one of
// them archived, with titles, first messages and metadata in headers
// and entries, upgrades to version 5: archived_at is the session's
// updated_at, which does not change; listings show and filter by what
// the entries say, without a rewrite.
func TestMigrateToLifecycle(t *testing.T) {
	ctx := context.Background()
	pool := poolIn(t, newSchema(t), 2)
	createVersion(t, pool, 4)
	hdr := func(id, extra string) []byte {
		return []byte(fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-01-01T00:00:00Z","cwd":"/w"%s}`, id, extra))
	}
	add := func(id string, header []byte, archived bool, entries ...session.Entry) {
		// As the version 4 package's Create and Append.
		if _, err := pool.Exec(ctx, `INSERT INTO agentsession_sessions
			(id, header, cwd_utf8, title_utf8, parent_session_utf8, parent_id, created_at, updated_at, size, archived)
			VALUES ($1, $2, '/w', '', '', '', now(), clock_timestamp(), $3, $4)`, id, header, len(header)+1, archived); err != nil {
			t.Fatal(err)
		}
		var ids []string
		var raws [][]byte
		for _, e := range entries {
			ids, raws = append(ids, e.ID()), append(raws, e.AppendJSON(nil))
		}
		var res string
		if err := pool.QueryRow(ctx, `SELECT agentsession_append($1, '', false, $2, $3, NULL::bytea, 100, 1000, 1000000)`, id, ids, raws).Scan(&res); err != nil || res != "" {
			t.Fatalf("append %s: %q %v", id, res, err)
		}
	}
	add("old-archived", hdr("old-archived", ""), true, userMsg(t, "a1", "", "Fix the\n  parser   please"))
	add("with-meta", hdr("with-meta", `,"agentsession":{"user":"u1","app":"app1","projectId":"p1","metadata":{"k":"v","gone":"x"}}`), false,
		userMsg(t, "m1", "", "hello"),
		metaEntry(t, "m2", "m1", `{"projectId":"p2","metadata":{"gone":null,"k2":"v2"}}`))
	add("named", hdr("named", ""), false,
		userMsg(t, "n1", "", "first"),
		line(t, `{"type":"session_info","id":"n2","parentId":"n1","timestamp":"2026-01-01T00:00:00Z","name":"  The name "}`))
	var updatedBefore time.Time
	if err := pool.QueryRow(ctx, `SELECT updated_at FROM agentsession_sessions WHERE id = 'old-archived'`).Scan(&updatedBefore); err != nil {
		t.Fatal(err)
	}

	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	all := listed(t, s, session.ListOptions{Archived: true})
	a := all["old-archived"]
	if !a.Archived || !a.ArchivedAt.Equal(updatedBefore) || !a.Updated.Equal(updatedBefore) {
		t.Fatalf("archived session after the upgrade: %+v, want archived at and updated at %v", a, updatedBefore)
	}
	if a.Title != "Fix the" || !a.TitleDerived {
		t.Fatalf("derived title %q (%v)", a.Title, a.TitleDerived)
	}
	m := all["with-meta"]
	if m.User != "u1" || m.App != "app1" || m.ProjectID != "p2" || !maps.Equal(m.Metadata, map[string]string{"k": "v", "k2": "v2"}) ||
		m.Title != "hello" || !m.TitleDerived {
		t.Fatalf("metadata after the upgrade: %+v", m)
	}
	if n := all["named"]; n.Title != "The name" || n.TitleDerived {
		t.Fatalf("named: %+v", n)
	}
	if got := keys(listed(t, s, session.ListOptions{})); !slices.Equal(got, []string{"named", "with-meta"}) {
		t.Fatalf("default listing %v", got)
	}
	for _, c := range []struct {
		opts session.ListOptions
		want []string
	}{
		{session.ListOptions{User: "u1"}, []string{"with-meta"}},
		{session.ListOptions{ProjectID: "p1"}, nil},
		{session.ListOptions{ProjectID: "p2", App: "app1"}, []string{"with-meta"}},
		{session.ListOptions{Metadata: map[string]string{"k": "v", "k2": "v2"}}, []string{"with-meta"}},
		{session.ListOptions{Metadata: map[string]string{"gone": "x"}}, nil},
		{session.ListOptions{OnlyArchived: true}, []string{"old-archived"}},
	} {
		if got := keys(listed(t, s, c.opts)); !slices.Equal(got, c.want) && len(got)+len(c.want) > 0 {
			t.Errorf("%+v: %v, want %v", c.opts, got, c.want)
		}
	}
	// The upgraded sessions take appends that change the fold.
	h, err := session.Open(ctx, s, "with-meta")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.UpdateMeta(ctx, session.MetaUpdate{Delete: []string{"k"}}); err != nil {
		t.Fatal(err)
	}
	if got := listed(t, s, session.ListOptions{})["with-meta"].Metadata; !maps.Equal(got, map[string]string{"k2": "v2"}) {
		t.Fatalf("metadata after an update: %v", got)
	}
}

// TestListMetadataFilters: every filter, over sessions made through the
// session package, with updates that set, change and delete keys, and
// strings PostgreSQL's text and jsonb cannot hold (NUL).
func TestListMetadataFilters(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	mk := func(id string, o session.CreateOptions) *session.Session {
		o.ID, o.Cwd = id, "/w"
		h, err := session.Create(ctx, s, &o)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a := mk("a", session.CreateOptions{User: "alice", App: "ide", ProjectID: "p1", Metadata: map[string]string{"env": "prod", "team": "x"}})
	mk("b", session.CreateOptions{User: "bob", App: "ide", ProjectID: "p1", Metadata: map[string]string{"env": "dev"}})
	c := mk("c", session.CreateOptions{User: "alice\x00", App: "cli", Metadata: map[string]string{"k\x00": "v\x00"}})
	mk("d", session.CreateOptions{})
	if err := a.UpdateMeta(ctx, session.MetaUpdate{Set: map[string]string{"env": "staging"}, Delete: []string{"team"}}); err != nil {
		t.Fatal(err)
	}
	p3 := "p3"
	if err := c.UpdateMeta(ctx, session.MetaUpdate{ProjectID: &p3}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(ctx, session.UserText("What is\tthe answer?")); err != nil {
		t.Fatal(err)
	}
	if err := a.SetTitle(ctx, "Alice's"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opts session.ListOptions
		want []string
	}{
		{session.ListOptions{User: "alice"}, []string{"a"}},
		{session.ListOptions{User: "alice\x00"}, []string{"c"}},
		{session.ListOptions{App: "ide"}, []string{"a", "b"}},
		{session.ListOptions{ProjectID: "p1"}, []string{"a", "b"}},
		{session.ListOptions{ProjectID: "p3"}, []string{"c"}},
		{session.ListOptions{Metadata: map[string]string{"env": "prod"}}, nil},
		{session.ListOptions{Metadata: map[string]string{"env": "staging"}}, []string{"a"}},
		{session.ListOptions{Metadata: map[string]string{"team": "x"}}, nil},
		{session.ListOptions{Metadata: map[string]string{"k\x00": "v\x00"}}, []string{"c"}},
		{session.ListOptions{Metadata: map[string]string{"k": "\x00v"}}, nil},
		{session.ListOptions{App: "ide", Metadata: map[string]string{"env": "dev"}}, []string{"b"}},
	} {
		got := keys(listed(t, s, tc.opts))
		if !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
			t.Errorf("%+v: %v, want %v", tc.opts, got, tc.want)
		}
	}
	all := listed(t, s, session.ListOptions{})
	if in := all["a"]; in.Title != "Alice's" || in.TitleDerived || !maps.Equal(in.Metadata, map[string]string{"env": "staging"}) {
		t.Errorf("a: %+v", in)
	}
	if in := all["c"]; in.Title != "What is the answer?" || !in.TitleDerived || in.ProjectID != "p3" || in.User != "alice\x00" {
		t.Errorf("c: %+v", in)
	}
	// A rewrite recomputes it all.
	l, err := s.Load(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Rewrite(ctx, "a", session.RewriteOptions{}, l.Header, l.Entries[:0]); err != nil {
		t.Fatal(err)
	}
	if in := listed(t, s, session.ListOptions{})["a"]; in.Title != "" || !maps.Equal(in.Metadata, map[string]string{"env": "prod", "team": "x"}) {
		t.Errorf("a after a rewrite without its entries: %+v", in)
	}
}

// TestArchiveLifecycle: archiving keeps the log and the update time,
// keeps its first time when repeated, and is undone by Unarchive (and
// by the deprecated Restore).
func TestArchiveLifecycle(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	if err := s.Create(ctx, session.Header{ID: "x", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "x", session.AppendOptions{}, userMsg(t, "e1", "", "hi")); err != nil {
		t.Fatal(err)
	}
	before := listed(t, s, session.ListOptions{})["x"]
	if err := s.Archive(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	first := listed(t, s, session.ListOptions{OnlyArchived: true})["x"]
	if !first.Archived || first.ArchivedAt.IsZero() || !first.Updated.Equal(before.Updated) || first.Entries != 1 {
		t.Fatalf("archived: %+v (before %+v)", first, before)
	}
	if err := s.Archive(ctx, "x"); err != nil {
		t.Fatalf("archiving again: %v", err)
	}
	if again := listed(t, s, session.ListOptions{Archived: true})["x"]; !again.ArchivedAt.Equal(first.ArchivedAt) {
		t.Fatalf("archiving again moved the time: %v, was %v", again.ArchivedAt, first.ArchivedAt)
	}
	if len(listed(t, s, session.ListOptions{})) != 0 {
		t.Fatal("an archived session is listed by default")
	}
	for _, f := range []func(context.Context, string) error{s.Archive, s.Unarchive, s.Restore} {
		if err := f(ctx, "nope"); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("on an unknown id: %v", err)
		}
	}
	if err := s.Unarchive(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if err := s.Unarchive(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if in := listed(t, s, session.ListOptions{})["x"]; in.Archived || !in.ArchivedAt.IsZero() || !in.Updated.Equal(before.Updated) {
		t.Fatalf("unarchived: %+v", in)
	}
	if err := s.Archive(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if err := s.Restore(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if len(listed(t, s, session.ListOptions{OnlyArchived: true})) != 0 {
		t.Fatal("Restore did not unarchive")
	}
	l, err := s.Load(ctx, "x")
	if err != nil || len(l.Entries) != 1 {
		t.Fatalf("the log after archiving: %v %v", l, err)
	}
}

// TestSharedStateConcurrent: many connections update different keys of
// one owner's state at once; every update survives; null removes.
func TestSharedStateConcurrent(t *testing.T) {
	ctx := context.Background()
	s, pool := newStoreConns(t, 16)
	const writers, each = 12, 15
	var wg sync.WaitGroup
	for w := range writers {
		// A Store of its own on the same pool: same as another replica.
		st, err := pgstore.New(ctx, pool, nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for i := range each {
				v, _ := json.Marshal(map[string]int{"w": w, "i": i})
				d := session.State{fmt.Sprintf("k%d-%d", w, i): v, "shared": json.RawMessage(fmt.Sprint(w))}
				if i > 0 && i%3 == 0 {
					d[fmt.Sprintf("k%d-%d", w, i-1)] = json.RawMessage("null")
				}
				if err := st.UpdateState(ctx, session.ScopeUser, "alice", d); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	st, err := s.LoadState(ctx, session.ScopeUser, "alice")
	if err != nil {
		t.Fatal(err)
	}
	want := 1 // "shared"
	for w := range writers {
		for i := range each {
			_, ok := st[fmt.Sprintf("k%d-%d", w, i)]
			removed := (i+1)%3 == 0 && i+1 < each
			if ok == removed {
				t.Fatalf("k%d-%d present %v", w, i, ok)
			}
			if ok {
				want++
			}
		}
	}
	if len(st) != want {
		t.Fatalf("%d keys, want %d", len(st), want)
	}
	if other, err := s.LoadState(ctx, session.ScopeApp, "alice"); err != nil || len(other) != 0 {
		t.Fatalf("app scope of the same name: %v %v", other, err)
	}
	if err := s.UpdateState(ctx, session.ScopeUser, "", session.State{"a": json.RawMessage("1")}); !errors.Is(err, session.ErrNoSharedState) {
		t.Fatalf("no owner: %v", err)
	}
	if err := s.UpdateState(ctx, session.ScopeUser, "bob", session.State{"a": json.RawMessage("{")}); err == nil {
		t.Fatal("a value that is not JSON was taken")
	}

	// Through a Session: user and app keys go to the store.
	h, err := session.Create(ctx, s, &session.CreateOptions{User: "alice", App: "ide"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.UpdateState(ctx, map[string]any{"user:theme": "dark", "app:flag": true, "local": 1}); err != nil {
		t.Fatal(err)
	}
	all, err := h.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(all["user:theme"]) != `"dark"` || string(all["app:flag"]) != "true" || string(all["local"]) != "1" || string(all["user:shared"]) == "" {
		t.Fatalf("state through a session: %v", all)
	}
}

// TestDeletedSessionHandle: a handle on a deleted session fails with
// ErrNotFound and never writes the session back.
func TestDeletedSessionHandle(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	h, err := session.Create(ctx, s, &session.CreateOptions{ID: "gone", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Append(ctx, session.UserText("one")); err != nil {
		t.Fatal(err)
	}
	if _, err := session.DeleteSession(ctx, s, "gone", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Append(ctx, session.UserText("two")); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("append through a handle on a deleted session: %v", err)
	}
	if err := h.SetTitle(ctx, "t"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("title through a handle on a deleted session: %v", err)
	}
	if err := h.UpdateMeta(ctx, session.MetaUpdate{Set: map[string]string{"a": "b"}}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("metadata through a handle on a deleted session: %v", err)
	}
	if _, err := s.Load(ctx, "gone"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("the session came back: %v", err)
	}
}
