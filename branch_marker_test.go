package session_test

import (
	"context"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

// TestLeafMarkerAtStoreLevel: a marker made with NewLeafMarker and
// appended through the store moves the leaf a session opens at, as
// Branch's does, and DefaultLeaf tells that leaf from the entries.
func TestLeafMarkerAtStoreLevel(t *testing.T) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	s, err := session.Create(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.Append(ctx, session.UserText("a"))
	b, _ := s.Append(ctx, session.AssistantText("b"))
	log, _ := store.Load(ctx, s.ID())
	if got := session.DefaultLeaf(log.Entries); got != b.ID() {
		t.Fatalf("DefaultLeaf = %s, want the last entry %s", got, b.ID())
	}
	m, err := session.NewLeafMarker("marker01", a.ID(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Append(ctx, s.ID(), session.AppendOptions{IfLast: b.ID()}, m); err != nil {
		t.Fatal(err)
	}
	log, _ = store.Load(ctx, s.ID())
	if got := session.DefaultLeaf(log.Entries); got != a.ID() {
		t.Fatalf("DefaultLeaf after the marker = %s, want %s", got, a.ID())
	}
	o, err := session.Open(ctx, store, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if o.LeafID() != a.ID() {
		t.Fatalf("opened at %s, want %s", o.LeafID(), a.ID())
	}
	if got := session.DefaultLeaf(nil); got != "" {
		t.Fatalf("DefaultLeaf of nothing = %q", got)
	}
}
