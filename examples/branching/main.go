// Branching goes back in time in a conversation, in memory: it sets a
// checkpoint, tries an approach, rewinds to the checkpoint, leaves the
// failed attempt behind as a branch summary (made by the offline
// summarizer), forks the session into a new one, and prints the tree.
//
//	go run ./examples/branching
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"

	session "github.com/agentsession/session"
)

func main() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/src/shop", Title: "Speed up checkout"})
	check(err)

	turn(ctx, s, "Why is checkout slow?", "read", "checkout/total.go", "It recomputes prices for every line item.")
	cp, err := s.Checkpoint(ctx, "diagnosed")
	check(err)
	fmt.Printf("checkpoint %q at entry %s\n", cp.Name, cp.EntryID)

	// An attempt that goes wrong.
	turn(ctx, s, "Cache the prices in a global map.", "edit", "checkout/total.go", "Done, prices are cached globally.")
	turn(ctx, s, "Tests fail under concurrency now.", "read", "checkout/total_test.go", "The global map races; this needs a lock.")
	attempt := s.LeafID()

	// Back to the checkpoint: nothing is deleted, the attempt stays reachable.
	rw, err := s.Rewind(ctx, "diagnosed")
	check(err)
	fmt.Printf("rewound to %s: %d entries left the path (redo: Branch to %s)\n", rw.To, rw.Left, rw.From)

	// Going back to the attempt's end and leaving it again, with a summary
	// of what was tried, so the model knows what not to repeat.
	check(s.Branch(ctx, attempt))
	e, err := s.SummarizeBranch(ctx, cp.EntryID, session.ExtractiveSummarizer{}, nil)
	check(err)
	var bs session.BranchSummary
	check(e.Decode(&bs))
	fmt.Printf("branch summary %s, files: %s\n", e.ID(), bs.Details)

	turn(ctx, s, "Compute prices once per order instead.", "edit", "checkout/total.go", "Prices are now computed once per order; tests pass.")

	// A fork: a new session holding the path to the leaf, the source
	// untouched. Its header names the source as parent.
	f, err := s.Fork(ctx, &session.ForkOptions{CopyLabels: true})
	check(err)
	children, err := session.ListChildren(ctx, store, s.ID())
	check(err)
	fmt.Printf("forked %q into %q (%d entries); children of the source: %d\n\n", s.Title(), f.Title(), f.Len(), len(children))

	fmt.Println("Tree:")
	for n := range s.Tree() {
		line := strings.Repeat("  ", n.Depth) + n.Entry.ID() + " " + describe(n.Entry)
		if n.Label != "" {
			line += "  [" + n.Label + "]"
		}
		if n.Leaf {
			line += "  <- leaf"
		}
		fmt.Println(line)
	}

	fmt.Println("\nWhat the model sees now:")
	for _, m := range s.Context().Messages {
		fmt.Printf("  %-14s %s\n", m.Role, oneLine(m))
	}
}

// turn appends a request, a tool call and its result, and the answer.
func turn(ctx context.Context, s *session.Session, ask, tool, file, answer string) {
	args, _ := json.Marshal(map[string]string{"path": file})
	id := fmt.Sprintf("call_%d", s.Len())
	check(s.SaveTurn(ctx, []*session.Message{
		session.UserText(ask),
		session.Assistant(session.ToolCall(id, tool, args)).WithModel("anthropic-messages", "anthropic", "claude-sonnet-4-5"),
		session.ToolResult(id, tool, "ok"),
		session.AssistantText(answer).WithModel("anthropic-messages", "anthropic", "claude-sonnet-4-5"),
	}, nil))
}

func describe(e session.Entry) string {
	switch e.Type() {
	case session.TypeMessage:
		m, err := e.Message()
		check(err)
		return m.Role + ": " + oneLine(m)
	case session.TypeBranchSummary:
		return "branch summary"
	case session.TypeLabel:
		return "label"
	}
	return e.Type()
}

// oneLine shows a message in a line: its text, a summary's first line,
// the tool calls.
func oneLine(m *session.Message) string {
	text := firstLine(m.Text())
	if m.Summary != "" {
		text = firstLine(m.Summary)
	}
	for _, c := range m.ToolCalls() {
		text += fmt.Sprintf("→ %s %s", c.Name, c.Arguments)
	}
	return text
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
