package anthropic_test

import (
	"encoding/json"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/anthropic"
	"github.com/agentsession/session/provider/internal/convtest"
)

// BenchmarkConvertW10k converts the context of W10k (30,000 messages) to
// the messages of a Messages API request (see convtest.BenchConvert).
func BenchmarkConvertW10k(b *testing.B) {
	opts := &anthropic.Options{Model: "claude-sonnet-4-5"}
	convtest.BenchConvert(b, func(dst []anthropic.Message, msgs []*session.Message) []anthropic.Message {
		return anthropic.AppendMessages(dst, msgs, opts)
	}, func(m []anthropic.Message) any {
		return &anthropic.Request{Model: opts.Model, MaxTokens: 1024, Messages: m}
	})
}

// BenchmarkStream accumulates a streamed reply of 10,000 text deltas and
// converts it; the time per event stays flat however long the reply.
func BenchmarkStream(b *testing.B) {
	const n = 10000
	delta := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tokens. "}}`)
	for b.Loop() {
		st := anthropic.NewStream()
		_ = st.Add("message_start", []byte(`{"type":"message_start","message":{"id":"msg_1","model":"m","content":[],"usage":{"input_tokens":10,"output_tokens":1}}}`))
		_ = st.Add("content_block_start", []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`))
		for range n {
			_ = st.Add("content_block_delta", delta)
		}
		_ = st.Add("content_block_stop", []byte(`{"type":"content_block_stop","index":0}`))
		_ = st.Add("message_delta", []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":20000}}`))
		_ = st.Add("message_stop", []byte(`{"type":"message_stop"}`))
		if _, err := st.Message(nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/event")
}

// BenchmarkConvertMarshalW10k converts the W10k context and writes the
// request's body with AppendJSON, both into buffers reused from one
// request to the next: what a host pays per request (see
// convtest.BenchConvertMarshal); ns/msg is per message of the context.
func BenchmarkConvertMarshalW10k(b *testing.B) {
	opts := &anthropic.Options{Model: "claude-sonnet-4-5"}
	convtest.BenchConvertMarshal(b, func(dst []anthropic.Message, msgs []*session.Message) []anthropic.Message {
		return anthropic.AppendMessages(dst, msgs, opts)
	}, func(buf []byte, m []anthropic.Message) ([]byte, error) {
		return anthropic.Request{Model: opts.Model, MaxTokens: 1024, Messages: m}.AppendJSON(buf)
	})
}

// BenchmarkConvertMarshalW10kJSONMarshal is BenchmarkConvertMarshalW10k
// with json.Marshal(request): MarshalJSON's bytes, then encoding/json's
// own pass over them (it validates them and escapes <, >, &).
func BenchmarkConvertMarshalW10kJSONMarshal(b *testing.B) {
	opts := &anthropic.Options{Model: "claude-sonnet-4-5"}
	convtest.BenchConvertMarshal(b, func(dst []anthropic.Message, msgs []*session.Message) []anthropic.Message {
		return anthropic.AppendMessages(dst, msgs, opts)
	}, func(buf []byte, m []anthropic.Message) ([]byte, error) {
		return json.Marshal(anthropic.Request{Model: opts.Model, MaxTokens: 1024, Messages: m})
	})
}

// BenchmarkConvertMarshalW10kEncodingJSON is BenchmarkConvertMarshalW10k
// with encoding/json writing the request by reflection (the reference
// types of the tests, as this package marshalled before AppendJSON).
func BenchmarkConvertMarshalW10kEncodingJSON(b *testing.B) {
	opts := &anthropic.Options{Model: "claude-sonnet-4-5"}
	convtest.BenchConvertMarshal(b, func(dst []anthropic.Message, msgs []*session.Message) []anthropic.Message {
		return anthropic.AppendMessages(dst, msgs, opts)
	}, func(buf []byte, m []anthropic.Message) ([]byte, error) {
		return json.Marshal(anthropic.Reference(anthropic.Request{Model: opts.Model, MaxTokens: 1024, Messages: m}))
	})
}
