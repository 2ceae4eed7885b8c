package anthropic_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/anthropic"
	"github.com/agentsession/session/provider/internal/convtest"
)

// sonnet are the prices of claude-sonnet-4-5 per million tokens, as pi's
// model registry has them.
var sonnet = &anthropic.Prices{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}

// responseOptions are the options each case converts with; the others
// convert with nil.
var responseOptions = map[string]*anthropic.ResponseOptions{
	// The host asked for the alias: the dated id is kept as responseModel.
	// Hour-long writes priced at twice the input, as Anthropic charges.
	"cache_usage":       {Model: "claude-sonnet-4-5", Prices: &anthropic.Prices{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75, CacheWrite1h: 6}},
	"thinking_tool_use": {Prices: sonnet},
	"all_blocks":        {Provider: "anthropic-proxy"},
}

// replies runs the tests the provider packages share (see
// convtest.Replies) on this package's conversions.
var replies = convtest.Replies[anthropic.Response, *anthropic.Stream]{
	API: anthropic.API,
	FromResponse: func(resp *anthropic.Response, name string) (*session.Message, error) {
		return anthropic.MessageFromResponse(resp, responseOptions[name])
	},
	NewStream: anthropic.NewStream,
	Message: func(st *anthropic.Stream, name string) (*session.Message, error) {
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
// gives: a valid request that sends the reply back, with its signed
// thinking, unless it failed.
func roundTrip(t *testing.T, msg *session.Message) {
	t.Helper()
	msgs := convtest.Turn(t, msg)
	opts := &anthropic.Options{Model: msg.Model}
	req := request(msgs, anthropic.Messages(msgs, opts))
	check(t, msgs, req)
	var sent *anthropic.Message
	for i := range req.Messages {
		if req.Messages[i].Role == "assistant" {
			sent = &req.Messages[i]
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
		switch {
		case b.Type == session.BlockToolCall:
			want = append(want, "tool_use "+b.ID+" "+string(b.Arguments))
		case b.Type == session.BlockThinking && b.Redacted:
			want = append(want, "redacted_thinking "+b.ThinkingSignature)
		case b.Type == session.BlockThinking:
			want = append(want, "thinking "+b.ThinkingSignature)
		case b.Type == session.BlockText && strings.TrimSpace(b.Text) != "":
			want = append(want, "text "+b.Text)
		}
	}
	for _, c := range sent.Content {
		switch c.Type {
		case "tool_use":
			got = append(got, "tool_use "+c.ID+" "+string(c.Input))
		case "redacted_thinking":
			got = append(got, "redacted_thinking "+c.Data)
		case "thinking":
			got = append(got, "thinking "+c.Signature)
		case "text":
			got = append(got, "text "+c.Text)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("the request sends the reply as\n%q\nwant\n%q", got, want)
	}
}

func TestStopReasons(t *testing.T) {
	for _, c := range []struct {
		reason   string
		details  *anthropic.StopDetails
		stop     string
		errorMsg string
	}{
		{"end_turn", nil, session.StopEnd, ""},
		{"stop_sequence", nil, session.StopEnd, ""},
		{"pause_turn", nil, session.StopEnd, ""},
		{"max_tokens", nil, session.StopLength, ""},
		{"tool_use", nil, session.StopToolUse, ""},
		{"refusal", nil, session.StopError, "The model refused to complete the request"},
		{"refusal", &anthropic.StopDetails{Type: "refusal", Explanation: "No."}, session.StopError, "No."},
		{"sensitive", nil, session.StopError, "Provider stopped with: sensitive"},
		// pi's own words, which its context-overflow check recognizes.
		{"model_context_window_exceeded", nil, session.StopError, "Unhandled stop reason: model_context_window_exceeded"},
		{"compaction", nil, session.StopError, "Unhandled stop reason: compaction"},
	} {
		resp := &anthropic.Response{ID: "msg_1", Model: "claude-sonnet-4-5", StopReason: c.reason, StopDetails: c.details}
		msg, err := anthropic.MessageFromResponse(resp, nil)
		if err != nil || msg.StopReason != c.stop || msg.ErrorMessage != c.errorMsg {
			t.Errorf("%s: stop %q, error message %q, error %v; want %q, %q", c.reason, msg.StopReason, msg.ErrorMessage, err, c.stop, c.errorMsg)
		}
	}
	// No stop reason at all is no response the API sends.
	msg, err := anthropic.MessageFromResponse(&anthropic.Response{}, nil)
	if !errors.Is(err, anthropic.ErrMalformed) || msg.StopReason != session.StopError || msg.ErrorMessage != err.Error() {
		t.Errorf("no stop reason: %v, %+v", err, msg)
	}
	if msg, err := anthropic.MessageFromResponse(nil, nil); msg != nil || err == nil {
		t.Errorf("nil response: %v, %v", msg, err)
	}
}

// The usage of a message_delta is cumulative: each count replaces the
// one before, and one it leaves out (or null) keeps its value.
func TestStreamUsageCumulative(t *testing.T) {
	st := anthropic.NewStream()
	add := func(typ, data string) {
		t.Helper()
		if err := st.Add(typ, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	add("message_start", `{"type":"message_start","message":{"id":"msg_1","model":"m","content":[],"usage":{"input_tokens":100,"output_tokens":1,"cache_read_input_tokens":50,"cache_creation_input_tokens":20}}}`)
	add("message_delta", `{"type":"message_delta","delta":{},"usage":{"output_tokens":30}}`)
	add("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":null,"output_tokens":75,"cache_read_input_tokens":60}}`)
	add("message_stop", `{"type":"message_stop"}`)
	msg, err := st.Message(nil)
	if err != nil {
		t.Fatal(err)
	}
	if u := msg.Usage; u.Input != 100 || u.Output != 75 || u.CacheRead != 60 || u.CacheWrite != 20 || u.TotalTokens != 255 {
		t.Errorf("usage %+v", u)
	}
}

// Each way a stream breaks the API's order or shape is an ErrMalformed
// error, which sticks: the message is a failed reply with what came.
func TestStreamErrors(t *testing.T) {
	start := `{"type":"message_start","message":{"id":"msg_1","model":"m","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}`
	text := `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	tool := `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"ls","input":{}}}`
	stop0 := `{"type":"content_block_stop","index":0}`
	for _, c := range []struct {
		name   string
		events []string // "type data"
	}{
		{"bad JSON", []string{"message_start {"}},
		{"delta before start", []string{`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`}},
		{"two starts", []string{"message_start " + start, "message_start " + start}},
		{"block out of order", []string{"message_start " + start, `content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`}},
		{"delta for no block", []string{"message_start " + start, `content_block_delta {"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}`}},
		{"delta for a stopped block", []string{"message_start " + start, "content_block_start " + text, "content_block_stop " + stop0, `content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`}},
		{"delta of another type", []string{"message_start " + start, "content_block_start " + text, `content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}`}},
		{"input not JSON", []string{"message_start " + start, "content_block_start " + tool, `content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`, "content_block_stop " + stop0}},
		{"input not an object", []string{"message_start " + start, "content_block_start " + tool, `content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"[1]"}}`, "content_block_stop " + stop0}},
		{"stop with a block open", []string{"message_start " + start, "content_block_start " + text, `message_stop {"type":"message_stop"}`}},
		{"event after stop", []string{"message_start " + start, `message_delta {"type":"message_delta","delta":{"stop_reason":"end_turn"}}`, `message_stop {"type":"message_stop"}`, "content_block_start " + text}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := anthropic.NewStream()
			var first error
			for _, e := range c.events {
				typ, data, _ := strings.Cut(e, " ")
				if err := st.Add(typ, []byte(data)); err != nil {
					first = err
					break
				}
			}
			if !errors.Is(first, anthropic.ErrMalformed) {
				t.Fatalf("Add: %v, want ErrMalformed", first)
			}
			if err := st.Add("ping", []byte(`{"type":"ping"}`)); err != first {
				t.Errorf("after an error, Add returned %v", err)
			}
			msg, err := st.Message(nil)
			if err != first || msg.StopReason != session.StopError || msg.ErrorMessage != first.Error() || st.Done() {
				t.Errorf("Message: %v, %q %q", err, msg.StopReason, msg.ErrorMessage)
			}
		})
	}
	// An error event is an *APIError.
	st := anthropic.NewStream()
	err := st.Add("error", []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`))
	var apiErr *anthropic.APIError
	if !errors.As(err, &apiErr) || apiErr.Type != "overloaded_error" || apiErr.Message != "Overloaded" || apiErr.RequestID != "req_1" {
		t.Errorf("error event: %#v", err)
	}
	st = anthropic.NewStream()
	if err := st.Add("error", []byte(`upstream connect error`)); !errors.As(err, &apiErr) || apiErr.Message != "upstream connect error" {
		t.Errorf("error event with text: %#v", err)
	}
	// Unknown events, and data naming its type without an event name,
	// are fine; a stream with nothing is truncated.
	st = anthropic.NewStream()
	if err := st.Add("content_block_pause", []byte(`{"type":"content_block_pause"}`)); err != nil {
		t.Error(err)
	}
	if err := st.Add("", []byte(`{"type":"ping"}`)); err != nil {
		t.Error(err)
	}
	if msg, err := st.Message(nil); !errors.Is(err, anthropic.ErrTruncated) || msg == nil || msg.StopReason != session.StopError {
		t.Errorf("empty stream: %v, %+v", err, msg)
	}
}

// A Response handed out is not changed by later events.
func TestStreamResponseIsACopy(t *testing.T) {
	st, _ := replies.Stream(t, "thinking_tool_use")
	r := st.Response()
	r.Content[0].Thinking = "changed"
	r.Usage.CacheCreation.Ephemeral1hInputTokens = 99
	if again := st.Response(); again.Content[0].Thinking == "changed" || again.Usage.CacheCreation.Ephemeral1hInputTokens == 99 {
		t.Error("the stream shares its response")
	}
}

func TestCostAsPi(t *testing.T) {
	// pi's own example (§6.7 of the notes): 423 in, 131 out at $3/$15.
	resp := replies.Response(t, "thinking_tool_use")
	msg, _ := anthropic.MessageFromResponse(resp, &anthropic.ResponseOptions{Prices: sonnet})
	if c := msg.Usage.Cost; c.Input != 0.001269 || c.Output != 0.001965 || c.Total != 0.003234 {
		t.Errorf("cost %+v", c)
	}
	// Hour-long writes at CacheWrite when no price of their own is set.
	resp = replies.Response(t, "cache_usage")
	msg, _ = anthropic.MessageFromResponse(resp, &anthropic.ResponseOptions{Prices: sonnet})
	if c, price := msg.Usage.Cost, sonnet.CacheWrite; c.CacheWrite != price/1e6*3072 {
		t.Errorf("cache write cost %v", c.CacheWrite)
	}
}

// The usage counters beyond pi's (the cache writes by lifetime, the
// server tools' requests, the service tier) fill their Usage fields,
// from a response and from a stream, whose message_delta may report
// server tool requests.
func TestUsageCounters(t *testing.T) {
	type counters struct {
		ttl5m, ttl1h, search, fetch int64
		tier                        string
	}
	for _, c := range []struct {
		name   string
		stream bool
		want   counters
	}{
		{"cache_usage", false, counters{2048, 1024, 0, 0, "standard"}},
		{"cache_usage", true, counters{2048, 1024, 0, 0, "standard"}},
		{"all_blocks", false, counters{2048, 0, 1, 0, "standard"}},
		{"server_tools", true, counters{0, 0, 1, 0, ""}},
	} {
		var msg *session.Message
		if c.stream {
			st, err := replies.Stream(t, c.name)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ = st.Message(nil)
		} else {
			msg, _ = anthropic.MessageFromResponse(replies.Response(t, c.name), nil)
		}
		u := msg.Usage
		got := counters{u.CacheTTL.Ephemeral5m, u.CacheTTL.Ephemeral1h, u.Server.WebSearch, u.Server.WebFetch, u.ServiceTier}
		if got != c.want {
			t.Errorf("%s (stream %v): %+v, want %+v", c.name, c.stream, got, c.want)
		}
	}
}

// The citations of a text block are kept on it, as the API gives them:
// from a response's text block, and from a stream's citations_delta
// events. An empty list is none.
func TestCitations(t *testing.T) {
	const want = `[{"type":"web_search_result_location","url":"https://example.com","title":"Example","encrypted_index":"EpMB...","cited_text":"pi is a minimal coding agent"}]`
	msg, _ := anthropic.MessageFromResponse(replies.Response(t, "all_blocks"), nil)
	st, err := replies.Stream(t, "server_tools")
	if err != nil {
		t.Fatal(err)
	}
	streamed, _ := st.Message(nil)
	for _, m := range []*session.Message{msg, streamed} {
		var got []string
		for _, b := range m.Content {
			if b.Type == session.BlockText {
				got = append(got, string(b.Citations))
			}
		}
		if !slices.Contains(got, want) {
			t.Errorf("citations %q, want one %s", got, want)
		}
		for _, b := range m.Content {
			if cs, err := b.CitationList(); err != nil || len(b.Citations) > 0 && len(cs) == 0 {
				t.Errorf("citations %s: %v, %v", b.Citations, cs, err)
			}
		}
	}
}
