package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	session "github.com/agentsession/session"
)

// The basic loop: append, branch, and read the context the model sees.
func Example() {
	ctx := context.Background()
	s := session.New()

	s.Append(ctx, session.UserText("Write add(a, b) in Go."))
	answer, _ := s.Append(ctx, session.AssistantText("func add(a, b int) int { return a + b }").
		WithModel("anthropic-messages", "anthropic", "claude-sonnet-4-5"))
	s.Append(ctx, session.UserText("Now in Rust."))
	s.Append(ctx, session.AssistantText("fn add(a: i32, b: i32) -> i32 { a + b }"))

	// Go back to the Go answer and take the conversation elsewhere.
	s.Branch(ctx, answer.ID())
	s.Append(ctx, session.UserText("Add a test."))

	c := s.Context()
	fmt.Println("model:", c.Model)
	for _, m := range c.Messages {
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}
	// Output:
	// model: anthropic/claude-sonnet-4-5
	// user: Write add(a, b) in Go.
	// assistant: func add(a, b int) int { return a + b }
	// user: Add a test.
}

// Messages is what an agent sends to its model: a tool call that was never
// answered gets an error result, so the provider accepts the request.
func ExampleSession_Messages() {
	ctx := context.Background()
	s := session.New()
	s.Append(ctx, session.UserText("Build it."))
	s.Append(ctx, session.Assistant(session.ToolCall("call_1", "bash", json.RawMessage(`{"command":"make"}`))))
	// The user interrupts before the tool ran.
	s.Append(ctx, session.UserText("Stop, run the tests instead."))

	fmt.Println("dangling:", s.Context().Dangling[0].CallID)
	msgs, _ := s.Messages(ctx)
	for _, m := range msgs {
		fmt.Printf("%s synthetic=%v\n", m.Role, m.Synthetic())
	}
	// Output:
	// dangling: call_1
	// user synthetic=false
	// assistant synthetic=false
	// toolResult synthetic=true
	// user synthetic=false
}

// SaveTurn appends a turn all or nothing; a tool result must answer a call.
func ExampleSession_SaveTurn() {
	ctx := context.Background()
	s := session.New()
	s.Append(ctx, session.UserText("How many files?"))
	turn := []*session.Message{
		session.Assistant(session.ToolCall("c1", "bash", json.RawMessage(`{"command":"ls | wc -l"}`))),
		session.ToolResult("c1", "bash", "3"),
		session.AssistantText("Three."),
	}
	err := s.SaveTurn(ctx, turn, &session.Usage{Input: 120, Output: 8, TotalTokens: 128})
	fmt.Println(err, s.Len())

	err = s.SaveTurn(ctx, []*session.Message{session.ToolResult("c9", "bash", "?")}, nil)
	fmt.Println(err, s.Len())
	// Output:
	// <nil> 4
	// session: tool result answers no pending tool call: result for call "c9" (bash) 4
}

// BranchWithSummary leaves a path behind and keeps what it taught.
func ExampleSession_BranchWithSummary() {
	ctx := context.Background()
	s := session.New()
	start, _ := s.Append(ctx, session.UserText("Fix the flaky test."))
	s.Append(ctx, session.AssistantText("Retrying it three times."))

	s.BranchWithSummary(ctx, start.ID(), "Retries hid the race; do not retry.", nil)
	s.Append(ctx, session.AssistantText("Looking for the race instead."))
	for _, m := range s.Context().Messages {
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}
	// Output:
	// user: Fix the flaky test.
	// branchSummary: Retries hid the race; do not retry.
	// assistant: Looking for the race instead.
}

// A session lives in a Store; opening it again gives the same tree, leaf
// and context.
func ExampleOpen() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	s, _ := session.Create(ctx, store, &session.CreateOptions{ID: "demo", Cwd: "/home/dev/project"})
	first, _ := s.Append(ctx, session.UserText("one"))
	s.Append(ctx, session.UserText("two"))
	s.Branch(ctx, first.ID())
	s.Close()

	again, _ := session.Open(ctx, store, "demo")
	fmt.Println(again.LeafID() == first.ID(), len(again.Context().Messages))
	// Output: true 1
}

// Reading a seed-format log written by pi or oh-my-pi, and checking it.
func ExampleDecodeLog() {
	data := `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}
{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}
{"type":"message","id":"a2","parentId":"gone","timestamp":"2026-01-15T10:00:02.000Z","message":{"role":"user","content":"lost parent","timestamp":2}}
{"type":"message","id":"a3",`
	log, err := session.DecodeLog([]byte(data), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(log.Entries), "entries")
	for _, f := range session.Verify(log) {
		fmt.Println(f)
	}
	// Output:
	// 2 entries
	// line 4: torn-tail: invalid JSON at offset 28: unexpected end of input
	// entry a2: missing-parent: parent gone not found; read as a root
}

// Labels name entries; checkpoints are labels.
func ExampleSession_Label() {
	ctx := context.Background()
	s := session.New()
	e, _ := s.Append(ctx, session.UserText("Release 1.0 plan"))
	s.Label(ctx, e.ID(), "v1-plan")
	for n := range s.Tree() {
		fmt.Println(strings.Repeat("  ", n.Depth)+n.Entry.Type(), n.Label)
	}
	// Output:
	// message v1-plan
	//   label
}
