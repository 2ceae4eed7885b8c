package openai_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
	"github.com/agentsession/session/provider/internal/convtest"
	"github.com/agentsession/session/provider/openai"
)

const system = "You are a careful coding agent."

// TestGolden converts each shared conversation and compares the request
// with its golden file. The files were checked by hand against the Chat
// Completions API reference (message roles, content parts and data URLs,
// tool_calls with string arguments, tool messages by tool_call_id).
func TestGolden(t *testing.T) {
	cases := map[string][]*session.Message{}
	for _, c := range convtest.Cases(t) {
		cases[c.Name] = c.Msgs
		t.Run(c.Name, func(t *testing.T) {
			msgs := openai.Messages(c.Msgs, &openai.Options{System: system})
			check(t, c.Msgs, msgs)
			req := openai.Request{Model: "gpt-5", Messages: msgs}
			convtest.Golden(t, c.Name, req)
			checkJSON(t, req)
		})
	}
	variants := []struct {
		name string
		msgs []*session.Message
		opts *openai.Options
		edit func(*openai.Request)
	}{
		{"thinking_text", cases["thinking"], &openai.Options{Thinking: openai.ThinkingText}, nil},
		// reasoning_content is read back by some compatible servers, not by OpenAI.
		{"thinking_reasoning_content", cases["thinking"], &openai.Options{Thinking: openai.ThinkingReasoningContent},
			func(r *openai.Request) { r.Model = "deepseek-reasoner" }},
		// Thinking that ends a reply is not sent in any mode.
		{"thinking_last_text", cases["thinking_last"], &openai.Options{Thinking: openai.ThinkingText}, nil},
		{"thinking_last_reasoning_content", cases["thinking_last"], &openai.Options{Thinking: openai.ThinkingReasoningContent},
			func(r *openai.Request) { r.Model = "deepseek-reasoner" }},
		{"thinking_order_text", cases["thinking_order"], &openai.Options{Thinking: openai.ThinkingText}, nil},
		// System messages take the role of the system prompt.
		{"system_message_developer", cases["system_message"], &openai.Options{System: system, SystemRole: "developer"}, nil},
		{"full_request", cases["full"], &openai.Options{System: system, SystemRole: "developer"}, func(r *openai.Request) {
			r.Tools = []openai.Tool{{Type: "function", Function: openai.Function{
				Name: "read", Description: "Read a file.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
			}}}
			r.ToolChoice = "auto"
			r.MaxCompletionTokens = 16000
			r.ReasoningEffort = "medium"
			r.Stream = true
			r.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
		}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			msgs := openai.Messages(v.msgs, v.opts)
			check(t, v.msgs, msgs)
			req := openai.Request{Model: "gpt-5", Messages: msgs}
			if v.edit != nil {
				v.edit(&req)
			}
			convtest.Golden(t, v.name, req)
			checkJSON(t, req)
		})
	}
}

// TestConvertCorpus converts the context of every compat corpus session
// and of a long generated session, and checks what the API requires of
// every request.
func TestConvertCorpus(t *testing.T) {
	cases := convtest.Corpus(t)
	if len(cases) == 0 {
		t.Skip("compat corpus not found beside the checkout")
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			check(t, c.Msgs, openai.Messages(c.Msgs, nil))
			check(t, c.Msgs, openai.Messages(c.Msgs, &openai.Options{System: system, Thinking: openai.ThinkingReasoningContent}))
			check(t, c.Msgs, openai.Messages(c.Msgs, &openai.Options{System: system, SystemRole: "developer", Thinking: openai.ThinkingText}))
		})
	}
	t.Run("workload", func(t *testing.T) {
		msgs := workload.Messages(0, 200)
		check(t, msgs, openai.Messages(msgs, nil))
	})
}

func TestMessageJSON(t *testing.T) {
	for _, c := range []struct {
		name string
		msg  openai.Message
		want string
	}{
		{"tool calls only", openai.Message{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "c", Type: "function", Function: openai.FunctionCall{Name: "f", Arguments: "{}"}}}},
			`{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}`},
		{"empty tool output", openai.Message{Role: "tool", ToolCallID: "c"}, `{"role":"tool","content":"","tool_call_id":"c"}`},
		{"parts", openai.Message{Role: "user", Parts: []openai.Part{{Type: "text", Text: "<b>"}}}, `{"role":"user","content":[{"type":"text","text":"\u003cb\u003e"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := json.Marshal(c.msg)
			if err != nil || string(got) != c.want {
				t.Errorf("got %s, %v; want %s", got, err, c.want)
			}
		})
	}
}

var toolIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)

// check asserts the rules of the Chat Completions API on msgs, converted
// from in: known roles, every assistant's tool calls answered by the tool
// messages right after it, no tool message without its call, ids of the
// allowed form, arguments that are JSON objects, nothing empty, no
// assistant message that ends with thinking sent as text, the text of
// every system message of in in the system (or developer) messages, in
// order, and the whole marshals.
func check(t *testing.T, in []*session.Message, msgs []openai.Message) {
	t.Helper()
	ids := map[string]bool{} // tool call ids, unique in a request
	var prompts []string
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch m.Role {
		case "system", "developer":
			if strings.TrimSpace(m.Content) == "" || m.Parts != nil {
				t.Fatalf("message %d: empty system message", i)
			}
			prompts = append(prompts, m.Content)
		case "user":
			if m.Content == "" && len(m.Parts) == 0 {
				t.Fatalf("message %d: empty user message", i)
			}
			for _, p := range m.Parts {
				if p.Type == "text" && p.Text == "" || p.Type == "image_url" && (p.ImageURL == nil || p.ImageURL.URL == "") ||
					p.Type == "file" && (p.File == nil || p.File.FileID == "" && p.File.FileData == "") ||
					p.Type == "input_audio" && (p.InputAudio == nil || p.InputAudio.Data == "") {
					t.Fatalf("message %d: empty part %+v", i, p)
				}
			}
		case "assistant":
			if m.Content == "" && len(m.ToolCalls) == 0 {
				t.Fatalf("message %d: empty assistant message", i)
			}
			// Thinking sent as text (Options.Thinking ThinkingText wraps
			// it in tags) is never the end of a reply: text or tool
			// calls follow it.
			if strings.HasSuffix(strings.TrimRight(m.Content, " \t\r\n"), "</thinking>") && len(m.ToolCalls) == 0 {
				t.Fatalf("message %d: assistant message ends with thinking: %q", i, m.Content)
			}
			var open []string
			for _, c := range m.ToolCalls {
				var args map[string]any
				if !toolIDPattern.MatchString(c.ID) || c.Type != "function" || json.Unmarshal([]byte(c.Function.Arguments), &args) != nil {
					t.Fatalf("message %d: bad tool call %+v", i, c)
				}
				if ids[c.ID] {
					t.Fatalf("message %d: tool call id %s used before", i, c.ID)
				}
				ids[c.ID] = true
				open = append(open, c.ID)
			}
			j := i + 1
			for ; j < len(msgs) && msgs[j].Role == "tool"; j++ {
				k := slices.Index(open, msgs[j].ToolCallID)
				if k < 0 {
					t.Fatalf("message %d: result %q answers no call of message %d (open: %v)", j, msgs[j].ToolCallID, i, open)
				}
				open = slices.Delete(open, k, k+1)
			}
			if len(open) > 0 && j < len(msgs) {
				t.Fatalf("message %d: calls %v are not answered before message %d", i, open, j)
			}
			i = j - 1
		case "tool":
			t.Fatalf("message %d: tool message %q with no assistant call before it", i, m.ToolCallID)
		default:
			t.Fatalf("message %d: role %q", i, m.Role)
		}
	}
	convtest.CheckSystem(t, in, prompts)
	if _, err := json.Marshal(msgs); err != nil {
		t.Fatal(err)
	}
}

// A tool result without a tool name (other frameworks store none) is
// sent by its call id alone, and the note ahead of its images names no
// tool.
func TestToolResultWithoutName(t *testing.T) {
	res := &session.Message{Role: session.RoleToolResult, ToolCallID: "c1",
		Content: []session.Block{session.Text("shot"), session.Image("image/png", []byte{1})}}
	msgs := []*session.Message{session.UserText("q"), session.Assistant(session.ToolCall("c1", "screenshot", nil)), res}
	out := openai.Messages(msgs, nil)
	if len(out) != 4 || out[2].Role != "tool" || out[2].ToolCallID != "c1" || out[2].Name != "" {
		t.Fatalf("messages %+v", out)
	}
	if got := out[3].Parts[0].Text; got != "Images returned by tool call c1:" {
		t.Errorf("note %q", got)
	}
	if got := openai.Input(msgs, nil)[2]; got.Type != "function_call_output" || got.CallID != "c1" {
		t.Errorf("responses item %+v", got)
	}
}

// documentsCase is the shared conversation with the content kinds beyond
// pi's.
func documentsCase(t *testing.T) []*session.Message {
	for _, c := range convtest.Cases(t) {
		if c.Name == "documents" {
			return c.Msgs
		}
	}
	t.Fatal("no documents case")
	return nil
}

// The content kinds beyond pi's go to a Chat Completions request as the
// API takes them: documents as file parts (base64 as file_data, or a
// file_id; a text document or a URL as text), audio as input_audio, a
// refusal as the assistant message's refusal; a tool result's documents
// go to the next user message, as its images do. Redacted thinking is
// left out, as all thinking by default.
func TestContentKinds(t *testing.T) {
	out := openai.Messages(documentsCase(t), nil)
	checkMarshalled(t, out, []string{
		`{"role":"user","content":[{"type":"text","text":"Compare the spec with the notes."},` +
			`{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0xLjQK","filename":"spec.pdf"}},` +
			`{"type":"text","text":"The parser must accept nested lists."},{"type":"text","text":"https://example.com/rfc.pdf"},` +
			`{"type":"file","file":{"file_id":"file_011CNha8iCJcU1wXNR6q4V8w"}},{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}}]}`,
		`{"role":"assistant","content":"The spec requires nested lists.","tool_calls":[{"id":"toolu_03","type":"function","function":{"name":"fetch","arguments":"{\"url\":\"https://example.com/b.pdf\"}"}}]}`,
		`{"role":"tool","content":"fetched\n(1 file in the next user message)","tool_call_id":"toolu_03"}`,
		`{"role":"user","content":[{"type":"text","text":"Files returned by tool call toolu_03:"},{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0xLjcK","filename":"b.pdf"}}]}`,
		`{"role":"assistant","content":"Part of it, then.","refusal":"I can't open that file."}`,
		`{"role":"user","content":"Thanks."}`,
	})
}

// checkMarshalled fails t unless the JSON of each of got is want's.
func checkMarshalled[T json.Marshaler](t *testing.T, got []T, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d values, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		b, err := got[i].MarshalJSON()
		if err != nil || string(b) != want[i] {
			t.Errorf("value %d (%v):\n got %s\nwant %s", i, err, b, want[i])
		}
	}
}
