package session_test

import (
	"context"
	"fmt"
	"time"

	session "github.com/agentsession/session"
)

// Sweep applies a retention policy: here sessions untouched for 30 days
// expire, except the newest of each working directory and those with a
// named checkpoint. The sweep's clock is set 31 days ahead to show it.
func ExampleSweep() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	for _, id := range []string{"api-1", "api-2", "web-1", "web-2"} {
		s, _ := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/src/" + id[:3]})
		s.Append(ctx, session.UserText("hello"))
		if id == "web-1" {
			s.Checkpoint(ctx, "release")
		}
		s.Close()
	}
	res, err := session.Sweep(ctx, store, &session.SweepPolicy{
		OlderThan:  30 * 24 * time.Hour,
		KeepNewest: 1, // per working directory
		Now:        func() time.Time { return time.Now().Add(31 * 24 * time.Hour) },
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("deleted:", res.Deleted)
	for _, k := range res.Kept {
		fmt.Println("kept:", k.ID, k.Reason)
	}
	// Output:
	// deleted: [api-1]
	// kept: api-2 newest
	// kept: web-1 labeled
	// kept: web-2 newest
}
