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

var (
	stateless = false
	// responsesReq is the request of the golden files: stateless, with
	// the reasoning items' encrypted content asked for.
	responsesReq = func(items []openai.InputItem) openai.ResponsesRequest {
		return openai.ResponsesRequest{Model: "gpt-5", Input: items, Store: &stateless, Include: []string{openai.IncludeReasoning}}
	}
)

// TestResponsesGolden converts each shared conversation to Responses
// input items and compares the request with its golden file in
// testdata/responses. The files were checked by hand against the
// Responses API reference (message items with input_text, input_image
// and, for the assistant, output_text parts; function_call with a
// string of arguments; function_call_output by call_id, its output text
// or parts; reasoning items with summary and encrypted_content).
func TestResponsesGolden(t *testing.T) {
	cases := map[string][]*session.Message{}
	for _, c := range convtest.Cases(t) {
		cases[c.Name] = c.Msgs
		t.Run(c.Name, func(t *testing.T) {
			items := openai.Input(c.Msgs, &openai.ResponsesOptions{System: system, Model: "gpt-5"})
			checkResponses(t, c.Msgs, items)
			req := responsesReq(items)
			convtest.Golden(t, "responses/"+c.Name, req)
			checkResponsesJSON(t, req)
		})
	}
	variants := []struct {
		name string
		msgs []*session.Message
		opts *openai.ResponsesOptions
		edit func(*openai.ResponsesRequest)
	}{
		// Reasoning of another API or model as text.
		{"thinking_as_text", cases["thinking"], &openai.ResponsesOptions{Model: "gpt-5", ThinkingAsText: true}, nil},
		{"system_message_developer", cases["system_message"], &openai.ResponsesOptions{System: system, SystemRole: "developer"}, nil},
		{"full_request", cases["full"], &openai.ResponsesOptions{SystemRole: "developer"}, func(r *openai.ResponsesRequest) {
			strict := true
			r.Instructions = system
			r.Tools = []openai.ResponsesTool{{
				Type: "function", Name: "read", Description: "Read a file.", Strict: &strict,
				Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`),
			}}
			r.ToolChoice = "auto"
			r.MaxOutputTokens = 16000
			r.Reasoning = &openai.ReasoningConfig{Effort: "medium", Summary: "auto"}
			r.Stream = true
			r.PromptCacheKey = "session-0192"
		}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			items := openai.Input(v.msgs, v.opts)
			checkResponses(t, v.msgs, items)
			req := responsesReq(items)
			if v.edit != nil {
				v.edit(&req)
			}
			convtest.Golden(t, "responses/"+v.name, req)
			checkResponsesJSON(t, req)
		})
	}
}

// TestResponsesConvertCorpus converts the context of every compat corpus
// session and of a long generated session, and checks what the API
// requires of every request.
func TestResponsesConvertCorpus(t *testing.T) {
	cases := convtest.Corpus(t)
	cases = append(cases, convtest.Case{Name: "workload", Msgs: workload.Messages(0, 200)})
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			for _, o := range []*openai.ResponsesOptions{nil, {System: system, ThinkingAsText: true}, {SystemRole: "developer", Model: "gpt-5"}} {
				items := openai.Input(c.Msgs, o)
				checkResponses(t, c.Msgs, items)
				checkResponsesJSON(t, responsesReq(items))
			}
		})
	}
}

// checkResponsesJSON checks req's AppendJSON and MarshalJSON against
// encoding/json (see convtest.CheckAppendJSON).
func checkResponsesJSON(t testing.TB, req openai.ResponsesRequest) {
	t.Helper()
	convtest.CheckAppendJSON(t, req.AppendJSON, req, openai.ReferenceResponses(req))
}

var callIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// checkResponses asserts the rules of the Responses API on items,
// converted from in: known item types and roles; no empty message or
// part; input parts in user and system messages, output_text in
// assistant ones; images as data: URLs; every function_call answered by
// a function_call_output before the next message, outputs only for calls
// awaiting one; call ids of the allowed form, unique; arguments that are
// JSON objects; reasoning items with encrypted content, each followed by
// an item of its reply (never last); no item ids; the text of every
// system message of in in the system (or developer) messages, in order;
// and the whole marshals.
func checkResponses(t testing.TB, in []*session.Message, items []openai.InputItem) {
	t.Helper()
	ids := map[string]bool{}
	var open, prompts []string
	for i, it := range items {
		if it.ID != "" {
			t.Fatalf("item %d: id %q sent", i, it.ID)
		}
		afterOutput := i > 0 && items[i-1].Type == "function_call_output"
		switch it.Type {
		case "message":
			if len(open) > 0 {
				t.Fatalf("item %d: a message before the outputs of calls %v", i, open)
			}
			if len(it.Content) == 0 {
				t.Fatalf("item %d: empty message", i)
			}
			for _, p := range it.Content {
				checkPart(t, i, p, it.Role == "assistant")
			}
			switch it.Role {
			case "system", "developer":
				if len(it.Content) != 1 || it.Content[0].Type != "input_text" || strings.TrimSpace(it.Content[0].Text) == "" {
					t.Fatalf("item %d: system message %+v", i, it.Content)
				}
				prompts = append(prompts, it.Content[0].Text)
			case "user", "assistant":
			default:
				t.Fatalf("item %d: role %q", i, it.Role)
			}
		case "function_call":
			var args map[string]any
			if !callIDPattern.MatchString(it.CallID) || it.Name == "" || json.Unmarshal([]byte(it.Arguments), &args) != nil {
				t.Fatalf("item %d: bad function call %+v", i, it)
			}
			if ids[it.CallID] {
				t.Fatalf("item %d: call_id %s used before", i, it.CallID)
			}
			if len(open) > 0 && afterOutput {
				t.Fatalf("item %d: a new reply's call before the outputs of %v", i, open)
			}
			ids[it.CallID] = true
			open = append(open, it.CallID)
		case "function_call_output":
			k := slices.Index(open, it.CallID)
			if k < 0 {
				t.Fatalf("item %d: output %q answers no call awaiting one (open: %v)", i, it.CallID, open)
			}
			open = slices.Delete(open, k, k+1)
			if it.OutputParts != nil {
				if len(it.OutputParts) == 0 || it.Output != "" {
					t.Fatalf("item %d: output parts %+v, output %q", i, it.OutputParts, it.Output)
				}
				for _, p := range it.OutputParts {
					checkPart(t, i, p, false)
				}
			}
		case "reasoning":
			if it.EncryptedContent == "" || it.Summary == nil {
				t.Fatalf("item %d: reasoning without encrypted content or summary: %+v", i, it)
			}
			if len(open) > 0 && afterOutput {
				t.Fatalf("item %d: a new reply's reasoning before the outputs of %v", i, open)
			}
			if i+1 == len(items) {
				t.Fatalf("item %d: the request ends with reasoning", i)
			}
			switch next := items[i+1]; {
			case next.Type == "reasoning", next.Type == "function_call", next.Type == "message" && next.Role == "assistant":
			default:
				t.Fatalf("item %d: reasoning followed by %s %s, not by its reply", i, next.Type, next.Role)
			}
		default:
			t.Fatalf("item %d: type %q", i, it.Type)
		}
	}
	convtest.CheckSystem(t, in, prompts)
	if _, err := json.Marshal(items); err != nil {
		t.Fatal(err)
	}
}

func checkPart(t testing.TB, i int, p openai.InputContent, assistant bool) {
	t.Helper()
	switch {
	case assistant && p.Type != "output_text" && p.Type != "refusal", !assistant && (p.Type == "output_text" || p.Type == "refusal"):
		t.Fatalf("item %d: part of type %s in a message of that role", i, p.Type)
	case p.Type == "refusal":
		if p.Refusal == "" {
			t.Fatalf("item %d: empty refusal", i)
		}
	case p.Type == "input_file":
		if n := btoi(p.FileID != "") + btoi(p.FileData != "") + btoi(p.FileURL != ""); n != 1 || p.FileData != "" && !strings.Contains(p.FileData, ";base64,") {
			t.Fatalf("item %d: file %+v", i, p)
		}
	case p.Type == "output_text" || p.Type == "input_text":
		if p.Text == "" {
			t.Fatalf("item %d: empty text part", i)
		}
	case p.Type == "input_image":
		if !strings.HasPrefix(p.ImageURL, "data:image/") || !strings.Contains(p.ImageURL, ";base64,") || p.Detail != "auto" {
			t.Fatalf("item %d: image %.40q, detail %q", i, p.ImageURL, p.Detail)
		}
	default:
		t.Fatalf("item %d: part type %q", i, p.Type)
	}
}

// The content kinds beyond pi's go to a Responses request as the API
// takes them: documents as input_file (file_data, file_id or file_url; a
// text document as input_text), in user messages and function call
// outputs; a refusal as a refusal part of the assistant message. Audio,
// which Responses input does not take, is left out.
func TestResponsesContentKinds(t *testing.T) {
	checkMarshalled(t, openai.Input(documentsCase(t), nil), []string{
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"Compare the spec with the notes."},` +
			`{"type":"input_file","file_data":"data:application/pdf;base64,JVBERi0xLjQK","filename":"spec.pdf"},` +
			`{"type":"input_text","text":"The parser must accept nested lists."},{"type":"input_file","file_url":"https://example.com/rfc.pdf"},` +
			`{"type":"input_file","file_id":"file_011CNha8iCJcU1wXNR6q4V8w"}]}`,
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"The spec requires nested lists."}]}`,
		`{"type":"function_call","call_id":"toolu_03","name":"fetch","arguments":"{\"url\":\"https://example.com/b.pdf\"}"}`,
		`{"type":"function_call_output","call_id":"toolu_03","output":[{"type":"input_text","text":"fetched"},{"type":"input_file","file_data":"data:application/pdf;base64,JVBERi0xLjcK","filename":"b.pdf"}]}`,
		`{"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"I can't open that file."},{"type":"output_text","text":"Part of it, then."}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"Thanks."}]}`,
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
