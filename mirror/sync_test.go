package mirror_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/mirror"
)

// ids returns the ids of a session's entries on store.
func ids(t *testing.T, store session.Store, id string) []string {
	t.Helper()
	log, err := store.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range log.Entries {
		out = append(out, e.ID())
	}
	return out
}

// turn saves a user message and a reply through a handle.
func turn(t *testing.T, s *session.Session, text string) {
	t.Helper()
	if err := s.SaveTurn(context.Background(), []*session.Message{session.UserText(text), session.AssistantText("re: " + text)}, nil); err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T, store session.Store, id string) *session.Session {
	t.Helper()
	s, err := session.Open(context.Background(), store, id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustSync(t *testing.T, local, remote session.Store, id string) mirror.Result {
	t.Helper()
	res, err := mirror.Sync(context.Background(), local, remote, id)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// same checks that both copies hold the same log.
func same(t *testing.T, a, b session.Store, id string) []string {
	t.Helper()
	x, y := ids(t, a, id), ids(t, b, id)
	if !slices.Equal(x, y) {
		t.Fatalf("the copies differ:\n%v\n%v", x, y)
	}
	return x
}

func TestSync(t *testing.T) {
	ctx := context.Background()
	type setup func(t *testing.T, local, remote session.Store) string
	create := func(t *testing.T, store session.Store, turns ...string) *session.Session {
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s1", Cwd: "/w"})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range turns {
			turn(t, s, x)
		}
		return s
	}
	cases := []struct {
		name  string
		setup setup
		check func(t *testing.T, res mirror.Result, local, remote session.Store)
	}{
		{"local only", func(t *testing.T, l, r session.Store) string { create(t, l, "a", "b"); return "s1" },
			func(t *testing.T, res mirror.Result, l, r session.Store) {
				if !res.CreatedRemote || res.Pushed != 4 {
					t.Fatalf("%+v", res)
				}
			}},
		{"remote only", func(t *testing.T, l, r session.Store) string { create(t, r, "a"); return "s1" },
			func(t *testing.T, res mirror.Result, l, r session.Store) {
				if !res.CreatedLocal || res.Pulled != 2 {
					t.Fatalf("%+v", res)
				}
			}},
		{"local ahead", func(t *testing.T, l, r session.Store) string {
			create(t, l, "a")
			mustSync(t, l, r, "s1")
			turn(t, open(t, l, "s1"), "b")
			return "s1"
		}, func(t *testing.T, res mirror.Result, l, r session.Store) {
			if res.Pushed != 2 || res.Pulled != 0 {
				t.Fatalf("%+v", res)
			}
		}},
		{"remote ahead", func(t *testing.T, l, r session.Store) string {
			create(t, l, "a")
			mustSync(t, l, r, "s1")
			turn(t, open(t, r, "s1"), "b")
			return "s1"
		}, func(t *testing.T, res mirror.Result, l, r session.Store) {
			if res.Pulled != 2 || res.Pushed != 0 {
				t.Fatalf("%+v", res)
			}
		}},
		{"in step", func(t *testing.T, l, r session.Store) string {
			create(t, l, "a")
			mustSync(t, l, r, "s1")
			return "s1"
		}, func(t *testing.T, res mirror.Result, l, r session.Store) {
			if res.Changed() {
				t.Fatalf("%+v", res)
			}
		}},
		{"both wrote", func(t *testing.T, l, r session.Store) string {
			create(t, l, "a")
			mustSync(t, l, r, "s1")
			turn(t, open(t, l, "s1"), "local")
			turn(t, open(t, r, "s1"), "remote")
			return "s1"
		}, func(t *testing.T, res mirror.Result, l, r session.Store) {
			if res.Branched != 2 {
				t.Fatalf("%+v", res)
			}
			// The remote's conversation goes on where it was; the local
			// turn is a branch off the first turn.
			s := open(t, r, "s1")
			msgs := s.Context().Messages
			if last := msgs[len(msgs)-1].Text(); last != "re: remote" {
				t.Fatalf("the remote copy opens at %q, want its own last reply", last)
			}
			var texts []string
			for _, e := range s.Log().Entries {
				if m, err := e.Message(); err == nil {
					texts = append(texts, m.Text())
				}
			}
			for _, want := range []string{"a", "local", "re: local", "remote", "re: remote"} {
				if !slices.Contains(texts, want) {
					t.Fatalf("%q is not in the merged log %q", want, texts)
				}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			local, remote := session.NewMemoryStore(), session.NewMemoryStore()
			id := tc.setup(t, local, remote)
			res := mustSync(t, local, remote, id)
			tc.check(t, res, local, remote)
			same(t, local, remote, id)
			if again := mustSync(t, local, remote, id); again.Changed() {
				t.Fatalf("a second sync wrote: %+v", again)
			}
		})
	}
}

// TestSyncRefusesOneIDTwoContents: entries with one id and different
// bytes on the two sides cannot be merged: Sync says so and writes
// nothing.
func TestSyncRefusesOneIDTwoContents(t *testing.T) {
	ctx := context.Background()
	local, remote := session.NewMemoryStore(), session.NewMemoryStore()
	h := session.Header{Version: session.CurrentVersion, ID: "s1", Timestamp: time.Unix(1, 0), Cwd: "/w"}
	e1, _ := session.NewEntry("custom", "e1", "", time.Unix(1, 0), session.Custom{CustomType: "x", Data: []byte(`1`)})
	e2, _ := session.NewEntry("custom", "e1", "", time.Unix(1, 0), session.Custom{CustomType: "x", Data: []byte(`2`)})
	for _, c := range []struct {
		store session.Store
		e     session.Entry
	}{{local, e1}, {remote, e2}} {
		if err := c.store.Create(ctx, h); err != nil {
			t.Fatal(err)
		}
		if err := c.store.Append(ctx, "s1", session.AppendOptions{}, c.e); err != nil {
			t.Fatal(err)
		}
	}
	_, err := mirror.Sync(ctx, local, remote, "s1")
	if !errors.Is(err, mirror.ErrDiverged) || !errors.Is(err, session.ErrConflict) {
		t.Fatalf("Sync: %v, want ErrDiverged", err)
	}
	for _, s := range []session.Store{local, remote} {
		if got := ids(t, s, "s1"); len(got) != 1 {
			t.Fatalf("a copy changed: %v", got)
		}
	}
	if _, err := mirror.Sync(ctx, local, remote, "nowhere"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Sync of a session on neither side: %v", err)
	}
}

// TestTwoMachinesWriteApart: two machines (FileStores of their own) share
// a session through a remote store; both continue it while apart, with
// handles open, then mirror: every turn of both is on all three copies,
// the remote's conversation is the first to reach it, the other's turns
// a branch, and the handles go on writing afterwards.
func TestTwoMachinesWriteApart(t *testing.T) {
	ctx := context.Background()
	remote := session.NewMemoryStore()
	a, b := fileStore(t), fileStore(t)
	sa, err := session.Create(ctx, a, &session.CreateOptions{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	id := sa.ID()
	turn(t, sa, "start")
	mustSync(t, a, remote, id)
	mustSync(t, b, remote, id) // picked up on machine B
	sb := open(t, b, id)
	turn(t, sa, "on A")
	turn(t, sb, "on B")
	if res := mustSync(t, a, remote, id); res.Pushed != 2 {
		t.Fatalf("A's push: %+v", res)
	}
	if res := mustSync(t, b, remote, id); res.Branched != 2 {
		t.Fatalf("B's sync: %+v", res)
	}
	mustSync(t, a, remote, id)
	all := same(t, a, remote, id)
	same(t, b, remote, id)
	if len(all) != 2+2+2+1 { // three turns and a leaf marker
		t.Fatalf("%d entries: %v", len(all), all)
	}
	// The handles, whose logs are behind, go on.
	turn(t, sa, "A again")
	turn(t, sb, "B again")
	mustSync(t, a, remote, id)
	mustSync(t, b, remote, id)
	mustSync(t, a, remote, id)
	final := same(t, a, remote, id)
	same(t, b, remote, id)
	if len(final) != len(all)+4+1 {
		t.Fatalf("%d entries after more turns on both: %v", len(final), final)
	}
}

func fileStore(t *testing.T) *session.FileStore {
	t.Helper()
	s, err := session.OpenFileStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSyncBesideWriters: agents append on both sides while Sync runs:
// every append acknowledged on either side ends on both.
func TestSyncBesideWriters(t *testing.T) {
	ctx := context.Background()
	local, remote := session.NewMemoryStore(), session.NewMemoryStore()
	s, err := session.Create(ctx, local, &session.CreateOptions{ID: "busy", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	turn(t, s, "first")
	mustSync(t, local, remote, "busy")
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[string]bool{}
	for side, store := range []session.Store{local, remote} {
		wg.Go(func() {
			h := open(t, store, "busy")
			for i := range 30 {
				e, err := h.Append(ctx, session.UserText(fmt.Sprintf("side %d turn %d", side, i)))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[e.ID()] = true
				mu.Unlock()
			}
		})
	}
	stop := make(chan struct{})
	syncs := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				syncs <- nil
				return
			default:
			}
			if _, err := mirror.Sync(ctx, local, remote, "busy"); err != nil && !errors.Is(err, session.ErrConflict) {
				syncs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	if err := <-syncs; err != nil {
		t.Fatal(err)
	}
	mustSync(t, local, remote, "busy")
	got := same(t, local, remote, "busy")
	for id := range acked {
		if !slices.Contains(got, id) {
			t.Fatalf("acknowledged entry %s is not in the mirrored log", id)
		}
	}
}

// TestRun: Run mirrors the turns of a host as they are saved, and brings
// back a session continued on the remote side.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	local, remote := fileStore(t), session.NewMemoryStore()
	done := make(chan error, 1)
	var mu sync.Mutex
	var syncErrs []error
	go func() {
		done <- mirror.Run(ctx, local, remote, &mirror.Options{Interval: 50 * time.Millisecond, OnSync: func(_ mirror.Result, err error) {
			if err != nil {
				mu.Lock()
				syncErrs = append(syncErrs, err)
				mu.Unlock()
			}
		}})
	}()
	s, err := session.Create(context.Background(), local, &session.CreateOptions{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	turn(t, s, "hello")
	waitFor(t, func() bool { l, err := remote.Load(ctx, s.ID()); return err == nil && len(l.Entries) == 2 })
	turn(t, open(t, remote, s.ID()), "from elsewhere")
	waitFor(t, func() bool { l, err := local.Load(ctx, s.ID()); return err == nil && len(l.Entries) == 4 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, err := range syncErrs {
		if !errors.Is(err, session.ErrConflict) && !errors.Is(err, context.Canceled) {
			t.Errorf("sync error: %v", err)
		}
	}
}

// waitFor waits for cond, failing the test after a generous deadline (a
// bound against hanging, not a measure).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("not mirrored within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
