package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// readTurn appends a turn that reads a file of size bytes.
func readTurn(t *testing.T, s *session.Session, k, size int) {
	t.Helper()
	id := fmt.Sprintf("call_%d", k)
	require.NoError(t, s.SaveTurn(context.Background(), []*session.Message{
		session.UserText(fmt.Sprintf("Look at file %d.", k)),
		session.Assistant(session.ToolCall(id, "read", json.RawMessage(fmt.Sprintf(`{"path":"f%d.go"}`, k)))),
		session.ToolResult(id, "read", strings.Repeat("x", size)),
		session.AssistantText(fmt.Sprintf("File %d read.", k)),
	}, nil))
}

// clearedTurns lists, per turn, whether its result is cleared.
func clearedTurns(msgs []*session.Message) []bool {
	var out []bool
	for _, m := range msgs {
		if m.Role == session.RoleToolResult {
			out = append(out, strings.HasPrefix(m.Text(), "[Tool result cleared"))
		}
	}
	return out
}

// TestClearedMessages: older results are cleared in steps, the calls stay
// paired, the log is untouched, the prefix is stable between steps, and
// the list grown turn by turn is the one built afresh.
func TestClearedMessages(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "clear"})
	require.NoError(t, err)
	o := &session.ClearOptions{KeepTurns: 2, Step: 3}
	var prev []*session.Message
	var prevCleared int
	for k := 1; k <= 14; k++ {
		readTurn(t, s, k, 4000)
		msgs, st, err := s.ClearedMessages(ctx, o)
		require.NoError(t, err)
		checkPairing(t, msgs)
		want := max(0, k-2) / 3 * 3
		assert.Equal(t, want, st.ClearedTurns, "turn %d", k)
		got := clearedTurns(msgs)
		for i, c := range got {
			assert.Equal(t, i < want, c, "turn %d: result %d", k, i+1)
		}
		assert.Less(t, st.TokensAfter, st.TokensBefore+1)
		if st.ClearedTurns == prevCleared && prev != nil {
			assert.Equal(t, prev, msgs[:len(prev)], "turn %d: the prefix is the same between steps", k)
		}
		prev, prevCleared = msgs, st.ClearedTurns

		// Built afresh, from the store: the same list.
		fresh, err := session.Open(ctx, openFS(t, root, nil), "clear")
		require.NoError(t, err)
		again, st2, err := fresh.ClearedMessages(ctx, o)
		require.NoError(t, err)
		assert.Equal(t, st, st2)
		require.Len(t, again, len(msgs))
		for i := range msgs {
			assert.Equal(t, msgs[i].Text(), again[i].Text())
		}
		require.NoError(t, fresh.Close())
	}
	// Nothing is deleted: the context has every result whole.
	for _, m := range s.Context().Messages {
		if m.Role == session.RoleToolResult {
			assert.Len(t, m.Text(), 4000)
		}
	}
	assertNoFindings(t, s)
}

// TestClearedMessagesBudget: over MaxTokens, more turns are cleared, by
// steps, never the last one; small results stay whole.
func TestClearedMessagesBudget(t *testing.T) {
	ctx := context.Background()
	s := newMem(t)
	for k := 1; k <= 10; k++ {
		readTurn(t, s, k, 8000) // about 2,000 tokens each
	}
	_, st, err := s.ClearedMessages(ctx, &session.ClearOptions{KeepTurns: 5, Step: 2})
	require.NoError(t, err)
	assert.Equal(t, 4, st.ClearedTurns)
	msgs, st, err := s.ClearedMessages(ctx, &session.ClearOptions{KeepTurns: 5, Step: 2, MaxTokens: 5000})
	require.NoError(t, err)
	assert.Equal(t, 8, st.ClearedTurns, "cleared by steps of 2 until it fits, the last turn kept")
	assert.LessOrEqual(t, st.TokensAfter, int64(5000))
	assert.Equal(t, 8, st.Cleared)
	checkPairing(t, msgs)

	small := newMem(t)
	for k := 1; k <= 6; k++ {
		readTurn(t, small, k, 40)
	}
	_, st, err = small.ClearedMessages(ctx, &session.ClearOptions{KeepTurns: 1, Step: 1})
	require.NoError(t, err)
	assert.Zero(t, st.Cleared, "results under MinTokens are kept")
}

// TestNeedsCompactionCleared: a host that clears compacts only when
// clearing is not enough.
func TestNeedsCompactionCleared(t *testing.T) {
	s := newMem(t)
	for k := 1; k <= 10; k++ {
		readTurn(t, s, k, 8000)
	}
	o := &session.CompactionOptions{ContextWindow: 12000, ReserveTokens: 2000}
	assert.True(t, s.NeedsCompaction(o))
	o.Clear = &session.ClearOptions{KeepTurns: 2, Step: 2}
	assert.False(t, s.NeedsCompaction(o), "cleared, it fits")
	o.Clear = &session.ClearOptions{KeepTurns: 8, Step: 2}
	assert.True(t, s.NeedsCompaction(o), "too little cleared")
}
