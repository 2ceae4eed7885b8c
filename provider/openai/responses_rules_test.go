package openai_test

import (
	"reflect"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/internal/convtest"
	"github.com/agentsession/session/provider/openai"
)

// itemShape lists each item: "role:text|text" for messages (images as
// [image]), "call:call_id" for calls, "out:call_id:output" for outputs
// (parts as for messages), "rs:encrypted_content" for reasoning.
func itemShape(items []openai.InputItem) []string {
	parts := func(cs []openai.InputContent) string {
		var s []string
		for _, c := range cs {
			if c.Type == "input_image" {
				s = append(s, "[image]")
			} else {
				s = append(s, c.Text)
			}
		}
		return strings.Join(s, "|")
	}
	var out []string
	for _, it := range items {
		switch it.Type {
		case "message":
			out = append(out, it.Role+":"+parts(it.Content))
		case "function_call":
			out = append(out, "call:"+it.CallID)
		case "function_call_output":
			if it.OutputParts != nil {
				out = append(out, "out:"+it.CallID+":"+parts(it.OutputParts))
			} else {
				out = append(out, "out:"+it.CallID+":"+it.Output)
			}
		case "reasoning":
			out = append(out, "rs:"+it.EncryptedContent)
		}
	}
	return out
}

func expectItems(t *testing.T, in []*session.Message, opts *openai.ResponsesOptions, want ...string) {
	t.Helper()
	items := openai.Input(in, opts)
	checkResponses(t, in, items)
	if got := itemShape(items); !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// reasoning returns a thinking block carrying a reasoning item, as
// MessageFromResponses saves one.
func reasoning(summary, encrypted string) session.Block {
	sig := `{"id":"rs_x","type":"reasoning","summary":[{"type":"summary_text","text":"` + summary + `"}]`
	if encrypted != "" {
		sig += `,"encrypted_content":"` + encrypted + `"`
	}
	return session.Thinking(summary, sig+"}")
}

func responses(blocks ...session.Block) *session.Message {
	return session.Assistant(blocks...).WithModel(openai.ResponsesAPI, "openai", "gpt-5")
}

// An errored or aborted reply is not sent, nor its reasoning, nor the
// results of its calls; the retry may reuse its call ids.
func TestResponsesIncompleteRepliesSkipped(t *testing.T) {
	for _, stop := range []string{session.StopError, session.StopAborted} {
		t.Run(stop, func(t *testing.T) {
			in := []*session.Message{
				session.UserText("Run it."),
				responses(reasoning("Hmm", "encFailed"), session.Text("Running"),
					session.ToolCall("call_1|fc_1", "bash", rawArgs(`{"command":"make"}`))).WithStopReason(stop),
				session.ToolResult("call_1|fc_1", "bash", "result of the failed turn"),
				responses(reasoning("Retry", "encRetry"), session.ToolCall("call_1|fc_2", "bash", rawArgs(`{"command":"make"}`))),
				session.ToolResult("call_1|fc_2", "bash", "ok"),
				responses(session.Text("Built.")),
			}
			expectItems(t, in, nil, "user:Run it.", "rs:encRetry", "call:call_1", "out:call_1:ok", "assistant:Built.")
		})
	}
}

// A result that answers no call awaiting one is never sent; calls left
// open when the host moved on get an error output.
func TestResponsesOrphanAndPendingResults(t *testing.T) {
	in := []*session.Message{
		session.UserText("Go."),
		responses(session.ToolCall("call_A", "ls", nil)),
		session.ToolResult("call_A", "ls", "first"),
		session.ToolResult("call_A", "ls", "answered twice"),
		session.ToolResult("call_X", "ls", "no such call"),
		responses(session.ToolCall("call_B", "ls", nil), session.ToolCall("call_C", "ls", nil)),
		session.ToolResult("call_C", "ls", "c"),
		session.UserText("Stop."),
	}
	expectItems(t, in, nil, "user:Go.", "call:call_A", "out:call_A:first", "call:call_B", "call:call_C",
		"out:call_C:c", "out:call_B:Error: "+session.SyntheticResultText, "user:Stop.")
}

// Reasoning items go back for replies of the Responses API and the
// request's model, with encrypted content, where something of the reply
// follows them; other thinking is dropped or, with ThinkingAsText, sent
// as text.
func TestResponsesReasoning(t *testing.T) {
	in := []*session.Message{
		session.UserText("One."),
		responses(reasoning("R1", "enc1"), session.Text("A1."), reasoning("R2", "enc2"), session.ToolCall("call_1", "ls", nil), reasoning("Last", "encLast")),
		session.ToolResult("call_1", "ls", "x"),
		responses(reasoning("Stored", ""), session.Text("A2.")),
		session.UserText("Two."),
		responses(reasoning("Cut", "encCut"), session.Text(" \n")),
		session.UserText("Three."),
		session.Assistant(session.Thinking("Claude's", "SigA=="), session.Text("A3.")).WithModel("anthropic-messages", "anthropic", "claude-sonnet-4-5"),
		session.UserText("Four."),
	}
	expectItems(t, in, &openai.ResponsesOptions{Model: "gpt-5"},
		"user:One.", "rs:enc1", "assistant:A1.", "rs:enc2", "call:call_1", "out:call_1:x", "assistant:A2.",
		"user:Two.", "assistant: \n", "user:Three.", "assistant:A3.", "user:Four.")
	expectItems(t, in, &openai.ResponsesOptions{Model: "gpt-5-mini", ThinkingAsText: true},
		"user:One.", "assistant:<thinking>\nR1\n</thinking>|A1.|<thinking>\nR2\n</thinking>", "call:call_1", "out:call_1:x",
		"assistant:<thinking>\nStored\n</thinking>|A2.", "user:Two.", "assistant: \n", "user:Three.",
		"assistant:<thinking>\nClaude's\n</thinking>|A3.", "user:Four.")
}

// A system message is sent at its place, in the role of the system
// prompt; a blank one, or its images, are not.
func TestResponsesSystemMessages(t *testing.T) {
	in := []*session.Message{
		convtest.System("First rule."),
		session.UserText("Go."),
		convtest.System("Second rule.", "", "Third rule."),
		convtest.System(" \n"),
		{Role: convtest.RoleSystem, Content: []session.Block{session.ImageBase64("image/png", convtest.PNG)}},
	}
	expectItems(t, in, &openai.ResponsesOptions{System: "Base.", SystemRole: "developer"},
		"developer:Base.", "developer:First rule.", "user:Go.", "developer:Second rule.\nThird rule.")
}

// A tool result's images go in its output, with its text; an unresolved
// image is sent as its placeholder text; user images are input_image
// parts.
func TestResponsesImages(t *testing.T) {
	unresolved := session.ImageBase64("image/png", session.BlobPrefix+"sha256:00")
	in := []*session.Message{
		session.User(session.Text("Look:"), session.ImageBase64("image/png", convtest.PNG), unresolved),
		responses(session.ToolCall("call_1", "shot", nil), session.ToolCall("call_2", "shot", nil)),
		{Role: session.RoleToolResult, ToolCallID: "call_1", ToolName: "shot", IsError: true,
			Content: []session.Block{session.Text("partial"), session.ImageBase64("image/png", convtest.PNG)}},
		{Role: session.RoleToolResult, ToolCallID: "call_2", ToolName: "shot", Content: []session.Block{unresolved}},
	}
	expectItems(t, in, nil, "user:Look:|[image]|"+session.UnresolvedImageText, "call:call_1", "call:call_2",
		"out:call_1:Error: partial|[image]", "out:call_2:"+session.UnresolvedImageText)
}

// Call ids: pi's "call_id|item_id" sends its call_id; ids too long, with
// other bytes or used before are rewritten, the same way in the call and
// its output.
func TestResponsesCallIDs(t *testing.T) {
	long := "call_" + strings.Repeat("x", 70)
	in := []*session.Message{
		session.UserText("Go."),
		responses(session.ToolCall("call_a|fc_a", "ls", nil), session.ToolCall(long, "ls", nil), session.ToolCall("|fc_only", "ls", nil)),
		session.ToolResult("call_a|fc_a", "ls", "a"), session.ToolResult(long, "ls", "b"), session.ToolResult("|fc_only", "ls", "c"),
		responses(session.ToolCall("call_a|fc_b", "ls", nil)),
		session.ToolResult("call_a|fc_b", "ls", "again"),
	}
	items := openai.Input(in, nil)
	checkResponses(t, in, items)
	if items[1].CallID != "call_a" || items[2].CallID == long || items[3].CallID == "" || items[7].CallID == "call_a" ||
		items[4].CallID != items[1].CallID || items[5].CallID != items[2].CallID || items[8].CallID != items[7].CallID {
		t.Errorf("ids %q", itemShape(items))
	}
}
