package session_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestSessionStripsStreamingLeftovers: whatever the store, members named
// partialJson or jsonlEvents never reach it, in messages (blocks, their
// extra members, details, tool arguments) or in entries of other types;
// the context in memory is the one a reopen reads, lineCount counted
// again included.
func TestSessionStripsStreamingLeftovers(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"memory", "file"} {
		t.Run(kind, func(t *testing.T) {
			root := t.TempDir()
			var store session.Store = session.NewMemoryStore()
			if kind == "file" {
				store = openFS(t, root, nil)
			}
			s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/w"})
			require.NoError(t, err)

			call := session.ToolCall("c1", "read", json.RawMessage(`{"path":"a.go"}`))
			call.Extra.Set("partialJson", json.RawMessage(`"{\"path\":\"a."`))
			aborted := session.Assistant(session.Text("reading"), call).WithStopReason(session.StopAborted)
			aborted.Extra.Set("jsonlEvents", json.RawMessage(`[{"type":"message_start"},{"type":"toolcall_delta"}]`))
			result := session.ToolResult("c1", "read", "package a\n\nfunc A() {}\n")
			result.Details = json.RawMessage(`{"content":"package a\n\nfunc A() {}\n","lineCount":99,"jsonlEvents":[{"t":1}]}`)
			note := session.CustomMessage("files", "see a.go", true)
			note.Details = json.RawMessage(`{"files":[{"path":"a.go","content":"x\ny","lineCount":1,"partialJson":"{"}]}`)
			appendAll(t, s, session.UserText("read a.go"), aborted, result)
			_, err = s.AppendCustomMessage(ctx, note)
			require.NoError(t, err)
			_, err = s.AppendCustom(ctx, "ext.state", map[string]any{"step": 2, "jsonlEvents": []int{1, 2}, "nested": map[string]any{"partialJson": "{"}})
			require.NoError(t, err)

			for _, e := range s.Log().Entries {
				assert.NotContains(t, string(e.JSON()), "partialJson", e.Type())
				assert.NotContains(t, string(e.JSON()), "jsonlEvents", e.Type())
			}
			msgs := s.Context().Messages
			require.Len(t, msgs, 4)
			_, has := msgs[1].Content[1].Extra.Get("partialJson")
			assert.False(t, has)
			assert.JSONEq(t, `{"path":"a.go"}`, string(msgs[1].Content[1].Arguments))
			assert.JSONEq(t, `{"content":"package a\n\nfunc A() {}\n","lineCount":4}`, string(msgs[2].Details))
			assert.JSONEq(t, `{"files":[{"path":"a.go","content":"x\ny","lineCount":2}]}`, string(msgs[3].Details))
			var state map[string]any
			require.NoError(t, s.Log().Entries[len(s.Log().Entries)-1].Decode(&state))
			assert.Equal(t, map[string]any{"step": float64(2), "nested": map[string]any{}}, state["data"])

			before := contextJSON(t, s.Context())
			require.NoError(t, s.Close())
			r, err := session.Open(ctx, store, s.ID())
			require.NoError(t, err)
			defer r.Close()
			assert.Equal(t, before, contextJSON(t, r.Context()), "the context in memory is the one a reopen reads")
		})
	}
}
