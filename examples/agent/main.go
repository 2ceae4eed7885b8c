// Agent is a small agent loop on agentsession: a scripted model that
// calls tools (two at once), tools that run, a default session with a
// per-call WithSession override, a stateless call, and auto-compaction
// when a small context window fills up. It prints the transcripts, the
// tree, the usage totals and what an Observer saw.
//
//	go run ./examples/agent
package main

import (
	"context"
	"fmt"
	"log"
	"strings"
	"sync"

	session "github.com/agentsession/session"
)

var project = map[string]string{
	"go.mod":    "module example.com/hello\n\ngo 1.25\n",
	"main.go":   "package main\n\nfunc main() { println(\"hello\") }\n",
	"README.md": "# hello\n\n" + strings.Repeat("A tiny program that says hello, kept here to fill the context window. ", 60),
}

func main() {
	ctx := context.Background()

	// The store: in memory here (session.OpenFileStore for files), wrapped
	// so that an Observer counts what happens.
	var mu sync.Mutex // an Observer may be called from any goroutine
	counts := map[session.Op]int{}
	store := session.Observe(session.NewMemoryStore(), session.ObserverFunc(func(_ context.Context, e session.Event) {
		mu.Lock()
		counts[e.Op]++
		mu.Unlock()
	}))
	primary, err := session.Create(ctx, store, &session.CreateOptions{Title: "main", Cwd: "/src/hello"})
	check(err)
	scratch, err := session.Create(ctx, store, &session.CreateOptions{Title: "scratch", Cwd: "/src/hello"})
	check(err)

	model := &scriptedModel{name: "claude-sonnet-4-5"}
	agent := NewAgent(Options{
		Model: model, Name: model.name, Tools: tools(project),
		System:  "You are a coding agent working in /src/hello.",
		Session: primary, // the default session
		// A tiny window, so that the conversation outgrows it.
		ContextWindow: 2000, ReserveTokens: 400,
	})

	run := func(input string, opts ...CallOption) {
		res, err := agent.Run(ctx, input, opts...)
		check(err)
		if len(opts) > 0 {
			fmt.Printf("> %s   (this call only: WithSession(scratch))\n", input)
		} else {
			fmt.Printf("> %s\n", input)
		}
		if res.Compacted > 0 {
			fmt.Printf("  (the context outgrew the window: %d messages were summarized first)\n", res.Compacted)
		}
		fmt.Printf("  %s\n", res.Text)
	}
	fmt.Println("Calls to the agent (its model is scripted, offline):")
	run("What files are in the project?")
	run("add 2 40", WithSession(scratch)) // this call only: the scratch session
	run("read README.md")
	run("read main.go")
	cp, err := primary.Checkpoint(ctx, "before-missing")
	check(err)
	run("read missing.go")
	// That went nowhere: go back to the checkpoint. The failed attempt
	// stays in the tree as a branch the model no longer sees.
	rw, err := primary.Rewind(ctx, cp.Name)
	check(err)
	fmt.Printf("  (rewound to checkpoint %q: the attempt, %d entries, stays in the tree on a branch of its own)\n", cp.Name, rw.Left)
	run("Thanks, that is all.")

	// No Session anywhere: the agent remembers nothing between calls.
	stateless := NewAgent(Options{Model: model, Name: model.name, Tools: tools(project)})
	res, err := stateless.Run(ctx, "Do you remember me?")
	check(err)
	fmt.Printf("> Do you remember me? (stateless)\n  %s\n", res.Text)

	fmt.Println("\nTranscript of main, as the model sees it now:")
	msgs, err := primary.Messages(ctx)
	check(err)
	for _, m := range msgs {
		fmt.Printf("  %-18s %s\n", m.Role, oneLine(m))
	}
	fmt.Println("\nTranscript of scratch:")
	msgs, err = scratch.Messages(ctx)
	check(err)
	for _, m := range msgs {
		fmt.Printf("  %-18s %s\n", m.Role, oneLine(m))
	}

	fmt.Println("\nTree of main (+ starts a branch):")
	indent := map[int]int{}  // by depth: the indent of the next node there
	branch := map[int]bool{} // by depth: the next node there starts a branch
	for n := range primary.Tree() {
		in, prefix := indent[n.Depth], strings.Repeat("  ", indent[n.Depth])
		if branch[n.Depth] {
			prefix = strings.Repeat("  ", in-1) + "+ "
		}
		indent[n.Depth+1], branch[n.Depth+1] = in, n.Children > 1
		if n.Children > 1 {
			indent[n.Depth+1] = in + 1
		}
		line := prefix + n.Entry.ID() + " " + describe(n.Entry)
		if n.Label != "" {
			line += "  [" + n.Label + "]"
		}
		if n.Leaf {
			line += "  <- leaf"
		}
		fmt.Println(line)
	}

	bu, err := primary.UsageAt(primary.LeafID()) // the current branch
	check(err)
	u, su := primary.Usage(), scratch.Usage()
	fmt.Printf("\nUsage, in / out tokens: main %d / %d on all branches, %d / %d on the current one; scratch %d / %d.\n",
		u.Input, u.Output, bu.Input, bu.Output, su.Input, su.Output)
	fmt.Printf("The model got %d requests, %d bytes of JSON in all.\n", model.calls, model.sent)
	fmt.Printf("The observer saw create ×%d, append ×%d, compact ×%d, rewind ×%d.\n",
		counts[session.OpCreate], counts[session.OpAppend], counts[session.OpCompact], counts[session.OpRewind])
}

func describe(e session.Entry) string {
	if e.Type() != session.TypeMessage {
		return "(" + e.Type() + ")"
	}
	m, err := e.Message()
	check(err)
	return m.Role + ": " + oneLine(m)
}

func oneLine(m *session.Message) string {
	text := strings.ReplaceAll(strings.TrimSpace(m.Text()), "\n", " ")
	for _, c := range m.ToolCalls() {
		text += fmt.Sprintf(" → %s %s", c.Name, c.Arguments)
	}
	text = strings.TrimSpace(text)
	if len(text) > 90 {
		text = text[:87] + "..."
	}
	return text
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
