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
