package anthropic_test

import (
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
