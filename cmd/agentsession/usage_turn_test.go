package main

import (
	"context"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

// TestUsageTurnRecord: the usage command counts what Session.Usage
// counts, turn records included.
func TestUsageTurnRecord(t *testing.T) {
	ctx := context.Background()
	s, err := session.Create(ctx, session.NewMemoryStore(), &session.CreateOptions{ID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SaveTurn(ctx, []*session.Message{session.UserText("q")}, &session.Usage{Input: 100}); err != nil {
		t.Fatal(err)
	}
	tally := newTally()
	sessionUsage(s, time.Time{}, tally, nil, nil)
	_, total := tally.list()
	if total.Input != s.Usage().Input {
		t.Fatalf("CLI usage input %d, Session.Usage input %d", total.Input, s.Usage().Input)
	}
}
