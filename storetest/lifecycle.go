package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

// The lifecycle cases: open-or-create races, metadata, state at any
// entry, archive, compacting marks, delete with blobs and children,
// tenant isolation and message pagination. Events are in events.go.

// check(f())(t) is f's value, or the end of the test with f's error.
func check[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func testOpenOrCreateRace(t *testing.T, s session.Store) {
	ctx := context.Background()
	const n = 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created int
		handles []*session.Session
	)
	for range n {
		wg.Go(func() {
			sess, c, err := session.OpenOrCreate(ctx, s, &session.CreateOptions{ID: "s-ooc", Cwd: "/work", ProjectID: "p"})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			handles = append(handles, sess)
			if c {
				created++
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if created != 1 {
		t.Fatalf("%d callers created the session, want 1", created)
	}
	for i, h := range handles {
		if h.ID() != "s-ooc" {
			t.Fatalf("handle on %s", h.ID())
		}
		if _, err := h.Append(ctx, session.UserText(fmt.Sprintf("from %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(load(t, s, "s-ooc").Entries); got != n {
		t.Fatalf("%d entries, want one per handle (%d)", got, n)
	}
	if sess, c, err := session.OpenOrCreate(ctx, s, &session.CreateOptions{ID: "s-ooc"}); err != nil || c || sess.Len() != n {
		t.Fatalf("OpenOrCreate of an existing session: created=%v err=%v", c, err)
	}
	if _, _, err := session.OpenOrCreate(ctx, s, &session.CreateOptions{}); err == nil {
		t.Fatal("OpenOrCreate without an id succeeded")
	}
}

func infoOf(t *testing.T, s session.Store, id string, opts session.ListOptions) (session.SessionInfo, bool) {
	t.Helper()
	for _, in := range listAll(t, s, opts) {
		if in.ID == id {
			return in, true
		}
	}
	return session.SessionInfo{}, false
}

func testMetadata(t *testing.T, s session.Store) {
	ctx := context.Background()
	a := check(session.Create(ctx, s, &session.CreateOptions{ID: "s-meta", Cwd: "/work", ProjectID: "proj-1", AppVersion: "1.0.0",
		User: "alice", App: "coder", Metadata: map[string]string{"team": "core", "tier": "free"}}))(t)
	b := check(session.Create(ctx, s, &session.CreateOptions{ID: "s-other", Cwd: "/work", ProjectID: "proj-2"}))(t)
	if _, err := a.Append(ctx, session.UserText("  Fix the   flaky test\nin ci please")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(ctx, session.UserText("hello")); err != nil {
		t.Fatal(err)
	}
	if err := b.SetTitle(ctx, "Chosen title"); err != nil {
		t.Fatal(err)
	}
	in, ok := infoOf(t, s, "s-meta", session.ListOptions{})
	if !ok {
		t.Fatal("s-meta not listed")
	}
	if in.ProjectID != "proj-1" || in.AppVersion != "1.0.0" || in.User != "alice" || in.App != "coder" ||
		in.Metadata["team"] != "core" || in.Metadata["tier"] != "free" {
		t.Fatalf("listed metadata %+v", in)
	}
	if in.Title != "Fix the flaky test" || !in.TitleDerived {
		t.Fatalf("derived title %q (derived %v)", in.Title, in.TitleDerived)
	}
	if in, _ := infoOf(t, s, "s-other", session.ListOptions{}); in.Title != "Chosen title" || in.TitleDerived {
		t.Fatalf("title %q (derived %v)", in.Title, in.TitleDerived)
	}

	// Updates are appended and listed, without loading entries.
	pid, ver := "proj-3", "1.1.0"
	if err := a.UpdateMeta(ctx, session.MetaUpdate{ProjectID: &pid, AppVersion: &ver, Set: map[string]string{"tier": "pro", "new": "x"}, Delete: []string{"team"}}); err != nil {
		t.Fatal(err)
	}
	want := session.Meta{ProjectID: "proj-3", AppVersion: "1.1.0", User: "alice", App: "coder", Metadata: map[string]string{"tier": "pro", "new": "x"}}
	same := func(what string, m session.Meta) {
		t.Helper()
		if fmt.Sprint(m) != fmt.Sprint(want) {
			t.Fatalf("%s: %+v, want %+v", what, m, want)
		}
	}
	same("handle", a.Meta())
	same("reopened", check(session.Open(ctx, s, "s-meta"))(t).Meta())
	f := check(a.Fork(ctx, &session.ForkOptions{ID: "s-meta-fork"}))(t)
	same("fork", f.Meta())
	if got := len(f.Log().Entries); got != 1 {
		t.Fatalf("the fork copied %d entries, want the message only (metadata changes go to its header)", got)
	}
	check(0, s.Delete(ctx, "s-meta-fork"))(t)
	in, _ = infoOf(t, s, "s-meta", session.ListOptions{})
	same("listing", session.Meta{ProjectID: in.ProjectID, AppVersion: in.AppVersion, User: in.User, App: in.App, Metadata: in.Metadata})

	// Filters.
	for _, tc := range []struct {
		name string
		opts session.ListOptions
		want []string
	}{
		{"project", session.ListOptions{ProjectID: "proj-3"}, []string{"s-meta"}},
		{"old project", session.ListOptions{ProjectID: "proj-1"}, nil},
		{"user", session.ListOptions{User: "alice"}, []string{"s-meta"}},
		{"app", session.ListOptions{App: "coder"}, []string{"s-meta"}},
		{"metadata", session.ListOptions{Metadata: map[string]string{"tier": "pro"}}, []string{"s-meta"}},
		{"metadata all pairs", session.ListOptions{Metadata: map[string]string{"tier": "pro", "new": "y"}}, nil},
		{"deleted key", session.ListOptions{Metadata: map[string]string{"team": "core"}}, nil},
		{"parent", session.ListOptions{ParentSession: "s-meta"}, nil},
		{"updated since", session.ListOptions{UpdatedAfter: time.Now().Add(-time.Hour)}, []string{"s-meta", "s-other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := infoIDs(listAll(t, s, tc.opts))
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("listed %v, want %v", got, tc.want)
			}
		})
	}
	if err := a.UpdateMeta(ctx, session.MetaUpdate{}); err == nil {
		t.Fatal("an empty update succeeded")
	}
}

func testStateAtEntry(t *testing.T, s session.Store) {
	ctx := context.Background()
	sess := check(session.Create(ctx, s, &session.CreateOptions{ID: "s-state", Cwd: "/work", User: "u1", App: "a1"}))(t)
	u1 := check(sess.Append(ctx, session.UserText("one")))(t)
	if err := session.SetState(ctx, sess, "step", 1); err != nil {
		t.Fatal(err)
	}
	if err := sess.UpdateState(ctx, map[string]any{"plan": []string{"a", "b"}, "gone": true}); err != nil {
		t.Fatal(err)
	}
	mid := sess.LeafID()
	if err := sess.UpdateState(ctx, map[string]any{"step": 2, "gone": nil}); err != nil {
		t.Fatal(err)
	}
	a2 := check(sess.Append(ctx, session.AssistantText("two")))(t)

	get := func(st session.State, key string) any {
		t.Helper()
		v, ok, err := session.Get[any](st, key)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return nil
		}
		return v
	}
	for _, tc := range []struct {
		at   string
		step any
		gone any
	}{{u1.ID(), nil, nil}, {mid, float64(1), true}, {a2.ID(), float64(2), nil}} {
		st := check(sess.StateAt(tc.at))(t)
		if get(st, "step") != tc.step || get(st, "gone") != tc.gone {
			t.Fatalf("state at %s: %v", tc.at, st)
		}
	}
	if _, err := sess.StateAt("nope"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("StateAt of an unknown entry: %v", err)
	}
	// Reopened, the state is the same; a rewind goes back to the state
	// of its point; a fork at a point has that point's state.
	re := check(session.Open(ctx, s, "s-state"))(t)
	if step, _, _ := session.GetState[int](ctx, re, "step"); step != 2 {
		t.Fatalf("step %d after reopen", step)
	}
	if err := re.Branch(ctx, mid); err != nil {
		t.Fatal(err)
	}
	if step, _, _ := session.GetState[int](ctx, re, "step"); step != 1 {
		t.Fatalf("step %d after a branch to the first update", step)
	}
	if err := re.UpdateState(ctx, map[string]any{"step": 10}); err != nil {
		t.Fatal(err)
	}
	if step, _, _ := session.GetState[int](ctx, re, "step"); step != 10 {
		t.Fatalf("step %d on the new branch", step)
	}
	f := check(re.Fork(ctx, &session.ForkOptions{At: mid, ID: "s-state-fork"}))(t)
	if step, _, _ := session.GetState[int](ctx, f, "step"); step != 1 {
		t.Fatalf("step %d in a fork at the first update", step)
	}
	plan, ok, err := session.GetState[[]string](ctx, f, "plan")
	if err != nil || !ok || !slices.Equal(plan, []string{"a", "b"}) {
		t.Fatalf("plan %v %v %v", plan, ok, err)
	}

	// Shared scopes, where the store keeps them: a subtest of their own,
	// skipped with a message on a store without them.
	t.Run("SharedScopes", func(t *testing.T) { testSharedScopes(t, s, sess) })
}

// testSharedScopes checks the "user:" and "app:" keys of a store that is
// a session.SharedStateStore; it skips on one that is not.
func testSharedScopes(t *testing.T, s session.Store, sess *session.Session) {
	ctx := context.Background()
	other := check(session.Create(ctx, s, &session.CreateOptions{ID: "s-state-2", Cwd: "/work", User: "u1", App: "a1"}))(t)
	stranger := check(session.Create(ctx, s, &session.CreateOptions{ID: "s-state-3", Cwd: "/work", User: "u2", App: "a1"}))(t)
	err := sess.UpdateState(ctx, map[string]any{"user:theme": "dark", "app:model": "m1"})
	if errors.Is(err, session.ErrNoSharedState) {
		t.Skipf("%T keeps no shared state (no session.SharedStateStore): the \"user:\" and \"app:\" scopes are not checked", s)
	}
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := session.GetState[string](ctx, other, "user:theme"); v != "dark" {
		t.Fatalf("user state not shared: %q", v)
	}
	if v, ok, _ := session.GetState[string](ctx, stranger, "user:theme"); ok {
		t.Fatalf("another user sees user state: %q", v)
	}
	if v, _, _ := session.GetState[string](ctx, stranger, "app:model"); v != "m1" {
		t.Fatalf("app state not shared: %q", v)
	}
	// Concurrent updates of other keys are all kept.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := other.UpdateState(ctx, map[string]any{fmt.Sprintf("user:k%d", i): i}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	st := check(sess.State(ctx))(t)
	for i := range 8 {
		if _, ok := st[fmt.Sprintf("user:k%d", i)]; !ok {
			t.Fatalf("update of user:k%d lost: %v", i, st)
		}
	}
	if err := sess.UpdateState(ctx, map[string]any{"user:theme": nil}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := session.GetState[string](ctx, other, "user:theme"); ok {
		t.Fatal("a null did not remove the user key")
	}
	// A session without a user cannot write user state.
	anon := check(session.Create(ctx, s, &session.CreateOptions{ID: "s-state-4", Cwd: "/work"}))(t)
	if err := anon.UpdateState(ctx, map[string]any{"user:x": 1}); !errors.Is(err, session.ErrNoSharedState) {
		t.Fatalf("user state of a session without a user: %v", err)
	}
}

func testArchive(t *testing.T, s session.Store) {
	ctx := context.Background()
	a := check(session.Create(ctx, s, &session.CreateOptions{ID: "s-arch", Cwd: "/work"}))(t)
	if _, err := a.Append(ctx, session.UserText("hi")); err != nil {
		t.Fatal(err)
	}
	create(t, s, "s-live")
	before, _ := infoOf(t, s, "s-arch", session.ListOptions{})
	err := session.Archive(ctx, s, "s-arch")
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("%T cannot archive (no session.Archiver, or errors.ErrUnsupported): archive and unarchive not checked", s)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := session.Archive(ctx, s, "s-arch"); err != nil {
		t.Fatalf("archiving again: %v", err)
	}
	if _, ok := infoOf(t, s, "s-arch", session.ListOptions{}); ok {
		t.Fatal("an archived session is listed by default")
	}
	in, ok := infoOf(t, s, "s-arch", session.ListOptions{Archived: true})
	if !ok || !in.Archived || in.ArchivedAt.IsZero() {
		t.Fatalf("archived listing %+v", in)
	}
	if !in.Updated.Equal(before.Updated) || in.Entries != before.Entries {
		t.Fatalf("archiving changed the session: updated %v → %v, entries %d → %d", before.Updated, in.Updated, before.Entries, in.Entries)
	}
	if got := infoIDs(listAll(t, s, session.ListOptions{OnlyArchived: true})); !slices.Equal(got, []string{"s-arch"}) {
		t.Fatalf("OnlyArchived lists %v", got)
	}
	re := check(session.Open(ctx, s, "s-arch"))(t)
	if re.Len() != 1 {
		t.Fatalf("archived session reopened with %d entries", re.Len())
	}
	if err := session.Unarchive(ctx, s, "s-arch"); err != nil {
		t.Fatal(err)
	}
	if err := session.Unarchive(ctx, s, "s-arch"); err != nil {
		t.Fatalf("unarchiving again: %v", err)
	}
	in, ok = infoOf(t, s, "s-arch", session.ListOptions{})
	if !ok || in.Archived || !in.ArchivedAt.IsZero() {
		t.Fatalf("unarchived listing %+v", in)
	}
	for _, f := range []func(context.Context, session.Store, string) error{session.Archive, session.Unarchive} {
		if err := f(ctx, s, "s-none"); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("archive of an unknown session: %v", err)
		}
	}
}

func testCompacting(t *testing.T, s session.Store) {
	ctx := context.Background()
	sess := check(session.Create(ctx, s, &session.CreateOptions{ID: "s-compacting", Cwd: "/work"}))(t)
	for i := range 6 {
		if _, err := sess.Append(ctx, session.UserText(fmt.Sprintf("question %d %s", i, longText))); err != nil {
			t.Fatal(err)
		}
		if _, err := sess.Append(ctx, session.AssistantText(fmt.Sprintf("answer %d %s", i, longText))); err != nil {
			t.Fatal(err)
		}
	}
	var during session.SessionInfo
	sum := session.SummarizerFunc(func(ctx context.Context, req *session.SummaryRequest) (string, error) {
		during, _ = infoOf(t, s, "s-compacting", session.ListOptions{})
		return "summary", nil
	})
	if _, err := sess.Compact(ctx, sum, &session.CompactionOptions{KeepRecentTokens: 10}); err != nil {
		t.Fatal(err)
	}
	if _, ok := session.Store(s).(session.CompactionMarker); !ok && during.Compacting.IsZero() {
		t.Skipf("%T keeps no compaction marks (no session.CompactionMarker): Compacting not checked", s)
	}
	if during.Compacting.IsZero() {
		t.Fatal("no Compacting time while the summarizer ran")
	}
	if in, _ := infoOf(t, s, "s-compacting", session.ListOptions{}); !in.Compacting.IsZero() {
		t.Fatalf("Compacting %v after the compaction", in.Compacting)
	}
	// A failed compaction clears it too.
	fail := session.SummarizerFunc(func(context.Context, *session.SummaryRequest) (string, error) {
		return "", errors.New("model down")
	})
	for i := range 3 {
		if _, err := sess.Append(ctx, session.UserText(fmt.Sprintf("more %d %s", i, longText))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sess.Compact(ctx, fail, &session.CompactionOptions{KeepRecentTokens: 10}); err == nil {
		t.Fatal("a failing summarizer compacted")
	}
	if in, _ := infoOf(t, s, "s-compacting", session.ListOptions{}); !in.Compacting.IsZero() {
		t.Fatalf("Compacting %v after a failed compaction", in.Compacting)
	}
	// A mark that stays (a crashed compaction) is listed.
	if m, ok := s.(session.CompactionMarker); ok {
		since := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
		if err := m.MarkCompacting(ctx, "s-compacting", since); err != nil {
			t.Fatal(err)
		}
		if in, _ := infoOf(t, s, "s-compacting", session.ListOptions{}); !in.Compacting.Equal(since) {
			t.Fatalf("Compacting %v, want %v", in.Compacting, since)
		}
		if err := m.MarkCompacting(ctx, "s-none", since); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("mark of an unknown session: %v", err)
		}
	}
}

const longText = "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua"

func testDeleteWithBlobsAndChildren(t *testing.T, s session.Store) {
	ctx := context.Background()
	parent := check(session.Create(ctx, s, &session.CreateOptions{ID: "s-parent", Cwd: "/work"}))(t)
	child := check(session.Create(ctx, s, &session.CreateOptions{ID: "s-child", Cwd: "/work", ParentSession: "s-parent"}))(t)
	grand := check(session.Create(ctx, s, &session.CreateOptions{ID: "s-grand", Cwd: "/work", ParentSession: "s-child"}))(t)
	bystander := check(session.Create(ctx, s, &session.CreateOptions{ID: "s-bystander", Cwd: "/work"}))(t)

	b, hasBlobs := session.BlobsOf(s)
	if !hasBlobs {
		without(t, s, "blobs (session.BlobsOf)", "the deletion of a deleted session's own blobs")
	}
	var own, shared, childOwn string
	if hasBlobs {
		own = put(t, b, []byte("the parent's own image"))
		shared = put(t, b, []byte("an image two sessions show"))
		childOwn = put(t, b, []byte("the child's own image"))
	}
	say := func(sess *session.Session, text string, refs ...string) {
		t.Helper()
		blocks := []session.Block{session.Text(text)}
		for _, r := range refs {
			blocks = append(blocks, session.Block{Type: session.BlockImage, Data: r, MimeType: "image/png"})
		}
		if _, err := sess.Append(ctx, session.User(blocks...)); err != nil {
			t.Fatal(err)
		}
	}
	if hasBlobs {
		say(parent, "look", own, shared)
		say(child, "look", childOwn)
		say(bystander, "look", shared)
	} else {
		say(parent, "look")
		say(child, "look")
	}
	say(grand, "deep")

	// Without Children only the session goes.
	create(t, s, "s-alone")
	res, err := session.DeleteSession(ctx, s, "s-alone", nil)
	if err != nil || !slices.Equal(res.Sessions, []string{"s-alone"}) {
		t.Fatalf("delete alone: %+v %v", res, err)
	}
	res, err = session.DeleteSession(ctx, s, "s-parent", &session.DeleteOptions{Children: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Sessions, []string{"s-grand", "s-child", "s-parent"}) {
		t.Fatalf("deleted %v, want children first", res.Sessions)
	}
	for _, id := range res.Sessions {
		if _, err := s.Load(ctx, id); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("Load(%s) after delete: %v", id, err)
		}
	}
	if _, err := s.Load(ctx, "s-bystander"); err != nil {
		t.Fatalf("bystander: %v", err)
	}
	if hasBlobs {
		if _, ok := b.(session.BlobCollector); !ok {
			without(t, b, "session.BlobCollector", "the deletion of a deleted session's own blobs")
		} else {
			mustNotHave(t, b, "the deleted sessions' own blobs", own, childOwn)
			if res.Blobs != 2 {
				t.Fatalf("%d blobs deleted, want 2", res.Blobs)
			}
		}
		mustHave(t, b, "a blob another session shows", shared)
	}
	// Handles on deleted sessions fail with ErrNotFound and never bring
	// them back.
	for _, h := range []*session.Session{parent, child, grand} {
		if _, err := h.Append(ctx, session.UserText("still here?")); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("append through a handle on deleted %s: %v", h.ID(), err)
		}
		if err := h.Close(); err != nil && !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("close of a handle on deleted %s: %v", h.ID(), err)
		}
		if _, err := s.Load(ctx, h.ID()); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("%s came back: %v", h.ID(), err)
		}
	}
	if got := infoIDs(listAll(t, s, session.ListOptions{Archived: true})); !slices.Equal(got, []string{"s-bystander"}) {
		t.Fatalf("listed after delete: %v", got)
	}
	if _, err := session.DeleteSession(ctx, s, "s-parent", nil); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("delete again: %v", err)
	}
}

func testTenantIsolation(t *testing.T, s session.Store) {
	ctx := context.Background()
	alice := check(session.ForUser(s, "alice"))(t)
	bob := check(session.ForUser(s, "bob"))(t)
	if _, err := session.ForUser(s, "a.b"); !errors.Is(err, session.ErrInvalidID) {
		t.Fatalf("a user name with '.': %v", err)
	}
	// The same id names two sessions, one per user.
	as := check(session.Create(ctx, alice, &session.CreateOptions{ID: "chat", Cwd: "/work", Title: "alice's"}))(t)
	bs := check(session.Create(ctx, bob, &session.CreateOptions{ID: "chat", Cwd: "/work", Title: "bob's"}))(t)
	if _, err := as.Append(ctx, session.UserText("secret of alice")); err != nil {
		t.Fatal(err)
	}
	if _, err := bs.Append(ctx, session.UserText("secret of bob")); err != nil {
		t.Fatal(err)
	}
	check(session.Create(ctx, alice, &session.CreateOptions{ID: "only-alice", Cwd: "/work"}))(t)
	if as.Meta().User != "alice" {
		t.Fatalf("user %q in alice's session", as.Meta().User)
	}
	for _, tc := range []struct {
		view session.Store
		want []string
	}{{alice, []string{"chat", "only-alice"}}, {bob, []string{"chat"}}} {
		got := infoIDs(listAll(t, tc.view, session.ListOptions{}))
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Fatalf("listed %v, want %v", got, tc.want)
		}
	}
	if got := listAll(t, bob, session.ListOptions{User: "alice"}); len(got) != 0 {
		t.Fatalf("bob lists alice's sessions: %v", infoIDs(got))
	}
	for _, op := range []struct {
		name string
		err  error
	}{
		{"open", func() error { _, err := session.Open(ctx, bob, "only-alice"); return err }()},
		{"load", func() error { _, err := bob.Load(ctx, "only-alice"); return err }()},
		{"append", bob.Append(ctx, "only-alice", session.AppendOptions{}, entry(t, "e1", "", 0, 0))},
		{"delete", bob.Delete(ctx, "only-alice")},
	} {
		if !errors.Is(op.err, session.ErrNotFound) {
			t.Fatalf("bob's %s of alice's session: %v", op.name, op.err)
		}
	}
	re := check(session.Open(ctx, bob, "chat"))(t)
	msgs := check(re.Messages(ctx))(t)
	if len(msgs) != 1 || msgs[0].Text() != "secret of bob" || re.Title() != "bob's" {
		t.Fatalf("bob's chat holds %v (%q)", msgs, re.Title())
	}
	if _, err := session.Open(ctx, alice, "only-alice"); err != nil {
		t.Fatal(err)
	}
	// A fork stays with its user, and its parent is named in the user's
	// ids.
	f := check(re.Fork(ctx, &session.ForkOptions{ID: "chat-fork"}))(t)
	if f.Header().ParentSession != "chat" {
		t.Fatalf("fork's parent %q", f.Header().ParentSession)
	}
	kids := check(session.ListChildren(ctx, bob, "chat"))(t)
	if len(kids) != 1 || kids[0].ID != "chat-fork" {
		t.Fatalf("bob's children of chat: %v", infoIDs(kids))
	}
	if kids := check(session.ListChildren(ctx, alice, "chat"))(t); len(kids) != 0 {
		t.Fatalf("alice sees bob's fork: %v", infoIDs(kids))
	}
	if _, ok := session.BlobsOf(alice); !ok {
		without(t, alice, "blobs (session.BlobsOf)", "a collection through one user's view")
	} else {
		if _, err := session.CollectBlobs(ctx, alice, nil); !errors.Is(err, session.ErrNoBlobCollector) {
			t.Fatalf("a collection through one user's view: %v", err)
		}
	}
}

func testMessagePagination(t *testing.T, s session.Store) {
	ctx := context.Background()
	sess := check(session.Create(ctx, s, &session.CreateOptions{ID: "s-page", Cwd: "/work"}))(t)
	var ids []string
	for i := range 10 {
		e := check(sess.Append(ctx, session.UserText(fmt.Sprintf("m%d", i))))(t)
		ids = append(ids, e.ID())
		if i == 4 {
			check(sess.AppendCustom(ctx, "note", map[string]int{"n": i}))(t) // not a message
		}
	}
	re := check(session.Open(ctx, s, "s-page"))(t)
	texts := func(p *session.MessagePage) []string {
		var out []string
		for _, e := range p.Entries {
			m := check(e.Message())(t)
			out = append(out, m.Text())
		}
		return out
	}
	for _, tc := range []struct {
		name         string
		opts         session.PageOptions
		want         []string
		older, newer bool
	}{
		{"last", session.PageOptions{Limit: 3}, []string{"m7", "m8", "m9"}, true, false},
		{"before", session.PageOptions{Limit: 3, Before: ids[7]}, []string{"m4", "m5", "m6"}, true, true},
		{"before start", session.PageOptions{Limit: 3, Before: ids[1]}, []string{"m0"}, false, true},
		{"after", session.PageOptions{Limit: 2, After: ids[4]}, []string{"m5", "m6"}, true, true},
		{"after end", session.PageOptions{Limit: 5, After: ids[8]}, []string{"m9"}, true, false},
		{"at leaf", session.PageOptions{Limit: 2, Leaf: ids[3]}, []string{"m2", "m3"}, true, false},
		{"all", session.PageOptions{}, []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := check(re.MessagePage(tc.opts))(t)
			if got := texts(p); !slices.Equal(got, tc.want) || p.Older != tc.older || p.Newer != tc.newer {
				t.Fatalf("page %v older=%v newer=%v, want %v %v %v", got, p.Older, p.Newer, tc.want, tc.older, tc.newer)
			}
		})
	}
	if _, err := re.MessagePage(session.PageOptions{Before: "nope"}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("an unknown anchor: %v", err)
	}
	if _, err := re.MessagePage(session.PageOptions{Before: ids[1], After: ids[2]}); err == nil {
		t.Fatal("Before and After together")
	}
}
