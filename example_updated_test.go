package session_test

import (
	"context"
	"fmt"
	"log"
	"time"

	session "github.com/agentsession/session"
)

// A session copied from elsewhere keeps the time it was last active at
// its source, not the time it was written here: listings, and sweeps by
// age, see it as old.
func ExampleSetUpdated() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/home/dev/app"})
	if err != nil {
		log.Fatal(err)
	}
	if err := s.SaveTurn(ctx, []*session.Message{session.UserText("an old question")}, nil); err != nil {
		log.Fatal(err)
	}
	l, err := store.Load(ctx, s.ID())
	if err != nil {
		log.Fatal(err)
	}
	lastActive := time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)
	if err := session.SetUpdated(ctx, store, s.ID(), session.MarkOf(l), lastActive); err != nil {
		log.Fatal(err)
	}
	p, err := store.List(ctx, session.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Sessions[0].Updated.Format(time.DateTime))
	res, err := session.Sweep(ctx, store, &session.SweepPolicy{OlderThan: 365 * 24 * time.Hour, ArchiveOnly: true,
		Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("archived:", len(res.Archived))
	// Output:
	// 2024-05-01 09:00:00
	// archived: 1
}
