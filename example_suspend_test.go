package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	session "github.com/agentsession/session"
)

// A tool call waits for a person's approval: the host suspends it, the
// process ends, and another process decides and resumes it. The model
// never sees the call as failed.
func ExampleSession_Suspend() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "sessions")

	// Process 1: the model asks to deploy; the host pauses the call.
	store, _ := session.OpenFileStore(root, nil)
	s, _ := session.Create(ctx, store, &session.CreateOptions{ID: "user:42"})
	s.SaveTurn(ctx, []*session.Message{
		session.UserText("Deploy v2."),
		session.Assistant(session.ToolCall("call_1", "deploy", json.RawMessage(`{"version":"v2"}`))),
	}, nil)
	s.Suspend(ctx, &session.Suspension{
		Calls: []session.SuspendedCall{{CallID: "call_1", Prompt: "Deploy v2 to production?", Approval: true}},
		State: json.RawMessage(`{"ticket":"OPS-7"}`),
	})
	s.Close()
	store.Close()

	// Process 2: a person approves; the tool runs; the agent goes on.
	store, _ = session.OpenFileStore(root, nil)
	defer store.Close()
	s, _ = session.Open(ctx, store, "user:42")
	v := s.Suspended()
	fmt.Println("waiting:", v.Calls[0].Name, "-", v.Calls[0].Prompt, string(v.State))
	s.Decide(ctx, session.Decision{CallID: "call_1", Approved: true, By: "alice"})
	s.Append(ctx, session.ToolResult("call_1", "deploy", "deployed v2"))
	msgs, _ := s.Messages(ctx)
	last := msgs[len(msgs)-1]
	fmt.Println(last.Role, last.Text(), s.Suspended() == nil)
	// Output:
	// waiting: deploy - Deploy v2 to production? {"ticket":"OPS-7"}
	// toolResult deployed v2 true
}

// EndSuspension with Rewind gives a suspended attempt up as if it had not
// happened: the leaf goes back to before the turn, and the attempt stays
// on a branch of its own, which Verify accepts.
func ExampleSession_EndSuspension() {
	ctx := context.Background()
	s, _ := session.Create(ctx, session.NewMemoryStore(), nil)
	s.SaveTurn(ctx, []*session.Message{session.UserText("hi"), session.AssistantText("hello")}, nil)
	before := s.LeafID()
	s.SaveTurn(ctx, []*session.Message{
		session.UserText("Delete the logs."),
		session.Assistant(session.ToolCall("call_9", "rm", json.RawMessage(`{"path":"logs"}`))),
	}, nil)
	s.Suspend(ctx, nil) // every pending call
	s.EndSuspension(ctx, &session.EndSuspensionOptions{Outcome: session.SuspensionCancelled, Reason: "denied", Rewind: true})
	fmt.Println(s.LeafID() == before, len(s.Verify()))
	// Output:
	// true 0
}

// SaveTurnWith keeps what a host knows of a turn: its id, its usage
// (even when no assistant message can hold it) and its metadata.
func ExampleSession_SaveTurnWith() {
	ctx := context.Background()
	s, _ := session.Create(ctx, session.NewMemoryStore(), nil)
	s.SaveTurnWith(ctx, []*session.Message{session.UserText("Summarize the file.")}, &session.TurnOptions{
		ID:       "turn-1",
		Usage:    &session.Usage{Input: 1200, Output: 0, TotalTokens: 1200},
		Metadata: json.RawMessage(`{"latencyMs":840}`),
	})
	r := s.TurnRecords()[0]
	fmt.Println(r.ID, r.Usage.Input, r.Counted, string(r.Metadata), s.Usage().Input)
	// Output:
	// turn-1 1200 true {"latencyMs":840} 1200
}

// A FileStore cuts strings over MaxStringChars as pi does; OnTruncate
// makes each cut visible to the host (RefuseTruncation refuses instead).
func ExampleFileStoreOptions_onTruncate() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	store, _ := session.OpenFileStore(dir, &session.FileStoreOptions{
		MaxStringChars: 100,
		OnTruncate: func(t session.Truncation) {
			fmt.Printf("session %s: %d string(s) cut, %d characters dropped\n", t.Session, t.Strings, t.Dropped)
		},
	})
	defer store.Close()
	s, _ := session.Create(ctx, store, &session.CreateOptions{ID: "chat 7"})
	s.Append(ctx, session.UserText(string(make([]byte, 1000))))
	// Output:
	// session chat 7: 1 string(s) cut, 947 characters dropped
}
