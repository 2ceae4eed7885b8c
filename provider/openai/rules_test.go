package openai_test

import (
	"encoding/json"
	"reflect"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/internal/convtest"
	"github.com/agentsession/session/provider/openai"
)

func rawArgs(s string) json.RawMessage { return json.RawMessage(s) }

// shape lists each message as "role:content", tool calls as "+id", tool
// messages as "tool:id:content".
func shape(msgs []openai.Message) []string {
	var out []string
	for _, m := range msgs {
		s := m.Role + ":" + m.Content
		if m.Role == "tool" {
			s = "tool:" + m.ToolCallID + ":" + m.Content
		}
		for _, c := range m.ToolCalls {
			s += "+" + c.ID
		}
		if m.ReasoningContent != "" {
			s += "|" + m.ReasoningContent
		}
		out = append(out, s)
	}
	return out
}

func expectShape(t *testing.T, msgs []openai.Message, want ...string) {
	t.Helper()
	if got := shape(msgs); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// Item 8: an errored or aborted reply is not sent (as pi's own converter
// does), nor are the results of its calls.
func TestIncompleteRepliesSkipped(t *testing.T) {
	for _, stop := range []string{session.StopError, session.StopAborted} {
		t.Run(stop, func(t *testing.T) {
			in := []*session.Message{
				session.UserText("Run it."),
				session.Assistant(session.Thinking("Hmm", ""), session.Text("Running"),
					session.ToolCall("call_1", "bash", rawArgs(`{"command":"make"}`))).WithStopReason(stop),
				&session.Message{Role: session.RoleToolResult, ToolCallID: "call_1", ToolName: "bash",
					Content: []session.Block{session.Text("real result of the failed turn"), session.ImageBase64("image/png", convtest.PNG)}},
				session.Assistant(session.Text("Running make."), session.ToolCall("call_1", "bash", rawArgs(`{"command":"make"}`))),
				session.ToolResult("call_1", "bash", "ok"),
				session.AssistantText("Built."),
			}
			for _, mode := range []openai.ThinkingMode{openai.ThinkingDrop, openai.ThinkingText, openai.ThinkingReasoningContent} {
				msgs := openai.Messages(in, &openai.Options{Thinking: mode})
				check(t, in, msgs)
				expectShape(t, msgs, "user:Run it.", "assistant:Running make.+call_1", "tool:call_1:ok", "assistant:Built.")
			}
		})
	}
	// Calls of an earlier reply still open when a failed reply comes are
	// answered before it is skipped.
	in := []*session.Message{
		session.UserText("Go."),
		session.Assistant(session.ToolCall("call_A", "ls", nil)),
		session.Assistant(session.ToolCall("call_B", "ls", nil)).WithStopReason(session.StopError),
		session.ToolResult("call_B", "ls", "result of the failed call"),
		session.UserText("Again."),
	}
	msgs := openai.Messages(in, nil)
	check(t, in, msgs)
	expectShape(t, msgs, "user:Go.", "assistant:+call_A", "tool:call_A:Error: "+session.SyntheticResultText, "user:Again.")
}

// Item 8: a result that answers no call awaiting one is never sent, nor
// are its images.
func TestOrphanResultsDropped(t *testing.T) {
	in := []*session.Message{
		session.UserText("Go."),
		session.Assistant(session.ToolCall("call_A", "ls", nil)),
		session.ToolResult("call_A", "ls", "first"),
		session.ToolResult("call_A", "ls", "answered twice"),
		&session.Message{Role: session.RoleToolResult, ToolCallID: "call_X", ToolName: "shot",
			Content: []session.Block{session.ImageBase64("image/png", convtest.PNG)}},
		session.AssistantText("Done."),
		session.ToolResult("call_A", "ls", "after the turn moved on"),
	}
	msgs := openai.Messages(in, nil)
	check(t, in, msgs)
	expectShape(t, msgs, "user:Go.", "assistant:+call_A", "tool:call_A:first", "assistant:Done.")
}

// Item 9: thinking that nothing of the reply follows is never sent, in any
// mode, and a reply left with nothing else is left out.
func TestThinkingNeverLast(t *testing.T) {
	in := []*session.Message{
		session.UserText("One."),
		session.Assistant(session.Thinking("T1", "sig"), session.Text("")),
		session.UserText("Two."),
		session.Assistant(session.Thinking("T2", ""), session.Text("Answer."), session.Thinking("T3", "")),
		session.UserText("Three."),
		session.Assistant(session.Thinking("T4", ""), session.ToolCall("call_1", "ls", nil), session.Thinking("T5", "")),
		session.ToolResult("call_1", "ls", "x"),
	}
	for _, c := range []struct {
		mode openai.ThinkingMode
		want []string
	}{
		{openai.ThinkingDrop, []string{"user:One.", "user:Two.", "assistant:Answer.", "user:Three.", "assistant:+call_1", "tool:call_1:x"}},
		{openai.ThinkingText, []string{"user:One.", "user:Two.", "assistant:<thinking>\nT2\n</thinking>\nAnswer.", "user:Three.",
			"assistant:<thinking>\nT4\n</thinking>+call_1", "tool:call_1:x"}},
		{openai.ThinkingReasoningContent, []string{"user:One.", "user:Two.", "assistant:Answer.|T2", "user:Three.", "assistant:+call_1|T4", "tool:call_1:x"}},
	} {
		msgs := openai.Messages(in, &openai.Options{Thinking: c.mode})
		check(t, in, msgs)
		expectShape(t, msgs, c.want...)
	}
	// Blank text after thinking does not make it part of the reply; the
	// blank text itself is sent as it was before (the API takes it).
	in = []*session.Message{session.UserText("Q"), session.Assistant(session.Thinking("T", ""), session.Text(" \n")), session.UserText("Q2")}
	for _, mode := range []openai.ThinkingMode{openai.ThinkingDrop, openai.ThinkingText, openai.ThinkingReasoningContent} {
		msgs := openai.Messages(in, &openai.Options{Thinking: mode})
		check(t, in, msgs)
		expectShape(t, msgs, "user:Q", "assistant: \n", "user:Q2")
	}
}

// Item 10: a system message is sent as a system (or Options.SystemRole)
// message at its place, after Options.System.
func TestSystemMessages(t *testing.T) {
	in := []*session.Message{
		convtest.System("First rule."),
		session.UserText("Go."),
		session.AssistantText("Going."),
		convtest.System("Second rule.", "", "Third rule."),
		convtest.System(" \n"),
		session.UserText("Next."),
		{Role: convtest.RoleSystem, Content: []session.Block{session.ImageBase64("image/png", convtest.PNG)}},
	}
	msgs := openai.Messages(in, &openai.Options{System: "Base prompt."})
	check(t, in, msgs)
	expectShape(t, msgs, "system:Base prompt.", "system:First rule.", "user:Go.", "assistant:Going.",
		"system:Second rule.\nThird rule.", "user:Next.")
	msgs = openai.Messages(in, &openai.Options{SystemRole: "developer"})
	check(t, in, msgs)
	expectShape(t, msgs, "developer:First rule.", "user:Go.", "assistant:Going.", "developer:Second rule.\nThird rule.", "user:Next.")
	// Between a reply's calls and their results, the calls are answered
	// first: a system message may not split them.
	in = []*session.Message{
		session.UserText("Go."),
		session.Assistant(session.ToolCall("call_1", "ls", nil)),
		convtest.System("Be brief."),
		session.ToolResult("call_1", "ls", "late"),
	}
	msgs = openai.Messages(in, nil)
	check(t, in, msgs)
	expectShape(t, msgs, "user:Go.", "assistant:+call_1", "tool:call_1:Error: "+session.SyntheticResultText, "system:Be brief.")
}
