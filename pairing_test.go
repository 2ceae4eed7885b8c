package session_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestUnpairedToolResults: SetStrictPairing(false) stores a tool result
// that answers no pending call (a resumed turn's late result, another
// framework's history), which Append refuses by default; the model's view
// still leaves it out, and Verify reports it as an orphan.
func TestUnpairedToolResults(t *testing.T) {
	ctx := t.Context()
	s := session.New()
	appendAll(t, s, session.UserText("q"), session.Assistant(session.ToolCall("c1", "ls", nil)), session.UserText("go on"))
	late := session.ToolResult("c1", "ls", "late output")
	_, err := s.Append(ctx, late)
	require.ErrorIs(t, err, session.ErrUnpairedToolResult, "strict by default")

	s.SetStrictPairing(false)
	e, err := s.Append(ctx, late)
	require.NoError(t, err)
	_, err = s.Append(ctx, session.ToolResult("nowhere", "", "no call at all"))
	require.NoError(t, err)
	require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.ToolResult("c9", "", "x"), session.AssistantText("ok")}, nil))

	msgs, err := s.Messages(ctx)
	require.NoError(t, err)
	for _, m := range msgs {
		if m.Role == session.RoleToolResult {
			assert.True(t, m.Synthetic(), "only the synthetic result of the dangling call is sent: %q", m.Text())
		}
	}
	var orphans []string
	for _, f := range s.Verify() {
		if f.Kind == session.FindingOrphanResult {
			orphans = append(orphans, f.EntryID)
		}
	}
	assert.Len(t, orphans, 3)
	assert.Contains(t, orphans, e.ID())

	s.SetStrictPairing(true)
	_, err = s.Append(ctx, late)
	assert.ErrorIs(t, err, session.ErrUnpairedToolResult)
}
