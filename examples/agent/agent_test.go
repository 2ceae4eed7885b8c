package main

// How a host unit-tests its agent: against a MemoryStore and a scripted
// model, with no network and no files. Each test saves through the agent,
// then opens the session again from the store and checks what was kept.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/anthropic"
)

// recording wraps a model and keeps the requests it was sent.
type recording struct {
	Model
	reqs []*anthropic.Request
}

func (r *recording) Generate(ctx context.Context, req *anthropic.Request) (*session.Message, error) {
	r.reqs = append(r.reqs, req)
	return r.Model.Generate(ctx, req)
}

func newAgent(t *testing.T, def session.Conversation, window int64) (*Agent, *recording) {
	t.Helper()
	m := &recording{Model: &scriptedModel{name: "claude-sonnet-4-5"}}
	return NewAgent(Options{
		Model: m, Name: "claude-sonnet-4-5", Tools: tools(project), Session: def,
		ContextWindow: window, ReserveTokens: window / 5,
	}), m
}

func create(t *testing.T, store session.Store) *session.Session {
	t.Helper()
	s, err := session.Create(context.Background(), store, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// stored opens the session again from the store and returns what the
// model would be sent, as "role:text" lines.
func stored(t *testing.T, store session.Store, id string) []string {
	t.Helper()
	s, err := session.Open(context.Background(), store, id)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Messages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		line := m.Role + ":" + firstLine(m.Text())
		for _, c := range m.ToolCalls() {
			line += " " + c.Name
		}
		out = append(out, line)
	}
	return out
}

func TestRunSavesTheTurn(t *testing.T) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	s := create(t, store)
	agent, _ := newAgent(t, s, 0)

	res, err := agent.Run(ctx, "What files are in the project?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, "go.mod") {
		t.Errorf("answer %q does not use the tool results", res.Text)
	}
	want := []string{
		"user:What files are in the project?",
		"assistant:Let me look. ls cat",
		"toolResult:README.md  go.mod  main.go",
		"toolResult:module example.com/hello",
		"assistant:" + res.Text,
	}
	if got := stored(t, store, s.ID()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if u := s.Usage(); u.Input == 0 || u.Output == 0 {
		t.Errorf("usage not recorded: %+v", u)
	}
}

func TestWithSessionOverridesTheDefault(t *testing.T) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	def, other := create(t, store), create(t, store)
	agent, _ := newAgent(t, def, 0)

	if _, err := agent.Run(ctx, "add 1 2", WithSession(other)); err != nil {
		t.Fatal(err)
	}
	if got := stored(t, store, def.ID()); len(got) != 0 {
		t.Errorf("the default session got %v", got)
	}
	if got := stored(t, store, other.ID()); len(got) != 4 || got[2] != "toolResult:3" {
		t.Errorf("the overriding session holds %v", got)
	}
	// The next call without the option is back on the default.
	if _, err := agent.Run(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	if got := stored(t, store, def.ID()); len(got) != 2 {
		t.Errorf("the default session holds %v", got)
	}
}

func TestStatelessAgent(t *testing.T) {
	ctx := context.Background()
	agent, m := newAgent(t, nil, 0)
	for _, input := range []string{"hello", "hello again"} {
		if _, err := agent.Run(ctx, input); err != nil {
			t.Fatal(err)
		}
	}
	if last := m.reqs[len(m.reqs)-1]; len(last.Messages) != 1 {
		t.Errorf("a stateless call sent %d messages, want only its own", len(last.Messages))
	}
}

// countingConversation is a host's test double: it wraps a session and
// counts the compactions, implementing all of session.Conversation.
type countingConversation struct {
	session.Conversation
	compactions int
}

func (c *countingConversation) Compact(ctx context.Context, sum session.Summarizer, opts *session.CompactionOptions) (*session.CompactionResult, error) {
	c.compactions++
	return c.Conversation.Compact(ctx, sum, opts)
}

func TestAutoCompaction(t *testing.T) {
	for _, double := range []bool{false, true} {
		t.Run(fmt.Sprintf("double=%v", double), func(t *testing.T) { testAutoCompaction(t, double) })
	}
}

// testAutoCompaction: the agent compacts when the window fills, on a
// Session and on a test double alike (the agent holds a Conversation,
// which has NeedsCompaction and Compact: no type assertion to lose).
func testAutoCompaction(t *testing.T, double bool) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	s := create(t, store)
	var conv session.Conversation = s
	counter := &countingConversation{Conversation: s}
	if double {
		conv = counter
	}
	agent, m := newAgent(t, conv, 1500)
	compacted := false
	for _, input := range []string{"read README.md", "read main.go", "read go.mod", "read README.md", "bye"} {
		res, err := agent.Run(ctx, input)
		if err != nil {
			t.Fatal(err)
		}
		compacted = compacted || res.Compacted > 0
	}
	if !compacted {
		t.Fatal("the context never outgrew a 1,500-token window")
	}
	if double && counter.compactions == 0 {
		t.Fatal("the test double's Compact was never called")
	}
	got := stored(t, store, s.ID())
	if !strings.HasPrefix(got[0], "compactionSummary:") {
		t.Errorf("the context after compaction starts with %q", got[0])
	}
	// What the model was sent last starts with the summary, as user text.
	first := m.reqs[len(m.reqs)-1].Messages[0]
	if first.Role != "user" || !strings.Contains(first.Content[0].Text, "<summary>") {
		t.Errorf("the last request starts with %+v", first)
	}
}

func TestModelFailureSavesNothing(t *testing.T) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	s := create(t, store)
	agent := NewAgent(Options{Model: failing{}, Session: s})
	if _, err := agent.Run(ctx, "hello"); err == nil {
		t.Fatal("no error")
	}
	if got := stored(t, store, s.ID()); len(got) != 0 {
		t.Errorf("a failed call left %v", got)
	}
}

type failing struct{}

func (failing) Generate(context.Context, *anthropic.Request) (*session.Message, error) {
	return nil, errors.New("model down")
}

// flushCounting counts the Flush calls of the Conversation it wraps.
type flushCounting struct {
	session.Conversation
	flushes int
}

func (c *flushCounting) Flush(ctx context.Context) error {
	c.flushes++
	return c.Conversation.Flush(ctx)
}

// TestRunFlushesEachTurn: the agent ends each turn with Flush, which a
// FileStore's default SyncOnFlush needs to make the turn durable; the
// agent holds only a Conversation, which has it.
func TestRunFlushesEachTurn(t *testing.T) {
	ctx := context.Background()
	store, err := session.OpenFileStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := create(t, store)
	conv := &flushCounting{Conversation: s}
	agent, _ := newAgent(t, conv, 0)
	for i, input := range []string{"read README.md", "bye"} {
		if _, err := agent.Run(ctx, input); err != nil {
			t.Fatal(err)
		}
		if conv.flushes != i+1 {
			t.Fatalf("after %d turns the agent flushed %d times, want once a turn", i+1, conv.flushes)
		}
	}
}

// TestNilSessionIsAnError: a nil *Session given as the agent's session
// is a non-nil Conversation; the call fails with ErrNilSession, and
// nothing panics.
func TestNilSessionIsAnError(t *testing.T) {
	var s *session.Session
	agent, _ := newAgent(t, s, 1500)
	if _, err := agent.Run(context.Background(), "hello"); !errors.Is(err, session.ErrNilSession) {
		t.Fatalf("Run with a nil *Session = %v, want ErrNilSession", err)
	}
}
