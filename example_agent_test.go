package session_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	session "github.com/agentsession/session"
)

// Usage totals: the whole session, and the branch the leaf is on.
func ExampleSession_Usage() {
	ctx := context.Background()
	s := session.New()
	turn := func(q, a string, in, out int64) {
		_ = s.SaveTurn(ctx, []*session.Message{session.UserText(q), reply(a)}, &session.Usage{Input: in, Output: out})
	}
	turn("Plan the refactor.", "Here is a plan.", 1000, 200)
	plan, _ := s.Entry(s.LeafID())
	turn("Do step one.", "Done.", 1500, 100)
	_ = s.Branch(ctx, plan.ID()) // try step one another way
	turn("Do step one differently.", "Done differently.", 1400, 120)

	all := s.Usage()
	branch, _ := s.UsageAt(s.LeafID())
	fmt.Printf("session: %d in, %d out\n", all.Input, all.Output)
	fmt.Printf("branch:  %d in, %d out\n", branch.Input, branch.Output)
	// Output:
	// session: 3900 in, 420 out
	// branch:  2400 in, 320 out
}

// An Observer on the store sees every session on it; SlogObserver logs
// the events.
func ExampleObserve() {
	ctx := context.Background()
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "duration" || a.Key == "session" {
				return slog.Attr{} // vary from run to run
			}
			return a
		},
	})
	store := session.Observe(session.NewMemoryStore(), session.SlogObserver(slog.New(h)))

	s, _ := session.Create(ctx, store, nil)
	_ = s.SaveTurn(ctx, []*session.Message{session.UserText("hi"), reply("hello")}, nil) // Debug: not logged
	path, _ := s.PathTo(s.LeafID())
	first := path[0]
	_ = s.Branch(ctx, first.ID())
	_ = s.Branch(ctx, "no-such-entry")
	// Output:
	// level=INFO msg="session create" entries=0
	// level=INFO msg="session branch" entries=1
	// level=ERROR msg="session branch" entries=0 err="session: not found: entry no-such-entry"
}
