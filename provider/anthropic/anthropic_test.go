package anthropic_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
	"github.com/agentsession/session/provider/anthropic"
	"github.com/agentsession/session/provider/internal/convtest"
)

// request is the request for in, converted to msgs, with the system
// prompt of the golden files followed by in's system messages.
func request(in []*session.Message, msgs []anthropic.Message) anthropic.Request {
	return anthropic.Request{
		Model:     convtest.Model,
		MaxTokens: 1024,
		System:    anthropic.System(in, &anthropic.Options{System: "You are a careful coding agent."}),
		Messages:  msgs,
	}
}

// TestGolden converts each shared conversation and compares the request
// with its golden file. The files were checked by hand against the
// Messages API reference (content block shapes, tool_use/tool_result
// pairing, thinking and redacted_thinking, base64 image sources).
func TestGolden(t *testing.T) {
	for _, c := range convtest.Cases(t) {
		t.Run(c.Name, func(t *testing.T) {
			msgs := anthropic.Messages(c.Msgs, &anthropic.Options{Model: convtest.Model})
			req := request(c.Msgs, msgs)
			check(t, c.Msgs, req)
			convtest.Golden(t, c.Name, req)
			checkJSON(t, req)
		})
	}
	cases := map[string][]*session.Message{}
	for _, c := range convtest.Cases(t) {
		cases[c.Name] = c.Msgs
	}
	variants := []struct {
		name string
		msgs []*session.Message
		opts *anthropic.Options
		edit func(*anthropic.Request)
	}{
		{"thinking_as_text", cases["thinking"], &anthropic.Options{Model: convtest.Model, ThinkingAsText: true}, nil},
		// No model in the options: every Claude model's signed thinking is kept.
		{"thinking_any_model", cases["thinking"], nil, nil},
		{"full_request", cases["full"], &anthropic.Options{Model: convtest.Model, CacheLast: true}, func(r *anthropic.Request) {
			r.MaxTokens = 16000
			r.Thinking = &anthropic.Thinking{Type: "enabled", BudgetTokens: 8000}
			r.System[0].CacheControl = anthropic.Ephemeral
			r.Tools = []anthropic.Tool{{
				Name: "read", Description: "Read a file.",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
			}}
			r.ToolChoice = &anthropic.ToolChoice{Type: "auto"}
		}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			req := request(v.msgs, anthropic.Messages(v.msgs, v.opts))
			if v.edit != nil {
				v.edit(&req)
			}
			check(t, v.msgs, req)
			convtest.Golden(t, v.name, req)
			checkJSON(t, req)
		})
	}
}

// TestConvertCorpus converts the context of every compat corpus session
// (real pi sessions among them) and of a long generated session, and
// checks what the API requires of every request.
func TestConvertCorpus(t *testing.T) {
	cases := convtest.Corpus(t)
	if len(cases) == 0 {
		t.Skip("compat corpus not found beside the checkout")
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			check(t, c.Msgs, request(c.Msgs, anthropic.Messages(c.Msgs, nil)))
			check(t, c.Msgs, request(c.Msgs, anthropic.Messages(c.Msgs, &anthropic.Options{Model: "claude-opus-4-5", ThinkingAsText: true, CacheLast: true})))
		})
	}
	t.Run("workload", func(t *testing.T) {
		msgs := workload.Messages(0, 200)
		check(t, msgs, request(msgs, anthropic.Messages(msgs, nil)))
	})
}

func TestAppendMessagesReuses(t *testing.T) {
	c := convtest.Cases(t)[0]
	buf := anthropic.Messages(c.Msgs, nil)
	again := anthropic.AppendMessages(buf[:0], c.Msgs, nil)
	if &again[0] != &buf[0] {
		t.Error("AppendMessages did not reuse dst")
	}
	// Messages already in dst are never merged with the new ones.
	two := anthropic.AppendMessages(anthropic.Messages(c.Msgs, nil), c.Msgs, nil)
	if len(two) != 2*len(buf) {
		t.Errorf("appending a conversation to itself gave %d messages, want %d", len(two), 2*len(buf))
	}
}

var toolIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// check asserts the rules of the Messages API on req, converted from in:
// roles alternate, no block or message is empty, each tool_use is
// answered by a tool_result in the next message (results first in it), no
// result answers a call that is not in the message before, ids have the
// allowed form and are unique, thinking carries a signature, thinking
// blocks come first in an assistant message and never last, the system
// prompt has the text of every system message of in, and the whole
// marshals.
func check(t *testing.T, in []*session.Message, req anthropic.Request) {
	t.Helper()
	msgs := req.Messages
	var prompts []string
	for k, b := range req.System {
		if b.Type != "text" || strings.TrimSpace(b.Text) == "" {
			t.Fatalf("system block %d: %+v, want non-blank text", k, b)
		}
		prompts = append(prompts, b.Text)
	}
	convtest.CheckSystem(t, in, prompts)
	ids := map[string]bool{} // tool_use ids, unique in a request
	for i, m := range msgs {
		if m.Role != "user" && m.Role != "assistant" {
			t.Fatalf("message %d: role %q", i, m.Role)
		}
		if i > 0 && msgs[i-1].Role == m.Role {
			t.Fatalf("messages %d and %d are both %s", i-1, i, m.Role)
		}
		if len(m.Content) == 0 {
			t.Fatalf("message %d has no content", i)
		}
		var calls, results []string
		seenOther := false
		for k, b := range m.Content {
			switch b.Type {
			case "text":
				if strings.TrimSpace(b.Text) == "" {
					t.Fatalf("message %d block %d: blank text", i, k)
				}
				seenOther = true
			case "image":
				if b.Source == nil || b.Source.Data == "" || b.Source.MediaType == "" {
					t.Fatalf("message %d block %d: image without source", i, k)
				}
				seenOther = true
			case "document":
				if m.Role != "user" || b.Document == nil || b.Document.Data == "" && b.Document.URL == "" && b.Document.FileID == "" {
					t.Fatalf("message %d block %d: document without source", i, k)
				}
				seenOther = true
			case "tool_use":
				if m.Role != "assistant" || !toolIDPattern.MatchString(b.ID) || !json.Valid(b.Input) || b.Input[0] != '{' {
					t.Fatalf("message %d block %d: bad tool_use %+v", i, k, b)
				}
				if ids[b.ID] {
					t.Fatalf("message %d block %d: tool_use id %s used before", i, k, b.ID)
				}
				ids[b.ID] = true
				calls = append(calls, b.ID)
			case "tool_result":
				if m.Role != "user" || !toolIDPattern.MatchString(b.ToolUseID) {
					t.Fatalf("message %d block %d: bad tool_result %+v", i, k, b)
				}
				if seenOther {
					t.Fatalf("message %d block %d: tool_result after other content", i, k)
				}
				results = append(results, b.ToolUseID)
			case "thinking", "redacted_thinking":
				if m.Role != "assistant" || b.Signature == "" && b.Data == "" {
					t.Fatalf("message %d block %d: thinking without a signature", i, k)
				}
				// The API: "If an assistant message contains any thinking
				// blocks, the first block must be thinking or
				// redacted_thinking."
				if seenOther || len(calls) > 0 {
					t.Fatalf("message %d block %d: %s after other content", i, k, b.Type)
				}
				// "The final block in an assistant message cannot be
				// `thinking`."
				if k == len(m.Content)-1 {
					t.Fatalf("message %d ends with a %s block", i, b.Type)
				}
			default:
				t.Fatalf("message %d block %d: type %q", i, k, b.Type)
			}
		}
		if len(results) > 0 {
			var prev []string
			if i > 0 {
				for _, b := range msgs[i-1].Content {
					if b.Type == "tool_use" {
						prev = append(prev, b.ID)
					}
				}
			}
			slices.Sort(prev)
			slices.Sort(results)
			if !slices.Equal(prev, results) {
				t.Fatalf("message %d answers %v, the message before calls %v", i, results, prev)
			}
		}
		if len(calls) > 0 && i+1 < len(msgs) {
			n := 0
			for _, b := range msgs[i+1].Content {
				if b.Type == "tool_result" {
					n++
				}
			}
			if n != len(calls) {
				t.Fatalf("message %d calls %v, the next message has %d results", i, calls, n)
			}
		}
	}
	if _, err := json.Marshal(msgs); err != nil {
		t.Fatal(err)
	}
}

// The content kinds beyond pi's go to the request as the API takes them:
// documents by source (base64, text, URL, file) with their title,
// context and citations setting, in user messages and tool results;
// cited text with its citations; redacted thinking in pi's form and
// oh-my-pi's. Audio and refusals, which the API has no block for, are
// left out.
func TestContentKinds(t *testing.T) {
	var msgs []*session.Message
	for _, c := range convtest.Cases(t) {
		if c.Name == "documents" {
			msgs = c.Msgs
		}
	}
	out := anthropic.Messages(msgs, &anthropic.Options{Model: convtest.Model})
	want := []string{
		`{"role":"user","content":[{"type":"text","text":"Compare the spec with the notes."},` +
			`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQK"},"title":"Spec","context":"Version 2","citations":{"enabled":true}},` +
			`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"The parser must accept nested lists."},"title":"Notes"},` +
			`{"type":"document","source":{"type":"url","url":"https://example.com/rfc.pdf"}},` +
			`{"type":"document","source":{"type":"file","file_id":"file_011CNha8iCJcU1wXNR6q4V8w"}}]}`,
		`{"role":"assistant","content":[{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"},{"type":"redacted_thinking","data":"oh-my-pi's redacted thinking"},` +
			`{"type":"text","text":"The spec requires nested lists.","citations":[{"type":"page_location","cited_text":"Nested lists are required.","document_index":0,"document_title":"Spec","start_page_number":1,"end_page_number":2}]},` +
			`{"type":"tool_use","id":"toolu_03","name":"fetch","input":{"url":"https://example.com/b.pdf"}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_03","content":[{"type":"text","text":"fetched"},` +
			`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjcK"}}]}]}`,
		`{"role":"assistant","content":[{"type":"text","text":"Part of it, then."}]}`,
		`{"role":"user","content":[{"type":"text","text":"Thanks."}]}`,
	}
	if len(out) != len(want) {
		t.Fatalf("%d messages, want %d", len(out), len(want))
	}
	for i := range want {
		got, err := out[i].MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want[i] {
			t.Errorf("message %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
}
