package redact_test

import (
	"strings"
	"testing"

	"github.com/agentsession/session/redact"
)

// typicalEntry is an assistant message entry of about 2 KB, as pi writes
// them: text, thinking, a tool call and usage, and no secret.
const typicalEntry = `{"type":"message","id":"e894d3ed","parentId":"2c272edc","timestamp":"2025-12-08T22:56:02.144Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"The user wants the refactor plan updated. The agent stores AppMessage[] which includes both standard Message types and custom types like BashExecutionMessage, so the getter must return that type. I should edit the docs in three places and keep the rest of the plan as it is.","thinkingSignature":"EpYDCkYIBxgCKkBq3vJ0lC6ZJ8n5m2Qx1c0l9yV7rK4pWb2sT8uA3dF6gH1jN5oP0qR7sU9vX2yZ4aB6cD8eF0gI2kL4mN6oP8qR0sT2uV4wX6yZ8aB0cD2eF4gH6iJ8kL0mN2oP4qR6sT8uV0wX2yZ4aB6cD8eF0gI2kL4mN6oP8qR0sT2uV4wX6yZ8aB0cD2eF4g"},{"type":"text","text":"You're right. The agent stores ` + "`AppMessage[]`" + ` which includes both standard ` + "`Message`" + ` types and custom types like ` + "`BashExecutionMessage`" + `. Let me update refactor.md so that the getters and the import lines say so:\n\n1. ` + "`get messages()`" + ` returns ` + "`AppMessage[]`" + `.\n2. The import of ` + "`Message`" + ` from pi-ai goes away.\n3. The state accessor keeps its shape."},{"type":"toolCall","id":"toolu_01Cnocbtw31kJrBHyzjWHznB","name":"edit","arguments":{"path":"packages/coding-agent/docs/refactor.md","oldText":"  get messages(): Message[] { return this.agent.state.messages; }","newText":"  get messages(): AppMessage[] { return this.agent.state.messages; }"}},{"type":"toolCall","id":"toolu_01BjCRyPAfzu6MnTqSS4xLZo","name":"edit","arguments":{"path":"packages/coding-agent/docs/refactor.md","oldText":"import type { Agent, AgentEvent, AgentState, ThinkingLevel } from \"@mariozechner/pi-agent-core\";\nimport type { Model, Message } from \"@mariozechner/pi-ai\";","newText":"import type { Agent, AgentEvent, AgentState, AppMessage, ThinkingLevel } from \"@mariozechner/pi-agent-core\";\nimport type { Model } from \"@mariozechner/pi-ai\";"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-5","usage":{"input":1,"output":501,"cacheRead":67217,"cacheWrite":2203,"totalTokens":69922,"cost":{"input":0.000005,"output":0.012525000000000001,"cacheRead":0.0336085,"cacheWrite":0.013768750000000001,"total":0.05990725}},"stopReason":"toolUse","timestamp":1765234554205}}`

func TestTypicalEntryUnchanged(t *testing.T) {
	out, rep, err := testRedactor().JSON([]byte(typicalEntry))
	if err != nil || rep.Total() != 0 || string(out) != typicalEntry {
		t.Fatalf("%v %v", err, rep.Counts)
	}
}

func BenchmarkJSON(b *testing.B) {
	r := redact.New(&redact.Options{Home: []string{"/home/bench"}})
	in := []byte(typicalEntry)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := r.JSON(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONSecret is BenchmarkJSON with a secret in the text.
func BenchmarkJSONSecret(b *testing.B) {
	r := redact.New(&redact.Options{Home: []string{"/home/bench"}})
	in := []byte(strings.Replace(typicalEntry, "You're right.", "You're right. export OPENAI_API_KEY=sk-proj-ITS1ZaRkeKPPpQqF_K4pGFj1Nz9UqBtLk34XtsvO_K0iEvtE2P4qKF_GyVapQ", 1))
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := r.JSON(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkString is a 2 KB text (tool output) without secrets.
func BenchmarkString(b *testing.B) {
	r := redact.New(&redact.Options{Home: []string{"/home/bench"}})
	s := strings.Repeat("Checked 229 files in 117ms. Fixed 1 file.\n> biome check --write . && tsgo --noEmit\n", 24)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		r.String(s)
	}
}
