package session_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/deepnoodle-ai/dive"
	"github.com/deepnoodle-ai/dive/llm"

	session "github.com/agentsession/session/integrations/dive"
)

// greeter is a stand-in for a real model (anthropic.New() ...).
type greeter struct{}

func (greeter) Name() string { return "greeter" }
func (greeter) Generate(ctx context.Context, opts ...llm.Option) (*llm.Response, error) {
	cfg := &llm.Config{}
	for _, o := range opts {
		o(cfg)
	}
	last := cfg.Messages[len(cfg.Messages)-1].Text()
	return &llm.Response{
		Role: llm.Assistant, Type: "message", StopReason: "stop",
		Content: []llm.Content{&llm.TextContent{Text: fmt.Sprintf("You said %q (message %d).", last, len(cfg.Messages))}},
		Usage:   llm.Usage{InputTokens: 12, OutputTokens: 8},
	}, nil
}

// A Dive agent keeps its conversation in agentsession: the import path of
// the session package is the only change to a Dive program.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "dive-sessions")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	store, err := session.NewFileStore(dir) // <dir>/<id>.jsonl, in pi's format
	if err != nil {
		log.Fatal(err)
	}
	sess, err := store.Open(ctx, "user:42")
	if err != nil {
		log.Fatal(err)
	}
	agent, err := dive.NewAgent(dive.AgentOptions{Model: greeter{}, Session: sess})
	if err != nil {
		log.Fatal(err)
	}
	for _, input := range []string{"Hello", "What did I say?"} {
		resp, err := agent.CreateResponse(ctx, dive.WithInput(input))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(resp.OutputText())
	}
	store.Close()

	// Another process (here, a new store) reopens the conversation.
	store, err = session.NewFileStore(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	sess, err = store.Open(ctx, "user:42")
	if err != nil {
		log.Fatal(err)
	}
	msgs, _ := sess.Messages(ctx)
	fmt.Println(len(msgs), "messages,", sess.EventCount(), "turns,", sess.TotalUsage().InputTokens, "input tokens")

	// The same session, as agentsession sees it.
	findings := sess.Unwrap().Verify()
	fmt.Println(len(findings), "findings;", sess.Unwrap().Turns(), "user turns")

	// Output:
	// You said "Hello" (message 1).
	// You said "What did I say?" (message 3).
	// 4 messages, 2 turns, 24 input tokens
	// 0 findings; 2 user turns
}

// approver stands in for a model that asks for the approve tool, then
// answers once it has its result.
type approver struct{}

func (approver) Name() string { return "approver" }
func (approver) Generate(ctx context.Context, opts ...llm.Option) (*llm.Response, error) {
	cfg := &llm.Config{}
	for _, o := range opts {
		o(cfg)
	}
	resp := &llm.Response{Role: llm.Assistant, Type: "message", StopReason: "stop"}
	if last := cfg.Messages[len(cfg.Messages)-1]; last.Text() == "deploy" {
		resp.StopReason = "tool_use"
		resp.Content = []llm.Content{&llm.ToolUseContent{ID: "call_1", Name: "approve", Input: []byte(`{"what":"deploy"}`)}}
	} else {
		resp.Content = []llm.Content{&llm.TextContent{Text: "Deployed."}}
	}
	return resp, nil
}

// A tool suspends the turn until a person approves; whoever holds the
// approval (another process, another machine on PostgreSQL) resumes it
// from the session alone.
func Example_suspendAndResume() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "dive-sessions")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	type request struct {
		What string `json:"what"`
	}
	approve := dive.FuncTool("approve", "Ask a person to approve.",
		func(ctx context.Context, in *request) (*dive.ToolResult, error) {
			return dive.NewSuspendResult("Approve the "+in.What+"?", nil), nil
		})

	store, _ := session.NewFileStore(dir)
	sess, _ := store.Open(ctx, "ops")
	agent, _ := dive.NewAgent(dive.AgentOptions{Model: approver{}, Tools: []dive.Tool{approve}, Session: sess})
	resp, _ := agent.CreateResponse(ctx, dive.WithInput("deploy"))
	fmt.Println(resp.Status, resp.Suspension.PendingToolCalls[0].Prompt)
	store.Close()

	// Later, elsewhere: the suspension is in the session.
	store, _ = session.NewFileStore(dir)
	defer store.Close()
	sess, _ = store.Open(ctx, "ops")
	fmt.Println("suspended:", sess.IsSuspended(), sess.LoadSuspension().PendingToolCalls[0].ID)
	agent, _ = dive.NewAgent(dive.AgentOptions{Model: approver{}, Tools: []dive.Tool{approve}, Session: sess})
	resp, err = agent.CreateResponse(ctx, dive.WithToolResults(map[string]*dive.ToolResult{
		"call_1": dive.NewToolResultText("approved by alice"),
	}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Status, resp.OutputText(), "suspended:", sess.IsSuspended())

	// Output:
	// suspended Approve the deploy?
	// suspended: true call_1
	// completed Deployed. suspended: false
}

// A Dive user who switches to this package finds the sessions Dive's own
// FileStore wrote: List shows them, marked, and Open takes one in.
func ExampleFileStore_ImportOnOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "dive-sessions")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// A session file as Dive's FileStore writes it.
	dive := `{"line_type":"header","data":{"id":"old-chat","title":"Fix the build","created_at":"2026-01-02T10:00:00Z","updated_at":"2026-01-02T10:00:00Z"}}
{"line_type":"event","data":{"id":"evt-1","type":"turn","timestamp":"2026-01-02T10:00:05Z","messages":[{"role":"user","content":[{"type":"text","text":"why does the build fail?"}]},{"role":"assistant","content":[{"type":"text","text":"a missing import"}]}]}}
`
	if err := os.WriteFile(dir+"/old-chat.jsonl", []byte(dive), 0o644); err != nil {
		log.Fatal(err)
	}
	store, err := session.NewFileStore(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	list, err := store.List(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range list.Sessions {
		fmt.Printf("%s %q, %d event(s), Dive's file: %v\n", s.ID, s.Title, s.EventCount, s.DiveFile != "")
	}
	store.ImportOnOpen(true)
	sess, err := store.Open(ctx, "old-chat")
	if err != nil {
		log.Fatal(err)
	}
	msgs, err := sess.Messages(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(msgs), "messages;", "Dive's file kept:", fileExists(dir+"/old-chat.jsonl.dive"))
	// Output:
	// old-chat "Fix the build", 1 event(s), Dive's file: true
	// 2 messages; Dive's file kept: true
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
