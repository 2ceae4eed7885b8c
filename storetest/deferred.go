package storetest

import (
	"context"
	"testing"

	session "github.com/agentsession/session"
)

// testCreateWithEntries: a store with the EntryCreator ability creates a
// session with its entries at once, all or none.
func testCreateWithEntries(t *testing.T, s session.Store) {
	ec, ok := s.(session.EntryCreator)
	if !ok {
		t.Skipf("%T has no EntryCreator ability (sessions are created, then appended to)", s)
	}
	ctx := context.Background()
	es := entries(t, "cw", 5)
	if err := ec.CreateWithEntries(ctx, header("s-cw", "/work"), es); err != nil {
		t.Fatal(err)
	}
	l := load(t, s, "s-cw")
	if got, want := encode(t, l), encode(t, &session.Log{Header: l.Header, Entries: es}); got != want {
		t.Fatalf("created with entries:\n got %s\nwant %s", got, want)
	}
	wantErr(t, ec.CreateWithEntries(ctx, header("s-cw", "/work"), entries(t, "other", 2)), session.ErrExists, "a second create of the id")
	if n := len(load(t, s, "s-cw").Entries); n != 5 {
		t.Fatalf("the refused create changed the session: %d entries", n)
	}
	wantErr(t, ec.CreateWithEntries(ctx, header("a\x00b", "/work"), es), session.ErrInvalidID, "an invalid id")
	// A list the store refuses (a repeated id) creates nothing.
	dup := append(entries(t, "dup", 2), entries(t, "dup", 1)...)
	if err := ec.CreateWithEntries(ctx, header("s-cw-dup", "/work"), dup); err == nil {
		t.Fatal("entries with a repeated id were accepted")
	}
	if _, err := s.Load(ctx, "s-cw-dup"); err == nil {
		t.Fatal("a refused create left a session behind")
	}
	// No entries is Create.
	if err := ec.CreateWithEntries(ctx, header("s-cw-empty", "/work"), nil); err != nil {
		t.Fatal(err)
	}
	if n := len(load(t, s, "s-cw-empty").Entries); n != 0 {
		t.Fatalf("empty create holds %d entries", n)
	}
}

// testDeferredSession: a deferred session reaches the store with its
// first assistant message, whole and in order; before that the store
// knows nothing of it, and a session never answered leaves nothing.
func testDeferredSession(t *testing.T, s session.Store) {
	ctx := context.Background()
	sess, err := session.Create(ctx, s, &session.CreateOptions{ID: "s-deferred", Cwd: "/work", Title: "later", Deferred: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Append(ctx, session.UserText("a prompt")); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.AppendCustom(ctx, "ext", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if err := sess.UpdateState(ctx, map[string]any{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if sess.Persisted() {
		t.Fatal("persisted before any reply")
	}
	_, err = s.Load(ctx, "s-deferred")
	wantErr(t, err, session.ErrNotFound, "Load of a deferred session before its reply")
	page, err := s.List(ctx, session.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range page.Sessions {
		if info.ID == "s-deferred" {
			t.Fatal("a deferred session is listed before its reply")
		}
	}
	if err := sess.Flush(ctx); err != nil {
		t.Fatalf("Flush of a deferred session: %v", err)
	}
	reply := &session.Message{Role: session.RoleAssistant, Content: []session.Block{session.Text("an answer")}, StopReason: session.StopEnd}
	if err := sess.SaveTurn(ctx, []*session.Message{reply}, nil); err != nil {
		t.Fatal(err)
	}
	if !sess.Persisted() {
		t.Fatal("not persisted after the first reply")
	}
	if _, err := sess.Append(ctx, session.UserText("and after")); err != nil {
		t.Fatal(err)
	}
	l := load(t, s, "s-deferred")
	if got, want := encode(t, l), encode(t, sess.Log()); got != want {
		t.Fatalf("the stored session differs from the handle's:\n got %s\nwant %s", got, want)
	}
	if l.Header.Title != "later" || len(l.Entries) != 5 {
		t.Fatalf("stored: title %q, %d entries; want \"later\", 5", l.Header.Title, len(l.Entries))
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = session.Create(ctx, s, &session.CreateOptions{ID: "s-deferred", Deferred: true})
	wantErr(t, err, session.ErrExists, "a deferred create of a stored id")

	// Never answered: nothing reaches the store, and Close says nothing.
	gone, err := session.Create(ctx, s, &session.CreateOptions{ID: "s-abandoned", Deferred: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Append(ctx, session.UserText("hello?")); err != nil {
		t.Fatal(err)
	}
	if err := gone.Close(); err != nil {
		t.Fatalf("Close of an unanswered deferred session: %v", err)
	}
	_, err = s.Load(ctx, "s-abandoned")
	wantErr(t, err, session.ErrNotFound, "Load of an abandoned deferred session")

	// Persist writes it whatever it holds.
	early, err := session.Create(ctx, s, &session.CreateOptions{ID: "s-early", Deferred: true})
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	if _, err := early.Append(ctx, session.UserText("keep me")); err != nil {
		t.Fatal(err)
	}
	if err := early.Persist(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(load(t, s, "s-early").Entries); n != 1 {
		t.Fatalf("persisted early: %d entries, want 1", n)
	}
}
