package openai_test

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/agentsession/session/provider/internal/convtest"
	"github.com/agentsession/session/provider/openai"
)

// BenchmarkConvertW10k converts the context of W10k (30,000 messages) to
// the messages of a Chat Completions request: into a new slice, into a
// reused one, and converted then marshalled to the wire JSON.
func BenchmarkConvertW10k(b *testing.B) {
	msgs := convtest.W10k(b)
	opts := &openai.Options{System: "You are a careful coding agent."}
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			openai.Messages(msgs, opts)
		}
		convtest.PerMessage(b, len(msgs))
	})
	b.Run("reuse", func(b *testing.B) {
		b.ReportAllocs()
		var buf []openai.Message
		for b.Loop() {
			buf = openai.AppendMessages(buf[:0], msgs, opts)
		}
		convtest.PerMessage(b, len(msgs))
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		enc := json.NewEncoder(io.Discard)
		for b.Loop() {
			req := openai.Request{Model: "gpt-5", Messages: openai.Messages(msgs, opts)}
			if err := enc.Encode(&req); err != nil {
				b.Fatal(err)
			}
		}
		convtest.PerMessage(b, len(msgs))
	})
}
