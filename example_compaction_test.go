package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	session "github.com/agentsession/session"
)

// exampleTurns appends n turns of an agent reading a file.
func exampleTurns(s *session.Session, from, n int) {
	ctx := context.Background()
	for k := from; k < from+n; k++ {
		call := fmt.Sprint("call_", k)
		s.SaveTurn(ctx, []*session.Message{
			session.UserText(fmt.Sprintf("Step %d", k)),
			session.Assistant(session.ToolCall(call, "read", json.RawMessage(fmt.Sprintf(`{"path":"f%d.go"}`, k%3)))),
			session.ToolResult(call, "read", strings.Repeat("code ", 200)),
			session.AssistantText(fmt.Sprintf("Done %d", k)),
		}, nil)
	}
}

// Compact when the context outgrows the model's window: the history is
// summarized (here by the offline summarizer; a host passes its model)
// and the recent turns are kept as they are.
func ExampleSession_Compact() {
	ctx := context.Background()
	s := session.New()
	exampleTurns(s, 1, 30)

	opts := &session.CompactionOptions{ContextWindow: 8000, ReserveTokens: 1000, KeepRecentTokens: 2000}
	fmt.Println("needs compaction:", s.NeedsCompaction(opts))
	res, _ := s.Compact(ctx, session.ExtractiveSummarizer{}, opts)
	fmt.Println("summarized:", len(res.Plan.Summarize), "messages, split turn:", res.Plan.SplitTurn)
	fmt.Println("files read:", res.Plan.Files.Read)

	c := s.Context()
	fmt.Println("first:", c.Messages[0].Role)
	fmt.Println("then:", c.Messages[1].Text())
	fmt.Println("needs compaction:", s.NeedsCompaction(opts))
	// Output:
	// needs compaction: true
	// summarized: 88 messages, split turn: false
	// files read: [f0.go f1.go f2.go]
	// first: compactionSummary
	// then: Step 23
	// needs compaction: false
}

// Prune rewrites the log without what the compactions summarized, so a
// long-lived session's file stops growing; no context changes.
func ExampleSession_Prune() {
	ctx := context.Background()
	s := session.New()
	exampleTurns(s, 1, 30)
	s.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{KeepRecentTokens: 2000})
	before := len(s.Context().Messages)

	res, _ := s.Prune(ctx, nil)
	fmt.Println("dropped:", res.Dropped, "kept:", res.Kept)
	fmt.Println("same context:", len(s.Context().Messages) == before)
	// Output:
	// dropped: 88 kept: 33
	// same context: true
}

// A checkpoint names a point to come back to; Rewind moves the leaf
// there, and the abandoned path stays reachable.
func ExampleSession_Rewind() {
	ctx := context.Background()
	s := session.New()
	exampleTurns(s, 1, 1)
	s.Checkpoint(ctx, "tests pass")
	exampleTurns(s, 2, 2)

	for _, cp := range s.Checkpoints() {
		fmt.Println("checkpoint:", cp.Name)
	}
	res, _ := s.Rewind(ctx, "tests pass")
	fmt.Println("entries left behind:", res.Left)
	fmt.Println("last message:", s.Context().Messages[3].Text())

	s.Branch(ctx, res.From) // redo
	fmt.Println("after redo:", len(s.Context().Messages), "messages")
	// Output:
	// checkpoint: tests pass
	// entries left behind: 9
	// last message: Done 1
	// after redo: 12 messages
}

// SummarizeBranch moves to another point of the tree and leaves a summary
// of the path it abandons, with the files read and changed there.
func ExampleSession_SummarizeBranch() {
	ctx := context.Background()
	s := session.New()
	exampleTurns(s, 1, 1)
	back := s.LeafID()
	exampleTurns(s, 2, 2)

	e, _ := s.SummarizeBranch(ctx, back, session.ExtractiveSummarizer{}, nil)
	var b session.BranchSummary
	e.Decode(&b)
	fmt.Println(string(b.Details))
	c := s.Context()
	fmt.Println(len(c.Messages), "messages, the last:", c.Messages[len(c.Messages)-1].Role)
	// Output:
	// {"readFiles":["f0.go","f2.go"],"modifiedFiles":[]}
	// 5 messages, the last: branchSummary
}

// Fork starts a new session from the path up to an entry; the source is
// not changed, and lists the fork among its children.
func ExampleSession_Fork() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	s, _ := session.Create(ctx, store, &session.CreateOptions{Title: "Refactor"})
	exampleTurns(s, 1, 2)
	path, _ := s.PathTo(s.LeafID())
	at := path[3].ID() // the end of the first turn

	f, _ := s.Fork(ctx, &session.ForkOptions{At: at})
	fmt.Println(f.Title(), "-", len(f.Context().Messages), "messages")
	fmt.Println("parent is the source:", f.Header().ParentSession == s.ID())
	children, _ := session.ListChildren(ctx, store, s.ID())
	fmt.Println("children:", len(children))
	// Output:
	// Refactor (fork) - 4 messages
	// parent is the source: true
	// children: 1
}

// A subagent's session names the session of the agent that started it;
// ListChildren finds them, forks included.
func ExampleListChildren() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	main, _ := session.Create(ctx, store, &session.CreateOptions{ID: "main", Title: "Ship the release"})
	for _, task := range []string{"Write the changelog", "Run the benchmarks"} {
		sub, _ := session.Create(ctx, store, &session.CreateOptions{Title: task, ParentSession: main.ID()})
		sub.Append(ctx, session.UserText(task))
	}
	children, _ := session.ListChildren(ctx, store, "main")
	for _, c := range children {
		fmt.Println(c.Title)
	}
	// Unordered output:
	// Write the changelog
	// Run the benchmarks
}
