package session_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestTurnRecordRetry: a SaveTurnWith whose answer was lost, retried,
// stores the turn once and counts its usage once.
func TestTurnRecordRetry(t *testing.T) {
	ctx := context.Background()
	for name, mk := range retryStores(t) {
		t.Run(name, func(t *testing.T) {
			f := &flaky{Store: mk()}
			s, err := session.Create(ctx, f, &session.CreateOptions{ID: "t"})
			require.NoError(t, err)
			appendAll(t, s, session.UserText("q"))
			u := &session.Usage{Input: 10, Cost: session.Cost{Total: 1}}
			f.armed, f.lost = 1, true
			msgs := []*session.Message{session.ToolResult("x", "n", "r")}
			_ = msgs
			err = s.SaveTurnWith(ctx, nil, &session.TurnOptions{ID: "t1", Usage: u, Metadata: json.RawMessage(`{"a": 1}`)})
			require.Error(t, err)
			require.NoError(t, s.SaveTurnWith(ctx, nil, &session.TurnOptions{ID: "t1", Usage: u, Metadata: json.RawMessage(`{"a": 1}`)}))
			assert.Len(t, s.TurnRecords(), 1)
			assert.Equal(t, int64(10), s.Usage().Input)
			// usage placed on the assistant message, then retried
			f.armed, f.lost = 1, true
			turn := []*session.Message{session.UserText("q2"), session.AssistantText("a2")}
			require.Error(t, s.SaveTurnWith(ctx, turn, &session.TurnOptions{ID: "t2", Usage: u}))
			require.NoError(t, s.SaveTurnWith(ctx, turn, &session.TurnOptions{ID: "t2", Usage: u}))
			assert.Len(t, s.TurnRecords(), 2)
			assert.Equal(t, int64(20), s.Usage().Input)
			assert.Equal(t, 5, s.Len())
		})
	}
}
