package wire

import (
	"encoding/json"
	"slices"
	"testing"

	session "github.com/agentsession/session"
)

// TestWalk: what each handler is given, in order, for a conversation
// with a system message, an aborted reply, a pending call the host
// followed with a user message, and a summary.
func TestWalk(t *testing.T) {
	call := func(id string) *session.Message {
		return session.Assistant(session.ToolCall(id, "read", json.RawMessage(`{}`)))
	}
	aborted := call("x").WithStopReason(session.StopAborted)
	sys := &session.Message{Role: RoleSystem, Content: []session.Block{session.Text("be brief")}}
	summary := &session.Message{Role: session.RoleCompactionSummary, Summary: "earlier"}
	msgs := []*session.Message{
		session.UserText("hi"), sys, aborted, session.ToolResult("x", "read", "lost"),
		call("a"), session.ToolResult("a", "read", "ok"), call("b"), session.UserText("never mind"), summary,
	}
	for _, withSystem := range []bool{false, true} {
		var got []string
		h := Handlers{
			Unanswered: func(c Call) { got = append(got, "unanswered "+c.ID) },
			Between:    func() { got = append(got, "|") },
			User:       func(m *session.Message) { got = append(got, "user "+m.Text()) },
			Assistant:  func(m *session.Message) { got = append(got, "assistant "+m.ToolCalls()[0].ID) },
			ToolResult: func(m *session.Message, id string) { got = append(got, "result "+id) },
			Other:      func(b []session.Block) { got = append(got, "other") },
		}
		calls := NewCalls(64, 4)
		h.Assistant = func(m *session.Message) {
			got = append(got, "assistant "+calls.Call(m.ToolCalls()[0].ID, "read"))
		}
		if withSystem {
			h.System = func(m *session.Message) { got = append(got, "system") }
		}
		Walk(msgs, calls, h)
		want := []string{"|", "user hi"}
		if withSystem {
			want = append(want, "|", "system")
		}
		want = append(want, "|", // the aborted reply: not sent, nor its result
			"|", "assistant a", "result a",
			"|", "assistant b", "unanswered b", "|", "user never mind",
			"|", "other")
		if !slices.Equal(got, want) {
			t.Errorf("system handler %v:\n got %q\nwant %q", withSystem, got, want)
		}
	}
}
