package session_test

import (
	"context"
	"fmt"

	session "github.com/agentsession/session"
)

// A checkpoint a framework saves on every step: reading it costs the
// copy of its value, however often it was saved; a compaction records
// the state where the context restarts; Prune drops the values later
// ones replaced, keeping the state of every checkpoint.
func Example_stateHistory() {
	ctx := context.Background()
	s := session.New()
	for step := range 1000 {
		if err := session.SetState(ctx, s, "graph", map[string]int{"step": step}); err != nil {
			panic(err)
		}
		if step == 500 {
			if _, err := s.Checkpoint(ctx, "halfway"); err != nil {
				panic(err)
			}
		}
	}
	g, _, _ := session.GetState[map[string]int](ctx, s, "graph")
	fmt.Println("at the leaf:", g["step"])

	res, err := s.Prune(ctx, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("entries dropped:", res.Dropped)
	cp, _ := s.Resolve("halfway")
	st, _ := s.StateAt(cp.ID())
	half, _, _ := session.Get[map[string]int](st, "graph")
	fmt.Println("at the checkpoint:", half["step"])
	// Output:
	// at the leaf: 999
	// entries dropped: 998
	// at the checkpoint: 500
}
