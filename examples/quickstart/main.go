// Quickstart builds a small branched conversation with a tool call, in
// memory, and prints its tree and the context a model would see.
//
//	go run ./examples/quickstart
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
	s := session.New() // in memory; session.Create(ctx, store, opts) for any Store

	must(s.Append(ctx, session.UserText("What files are in src?")))
	must(s.Append(ctx, session.Assistant(
		session.Text("Let me look."),
		session.ToolCall("call_1", "bash", json.RawMessage(`{"command":"ls src"}`)),
	).WithModel("anthropic-messages", "anthropic", "claude-sonnet-4-5")))
	must(s.Append(ctx, session.ToolResult("call_1", "bash", "main.go\nutil.go\n")))
	answer := must(s.Append(ctx, reply("There are two files: main.go and util.go.")))
	check(s.Label(ctx, answer.ID(), "listed"))

	// Ask one thing, then go back to the answer and ask another: two branches.
	must(s.Append(ctx, session.UserText("Which one is larger?")))
	other := must(s.Append(ctx, reply("util.go, by a few lines.")))
	check(s.Branch(ctx, answer.ID()))
	must(s.Append(ctx, session.UserText("Summarize main.go instead.")))
	must(s.Append(ctx, reply("It starts the server and wires the handlers.")))

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

	c := s.Context()
	fmt.Printf("\nContext at the leaf (model %s, %d messages):\n", c.Model, len(c.Messages))
	for _, m := range c.Messages {
		fmt.Printf("  %-10s %s\n", m.Role, oneLine(m))
	}

	old, err := s.ContextAt(other.ID())
	check(err)
	fmt.Printf("\nThe other branch still holds %d messages, ending with %q.\n",
		len(old.Messages), old.Messages[len(old.Messages)-1].Text())
}

func reply(text string) *session.Message {
	return session.AssistantText(text).WithModel("anthropic-messages", "anthropic", "claude-sonnet-4-5")
}

func describe(e session.Entry) string {
	if e.Type() != session.TypeMessage {
		return e.Type()
	}
	m, err := e.Message()
	check(err)
	return m.Role + ": " + oneLine(m)
}

func oneLine(m *session.Message) string {
	text := strings.ReplaceAll(strings.TrimSpace(m.Text()), "\n", " ")
	for _, call := range m.ToolCalls() {
		text += fmt.Sprintf(" → %s %s", call.Name, call.Arguments)
	}
	return strings.TrimSpace(text)
}

func must(e session.Entry, err error) session.Entry {
	check(err)
	return e
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
