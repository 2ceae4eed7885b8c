// Package workload generates the standard workloads the performance work
// of this project is measured with, so that every benchmark and every
// issue speaks of the same sessions.
//
// W10k is 10,000 turns. A turn is a user message of 200 bytes of text, an
// assistant message of 1,024 bytes of text plus one tool call (name
// "bash", arguments {"command":"ls -la src/dirN"}) with usage, and a tool
// result of 4,096 bytes of code-like text with newlines, tabs and quotes:
// 30,000 message entries, about 62 MB in the seed format.
//
// It imports the session package; benchmarks, tests and the CLI use it,
// the library never does.
package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	session "github.com/agentsession/session"
)

// W10k is the number of turns of the standard workload.
const W10k = 10_000

// Sizes of a turn's texts, in bytes.
const (
	UserBytes   = 200
	ReplyBytes  = 1024
	ResultBytes = 4096
)

// Start is the timestamp of turn 0; each turn is one second later.
var Start = time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC)

var words = strings.Fields(`the session tree keeps every branch of the conversation so an agent can
go back rewind fork and compact without losing what was said before while the model only sees the
path from the root to the leaf with summaries in place of what was compacted`)

var codeLines = []string{
	"package main",
	"",
	"import (",
	"\t\"fmt\"",
	"\t\"os\"",
	")",
	"",
	"// handle answers one request; it says \"ok\" or an error.",
	"func handle(w io.Writer, r *Request) error {",
	"\tif r == nil {",
	"\t\treturn fmt.Errorf(\"nil request: %w\", errBad)",
	"\t}",
	"\tfor i, line := range r.Lines {",
	"\t\tfmt.Fprintf(w, \"%d\\t%q\\n\", i, line)",
	"\t}",
	"\treturn nil",
	"}",
}

// text returns n bytes of prose, varied by seed.
func text(n int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	var b strings.Builder
	b.Grow(n + 16)
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[r.IntN(len(words))])
	}
	return b.String()[:n]
}

// code returns n bytes of Go-like source with tabs, quotes and newlines.
func code(n int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 0xc0de))
	var b strings.Builder
	b.Grow(n + 64)
	for b.Len() < n {
		line := codeLines[r.IntN(len(codeLines))]
		fmt.Fprintf(&b, "%s // %d\n", line, r.IntN(1000))
	}
	return b.String()[:n]
}

// Turn returns the three messages of turn i. Timestamps are set, so the
// messages are the same on every call.
func Turn(i int) (user, reply, result *session.Message) {
	ts := Start.Add(time.Duration(i) * time.Second).UnixMilli()
	callID := fmt.Sprintf("toolu_%08d", i)
	user = session.UserText(text(UserBytes, uint64(3*i))).WithTimestamp(ts)
	args, _ := json.Marshal(map[string]string{"command": fmt.Sprintf("ls -la src/dir%d", i)})
	reply = session.Assistant(
		session.Text(text(ReplyBytes, uint64(3*i+1))),
		session.ToolCall(callID, "bash", args),
	).WithModel("anthropic-messages", "anthropic", "claude-sonnet-4-5").
		WithUsage(session.Usage{
			Input: int64(1000 + 3*i), Output: 300, CacheRead: int64(800 + 3*i), TotalTokens: int64(2100 + 6*i),
			Cost: session.Cost{Input: 0.003, Output: 0.0045, CacheRead: 0.00024, Total: 0.00774},
		}).WithTimestamp(ts + 400)
	result = session.ToolResult(callID, "bash", code(ResultBytes, uint64(3*i+2))).WithTimestamp(ts + 700)
	return user, reply, result
}

// Messages returns the messages of turns [from, to).
func Messages(from, to int) []*session.Message {
	out := make([]*session.Message, 0, 3*(to-from))
	for i := from; i < to; i++ {
		u, a, r := Turn(i)
		out = append(out, u, a, r)
	}
	return out
}

// Session returns a session on store holding turns [0, n).
func Session(ctx context.Context, store session.Store, n int) (*session.Session, error) {
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/home/dev/project"})
	if err != nil {
		return nil, err
	}
	for i := range n {
		u, a, r := Turn(i)
		if err := s.SaveTurn(ctx, []*session.Message{u, a, r}, nil); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Log returns the seed-format log of n turns, kept in memory.
func Log(n int) (*session.Log, error) {
	s, err := Session(context.Background(), session.NewMemoryStore(), n)
	if err != nil {
		return nil, err
	}
	return s.Log(), nil
}
