package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepnoodle-ai/dive"
	"github.com/deepnoodle-ai/dive/llm"

	as "github.com/agentsession/session"
	session "github.com/agentsession/session/integrations/dive"
)

// The adapter's own tests, beside Dive's (session_dive_test.go,
// agent_suspend_dive_test.go): what agentsession adds or does otherwise.

// fileStores yields a FileStore and, once the test has written through
// it, a second FileStore on the same directory, as another process would
// open it.
func reopen(t *testing.T, dir string) *session.FileStore {
	t.Helper()
	s, err := session.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openIn(t *testing.T, st session.Store, id string) *session.Session {
	t.Helper()
	s, err := st.Open(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func texts(t *testing.T, s *session.Session) []string {
	t.Helper()
	msgs, err := s.Messages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return describe(msgs)
}

func noWarnings(t *testing.T, s *session.Session) {
	t.Helper()
	for _, f := range s.Unwrap().Verify() {
		if f.Severity() >= as.SeverityWarning {
			t.Errorf("verify: %s", f)
		}
	}
}

func call(id, name string) *llm.ToolUseContent {
	return &llm.ToolUseContent{ID: id, Name: name, Input: json.RawMessage(`{}`)}
}

func result(id, text string) *llm.ToolResultContent {
	return &llm.ToolResultContent{ToolUseID: id, Content: []*dive.ToolResultContent{{Type: dive.ToolResultContentTypeText, Text: text}}}
}

// TestDoubleOpenNoDataLoss is Dive's TestFileStoreDoubleOpenFullRewriteNoDataLoss
// with a suspended turn that calls a tool: two handles of one id, a turn
// through each, a suspension, a cancellation, nothing lost.
func TestDoubleOpenNoDataLoss(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := reopen(t, dir)
	h1, h2 := openIn(t, store, "s1"), openIn(t, store, "s1")
	if h1 != h2 {
		t.Fatal("two instances of one id")
	}
	must(t, h1.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("from-h1")}, nil))
	must(t, h2.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("from-h2")}, nil))
	must(t, h1.SaveSuspendedTurn(ctx, []*llm.Message{
		llm.NewUserTextMessage("suspend-turn"),
		{Role: llm.Assistant, Content: []llm.Content{call("toolu_a", "approve")}},
	}, nil, &dive.SuspensionState{PendingToolCalls: []*dive.PendingToolCall{{ID: "toolu_a", Name: "approve"}}}))

	got := openIn(t, reopen(t, dir), "s1")
	if want := []string{"user: from-h1", "user: from-h2", "user: suspend-turn", "assistant: tool_use approve"}; strings.Join(texts(t, got), "|") != strings.Join(want, "|") {
		t.Errorf("messages %q", texts(t, got))
	}
	if !got.IsSuspended() {
		t.Error("not suspended")
	}
	must(t, h2.CancelSuspension(ctx))
	must(t, store.Put(ctx, h1))
	got = openIn(t, reopen(t, dir), "s1")
	if want := []string{"user: from-h1", "user: from-h2"}; strings.Join(texts(t, got), "|") != strings.Join(want, "|") {
		t.Errorf("messages after the cancel %q", texts(t, got))
	}
	noWarnings(t, got)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A Dive turn may begin before the last user message before its
// suspended calls: several input messages, or a hook's text after the
// results of an earlier round of calls. Resuming or cancelling goes back
// to before the whole turn.
func TestSuspendedTurnStart(t *testing.T) {
	ctx := context.Background()
	turn := []*llm.Message{
		llm.NewUserTextMessage("first input"),
		llm.NewUserTextMessage("second input"),
		{Role: llm.Assistant, Content: []llm.Content{call("toolu_x", "lookup")}},
		{Role: llm.User, Content: []llm.Content{result("toolu_x", "found"), &llm.TextContent{Text: "hook context"}}},
		{Role: llm.Assistant, Content: []llm.Content{call("toolu_a", "approve"), call("toolu_b", "lint")}},
		{Role: llm.User, Content: []llm.Content{result("toolu_b", "clean"), &llm.TextContent{Text: "more hook context"}}},
	}
	state := &dive.SuspensionState{PendingToolCalls: []*dive.PendingToolCall{{ID: "toolu_a", Name: "approve", Prompt: "ok?"}}}
	for _, end := range []string{"resume", "cancel", "partial"} {
		t.Run(end, func(t *testing.T) {
			dir := t.TempDir()
			s := openIn(t, reopen(t, dir), "s")
			must(t, s.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("before"), llm.NewAssistantTextMessage("ok")}, &llm.Usage{InputTokens: 1}))
			must(t, s.SaveSuspendedTurn(ctx, turn, &llm.Usage{InputTokens: 10}, state))

			s = openIn(t, reopen(t, dir), "s") // another process
			st := s.LoadSuspension()
			if st == nil || len(st.PendingToolCalls) != 1 || len(st.TurnMessages) != len(turn) {
				t.Fatalf("LoadSuspension: %s", mustJSON(t, st))
			}
			if got, want := canonicalMsgs(t, st.TurnMessages), canonicalMsgs(t, turn); got != want {
				t.Errorf("TurnMessages\n got %s\nwant %s", got, want)
			}
			msgs, _ := s.Messages(ctx)
			if len(msgs) != 2+len(turn) {
				t.Errorf("Messages while suspended: %q", describe(msgs))
			}
			switch end {
			case "resume":
				done := append(append([]*llm.Message(nil), turn[:5]...),
					&llm.Message{Role: llm.User, Content: []llm.Content{result("toolu_b", "clean"), result("toolu_a", "yes"), &llm.TextContent{Text: "more hook context"}}},
					llm.NewAssistantTextMessage("done"))
				must(t, s.SaveResumedTurn(ctx, done, &llm.Usage{InputTokens: 5}))
				want := append([]string{"user: before", "assistant: ok"}, describe(done)...)
				if got := texts(t, s); strings.Join(got, "|") != strings.Join(want, "|") {
					t.Errorf("after the resume\n got %q\nwant %q", got, want)
				}
				if u := s.TotalUsage().InputTokens; u != 16 {
					t.Errorf("TotalUsage %d, want 16", u)
				}
			case "cancel":
				must(t, s.CancelSuspension(ctx))
				if got := texts(t, s); strings.Join(got, "|") != "user: before|assistant: ok" {
					t.Errorf("after the cancel %q", got)
				}
				if u := s.TotalUsage().InputTokens; u != 1 {
					t.Errorf("TotalUsage %d, want 1", u)
				}
			case "partial":
				must(t, s.SaveSuspendedTurn(ctx, turn, &llm.Usage{InputTokens: 3}, state))
				if n := s.EventCount(); n != 2 {
					t.Errorf("EventCount %d after a partial resume, want 2", n)
				}
				if u := s.TotalUsage().InputTokens; u != 14 {
					t.Errorf("TotalUsage %d, want 14", u)
				}
				msgs, _ := s.Messages(ctx)
				if len(msgs) != 2+len(turn) {
					t.Errorf("Messages after a partial resume: %q", describe(msgs))
				}
			}
			if s.IsSuspended() != (end == "partial") {
				t.Errorf("IsSuspended %v", s.IsSuspended())
			}
			noWarnings(t, s)
			if n, want := s.EventCount(), map[bool]int{true: 1, false: 2}[end == "cancel"]; n != want {
				t.Errorf("EventCount %d, want %d", n, want)
			}
		})
	}
}

func canonicalMsgs(t *testing.T, msgs []*llm.Message) string {
	t.Helper()
	var out []*llm.Message
	for _, m := range msgs {
		out = append(out, m.Copy())
	}
	return mustJSON(t, out)
}

func TestSaveSuspendedTurnWithoutPendingCall(t *testing.T) {
	ctx := context.Background()
	s := session.New("s")
	err := s.SaveSuspendedTurn(ctx, []*llm.Message{llm.NewUserTextMessage("no call")}, nil,
		&dive.SuspensionState{PendingToolCalls: []*dive.PendingToolCall{{ID: "toolu_a"}}})
	if !errors.Is(err, session.ErrNothingPending) {
		t.Fatalf("err %v", err)
	}
	if msgs, _ := s.Messages(ctx); len(msgs) != 0 || s.IsSuspended() {
		t.Errorf("a refused suspension wrote %d messages", len(msgs))
	}
}

// Title and metadata are stored when set, in agentsession's listing
// fields, and come back from a new process.
func TestTitleAndMetadataPersisted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openIn(t, reopen(t, dir), "user:42")
	s.SetTitle("  Planning  ")
	s.SetMetadata("owner", "alice")
	s.SetMetadata("tags", []any{"a", "b"})
	s.SetMetadata("n", 3)
	s.SetMetadata("n", "three") // a string again

	store := reopen(t, dir)
	got := openIn(t, store, "user:42")
	if got.Title() != "Planning" {
		t.Errorf("title %q", got.Title())
	}
	want := map[string]any{"owner": "alice", "tags": []any{"a", "b"}, "n": "three"}
	if mustJSON(t, got.Metadata()) != mustJSON(t, want) {
		t.Errorf("metadata %v", got.Metadata())
	}
	meta := got.Unwrap().Meta().Metadata
	if meta["owner"] != "alice" || meta["tags"] != `["a","b"]` {
		t.Errorf("agentsession metadata %v", meta)
	}
	list, err := store.List(ctx, nil)
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].Title != "Planning" || list.Sessions[0].Metadata["owner"] != "alice" {
		t.Errorf("List: %s, %v", mustJSON(t, list), err)
	}
	if page, err := store.Backend().List(ctx, as.ListOptions{Metadata: map[string]string{"owner": "alice"}}); err != nil || len(page.Sessions) != 1 {
		t.Errorf("agentsession's listing by metadata: %v, %v", page, err)
	}
}

// A fork of a suspended session is not suspended; Put stores a fork, and
// New's sessions, in a store.
func TestForkAndPut(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := reopen(t, dir)
	s := openIn(t, store, "orig")
	s.SetTitle("Original")
	s.SetMetadata("k", "v")
	must(t, s.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("hello"), llm.NewAssistantTextMessage("hi")}, nil))
	must(t, s.SaveSuspendedTurn(ctx, []*llm.Message{
		llm.NewUserTextMessage("deploy"),
		{Role: llm.Assistant, Content: []llm.Content{call("toolu_a", "approve")}},
	}, nil, &dive.SuspensionState{PendingToolCalls: []*dive.PendingToolCall{{ID: "toolu_a"}}}))

	f := s.Fork("copy")
	if f.IsSuspended() || f.Title() != "Original" || f.Metadata()["k"] != "v" || f.EventCount() != 2 {
		t.Errorf("fork: suspended %v, title %q, metadata %v, events %d", f.IsSuspended(), f.Title(), f.Metadata(), f.EventCount())
	}
	must(t, store.Put(ctx, f))
	if openIn(t, store, "copy") != f {
		t.Error("Open after Put returns another instance")
	}
	must(t, f.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("more")}, nil))

	n := session.New("fresh")
	must(t, n.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("in memory")}, nil))
	must(t, store.Put(ctx, n))
	must(t, n.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("then on disk")}, nil))

	other := reopen(t, dir)
	// The fork went on past the call its source had suspended: Messages
	// answers it with agentsession's error result, so that the history
	// stays one a model takes.
	if got := texts(t, openIn(t, other, "copy")); strings.Join(got, "|") != "user: hello|assistant: hi|user: deploy|assistant: tool_use approve|"+
		`user: tool_result toolu_a "`+as.SyntheticResultText+`"|user: more` {
		t.Errorf("fork reopened: %q", got)
	}
	if got := texts(t, openIn(t, other, "fresh")); strings.Join(got, "|") != "user: in memory|user: then on disk" {
		t.Errorf("put session reopened: %q", got)
	}
	if h := openIn(t, other, "copy").Unwrap().Header(); h.ParentSession != "orig" {
		t.Errorf("fork's parent %q", h.ParentSession)
	}
}

// Compaction: Messages is the summary and what follows, AllMessages
// everything; agentsession's own context starts with the summary too.
func TestCompactReopened(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openIn(t, reopen(t, dir), "c")
	must(t, s.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("one"), llm.NewAssistantTextMessage("1")}, nil))
	must(t, s.Compact(ctx, func(ctx context.Context, msgs []*llm.Message) ([]*llm.Message, error) {
		return []*llm.Message{llm.NewUserTextMessage("summary of one"), llm.NewAssistantTextMessage("noted")}, nil
	}))
	must(t, s.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("two"), llm.NewAssistantTextMessage("2")}, nil))

	got := openIn(t, reopen(t, dir), "c")
	if m := texts(t, got); strings.Join(m, "|") != "user: summary of one|assistant: noted|user: two|assistant: 2" {
		t.Errorf("Messages %q", m)
	}
	all, _ := got.AllMessages(ctx)
	if m := describe(all); strings.Join(m, "|") != "user: one|assistant: 1|user: summary of one|assistant: noted|user: two|assistant: 2" {
		t.Errorf("AllMessages %q", m)
	}
	ctxMsgs, _ := got.Unwrap().Messages(ctx)
	if len(ctxMsgs) != 3 || ctxMsgs[0].Role != as.RoleCompactionSummary || ctxMsgs[0].Summary != "summary of one\n\nnoted" {
		t.Errorf("agentsession's context starts with %s", mustJSON(t, ctxMsgs[0]))
	}
	if n := got.EventCount(); n != 3 {
		t.Errorf("EventCount %d", n)
	}
	noWarnings(t, got)
}

// Ids Dive's FileStore refused are fine; each is a file of its own.
func TestFileStoreIDs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := reopen(t, dir)
	ids := []string{"user:42", "alice@example.com", "chat 7", "Ünïcode", ".hidden", "a/b", `c\d`, ".."}
	for _, id := range ids {
		must(t, openIn(t, store, id).SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage(id)}, nil))
	}
	other := reopen(t, dir)
	for _, id := range ids {
		if got := texts(t, openIn(t, other, id)); len(got) != 1 || got[0] != "user: "+id {
			t.Errorf("%q: %q", id, got)
		}
	}
	list, err := other.List(ctx, nil)
	if err != nil || len(list.Sessions) != len(ids) {
		t.Errorf("List: %d sessions, %v", len(list.Sessions), err)
	}
	if _, err := store.Open(ctx, "bad\x00id"); !errors.Is(err, session.ErrInvalidSessionID) {
		t.Errorf("a control character: %v", err)
	}
}

// Dive stores any turn: a tool result whose call is not pending is kept
// (AllMessages), and left out of the model's view (Messages).
func TestUnpairedToolResult(t *testing.T) {
	ctx := context.Background()
	for _, s := range []*session.Session{session.New("u"), openIn(t, reopen(t, t.TempDir()), "u")} {
		must(t, s.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("hi"), llm.NewAssistantTextMessage("hello")}, nil))
		must(t, s.SaveTurn(ctx, []*llm.Message{{Role: llm.User, Content: []llm.Content{result("toolu_gone", "late")}}}, nil))
		all, _ := s.AllMessages(ctx)
		if got := describe(all); len(got) != 3 || got[2] != `user: tool_result toolu_gone "late"` {
			t.Errorf("AllMessages %q", got)
		}
		if got := texts(t, s); len(got) != 2 {
			t.Errorf("Messages %q", got)
		}
	}
}

// TestMidFileCorruption is the part of Dive's "mid-file corruption still
// errors" that does not count lines: a line that is not JSON inside a
// file fails Open (the FileStore is strict, as Dive's is), and the file
// is left as it was.
func TestMidFileCorruption(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openIn(t, reopen(t, dir), "s1")
	must(t, s.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("one")}, nil))
	must(t, s.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("two")}, nil))
	p := filepath.Join(dir, "s1.jsonl")
	b, err := os.ReadFile(p)
	must(t, err)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	lines[1] = `{"line_type":"event","data":{"trunc`
	corrupt := strings.Join(lines, "\n") + "\n"
	must(t, os.WriteFile(p, []byte(corrupt), 0o644))
	if _, err := reopen(t, dir).Open(ctx, "s1"); !errors.Is(err, as.ErrCorrupt) {
		t.Errorf("Open of a file with a bad line: %v", err)
	}
	if after, _ := os.ReadFile(p); string(after) != corrupt {
		t.Error("the file was changed")
	}
}

// Delete closes the instance it evicts; Put stores it again.
func TestDeleteThenPut(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := reopen(t, dir)
	s := openIn(t, store, "d")
	must(t, s.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("kept in memory")}, nil))
	must(t, store.Delete(ctx, "d"))
	if err := s.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("after delete")}, nil); !errors.Is(err, as.ErrClosed) {
		t.Errorf("SaveTurn on a deleted session: %v", err)
	}
	if fresh := openIn(t, store, "d"); fresh == s || len(texts(t, fresh)) != 0 {
		t.Error("Open after Delete did not start afresh")
	}
	must(t, store.Put(ctx, s))
	must(t, s.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("put back")}, nil))
	if got := texts(t, openIn(t, reopen(t, dir), "d")); strings.Join(got, "|") != "user: kept in memory|user: put back" {
		t.Errorf("reopened: %q", got)
	}
}
