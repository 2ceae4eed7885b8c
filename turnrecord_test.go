package session_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestTurnUsageKept: a turn's usage is kept whatever its messages, counted
// once, and its id and metadata are typed, all across a reopen.
func TestTurnUsageKept(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := session.Create(ctx, openFS(t, root, nil), &session.CreateOptions{ID: "turns"})
	require.NoError(t, err)
	u := func(in, out int64) *session.Usage {
		return &session.Usage{Input: in, Output: out, TotalTokens: in + out}
	}

	// No assistant message: the usage is the turn entry's (SaveTurn used to drop it).
	require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText("hi")}, u(10, 0)))
	assert.Equal(t, int64(10), s.Usage().Input)

	// An assistant message without usage takes it, as before: no turn entry.
	n := s.Len()
	require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText("q"), session.AssistantText("a")}, u(100, 20)))
	assert.Equal(t, n+2, s.Len(), "no turn entry when the message holds the usage")
	assert.Equal(t, int64(110), s.Usage().Input)

	// An id and metadata: a turn entry; the usage still on the message.
	require.NoError(t, s.SaveTurnWith(ctx, []*session.Message{session.UserText("q2"), session.AssistantText("a2")},
		&session.TurnOptions{ID: "turn-3", Usage: u(1000, 200), Metadata: json.RawMessage(`{"k":"v"}`)}))
	assert.Equal(t, int64(1110), s.Usage().Input)

	// A message with usage of its own: the turn's is kept, not counted twice.
	withOwn := session.AssistantText("a3")
	withOwn.Usage = u(5, 5)
	require.NoError(t, s.SaveTurnWith(ctx, []*session.Message{session.UserText("q3"), withOwn}, &session.TurnOptions{ID: "turn-4", Usage: u(7, 7)}))
	assert.Equal(t, int64(1115), s.Usage().Input)

	check := func(s *session.Session) {
		t.Helper()
		recs := s.TurnRecords()
		require.Len(t, recs, 3)
		assert.Empty(t, recs[0].ID)
		require.NotNil(t, recs[0].Usage)
		assert.Equal(t, int64(10), recs[0].Usage.Input)
		assert.True(t, recs[0].Counted)
		assert.Equal(t, "turn-3", recs[1].ID)
		assert.JSONEq(t, `{"k":"v"}`, string(recs[1].Metadata))
		assert.Nil(t, recs[1].Usage, "the message holds it")
		assert.Equal(t, "turn-4", recs[2].ID)
		require.NotNil(t, recs[2].Usage)
		assert.Equal(t, int64(7), recs[2].Usage.Input)
		assert.False(t, recs[2].Counted)
		first, ok := s.Entry(recs[1].FirstEntryID)
		require.True(t, ok)
		assert.Equal(t, session.TypeMessage, first.Type())
		assert.Equal(t, int64(1115), s.Usage().Input)
		msgs, err := s.Messages(ctx)
		require.NoError(t, err)
		assert.Len(t, msgs, 7, "turn entries are no messages")
	}
	check(s)
	require.NoError(t, s.Close())
	s, err = session.Open(ctx, openFS(t, root, nil), "turns")
	require.NoError(t, err)
	check(s)
	assertNoFindings(t, s)

	// Usage alone, with no messages: a turn entry.
	require.NoError(t, s.SaveTurnWith(ctx, nil, &session.TurnOptions{Usage: u(1, 0)}))
	assert.Equal(t, int64(1116), s.Usage().Input)
	n = s.Len()
	assert.NoError(t, s.SaveTurnWith(ctx, nil, nil), "nothing to save, as SaveTurn")
	assert.Equal(t, n, s.Len())
}
