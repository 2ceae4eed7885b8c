package openai_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/internal/convtest"
	"github.com/agentsession/session/provider/openai"
)

// responsesOptions are the options each response converts with; the
// others convert with nil.
var responsesOptions = map[string]*openai.ResponseOptions{
	// The host asked for the alias: the dated id is kept as responseModel.
	"reasoning_tool_call": {Model: "gpt-5", Prices: &openai.Prices{Input: 1.25, Output: 10, CacheRead: 0.125}},
	"reasoning_text":      {Model: "gpt-5"},
	"parallel_calls":      {Model: "gpt-5"},
}

// readResponses decodes testdata/responses/response/name.json.
func readResponses(t testing.TB, name string) *openai.ResponsesResponse {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata/responses/response", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var resp openai.ResponsesResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatal(err)
	}
	return &resp
}

// TestResponsesResponseGolden converts each response of
// testdata/responses/response (shapes from the API reference and
// published captures) and compares the message, as the session writes
// it, with its golden file in testdata/responses/message; then it saves
// the message in a session and checks the next request (see
// responsesRoundTrip).
func TestResponsesResponseGolden(t *testing.T) {
	for _, name := range convtest.Files(t, "testdata/responses/response", ".json") {
		t.Run(name, func(t *testing.T) {
			msg, err := openai.MessageFromResponses(readResponses(t, name), responsesOptions[name])
			convtest.CheckReply(t, msg, err, openai.ResponsesAPI)
			errText := ""
			if err != nil {
				errText = err.Error()
			}
			convtest.Golden(t, "responses/message/"+name, convtest.Converted{Message: msg, Error: errText})
			responsesRoundTrip(t, msg, "gpt-5")
		})
	}
}

// responsesRoundTrip saves msg as the reply of a turn, with a result for
// each of its calls, and checks the request built from what the session
// then gives for model: a valid request that sends the reply back, its
// reasoning items (those with encrypted content) with their summary and
// encrypted content, its text and its calls by call_id, unless it
// failed.
func responsesRoundTrip(t *testing.T, msg *session.Message, model string) []openai.InputItem {
	t.Helper()
	msgs := convtest.Turn(t, msg)
	items := openai.Input(msgs, &openai.ResponsesOptions{System: system, Model: model})
	checkResponses(t, msgs, items)
	checkResponsesJSON(t, responsesReq(items))
	var got []string
	for _, it := range items[2:] { // after the system prompt and "Go on."
		switch it.Type {
		case "reasoning":
			got = append(got, "reasoning "+it.EncryptedContent)
		case "message":
			if it.Role == "assistant" {
				for _, p := range it.Content {
					got = append(got, "text "+p.Text)
				}
			}
		case "function_call":
			got = append(got, "call "+it.CallID+" "+it.Arguments)
		}
	}
	var want []string
	if msg.StopReason != session.StopError && msg.StopReason != session.StopAborted {
		end := 0 // reasoning that nothing follows is not sent
		for i, b := range msg.Content {
			if b.Type == session.BlockToolCall || b.Type == session.BlockText && b.Text != "" {
				end = i + 1
			}
		}
		for i, b := range msg.Content {
			switch b.Type {
			case session.BlockThinking:
				var item struct {
					Type             string `json:"type"`
					EncryptedContent string `json:"encrypted_content"`
				}
				if json.Unmarshal([]byte(b.ThinkingSignature), &item); item.Type != "reasoning" {
					t.Errorf("thinking signature %q is not a reasoning item", b.ThinkingSignature)
				}
				if item.EncryptedContent != "" && i < end {
					want = append(want, "reasoning "+item.EncryptedContent)
				}
			case session.BlockText:
				want = append(want, "text "+b.Text)
			case session.BlockToolCall:
				callID := b.ID[:len(b.ID)-len(b.ID[indexBar(b.ID):])]
				want = append(want, "call "+callID+" "+string(b.Arguments))
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("the request sends the reply as\n%q\nwant\n%q", got, want)
	}
	return items
}

func indexBar(id string) int {
	for i := range id {
		if id[i] == '|' {
			return i
		}
	}
	return len(id)
}

// The reasoning round trip: a response with reasoning and a call,
// converted, saved, its call answered, then the next request: the golden
// file shows the reasoning item going back with its encrypted content
// and summary, the call by its call_id, the output after it. For another
// model, the reasoning is not sent.
func TestResponsesReasoningRoundTrip(t *testing.T) {
	msg, err := openai.MessageFromResponses(readResponses(t, "reasoning_tool_call"), responsesOptions["reasoning_tool_call"])
	if err != nil {
		t.Fatal(err)
	}
	items := responsesRoundTrip(t, msg, "gpt-5")
	convtest.Golden(t, "responses/reasoning_round_trip", responsesReq(items))
	// The dated id the API reports is the same model.
	if got := openai.Input(convtest.Turn(t, msg), &openai.ResponsesOptions{Model: "gpt-5-2025-08-07"}); countType(got, "reasoning") != 1 {
		t.Errorf("the dated model's request has %d reasoning items, want 1", countType(got, "reasoning"))
	}
	for _, model := range []string{"gpt-5-mini", "o3"} {
		if got := openai.Input(convtest.Turn(t, msg), &openai.ResponsesOptions{Model: model}); countType(got, "reasoning") != 0 {
			t.Errorf("%s: another model's reasoning was sent", model)
		}
	}
	// The thinking block is what pi writes: the summary as text, the
	// item's JSON as the signature; the call's id pi's "call_id|id".
	b := msg.Content[0]
	if b.Thinking != "**Listing the files**\n\nThe user wants the files of the project; list the directory.\n\n**Choosing the tool**\n\nThe ls tool lists it." ||
		b.ThinkingSignature[0] != '{' || msg.Content[1].ID != "call_Ht3QvW6mPeYsa1sQ3n1eUqEy|fc_68b65c5082e48190a83636c52ee5de65" {
		t.Errorf("content %+v", msg.Content)
	}
}

func countType(items []openai.InputItem, typ string) int {
	n := 0
	for _, it := range items {
		if it.Type == typ {
			n++
		}
	}
	return n
}

func TestResponsesStatus(t *testing.T) {
	call := []openai.OutputItem{{Type: "function_call", CallID: "call_1", Name: "ls", Arguments: "{}"}}
	for _, c := range []struct {
		status, reason string
		output         []openai.OutputItem
		stop, message  string
		truncated      bool
	}{
		{"completed", "", nil, session.StopEnd, "", false},
		{"", "", nil, session.StopEnd, "", false},
		{"completed", "", call, session.StopToolUse, "", false},
		{"incomplete", "max_output_tokens", nil, session.StopLength, "", false},
		{"incomplete", "", call, session.StopLength, "", false},
		{"incomplete", "content_filter", nil, session.StopError, "incomplete: content_filter", false},
		{"failed", "", nil, session.StopError, "Unknown error (no error details in response)", false},
		{"cancelled", "", nil, session.StopError, "Provider status: cancelled", false},
		{"in_progress", "", nil, session.StopError, "openai: the response is in_progress, not complete", true},
		{"queued", "", nil, session.StopError, "openai: the response is queued, not complete", true},
	} {
		resp := &openai.ResponsesResponse{ID: "resp_1", Model: "gpt-5", Status: c.status, Output: c.output}
		if c.reason != "" {
			resp.IncompleteDetails = &openai.IncompleteDetails{Reason: c.reason}
		}
		msg, err := openai.MessageFromResponses(resp, nil)
		if msg.StopReason != c.stop || msg.ErrorMessage != c.message || errors.Is(err, openai.ErrTruncated) != c.truncated || (err != nil) != c.truncated {
			t.Errorf("%s %s: stop %q, message %q, error %v", c.status, c.reason, msg.StopReason, msg.ErrorMessage, err)
		}
	}
	if msg, err := openai.MessageFromResponses(nil, nil); msg != nil || err == nil {
		t.Errorf("nil response: %v, %v", msg, err)
	}
	// A reasoning item built in Go (no Raw) keeps its members as the
	// signature; a call without call_id is malformed.
	msg, err := openai.MessageFromResponses(&openai.ResponsesResponse{Status: "completed", Output: []openai.OutputItem{
		{Type: "reasoning", ID: "rs_1", EncryptedContent: "enc"},
		{Type: "function_call", ID: "fc_1", Name: "ls"},
	}}, nil)
	if !errors.Is(err, openai.ErrMalformed) || msg.Content[0].ThinkingSignature != `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"enc"}` {
		t.Errorf("%v %+v", err, msg.Content)
	}
	// A call without a name is malformed too (FuzzResponses found it):
	// the reply is a failed one, which the next request leaves out.
	msg, err = openai.MessageFromResponses(&openai.ResponsesResponse{Status: "completed", Output: []openai.OutputItem{
		{Type: "function_call", CallID: "call_1", Arguments: `{}`},
	}}, nil)
	if !errors.Is(err, openai.ErrMalformed) || msg.StopReason != session.StopError {
		t.Errorf("a call without a name: %v, stop %q", err, msg.StopReason)
	}
	if items := openai.Input([]*session.Message{session.UserText("q"), msg}, nil); len(items) != 1 {
		t.Errorf("the failed reply was sent: %d items", len(items))
	}
}

// FuzzResponses decodes any bytes as a Responses API response and
// converts what decodes: whatever comes, MessageFromResponses must not
// panic, must return what convtest.CheckReply promises, and the reply
// saved in a session must give a valid next request (see
// checkResponses). The responses of testdata/responses/response are the
// seeds.
func FuzzResponses(f *testing.F) {
	for _, name := range convtest.Files(f, "testdata/responses/response", ".json") {
		raw, err := os.ReadFile(filepath.Join("testdata/responses/response", name+".json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var resp openai.ResponsesResponse
		if json.Unmarshal(raw, &resp) != nil {
			return
		}
		msg, err := openai.MessageFromResponses(&resp, &openai.ResponseOptions{Model: "gpt-5"})
		convtest.CheckReply(t, msg, err, openai.ResponsesAPI)
		msgs := convtest.Turn(t, msg)
		items := openai.Input(msgs, &openai.ResponsesOptions{Model: "gpt-5"})
		checkResponses(t, msgs, items)
		checkResponsesJSON(t, responsesReq(items))
	})
}

// The reasoning tokens and the service tier of a Responses API response
// fill their Usage fields.
func TestResponsesUsageCounters(t *testing.T) {
	raw := `{"id":"resp_1","object":"response","status":"completed","model":"gpt-5","service_tier":"flex",
		"output":[{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"hi"}]}],
		"usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":40},"output_tokens":60,"output_tokens_details":{"reasoning_tokens":25},"total_tokens":160}}`
	var resp openai.ResponsesResponse
	if err := json.Unmarshal([]byte(raw), &resp); err != nil {
		t.Fatal(err)
	}
	msg, err := openai.MessageFromResponses(&resp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if u := msg.Usage; u.Input != 60 || u.CacheRead != 40 || u.ReasoningTokens != 25 || u.ServiceTier != "flex" {
		t.Errorf("usage %+v", u)
	}
}

// A refusal part is kept as a refusal block, besides the error message
// pi keeps it as.
func TestResponsesRefusalBlock(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "responses", "response", "refusal.json"))
	if err != nil {
		t.Fatal(err)
	}
	var resp openai.ResponsesResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatal(err)
	}
	msg, _ := openai.MessageFromResponses(&resp, nil)
	checkRefusal(t, msg)
}
