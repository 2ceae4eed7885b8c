package anthropic_test

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/agentsession/session/provider/anthropic"
	"github.com/agentsession/session/provider/internal/convtest"
)

// BenchmarkConvertW10k converts the context of W10k (30,000 messages) to
// the messages of a Messages API request: into a new slice, into a
// reused one, and converted then marshalled to the wire JSON.
func BenchmarkConvertW10k(b *testing.B) {
	msgs := convtest.W10k(b)
	opts := &anthropic.Options{Model: "claude-sonnet-4-5"}
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			anthropic.Messages(msgs, opts)
		}
		convtest.PerMessage(b, len(msgs))
	})
	b.Run("reuse", func(b *testing.B) {
		b.ReportAllocs()
		var buf []anthropic.Message
		for b.Loop() {
			buf = anthropic.AppendMessages(buf[:0], msgs, opts)
		}
		convtest.PerMessage(b, len(msgs))
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		enc := json.NewEncoder(io.Discard)
		for b.Loop() {
			req := anthropic.Request{Model: opts.Model, MaxTokens: 1024, Messages: anthropic.Messages(msgs, opts)}
			if err := enc.Encode(&req); err != nil {
				b.Fatal(err)
			}
		}
		convtest.PerMessage(b, len(msgs))
	})
}
