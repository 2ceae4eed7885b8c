package s3store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/mirror"
)

// TestMirrorTwoWriters: two machines, each with a FileStore of its own
// and a store of its own on the bucket, share a session through it and
// both continue it while apart: the bucket refuses the second machine's
// append (its compare-and-set), its turns become a branch, and in the
// end the three copies hold every turn of both.
func TestMirrorTwoWriters(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	remoteA, remoteB := openStore(t, opts), openStore(t, opts)
	a, b := fileStoreIn(t), fileStoreIn(t)
	sa, err := session.Create(ctx, a, &session.CreateOptions{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	id := sa.ID()
	say := func(s *session.Session, text string) {
		t.Helper()
		if err := s.SaveTurn(ctx, []*session.Message{session.UserText(text), session.AssistantText("re: " + text)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	sync := func(local, remote session.Store) mirror.Result {
		t.Helper()
		res, err := mirror.Sync(ctx, local, remote, id)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	say(sa, "start")
	sync(a, remoteA)
	if res := sync(b, remoteB); !res.CreatedLocal {
		t.Fatalf("machine B's first sync: %+v", res)
	}
	sb, err := session.Open(ctx, b, id)
	if err != nil {
		t.Fatal(err)
	}
	say(sa, "on A")
	say(sb, "on B")
	if res := sync(a, remoteA); res.Pushed != 2 {
		t.Fatalf("A's sync: %+v", res)
	}
	if res := sync(b, remoteB); res.Branched != 2 {
		t.Fatalf("B's sync: %+v", res)
	}
	sync(a, remoteA)
	logs := map[string][]string{}
	for name, store := range map[string]session.Store{"A": a, "B": b, "bucket": openStore(t, opts)} {
		log, err := store.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, e := range log.Entries {
			if m, err := e.Message(); err == nil {
				texts = append(texts, m.Text())
			}
		}
		logs[name] = texts
	}
	for _, want := range []string{"start", "on A", "re: on A", "on B", "re: on B"} {
		for name, texts := range logs {
			if !slices.Contains(texts, want) {
				t.Fatalf("%q is not on %s: %q", want, name, texts)
			}
		}
	}
	if !slices.Equal(logs["A"], logs["bucket"]) || !slices.Equal(logs["B"], logs["bucket"]) {
		t.Fatalf("the copies differ: %v", logs)
	}
	// The bucket's conversation is A's, which reached it first.
	s, err := session.Open(ctx, openStore(t, opts), id)
	if err != nil {
		t.Fatal(err)
	}
	msgs := s.Context().Messages
	if got := msgs[len(msgs)-1].Text(); got != "re: on A" {
		t.Fatalf("the bucket's copy opens at %q", got)
	}
}

// TestMirrorRun: Run beside an agent mirrors its turns to the bucket as
// they are saved, and brings back turns saved on another machine (found
// by the bucket's polling).
func TestMirrorRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := options(t)
	local, remote := fileStoreIn(t), openStore(t, opts)
	done := make(chan error, 1)
	go func() { done <- mirror.Run(ctx, local, remote, &mirror.Options{Interval: 200 * time.Millisecond}) }()
	s, err := session.Create(ctx, local, &session.CreateOptions{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SaveTurn(ctx, []*session.Message{session.UserText("hi"), session.AssistantText("hello")}, nil); err != nil {
		t.Fatal(err)
	}
	other := openStore(t, opts) // another machine's store on the bucket
	wait(t, func() bool { l, err := other.Load(ctx, s.ID()); return err == nil && len(l.Entries) == 2 })
	o, err := session.Open(ctx, other, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Append(ctx, session.UserText("from the other machine")); err != nil {
		t.Fatal(err)
	}
	wait(t, func() bool { l, err := local.Load(ctx, s.ID()); return err == nil && len(l.Entries) == 3 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func fileStoreIn(t *testing.T) *session.FileStore {
	t.Helper()
	s, err := session.OpenFileStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// wait waits for cond, with a deadline against hanging (not a measure).
func wait(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("not mirrored within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
