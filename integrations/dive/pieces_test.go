package session

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/deepnoodle-ai/dive"
	"github.com/deepnoodle-ai/dive/llm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pieceTurn is a turn with a split tool-result message, a tool call and
// the final answer.
func pieceTurn(i int) []*llm.Message {
	id := fmt.Sprintf("call_%d", i)
	return []*llm.Message{
		llm.NewUserTextMessage(fmt.Sprintf("step %d", i)),
		{Role: llm.Assistant, Content: []llm.Content{
			&llm.TextContent{Text: "reading"},
			&llm.ToolUseContent{ID: id, Name: "read", Input: json.RawMessage(`{"path":"a.go"}`)},
		}},
		{Role: llm.User, Content: []llm.Content{
			&llm.ToolResultContent{ToolUseID: id, Content: []*dive.ToolResultContent{{Type: dive.ToolResultContentTypeText, Text: "package a"}}},
			&llm.TextContent{Text: "and keep going"},
		}},
		llm.NewAssistantTextMessage(fmt.Sprintf("done %d", i)),
	}
}

func diveJSON(t *testing.T, msgs []*llm.Message) string {
	t.Helper()
	b, err := json.Marshal(msgs)
	require.NoError(t, err)
	return string(b)
}

// TestMessagesConvertsEachEntryOnce: a call with nothing new converts
// nothing, and a turn converts its own messages only (the pieces of the
// others are those of the call before).
func TestMessagesConvertsEachEntryOnce(t *testing.T) {
	ctx := context.Background()
	s := New("once")
	for i := range 3 {
		require.NoError(t, s.SaveTurn(ctx, pieceTurn(i), nil))
	}
	first, err := s.Messages(ctx)
	require.NoError(t, err)
	before := append([]*piece(nil), s.pieces.pcs...)
	again, err := s.Messages(ctx)
	require.NoError(t, err)
	assert.Equal(t, diveJSON(t, first), diveJSON(t, again))
	require.Len(t, s.pieces.pcs, len(before))
	for i := range before {
		assert.Same(t, before[i], s.pieces.pcs[i], "message %d is converted once", i)
	}
	require.NoError(t, s.SaveTurn(ctx, pieceTurn(3), nil))
	_, err = s.Messages(ctx)
	require.NoError(t, err)
	require.Greater(t, len(s.pieces.pcs), len(before))
	for i := range before {
		assert.Same(t, before[i], s.pieces.pcs[i], "message %d is not converted again after a turn", i)
	}
}

// TestMessagesAreTheCallers: whatever a caller does to what Messages
// returned (Dive appends and replaces blocks, sets cache control, edits
// tool inputs), the next call returns what the session holds.
func TestMessagesAreTheCallers(t *testing.T) {
	ctx := context.Background()
	s := New("owned")
	for i := range 3 {
		require.NoError(t, s.SaveTurn(ctx, pieceTurn(i), nil))
	}
	first, err := s.Messages(ctx)
	require.NoError(t, err)
	want := diveJSON(t, first)
	for _, m := range first {
		m.ID, m.Role = "changed", llm.Assistant
		for k, c := range m.Content {
			if set, ok := c.(llm.CacheControlSetter); ok {
				set.SetCacheControl(&llm.CacheControl{Type: llm.CacheControlTypeEphemeral})
			}
			switch c := c.(type) {
			case *llm.TextContent:
				c.Text = "changed"
			case *llm.ToolUseContent:
				c.Input[0] = '['
				c.Name = "changed"
			case *llm.ToolResultContent:
				c.ToolUseID, c.IsError = "changed", true
				m.Content[k] = &llm.TextContent{Text: "replaced"}
			}
		}
		m.Content = append(m.Content, &llm.TextContent{Text: "appended"})
	}
	again, err := s.Messages(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, diveJSON(t, again))
}
