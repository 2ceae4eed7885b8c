package openai_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/internal/convtest"
	"github.com/agentsession/session/provider/openai"
)

// responseOptions are the options each case converts with; the others
// convert with nil.
var responseOptions = map[string]*openai.ResponseOptions{
	// The host asked for the alias: the dated id is kept as responseModel.
	"usage_details":     {Model: "gpt-5", Prices: &openai.Prices{Input: 1.25, Output: 10, CacheRead: 0.125}},
	"reasoning_content": {Provider: "deepseek", Prices: &openai.Prices{Input: 0.56, Output: 1.68, CacheRead: 0.07}},
	"cache_write":       {Provider: "openrouter", Model: "anthropic/claude-sonnet-4.5", Prices: &openai.Prices{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}},
}

// replies runs the tests the provider packages share (see
// convtest.Replies) on this package's conversions.
var replies = convtest.Replies[openai.Response, *openai.Stream]{
	API: openai.API,
	FromResponse: func(resp *openai.Response, name string) (*session.Message, error) {
		return openai.MessageFromResponse(resp, responseOptions[name])
	},
	NewStream: openai.NewStream,
	Message: func(st *openai.Stream, name string) (*session.Message, error) {
		return st.Message(responseOptions[name])
	},
	RoundTrip: roundTrip,
}

// TestResponseGolden converts each response of testdata/response (built
// from the shapes the API reference, the SDK types and real captures
// document) and compares the message, as the session writes it, with
// its golden file; then it saves the message in a session and checks the
// next request.
func TestResponseGolden(t *testing.T) { replies.TestResponses(t) }

// TestStreamGolden accumulates each stream of testdata/stream and
// compares the response and the message with the golden file. A stream
// of the same name as a response of testdata/response is that response
// streamed: its message must be the same.
func TestStreamGolden(t *testing.T) { replies.TestStreams(t) }

// roundTrip saves msg as the reply of a turn, with a result for each of
// its calls, and checks the request built from what the session then
// gives: a valid request that sends the reply back (its reasoning in
// reasoning_content), unless it failed.
func roundTrip(t *testing.T, msg *session.Message) {
	t.Helper()
	msgs := convtest.Turn(t, msg)
	req := openai.Messages(msgs, &openai.Options{System: system, Thinking: openai.ThinkingReasoningContent})
	check(t, msgs, req)
	var sent *openai.Message
	for i := range req {
		if req[i].Role == "assistant" {
			sent = &req[i]
		}
	}
	if msg.StopReason == session.StopError || msg.StopReason == session.StopAborted {
		if sent != nil {
			t.Errorf("a failed reply was sent: %+v", sent)
		}
		return
	}
	if sent == nil {
		t.Fatal("the reply was not sent")
	}
	var want, got []string
	for _, b := range msg.Content {
		switch b.Type {
		case session.BlockToolCall:
			want = append(want, "call "+b.ID+" "+string(b.Arguments))
		case session.BlockThinking:
			want = append(want, "reasoning "+b.Thinking)
		case session.BlockText:
			want = append(want, "text "+b.Text)
		}
	}
	if sent.ReasoningContent != "" {
		got = append(got, "reasoning "+sent.ReasoningContent)
	}
	if sent.Content != "" {
		got = append(got, "text "+sent.Content)
	}
	for _, c := range sent.ToolCalls {
		got = append(got, "call "+c.ID+" "+c.Function.Arguments)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the request sends the reply as\n%q\nwant\n%q", got, want)
	}
}

func TestFinishReasons(t *testing.T) {
	call := []openai.ToolCall{{ID: "call_1", Type: "function", Function: openai.FunctionCall{Name: "ls", Arguments: "{}"}}}
	for _, c := range []struct {
		finish   string
		calls    []openai.ToolCall
		stop     string
		errorMsg string
	}{
		{"stop", nil, session.StopEnd, ""},
		{"end", nil, session.StopEnd, ""},
		{"", nil, session.StopEnd, ""},
		{"length", nil, session.StopLength, ""},
		{"tool_calls", call, session.StopToolUse, ""},
		{"function_call", nil, session.StopToolUse, ""},
		// Servers that never say tool_calls.
		{"stop", call, session.StopToolUse, ""},
		{"", call, session.StopToolUse, ""},
		{"content_filter", nil, session.StopError, "Provider finish_reason: content_filter"},
		{"network_error", nil, session.StopError, "Provider finish_reason: network_error"},
		// z.ai's, in pi's words, which its context-overflow check recognizes.
		{"model_context_window_exceeded", nil, session.StopError, "Provider finish_reason: model_context_window_exceeded"},
	} {
		resp := &openai.Response{ID: "chatcmpl-1", Model: "gpt-5", Choices: []openai.Choice{{
			Message: openai.ResponseMessage{Role: "assistant", Content: "x", ToolCalls: c.calls}, FinishReason: c.finish,
		}}}
		msg, err := openai.MessageFromResponse(resp, nil)
		if err != nil || msg.StopReason != c.stop || msg.ErrorMessage != c.errorMsg {
			t.Errorf("%q: stop %q, error message %q, error %v; want %q, %q", c.finish, msg.StopReason, msg.ErrorMessage, err, c.stop, c.errorMsg)
		}
	}
	msg, err := openai.MessageFromResponse(&openai.Response{ID: "chatcmpl-1"}, nil)
	if !errors.Is(err, openai.ErrMalformed) || msg.StopReason != session.StopError || msg.ErrorMessage != err.Error() {
		t.Errorf("no choices: %v, %+v", err, msg)
	}
	if msg, err := openai.MessageFromResponse(nil, nil); msg != nil || err == nil {
		t.Errorf("nil response: %v, %v", msg, err)
	}
}

func TestResponseDecoding(t *testing.T) {
	// Reasoning members that are not strings are ignored; the first one
	// that is not empty is the thinking, its name the signature.
	var resp openai.Response
	raw := `{"id":"x","model":"m","choices":[{"index":1,"message":{"content":"B"},"finish_reason":"stop"},
		{"index":0,"message":{"content":"A","reasoning_content":{"x":1},"reasoning":"","reasoning_text":"why"},"finish_reason":"stop"}]}`
	if err := json.Unmarshal([]byte(raw), &resp); err != nil {
		t.Fatal(err)
	}
	msg, err := openai.MessageFromResponse(&resp, nil)
	if err != nil || len(msg.Content) != 2 || msg.Content[0].Thinking != "why" || msg.Content[0].ThinkingSignature != "reasoning_text" || msg.Content[1].Text != "A" {
		t.Errorf("got %+v, %v", msg.Content, err)
	}
	// Arguments that are no JSON object fail the reply; empty ones are {}.
	resp = openai.Response{Choices: []openai.Choice{{FinishReason: "tool_calls", Message: openai.ResponseMessage{ToolCalls: []openai.ToolCall{
		{ID: "a", Type: "function", Function: openai.FunctionCall{Name: "f", Arguments: ""}},
		{ID: "b", Type: "function", Function: openai.FunctionCall{Name: "g", Arguments: `{"x":`}},
		{ID: "c", Type: "custom"},
	}}}}}
	msg, err = openai.MessageFromResponse(&resp, nil)
	if !errors.Is(err, openai.ErrMalformed) || msg.StopReason != session.StopError || len(msg.Content) != 2 || string(msg.Content[0].Arguments) != "{}" {
		t.Errorf("got %+v, %v", msg, err)
	}
	// An error's code may be a number.
	var apiErr openai.APIError
	if err := json.Unmarshal([]byte(`{"message":"busy","type":null,"code":529}`), &apiErr); err != nil || apiErr.Code != "529" || apiErr.Error() != "openai: 529: busy" {
		t.Errorf("%+v %v", apiErr, err)
	}
}

// Chunks a host feeds, one per line.
func feed(t *testing.T, st *openai.Stream, lines ...string) error {
	t.Helper()
	for _, l := range lines {
		if err := st.Add("", []byte(l)); err != nil {
			return err
		}
	}
	return nil
}

func TestStreamErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		lines  []string
		target error
	}{
		{"bad JSON", []string{`{"id":`}, openai.ErrMalformed},
		{"after DONE", []string{`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]", `{"choices":[]}`}, openai.ErrMalformed},
		{"wrong type", []string{`{"choices":[{"index":"0"}]}`}, openai.ErrMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := openai.NewStream()
			first := feed(t, st, c.lines...)
			if !errors.Is(first, c.target) {
				t.Fatalf("Add: %v, want %v", first, c.target)
			}
			if err := st.Add("", []byte("[DONE]")); err != first {
				t.Errorf("after an error, Add returned %v", err)
			}
			msg, err := st.Message(nil)
			if err != first || msg.StopReason != session.StopError || msg.ErrorMessage != first.Error() || st.Done() {
				t.Errorf("Message: %v, %q %q", err, msg.StopReason, msg.ErrorMessage)
			}
		})
	}
	// An error sent as an SSE event named error.
	st := openai.NewStream()
	err := st.Add("error", []byte(`{"message":"Overloaded","type":"overloaded_error"}`))
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.Message != "Overloaded" {
		t.Errorf("error event: %#v", err)
	}
	st = openai.NewStream()
	if err := st.Add("error", []byte(`upstream timed out`)); !errors.As(err, &apiErr) || apiErr.Message != "upstream timed out" {
		t.Errorf("error event with text: %#v", err)
	}
	// Nothing at all is a truncated stream; [DONE] alone a malformed one.
	if msg, err := openai.NewStream().Message(nil); !errors.Is(err, openai.ErrTruncated) || msg.StopReason != session.StopError {
		t.Errorf("empty stream: %v", err)
	}
	st = openai.NewStream()
	_ = feed(t, st, "", "[DONE]")
	if _, err := st.Message(nil); !errors.Is(err, openai.ErrMalformed) {
		t.Errorf("[DONE] alone: %v", err)
	}
}

// Tool calls arrive in pieces by index; a piece with no index goes to
// the call of its id, or to the last call.
func TestStreamToolCallPieces(t *testing.T) {
	st := openai.NewStream()
	err := feed(t, st,
		`{"id":"c1","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_B","type":"function","function":{"name":"b","arguments":"{\"x\""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"a","arguments":""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":":1}"}},{"index":0,"function":{"arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_C","function":{"name":"c","arguments":"{\"y\":"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"2}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := st.Message(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range msg.Content {
		got = append(got, b.ID+" "+b.Name+" "+string(b.Arguments))
	}
	want := []string{`call_B b {"x":1}`, `call_A a {}`, `call_C c {"y":2}`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A Response handed out is not changed by later chunks.
func TestStreamResponseIsACopy(t *testing.T) {
	st, _ := replies.Stream(t, "tool_calls")
	r := st.Response()
	r.Choices[0].Message.ToolCalls[0].ID = "changed"
	if st.Response().Choices[0].Message.ToolCalls[0].ID == "changed" {
		t.Error("the stream shares its response")
	}
}

func TestUsageAsPi(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name string
		u    openai.Usage
		want [5]int64 // input, output, cacheRead, cacheWrite, total
	}{
		{"plain", openai.Usage{PromptTokens: 100, CompletionTokens: 20}, [5]int64{100, 20, 0, 0, 120}},
		// completion_tokens includes the reasoning tokens already.
		{"reasoning", openai.Usage{PromptTokens: 100, CompletionTokens: 20, CompletionTokensDetails: &openai.CompletionTokensDetails{ReasoningTokens: 15}}, [5]int64{100, 20, 0, 0, 120}},
		{"cached", openai.Usage{PromptTokens: 100, CompletionTokens: 20, PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: n(60)}}, [5]int64{40, 20, 60, 0, 120}},
		// A cached_tokens of 0 that is there wins over DeepSeek's member.
		{"cached zero", openai.Usage{PromptTokens: 100, PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: n(0)}, PromptCacheHitTokens: n(50)}, [5]int64{100, 0, 0, 0, 100}},
		{"deepseek", openai.Usage{PromptTokens: 100, PromptTokensDetails: &openai.PromptTokensDetails{}, PromptCacheHitTokens: n(50)}, [5]int64{50, 0, 50, 0, 100}},
		{"kimi", openai.Usage{PromptTokens: 100, CachedTokens: n(30)}, [5]int64{70, 0, 30, 0, 100}},
		{"openrouter writes", openai.Usage{PromptTokens: 100, PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: n(30), CacheWriteTokens: 20}}, [5]int64{50, 0, 30, 20, 100}},
		{"never negative", openai.Usage{PromptTokens: 10, PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: n(30)}}, [5]int64{0, 0, 30, 0, 30}},
	} {
		u := c.u
		msg, _ := openai.MessageFromResponse(&openai.Response{Usage: &u, Choices: []openai.Choice{{FinishReason: "stop"}}}, nil)
		got := [5]int64{msg.Usage.Input, msg.Usage.Output, msg.Usage.CacheRead, msg.Usage.CacheWrite, msg.Usage.TotalTokens}
		if got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// The usage details beyond pi's counters (reasoning, audio, predicted
// output tokens, the service tier) fill their Usage fields, from a
// response and from a stream.
func TestUsageCounters(t *testing.T) {
	raw := `{"id":"c","model":"gpt-4o-audio","service_tier":"priority","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],
		"usage":{"prompt_tokens":100,"completion_tokens":50,"total_tokens":150,
		"prompt_tokens_details":{"cached_tokens":20,"audio_tokens":30},
		"completion_tokens_details":{"reasoning_tokens":10,"audio_tokens":5,"accepted_prediction_tokens":3,"rejected_prediction_tokens":4}}}`
	var resp openai.Response
	if err := json.Unmarshal([]byte(raw), &resp); err != nil {
		t.Fatal(err)
	}
	msg, err := openai.MessageFromResponse(&resp, nil)
	if err != nil {
		t.Fatal(err)
	}
	u := msg.Usage
	got := [...]int64{u.Input, u.CacheRead, u.ReasoningTokens, u.InputAudioTokens, u.OutputAudioTokens, u.AcceptedPredictionTokens, u.RejectedPredictionTokens}
	if want := [...]int64{80, 20, 10, 30, 5, 3, 4}; got != want || u.ServiceTier != "priority" {
		t.Errorf("usage %v %q, want %v priority", got, u.ServiceTier, want)
	}
	st, err := replies.Stream(t, "usage_details")
	if err != nil {
		t.Fatal(err)
	}
	msg, _ = st.Message(nil)
	if u := msg.Usage; u.ReasoningTokens != 512 || u.ServiceTier != "default" {
		t.Errorf("stream usage %+v", u)
	}
}

// A refusal is kept as a refusal block, besides the error message pi
// keeps it as (a stream accumulates the refusal deltas into the same
// response member).
func TestRefusalBlock(t *testing.T) {
	msg, _ := openai.MessageFromResponse(replies.Response(t, "refusal"), nil)
	checkRefusal(t, msg)
}

// checkRefusal fails t unless msg is a failed reply with one refusal
// block, whose text is the error message.
func checkRefusal(t *testing.T, msg *session.Message) {
	t.Helper()
	var got []string
	for _, b := range msg.Content {
		if b.Type == session.BlockRefusal {
			got = append(got, b.Text)
		}
	}
	if len(got) != 1 || got[0] != msg.ErrorMessage || msg.StopReason != session.StopError {
		t.Errorf("refusal blocks %q, error message %q, stop %q", got, msg.ErrorMessage, msg.StopReason)
	}
}
