package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/deepnoodle-ai/dive"
	"github.com/deepnoodle-ai/dive/llm"
	divesession "github.com/deepnoodle-ai/dive/session"

	as "github.com/agentsession/session"
	session "github.com/agentsession/session/integrations/dive"
)

// diveView is what Dive's API shows of a session, to compare a session of
// Dive's FileStore with its import.
type diveView struct {
	Messages, All []*llm.Message
	Events        int
	Usage         *llm.Usage
	Title         string
	Metadata      map[string]any
	Suspended     bool
	Suspension    *dive.SuspensionState
	History       any
}

// viewable is the API both packages' sessions have.
type viewable interface {
	Messages(context.Context) ([]*llm.Message, error)
	AllMessages(context.Context) ([]*llm.Message, error)
	EventCount() int
	TotalUsage() *llm.Usage
	Title() string
	Metadata() map[string]any
	IsSuspended() bool
	LoadSuspension() *dive.SuspensionState
}

func view(t *testing.T, s viewable, history any) string {
	t.Helper()
	ctx := context.Background()
	msgs, err := s.Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.AllMessages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v := diveView{
		Messages: msgs, All: all, Events: s.EventCount(), Usage: s.TotalUsage(),
		Title: s.Title(), Metadata: s.Metadata(), Suspended: s.IsSuspended(), Suspension: s.LoadSuspension(),
		History: history,
	}
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeDiveSession writes a session with Dive's own FileStore: turns, a
// compaction, title and metadata, and a suspended turn last.
func writeDiveSession(t *testing.T, dir, id string) *divesession.Session {
	t.Helper()
	ctx := context.Background()
	store, err := divesession.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	s.SetTitle("Imported chat")
	s.SetMetadata("owner", "alice")
	s.SetMetadata("priority", 3)
	must(s.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("hello"), llm.NewAssistantTextMessage("hi")}, &llm.Usage{InputTokens: 10, OutputTokens: 2}))
	must(s.SaveTurn(ctx, []*llm.Message{
		llm.NewUserTextMessage("read a.go"),
		{Role: llm.Assistant, Content: []llm.Content{&llm.ToolUseContent{ID: "toolu_r", Name: "read", Input: json.RawMessage(`{"path":"a.go"}`)}}},
		llm.NewToolResultMessage(&llm.ToolResultContent{ToolUseID: "toolu_r", Content: []*dive.ToolResultContent{{Type: dive.ToolResultContentTypeText, Text: "package a"}}}),
		llm.NewAssistantTextMessage("it is package a"),
	}, &llm.Usage{InputTokens: 20, OutputTokens: 4, ReasoningTokens: 1}))
	must(s.Compact(ctx, func(ctx context.Context, msgs []*llm.Message) ([]*llm.Message, error) {
		return []*llm.Message{llm.NewUserTextMessage("We said hello and read a.go.")}, nil
	}))
	must(s.SaveTurn(ctx, nil, &llm.Usage{InputTokens: 1})) // a turn without messages
	must(s.SaveSuspendedTurn(ctx, []*llm.Message{
		llm.NewUserTextMessage("deploy"),
		{Role: llm.Assistant, Content: []llm.Content{
			&llm.ToolUseContent{ID: "toolu_d", Name: "deploy", Input: json.RawMessage(`{}`)},
			&llm.ToolUseContent{ID: "toolu_l", Name: "lint", Input: json.RawMessage(`{}`)},
		}},
		llm.NewToolResultMessage(&llm.ToolResultContent{ToolUseID: "toolu_l", Content: "clean"}),
	}, &llm.Usage{InputTokens: 5}, &dive.SuspensionState{
		PendingToolCalls:   []*dive.PendingToolCall{{ID: "toolu_d", Name: "deploy", Input: json.RawMessage(`{}`), Prompt: "approve?", Reason: dive.SuspendReasonInput}},
		CompletedToolCalls: []*dive.CompletedToolCall{{ID: "toolu_l", Name: "lint", Input: json.RawMessage(`{}`), Result: dive.NewToolResultText("clean")}},
	}))
	return s
}

func TestImportDive(t *testing.T) {
	ctx := context.Background()
	diveDir := t.TempDir()
	orig := writeDiveSession(t, diveDir, "imported")
	origHistory, err := orig.CompactionHistory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := view(t, orig, origHistory)

	f, err := os.Open(filepath.Join(diveDir, "imported.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	store, err := session.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := session.ImportDive(ctx, store, f); err != nil {
		t.Fatal(err)
	}

	// Reopened from its file.
	store2, err := session.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store2.Close()
	got, err := store2.Open(ctx, "imported")
	if err != nil {
		t.Fatal(err)
	}
	history, err := got.CompactionHistory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g := view(t, got, history); g != want {
		t.Errorf("the import differs from Dive's session\n got: %s\nwant: %s", g, want)
	}
	for _, fd := range got.Unwrap().Verify() {
		t.Logf("verify: %s", fd)
	}

	// The imported session goes on: resume the suspended turn.
	st := got.LoadSuspension()
	turn := append(st.TurnMessages[:2:2], llm.NewToolResultMessage(
		&llm.ToolResultContent{ToolUseID: "toolu_l", Content: "clean"},
		&llm.ToolResultContent{ToolUseID: "toolu_d", Content: "deployed"},
	), llm.NewAssistantTextMessage("done"))
	if err := got.SaveResumedTurn(ctx, turn, &llm.Usage{InputTokens: 7}); err != nil {
		t.Fatal(err)
	}
	if got.IsSuspended() || got.TotalUsage().InputTokens != 43 {
		t.Errorf("after the resume: suspended %v, usage %+v", got.IsSuspended(), got.TotalUsage())
	}
}

func TestImportDiveRefusesOtherData(t *testing.T) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	for _, data := range []string{
		"",
		`{"line_type":"header_v2","data":{"id":"s1"}}` + "\n",
		`{"type":"session","version":3,"id":"s1"}` + "\n",
	} {
		if _, err := session.ImportDive(ctx, store, strings.NewReader(data)); err == nil {
			t.Errorf("ImportDive(%q) succeeded", data)
		}
	}
	// A session holding turns already is not overwritten.
	dir := t.TempDir()
	writeDiveSession(t, dir, "s1")
	s, _ := store.Open(ctx, "s1")
	if err := s.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("mine")}, nil); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "s1.jsonl"))
	if _, err := session.ImportDive(ctx, store, strings.NewReader(string(data))); err == nil {
		t.Error("ImportDive into a session with turns succeeded")
	}
	msgs, _ := s.Messages(ctx)
	if !reflect.DeepEqual(describe(msgs), []string{"user: mine"}) {
		t.Errorf("messages: %v", describe(msgs))
	}
}

// A Dive user switching to this package finds the sessions Dive wrote in
// the same directory: Open says so, and FileStore.ImportDive takes them in.
func TestFileStoreImportDiveInPlace(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	orig := writeDiveSession(t, dir, "s1")
	origHistory, _ := orig.CompactionHistory(ctx)
	want := view(t, orig, origHistory)

	store, err := session.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	_, err = store.Open(ctx, "s1")
	if !errors.Is(err, as.ErrForeignFormat) || !strings.Contains(err.Error(), "ImportDive") {
		t.Fatalf("Open of a Dive file: %v", err)
	}
	sess, err := store.ImportDive(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	history, _ := sess.CompactionHistory(ctx)
	if got := view(t, sess, history); got != want {
		t.Errorf("import in place\n got: %s\nwant: %s", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "s1.jsonl.dive")); err != nil {
		t.Errorf("Dive's file was not kept aside: %v", err)
	}
	again, err := store.Open(ctx, "s1")
	if err != nil || again != sess {
		t.Errorf("Open after the import: %v", err)
	}
	store2, err := session.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store2.Close()
	reopened, err := store2.Open(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if got := view(t, reopened, history); got != want {
		t.Errorf("reopened import\n got: %s\nwant: %s", got, want)
	}
}

// Dive names a session's file by its id as it is; agentsession escapes
// what a file name should not hold. Open still finds Dive's file, and
// ImportDive takes it in.
func TestFileStoreDiveFileOfEscapedID(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeDiveSession(t, dir, "chat 7")
	store, err := session.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.Open(ctx, "chat 7"); !errors.Is(err, as.ErrForeignFormat) {
		t.Fatalf("Open: %v", err)
	}
	sess, err := store.ImportDive(ctx, "chat 7")
	if err != nil {
		t.Fatal(err)
	}
	if sess.Title() != "Imported chat" || !sess.IsSuspended() {
		t.Errorf("imported: title %q, suspended %v", sess.Title(), sess.IsSuspended())
	}
	again, err := reopen(t, dir).Open(ctx, "chat 7")
	if err != nil || again.EventCount() != sess.EventCount() {
		t.Errorf("reopened: %v", err)
	}
}

// A Dive fork names its parent; the import keeps it in the header.
func TestImportDiveFork(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeDiveSession(t, dir, "parent")
	dstore, _ := divesession.NewFileStore(dir)
	if _, err := divesession.ForkSession(ctx, dstore, "parent", "child"); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "child.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	store := session.NewMemoryStore()
	s, err := session.ImportDive(ctx, store, f)
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Unwrap().Header().ParentSession; p != "parent" {
		t.Errorf("parent %q", p)
	}
	if s.IsSuspended() || s.EventCount() != 5 {
		t.Errorf("fork import: suspended %v, %d events", s.IsSuspended(), s.EventCount())
	}
	if again, _ := store.Open(ctx, "child"); again != s {
		t.Error("Open after the import returns another instance")
	}
}
