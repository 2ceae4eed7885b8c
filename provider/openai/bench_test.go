package openai_test

import (
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
