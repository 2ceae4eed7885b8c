package anthropic_test

import (
	"encoding/json"
	"reflect"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/anthropic"
	"github.com/agentsession/session/provider/internal/convtest"
)

func own(blocks ...session.Block) *session.Message {
	return session.Assistant(blocks...).WithModel(anthropic.API, "anthropic", convtest.Model)
}

func rawArgs(s string) json.RawMessage { return json.RawMessage(s) }

// types lists the block types of each message, "role:type,type".
func types(msgs []anthropic.Message) []string {
	var out []string
	for _, m := range msgs {
		s := m.Role + ":"
		for k, b := range m.Content {
			if k > 0 {
				s += ","
			}
			s += b.Type
		}
		out = append(out, s)
	}
	return out
}

func expectTypes(t *testing.T, msgs []anthropic.Message, want ...string) {
	t.Helper()
	if got := types(msgs); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// Item 8: an errored or aborted reply is not sent (as pi's own converter
// does), nor are the results of its calls; a retry's signed thinking then
// starts its message.
func TestIncompleteRepliesSkipped(t *testing.T) {
	for _, stop := range []string{session.StopError, session.StopAborted} {
		t.Run(stop, func(t *testing.T) {
			in := []*session.Message{
				session.UserText("Run it."),
				own(session.Text("Running"), session.ToolCall("toolu_1", "bash", rawArgs(`{"command":"make"}`)),
					session.ToolCall("toolu_2", "bash", rawArgs(`{}`))).WithStopReason(stop),
				session.ToolResult("toolu_1", "bash", "a real result of the failed turn"),
				session.ToolError("toolu_2", "bash", "aborted"),
				own(session.Thinking("Retry.", "SigRetry=="), session.Text("Running make."),
					session.ToolCall("toolu_1", "bash", rawArgs(`{"command":"make"}`))),
				session.ToolResult("toolu_1", "bash", "ok"),
				own(session.Text("Built.")),
			}
			msgs := anthropic.Messages(in, &anthropic.Options{Model: convtest.Model})
			check(t, in, anthropic.Request{Messages: msgs})
			expectTypes(t, msgs, "user:text", "assistant:thinking,text,tool_use", "user:tool_result", "assistant:text")
			if id := msgs[1].Content[2].ID; id != "toolu_1" {
				t.Errorf("retry's call sent as %q: the skipped call's id must not count as used", id)
			}
			if r := msgs[2].Content[0]; r.IsError || r.Content[0].Text != "ok" {
				t.Errorf("result %+v, want the retry's", r)
			}
		})
	}
	// Errored replies between two others, merged before the fix: the
	// message starts with the retry's thinking and has none of the failed
	// text.
	in := []*session.Message{
		session.UserText("Explain."),
		own(session.Text("The reason is")).WithStopReason(session.StopError),
		own(session.Thinking("Half a thought", "SigAborted==")).WithStopReason(session.StopAborted),
		own(session.Thinking("Think again.", "SigRetry=="), session.Text("Because of X.")),
	}
	msgs := anthropic.Messages(in, nil)
	check(t, in, anthropic.Request{Messages: msgs})
	expectTypes(t, msgs, "user:text", "assistant:thinking,text")
	if msgs[1].Content[1].Text != "Because of X." {
		t.Errorf("got %+v", msgs[1].Content)
	}
	// Calls of an earlier reply still open when a failed reply comes are
	// answered (as Session.Messages and pi do) before it is skipped.
	in = []*session.Message{
		session.UserText("Go."),
		own(session.ToolCall("toolu_A", "ls", nil)),
		own(session.ToolCall("toolu_B", "ls", nil)).WithStopReason(session.StopError),
		session.ToolResult("toolu_B", "ls", "result of the failed call"),
		session.UserText("Again."),
	}
	msgs = anthropic.Messages(in, nil)
	check(t, in, anthropic.Request{Messages: msgs})
	expectTypes(t, msgs, "user:text", "assistant:tool_use", "user:tool_result,text")
	if r := msgs[2].Content[0]; r.ToolUseID != "toolu_A" || !r.IsError {
		t.Errorf("result %+v, want an error result for toolu_A", r)
	}
}

// Item 8: a result that answers no call awaiting one is never sent.
func TestOrphanResultsDropped(t *testing.T) {
	in := []*session.Message{
		session.UserText("Go."),
		own(session.ToolCall("toolu_A", "ls", nil)),
		session.ToolResult("toolu_A", "ls", "first"),
		session.ToolResult("toolu_A", "ls", "answered twice"),
		session.ToolResult("toolu_X", "ls", "no such call"),
		own(session.Text("Done.")),
		session.ToolResult("toolu_A", "ls", "after the turn moved on"),
	}
	msgs := anthropic.Messages(in, nil)
	check(t, in, anthropic.Request{Messages: msgs})
	expectTypes(t, msgs, "user:text", "assistant:tool_use", "user:tool_result", "assistant:text")
}

// Item 8: no block ahead of a thinking block in an assistant message,
// whether the blocks come from one reply or from replies merged.
func TestThinkingFirst(t *testing.T) {
	redacted := session.Thinking("", "Redacted==")
	redacted.Redacted = true
	in := []*session.Message{
		session.UserText("Go."),
		own(session.Text("Part one.")).WithStopReason(session.StopLength),
		own(session.Thinking("A", "SigA=="), session.Text("Part two."), redacted,
			session.ToolCall("toolu_1", "ls", nil), session.Thinking("B", "SigB=="), session.Text("Part three.")),
		session.ToolResult("toolu_1", "ls", "x"),
	}
	msgs := anthropic.Messages(in, nil)
	check(t, in, anthropic.Request{Messages: msgs})
	expectTypes(t, msgs, "user:text", "assistant:thinking,redacted_thinking,thinking,text,text,tool_use,text", "user:tool_result")
	var order []string
	for _, b := range msgs[1].Content {
		order = append(order, b.Thinking+b.Data+b.Text+b.ID)
	}
	want := []string{"A", "Redacted==", "B", "Part one.", "Part two.", "toolu_1", "Part three."}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("order %q, want %q (thinking first, each kind in its order)", order, want)
	}
}

// Item 9: thinking that nothing of the reply follows is left out; a reply
// left with nothing is left out, and the messages around it still
// alternate.
func TestThinkingNeverLast(t *testing.T) {
	redacted := session.Thinking("", "Redacted==")
	redacted.Redacted = true
	in := []*session.Message{
		session.UserText("One."),
		own(session.Thinking("T1", "Sig1=="), session.Text(" \n")),
		session.UserText("Two."),
		own(session.Text("Answer."), session.Thinking("T2", "Sig2=="), redacted),
		session.UserText("Three."),
		own(session.Thinking("T3", "Sig3==")).WithStopReason(session.StopLength),
	}
	msgs := anthropic.Messages(in, &anthropic.Options{CacheLast: true})
	check(t, in, anthropic.Request{Messages: msgs})
	expectTypes(t, msgs, "user:text,text", "assistant:text", "user:text")
	if msgs[2].Content[0].CacheControl == nil {
		t.Error("CacheLast did not mark the last block")
	}
	// Foreign thinking sent as text is text: it may end a message.
	in = []*session.Message{session.UserText("Q"), session.Assistant(session.Text("A."), session.Thinking("T", "")), session.UserText("Q2")}
	msgs = anthropic.Messages(in, &anthropic.Options{ThinkingAsText: true})
	check(t, in, anthropic.Request{Messages: msgs})
	expectTypes(t, msgs, "user:text", "assistant:text,text", "user:text")
}

// Item 10: system messages go to the request's system prompt, after
// Options.System, in order; Messages leaves them out without breaking a
// tool call's pairing.
func TestSystemMessages(t *testing.T) {
	in := []*session.Message{
		convtest.System("First rule."),
		session.UserText("Go."),
		own(session.ToolCall("toolu_1", "ls", nil)),
		convtest.System("Second rule.", " ", "Third rule."),
		session.ToolResult("toolu_1", "ls", "x"),
		{Role: convtest.RoleSystem, Content: []session.Block{session.ImageBase64("image/png", convtest.PNG)}},
		own(session.Text("Done.")),
	}
	opts := &anthropic.Options{System: "Base prompt."}
	msgs := anthropic.Messages(in, opts)
	sys := anthropic.System(in, opts)
	check(t, in, anthropic.Request{System: sys, Messages: msgs})
	expectTypes(t, msgs, "user:text", "assistant:tool_use", "user:tool_result", "assistant:text")
	want := []anthropic.Content{anthropic.Text("Base prompt."), anthropic.Text("First rule."), anthropic.Text("Second rule."), anthropic.Text("Third rule.")}
	if !reflect.DeepEqual(sys, want) {
		t.Errorf("System = %+v, want %+v", sys, want)
	}
	if got := anthropic.System(nil, nil); got != nil {
		t.Errorf("System of nothing = %+v, want nil", got)
	}
	if got := anthropic.System(nil, &anthropic.Options{System: "Only this."}); !reflect.DeepEqual(got, []anthropic.Content{anthropic.Text("Only this.")}) {
		t.Errorf("System = %+v", got)
	}
}
