package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/deepnoodle-ai/dive"
	"github.com/deepnoodle-ai/dive/llm"

	as "github.com/agentsession/session"
	session "github.com/agentsession/session/integrations/dive"
)

// turnModel is a scripted llm.LLM: each Generate returns the next reply,
// and records the messages it was sent.
type turnModel struct {
	mu      sync.Mutex
	replies []reply
	sent    [][]*llm.Message
}

// reply is one scripted model reply: text, or tool calls.
type reply struct {
	text  string
	calls []*llm.ToolUseContent
	usage llm.Usage
}

func (m *turnModel) Name() string { return "turn-model" }

func (m *turnModel) Generate(ctx context.Context, opts ...llm.Option) (*llm.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cfg := &llm.Config{}
	for _, o := range opts {
		o(cfg)
	}
	sent := make([]*llm.Message, len(cfg.Messages))
	for i, msg := range cfg.Messages {
		sent[i] = msg.Copy()
	}
	m.sent = append(m.sent, sent)
	if len(m.replies) == 0 {
		return nil, fmt.Errorf("turnModel: call %d was not scripted", len(m.sent))
	}
	r := m.replies[0]
	m.replies = m.replies[1:]
	resp := &llm.Response{
		ID:         fmt.Sprintf("resp_%d", len(m.sent)),
		Model:      m.Name(),
		Role:       llm.Assistant,
		Type:       "message",
		StopReason: "stop",
		Usage:      r.usage,
	}
	if len(r.calls) > 0 {
		resp.StopReason = "tool_use"
		for _, c := range r.calls {
			resp.Content = append(resp.Content, c)
		}
	} else {
		resp.Content = []llm.Content{&llm.TextContent{Text: r.text}}
	}
	return resp, nil
}

// funcTool is a tool whose Call is a function.
type funcTool struct {
	name string
	call func(input any) (*dive.ToolResult, error)
}

func (t *funcTool) Name() string                       { return t.name }
func (t *funcTool) Description() string                { return "a tool for tests" }
func (t *funcTool) Schema() *dive.Schema               { return &dive.Schema{Type: dive.Object} }
func (t *funcTool) Annotations() *dive.ToolAnnotations { return nil }
func (t *funcTool) Call(ctx context.Context, input any) (*dive.ToolResult, error) {
	return t.call(input)
}

// deployTools are the tools of the cross-process test: approve suspends
// the turn (a human must approve), lookup answers at once.
func deployTools() []dive.Tool {
	return []dive.Tool{
		&funcTool{name: "approve", call: func(any) (*dive.ToolResult, error) {
			return dive.NewSuspendResultWithReason("Approve the deploy of v2?", dive.SuspendReasonAuth,
				map[string]any{"request": "deploy-v2"}), nil
		}},
		&funcTool{name: "lookup", call: func(any) (*dive.ToolResult, error) {
			return dive.NewToolResultText("v2 is built"), nil
		}},
	}
}

const (
	phaseEnv = "AGENTSESSION_DIVE_PHASE"
	dirEnv   = "AGENTSESSION_DIVE_DIR"
	chatID   = "chat 7"
)

// runPhase runs TestAgentCrossProcessChild in a child process of this
// test binary: another process, which opens the store from scratch.
func runPhase(t *testing.T, dir, phase string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestAgentCrossProcessChild$", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), phaseEnv+"="+phase, dirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestAgentCrossProcessChild") {
		t.Fatalf("phase %s in a child process: %v\n%s", phase, err, out)
	}
}

// TestAgentCrossProcessChild is the child's side of
// TestAgentSuspendResumeAcrossProcesses.
func TestAgentCrossProcessChild(t *testing.T) {
	phase := os.Getenv(phaseEnv)
	if phase == "" {
		t.Skip("run by TestAgentSuspendResumeAcrossProcesses in a child process")
	}
	ctx := context.Background()
	store, err := session.NewFileStore(os.Getenv(dirEnv))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sess, err := store.Open(ctx, chatID)
	if err != nil {
		t.Fatal(err)
	}
	switch phase {
	case "suspend":
		model := &turnModel{replies: []reply{
			{text: "Hello! What shall we do?", usage: llm.Usage{InputTokens: 10, OutputTokens: 5}},
			{calls: []*llm.ToolUseContent{
				{ID: "toolu_lookup", Name: "lookup", Input: json.RawMessage(`{"what":"v2"}`)},
				{ID: "toolu_approve", Name: "approve", Input: json.RawMessage(`{"version":"v2"}`)},
			}, usage: llm.Usage{InputTokens: 30, OutputTokens: 7}},
		}}
		agent, err := dive.NewAgent(dive.AgentOptions{Model: model, Tools: deployTools()})
		if err != nil {
			t.Fatal(err)
		}
		sess.SetTitle("Deploy v2")
		sess.SetMetadata("user", "alice")
		sess.SetMetadata("attempt", 1)
		resp, err := agent.CreateResponse(ctx, dive.WithInput("hi"), dive.WithSession(sess))
		if err != nil || resp.Status != dive.ResponseStatusCompleted {
			t.Fatalf("first turn: %v, %v", resp, err)
		}
		resp, err = agent.CreateResponse(ctx, dive.WithInput("deploy v2"), dive.WithSession(sess))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != dive.ResponseStatusSuspended || len(resp.Suspension.PendingToolCalls) != 1 {
			t.Fatalf("second turn: status %s, suspension %+v", resp.Status, resp.Suspension)
		}
	case "resume":
		st := sess.LoadSuspension()
		if st == nil || len(st.PendingToolCalls) != 1 || st.PendingToolCalls[0].ID != "toolu_approve" {
			t.Fatalf("LoadSuspension in the resuming process: %+v", st)
		}
		model := &turnModel{replies: []reply{
			{text: "Deployed v2.", usage: llm.Usage{InputTokens: 50, OutputTokens: 3}},
		}}
		agent, err := dive.NewAgent(dive.AgentOptions{Model: model, Tools: deployTools(), Session: sess})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := agent.CreateResponse(ctx, dive.WithToolResults(map[string]*dive.ToolResult{
			"toolu_approve": dive.NewToolResultText("approved by alice"),
		}))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != dive.ResponseStatusCompleted || resp.OutputText() != "Deployed v2." {
			t.Fatalf("resume: status %s, output %q", resp.Status, resp.OutputText())
		}
		// The model saw the whole turn, both results in one message.
		sent := model.sent[0]
		last := sent[len(sent)-1]
		if last.Role != llm.User || len(last.Content) != 2 {
			t.Fatalf("the resumed request ends with %s", mustJSON(t, last))
		}
	default:
		t.Fatalf("unknown phase %q", phase)
	}
}

// TestAgentSuspendResumeAcrossProcesses: a Dive agent's tool suspends a
// turn in one process; another process resumes it with the tool's result;
// this one reopens the session and checks what is stored, and that
// agentsession's Verify finds nothing wrong in the file.
func TestAgentSuspendResumeAcrossProcesses(t *testing.T) {
	if os.Getenv(phaseEnv) != "" {
		t.Skip("the child itself")
	}
	ctx := context.Background()
	dir := t.TempDir()

	runPhase(t, dir, "suspend")

	// Closed and reopened: the suspension is stored.
	func() {
		store, err := session.NewFileStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		sess, err := store.Open(ctx, chatID)
		if err != nil {
			t.Fatal(err)
		}
		if !sess.IsSuspended() {
			t.Fatal("not suspended after the suspending process exited")
		}
		st := sess.LoadSuspension()
		if len(st.PendingToolCalls) != 1 {
			t.Fatalf("pending: %s", mustJSON(t, st.PendingToolCalls))
		}
		p := st.PendingToolCalls[0]
		if p.ID != "toolu_approve" || p.Name != "approve" || p.Prompt != "Approve the deploy of v2?" ||
			p.Reason != dive.SuspendReasonAuth || p.Metadata["request"] != "deploy-v2" || string(p.Input) != `{"version":"v2"}` {
			t.Errorf("pending call: %s", mustJSON(t, p))
		}
		if len(st.CompletedToolCalls) != 1 || st.CompletedToolCalls[0].ID != "toolu_lookup" {
			t.Errorf("completed calls: %s", mustJSON(t, st.CompletedToolCalls))
		}
		if len(st.TurnMessages) != 3 {
			t.Errorf("TurnMessages: %s", mustJSON(t, st.TurnMessages))
		}
		if n := sess.EventCount(); n != 2 {
			t.Errorf("EventCount %d, want 2", n)
		}
	}()

	runPhase(t, dir, "resume")

	store, err := session.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sess, err := store.Open(ctx, chatID)
	if err != nil {
		t.Fatal(err)
	}
	if sess.IsSuspended() || sess.LoadSuspension() != nil {
		t.Fatal("still suspended after the resume")
	}
	msgs, err := sess.Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`user: hi`, `assistant: Hello! What shall we do?`,
		`user: deploy v2`, `assistant: tool_use lookup, tool_use approve`,
		`user: tool_result toolu_lookup "v2 is built", tool_result toolu_approve "approved by alice"`,
		`assistant: Deployed v2.`,
	}
	if got := describe(msgs); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages after the resume:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := sess.EventCount(); n != 2 {
		t.Errorf("EventCount %d, want 2 (the resumed turn replaced the suspended one)", n)
	}
	u := sess.TotalUsage()
	if u.InputTokens != 90 || u.OutputTokens != 15 {
		t.Errorf("TotalUsage %d in, %d out; want 90, 15 (both phases of the suspended turn)", u.InputTokens, u.OutputTokens)
	}
	// agentsession counts each attempt once, on its own branch: the
	// suspended one (ended, replaced) and the resumed one.
	if u := sess.Unwrap().Usage(); u.Input != 90 || u.Output != 15 {
		t.Errorf("agentsession's Usage %d in, %d out; want 90, 15", u.Input, u.Output)
	}
	if sess.Title() != "Deploy v2" || sess.Metadata()["user"] != "alice" || sess.Metadata()["attempt"] != 1.0 {
		t.Errorf("title %q, metadata %v", sess.Title(), sess.Metadata())
	}

	// The file is <dir>/<escaped id>.jsonl, and agentsession finds nothing
	// wrong in it.
	path, err := store.Unwrap().Path(chatID)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || !strings.HasSuffix(path, ".jsonl") {
		t.Errorf("the session is at %s, not <dir>/<escaped id>.jsonl", path)
	}
	verifyClean(t, path)
	for _, f := range sess.Unwrap().Verify() {
		if f.Severity() >= as.SeverityWarning {
			t.Errorf("Verify: %s", f)
		}
	}
}

// verifyClean reads a session file as agentsession's verify command does
// and fails on any warning or error.
func verifyClean(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	findings, _, err := as.VerifyReader(context.Background(), f, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range findings {
		if fd.Severity() >= as.SeverityWarning {
			t.Errorf("verify %s: %s", filepath.Base(path), fd)
		}
	}
}

// describe renders messages one line each, for comparisons.
func describe(msgs []*llm.Message) []string {
	var out []string
	for _, m := range msgs {
		var parts []string
		for _, c := range m.Content {
			switch c := c.(type) {
			case *llm.TextContent:
				parts = append(parts, c.Text)
			case *llm.ToolUseContent:
				parts = append(parts, "tool_use "+c.Name)
			case *llm.ToolResultContent:
				var items []dive.ToolResultContent
				_ = c.DecodeContent(&items)
				text := ""
				for _, it := range items {
					text += it.Text
				}
				parts = append(parts, fmt.Sprintf("tool_result %s %q", c.ToolUseID, text))
			default:
				parts = append(parts, string(c.Type()))
			}
		}
		out = append(out, string(m.Role)+": "+strings.Join(parts, ", "))
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
