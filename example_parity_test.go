package session_test

import (
	"context"
	"fmt"

	session "github.com/agentsession/session"
)

// Examples of what users of pi, ExAthena, Dive and Opal look for (see the
// README's compatibility notes).

func answer(text string) *session.Message {
	return session.Assistant(session.Text(text)).WithModel("anthropic-messages", "anthropic", "claude-sonnet-4-5")
}

// A deferred session reaches the store with its first reply: a session
// abandoned after its prompt leaves nothing behind, as in pi's CLI.
func ExampleCreateOptions_deferred() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	s, _ := session.Create(ctx, store, &session.CreateOptions{Deferred: true})
	s.Append(ctx, session.UserText("What does this repository do?"))
	page, _ := store.List(ctx, session.ListOptions{})
	fmt.Println("before the reply:", s.Persisted(), len(page.Sessions), "sessions listed")

	s.Append(ctx, answer("It keeps agent sessions."))
	page, _ = store.List(ctx, session.ListOptions{})
	fmt.Println("after the reply:", s.Persisted(), len(page.Sessions), "session listed")
	// Output:
	// before the reply: false 0 sessions listed
	// after the reply: true 1 session listed
}

// A checkpoint can name any entry of the session and carry the host's
// own record of the point; a fork or a rewind goes back to it by name.
func ExampleSession_CheckpointWith() {
	ctx := context.Background()
	s := session.New()
	first, _ := s.Append(ctx, session.UserText("Add a flag"))
	s.Append(ctx, answer("Added --verbose."))
	s.Append(ctx, session.UserText("Now the docs"))

	cp, _ := s.CheckpointWith(ctx, "flag-asked", &session.CheckpointOptions{
		At:       first.ID(),
		Metadata: map[string]string{"commit": "3f2a1c9"},
	})
	fmt.Println(cp.Name, string(cp.Metadata))

	f, _ := s.Fork(ctx, &session.ForkOptions{At: "flag-asked"})
	fmt.Println("the fork holds", len(f.Context().Messages), "message")
	// Output:
	// flag-asked {"commit":"3f2a1c9"}
	// the fork holds 1 message
}

// Resume gives what a host shows when it picks a session up again, in
// one call.
func ExampleSession_Resume() {
	ctx := context.Background()
	s := session.New()
	s.AppendModelChange(ctx, "anthropic", "claude-sonnet-4-5")
	s.Append(ctx, session.UserText("Fix the failing test"))
	s.Append(ctx, answer("Fixed: the fixture path was wrong."))
	s.Append(ctx, session.UserText("Thanks, and the lint?"))
	session.SetState(ctx, s, "branch", "fix/tests")

	v, _ := s.Resume(ctx)
	fmt.Println("last user:", v.LastUser.Text())
	fmt.Println("last assistant:", v.LastAssistant.Text())
	fmt.Println("answered:", v.AssistantAfterUser, "turns:", v.Turns, "state:", string(v.State["branch"]))
	// Output:
	// last user: Thanks, and the lint?
	// last assistant: Fixed: the fixture path was wrong.
	// answered: false turns: 2 state: "fix/tests"
}

// ReplayLastTurn takes back the reply to the last user message and hands
// the message back, for the model to answer again.
func ExampleSession_ReplayLastTurn() {
	ctx := context.Background()
	s := session.New()
	s.Append(ctx, session.UserText("Name a prime"))
	s.Append(ctx, answer("Nine."))

	r, _ := s.ReplayLastTurn(ctx)
	fmt.Println("replaying:", r.User.Text())
	s.Append(ctx, answer("Seven."))
	msgs, _ := s.Messages(ctx)
	fmt.Println(len(msgs), "messages, the last:", msgs[len(msgs)-1].Text())
	// Output:
	// replaying: Name a prime
	// 2 messages, the last: Seven.
}

// The model cascade: the turn's own choice, else the session's, else
// the host's default; Save keeps an explicit choice for later turns.
func ExampleSession_TurnSettings() {
	ctx := context.Background()
	s := session.New()
	def := &session.ModelRef{Provider: "anthropic", ModelID: "claude-sonnet-4-5"}
	ts, _ := s.TurnSettings(ctx, &session.TurnRequest{DefaultModel: def, DefaultThinkingLevel: "low"})
	fmt.Println(ts.Model.ModelID, ts.ModelSource, ts.ThinkingLevel, ts.ThinkingSource)

	s.TurnSettings(ctx, &session.TurnRequest{Model: &session.ModelRef{Provider: "openai", ModelID: "gpt-5"}, ThinkingLevel: "high", Save: true})
	ts, _ = s.TurnSettings(ctx, &session.TurnRequest{DefaultModel: def, DefaultThinkingLevel: "low"})
	fmt.Println(ts.Model.ModelID, ts.ModelSource, ts.ThinkingLevel, ts.ThinkingSource)
	// Output:
	// claude-sonnet-4-5 default low default
	// gpt-5 session high session
}

// ReplacePathSegment swaps a run of the conversation for a summary, on a
// new branch: what followed the run is copied after it, and the old path
// stays in the log.
func ExampleSession_ReplacePathSegment() {
	ctx := context.Background()
	s := session.New()
	es := make([]session.Entry, 0, 6)
	for _, m := range []*session.Message{
		session.UserText("Find the bug"), answer("Looking at main.go"),
		session.UserText("Try the parser"), answer("The parser drops the last line."),
		session.UserText("Fix it"), answer("Fixed."),
	} {
		e, _ := s.Append(ctx, m)
		es = append(es, e)
	}
	edit, _ := s.ReplacePathSegment(ctx, es[0].ID(), es[3].ID(), session.SegmentReplacement{
		Summary: "Found the bug: the parser dropped the last line.",
	})
	for _, m := range s.Context().Messages {
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}
	fmt.Println("replaced", len(edit.Replaced), "entries, copied", edit.Copied)
	// Output:
	// branchSummary: Found the bug: the parser dropped the last line.
	// user: Fix it
	// assistant: Fixed.
	// replaced 4 entries, copied 2
}

// Compaction can be due by message count as well as by tokens, as
// OpenCode compacts past about a hundred messages.
func ExampleCompactionOptions_maxMessages() {
	ctx := context.Background()
	s := session.New()
	opts := &session.CompactionOptions{MaxMessages: 10, KeepRecentMessages: 4}
	for i := range 6 {
		s.Append(ctx, session.UserText(fmt.Sprintf("question %d", i)))
		s.Append(ctx, answer(fmt.Sprintf("answer %d", i)))
	}
	fmt.Println("messages:", len(s.Context().Messages), "due:", s.NeedsCompaction(opts))
	s.Compact(ctx, session.ExtractiveSummarizer{}, opts)
	fmt.Println("messages:", len(s.Context().Messages), "due:", s.NeedsCompaction(opts))
	// Output:
	// messages: 12 due: true
	// messages: 5 due: false
}
