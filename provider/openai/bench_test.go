package openai_test

import (
	"encoding/json"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/internal/convtest"
	"github.com/agentsession/session/provider/openai"
)

// BenchmarkConvertW10k converts the context of W10k (30,000 messages) to
// the messages of a Chat Completions request (see convtest.BenchConvert).
func BenchmarkConvertW10k(b *testing.B) {
	opts := &openai.Options{System: "You are a careful coding agent."}
	convtest.BenchConvert(b, func(dst []openai.Message, msgs []*session.Message) []openai.Message {
		return openai.AppendMessages(dst, msgs, opts)
	}, func(m []openai.Message) any {
		return &openai.Request{Model: "gpt-5", Messages: m}
	})
}

// BenchmarkStream accumulates a streamed reply of 10,000 content chunks
// and converts it; the time per chunk stays flat however long the reply.
func BenchmarkStream(b *testing.B) {
	const n = 10000
	chunk := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1758884649,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"tokens. "},"finish_reason":null}],"usage":null}`)
	for b.Loop() {
		st := openai.NewStream()
		for range n {
			_ = st.Add("", chunk)
		}
		_ = st.Add("", []byte(`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`))
		_ = st.Add("", []byte(`[DONE]`))
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
	opts := &openai.Options{System: "You are a careful coding agent."}
	convtest.BenchConvertMarshal(b, func(dst []openai.Message, msgs []*session.Message) []openai.Message {
		return openai.AppendMessages(dst, msgs, opts)
	}, func(buf []byte, m []openai.Message) ([]byte, error) {
		return openai.Request{Model: "gpt-5", Messages: m}.AppendJSON(buf)
	})
}

// BenchmarkConvertMarshalW10kJSONMarshal is BenchmarkConvertMarshalW10k
// with json.Marshal(request): MarshalJSON's bytes, then encoding/json's
// own pass over them (it validates them and escapes <, >, &).
func BenchmarkConvertMarshalW10kJSONMarshal(b *testing.B) {
	opts := &openai.Options{System: "You are a careful coding agent."}
	convtest.BenchConvertMarshal(b, func(dst []openai.Message, msgs []*session.Message) []openai.Message {
		return openai.AppendMessages(dst, msgs, opts)
	}, func(buf []byte, m []openai.Message) ([]byte, error) {
		return json.Marshal(openai.Request{Model: "gpt-5", Messages: m})
	})
}

// BenchmarkConvertMarshalW10kEncodingJSON is BenchmarkConvertMarshalW10k
// with encoding/json writing the request by reflection (the reference
// types of the tests, as this package marshalled before AppendJSON).
func BenchmarkConvertMarshalW10kEncodingJSON(b *testing.B) {
	opts := &openai.Options{System: "You are a careful coding agent."}
	convtest.BenchConvertMarshal(b, func(dst []openai.Message, msgs []*session.Message) []openai.Message {
		return openai.AppendMessages(dst, msgs, opts)
	}, func(buf []byte, m []openai.Message) ([]byte, error) {
		return json.Marshal(openai.Reference(openai.Request{Model: "gpt-5", Messages: m}))
	})
}

// BenchmarkConvertMarshalW10kResponses is BenchmarkConvertMarshalW10k for
// the Responses API: Input, then ResponsesRequest.AppendJSON.
func BenchmarkConvertMarshalW10kResponses(b *testing.B) {
	opts := &openai.ResponsesOptions{System: "You are a careful coding agent.", Model: "gpt-5"}
	convtest.BenchConvertMarshal(b, func(dst []openai.InputItem, msgs []*session.Message) []openai.InputItem {
		return openai.AppendInput(dst, msgs, opts)
	}, func(buf []byte, items []openai.InputItem) ([]byte, error) {
		return openai.ResponsesRequest{Model: "gpt-5", Input: items}.AppendJSON(buf)
	})
}

// BenchmarkConvertMarshalW10kResponsesEncodingJSON is
// BenchmarkConvertMarshalW10kResponses with encoding/json writing the
// request by reflection (the reference types of the tests).
func BenchmarkConvertMarshalW10kResponsesEncodingJSON(b *testing.B) {
	opts := &openai.ResponsesOptions{System: "You are a careful coding agent.", Model: "gpt-5"}
	convtest.BenchConvertMarshal(b, func(dst []openai.InputItem, msgs []*session.Message) []openai.InputItem {
		return openai.AppendInput(dst, msgs, opts)
	}, func(buf []byte, items []openai.InputItem) ([]byte, error) {
		return json.Marshal(openai.ReferenceResponses(openai.ResponsesRequest{Model: "gpt-5", Input: items}))
	})
}
