package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

// eventWait bounds how long a case waits for a change a store delivers
// from a watcher (a FileStore) or the server (pgstore). It is a deadline
// against hanging, not a measure: latency is benchmarked, not tested.
const eventWait = 20 * time.Second

func subscribe(t *testing.T, s session.Store, opts session.SubscribeOptions) *session.Subscription {
	t.Helper()
	sub, err := session.Subscribe(context.Background(), s, opts)
	if errors.Is(err, session.ErrNoEvents) {
		t.Skipf("%T delivers no events (session.ErrNoEvents: no session.Subscriber): events not checked", s)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	return sub
}

// next returns the next change of session id on sub, skipping others'.
func next(t *testing.T, sub *session.Subscription, id string) session.Change {
	t.Helper()
	timer := time.NewTimer(eventWait)
	defer timer.Stop()
	for {
		select {
		case c, ok := <-sub.C():
			if !ok {
				t.Fatal("the subscription ended")
			}
			if c.Session == id {
				return c
			}
		case <-timer.C:
			t.Fatalf("no change of %s in %v", id, eventWait)
		}
	}
}

func expect(t *testing.T, sub *session.Subscription, id string, kind session.ChangeKind) session.Change {
	t.Helper()
	c := next(t, sub, id)
	if c.Kind != kind {
		t.Fatalf("change %s (%+v), want %s", c.Kind, c, kind)
	}
	return c
}

func testEvents(t *testing.T, s session.Store) {
	ctx := context.Background()
	sub := subscribe(t, s, session.SubscribeOptions{})
	only := subscribe(t, s, session.SubscribeOptions{Session: "s-ev"})
	other := check(session.Create(ctx, s, &session.CreateOptions{ID: "s-ev-other", Cwd: "/work"}))(t)
	sess := check(session.Create(ctx, s, &session.CreateOptions{ID: "s-ev", Cwd: "/work"}))(t)
	var appended []string
	for i := range 3 {
		e := check(sess.Append(ctx, session.UserText(fmt.Sprintf("m%d", i))))(t)
		appended = append(appended, e.ID())
		check(other.Append(ctx, session.UserText("noise")))(t)
	}
	turn := []*session.Message{session.UserText("q"), session.AssistantText("a")}
	if err := sess.SaveTurn(ctx, turn, nil); err != nil {
		t.Fatal(err)
	}
	if err := sess.SetTitle(ctx, "Events"); err != nil {
		t.Fatal(err)
	}
	if err := sess.UpdateState(ctx, map[string]any{"b": 1, "a": 2}); err != nil {
		t.Fatal(err)
	}
	v := "2"
	if err := sess.UpdateMeta(ctx, session.MetaUpdate{AppVersion: &v}); err != nil {
		t.Fatal(err)
	}
	_, archives := session.Store(s).(session.Archiver)
	if !archives {
		without(t, s, "session.Archiver", "the changes of Archive and Unarchive")
	}
	if archives {
		if err := session.Archive(ctx, s, "s-ev"); err != nil {
			t.Fatal(err)
		}
		if err := session.Unarchive(ctx, s, "s-ev"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "s-ev"); err != nil {
		t.Fatal(err)
	}

	for _, sb := range []*session.Subscription{sub, only} {
		expect(t, sb, "s-ev", session.ChangeCreated)
		for i := range 3 {
			c := expect(t, sb, "s-ev", session.ChangeAppended)
			if len(c.Entries) != 1 || c.Entries[0].ID != appended[i] || c.Entries[0].Role != session.RoleUser {
				t.Fatalf("appended %+v, want entry %s", c.Entries, appended[i])
			}
		}
		c := expect(t, sb, "s-ev", session.ChangeAppended)
		if len(c.Entries) != 2 || c.Entries[1].Role != session.RoleAssistant || c.Entries[1].ParentID != c.Entries[0].ID {
			t.Fatalf("a turn appended as %+v", c.Entries)
		}
		expect(t, sb, "s-ev", session.ChangeAppended)
		if c := expect(t, sb, "s-ev", session.ChangeTitle); c.Title != "Events" {
			t.Fatalf("title change %+v", c)
		}
		expect(t, sb, "s-ev", session.ChangeAppended)
		if c := expect(t, sb, "s-ev", session.ChangeState); fmt.Sprint(c.Keys) != "[a b]" {
			t.Fatalf("state change keys %v", c.Keys)
		}
		expect(t, sb, "s-ev", session.ChangeAppended)
		if c := expect(t, sb, "s-ev", session.ChangeMeta); len(c.Entries) != 1 || c.Entries[0].CustomType != session.CustomMeta {
			t.Fatalf("metadata change %+v", c)
		}
		if archives {
			expect(t, sb, "s-ev", session.ChangeArchived)
			expect(t, sb, "s-ev", session.ChangeUnarchived)
		}
		expect(t, sb, "s-ev", session.ChangeDeleted)
	}
	// The filtered subscription saw nothing of the other session; the
	// other one did, in order.
	select {
	case c := <-only.C():
		t.Fatalf("a change of another session: %+v", c)
	default:
	}
	if sub.Dropped() != 0 || only.Dropped() != 0 {
		t.Fatalf("dropped %d and %d with room in the buffers", sub.Dropped(), only.Dropped())
	}
	sub.Close()
	sub.Close()
	for range sub.C() {
	}
}

// testSlowSubscriber checks that a subscriber that does not read never
// holds a writer back: its changes are dropped and counted.
func testSlowSubscriber(t *testing.T, s session.Store) {
	ctx := context.Background()
	slow := subscribe(t, s, session.SubscribeOptions{Buffer: 2})
	sess := check(session.Create(ctx, s, &session.CreateOptions{ID: "s-slow", Cwd: "/work"}))(t)
	done := make(chan error, 1)
	go func() {
		for i := range 50 {
			if _, err := sess.Append(ctx, session.UserText(fmt.Sprintf("m%d", i))); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(eventWait):
		t.Fatal("a subscriber that does not read holds the writer back")
	}
	deadline := time.Now().Add(eventWait)
	for slow.Dropped() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("nothing counted as dropped")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// What was kept is the first changes, in order.
	c := <-slow.C()
	if c.Kind != session.ChangeCreated {
		t.Fatalf("first change kept %+v", c)
	}
	// A subscription ends with its context.
	cctx, cancel := context.WithCancel(ctx)
	sub, err := session.Subscribe(cctx, s, session.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	timer := time.NewTimer(eventWait)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-sub.C():
			if !ok {
				return
			}
		case <-timer.C:
			t.Fatal("the subscription outlived its context")
		}
	}
}
