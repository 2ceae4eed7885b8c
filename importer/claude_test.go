package importer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

// The test transcripts (testdata/claude/gen.py writes them).
const (
	clDir  = "testdata/claude/projects/-home-u-proj"
	clMain = "5e55a1de-0000-4000-8000-000000000001"
)

// clU is the uuid gen.py gives line n.
func clU(n int) string { return fmt.Sprintf("0000%04d-aaaa-4bbb-8ccc-%012d", n, n) }

// clStores are the stores the imports are checked in: each gives a
// store and a reopen that returns it as a new process would see it.
func clStores(t *testing.T) map[string]func() (session.Store, func() session.Store) {
	return map[string]func() (session.Store, func() session.Store){
		"memory": func() (session.Store, func() session.Store) {
			s := session.NewMemoryStore()
			return s, func() session.Store { return s }
		},
		"file": func() (session.Store, func() session.Store) {
			dir := t.TempDir()
			s, err := session.OpenFileStore(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			return s, func() session.Store {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				r, err := session.OpenFileStore(dir, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { r.Close() })
				return r
			}
		},
	}
}

func TestClaudeImportDirectory(t *testing.T) {
	ctx := context.Background()
	for name, mk := range clStores(t) {
		t.Run(name, func(t *testing.T) {
			store, reopen := mk()
			rep, err := Import(ctx, store, "testdata/claude/projects", nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Errors) > 0 {
				t.Fatalf("errors: %v", rep.Errors)
			}
			ids := []string{}
			for _, s := range rep.Imported {
				ids = append(ids, s.ID)
			}
			want := []string{clMain, clMain + "_sidechain-" + clU(101), clMain + "_agent-e5f6a7b8", clMain + "_agent-a1b2c3d4"}
			if !slices.Equal(ids, want) {
				t.Fatalf("imported %v, want %v", ids, want)
			}
			checkClaudeReport(t, rep.Imported[0])

			store = reopen()
			checkClaudeMain(t, ctx, store)
			checkClaudeChildren(t, ctx, store)

			// A second import stores nothing twice.
			rep, err = Import(ctx, store, "testdata/claude/projects", nil)
			if err != nil || len(rep.Imported) != 0 || len(rep.Skipped) != len(want) {
				t.Fatalf("re-import: %v, imported %d, skipped %d", err, len(rep.Imported), len(rep.Skipped))
			}
		})
	}
}

func checkClaudeReport(t *testing.T, s Session) {
	t.Helper()
	if s.Format != Claude || s.Entries != 26 {
		t.Errorf("main: format %s, %d entries", s.Format, s.Entries)
	}
	wantUnknown := map[string]int{"claude.system": 1, "claude.progress": 1, "claude.file-history-snapshot": 1, "claude.queue-operation": 1, "claude.mystery-record": 1}
	if len(s.Unknown) != len(wantUnknown) {
		t.Errorf("unknown %v, want %v", s.Unknown, wantUnknown)
	}
	for k, n := range wantUnknown {
		if s.Unknown[k] != n {
			t.Errorf("unknown[%s] = %d, want %d", k, s.Unknown[k], n)
		}
	}
	if len(s.Malformed) != 2 {
		t.Fatalf("malformed: %v", s.Malformed)
	}
	for i, w := range []struct {
		line int
		err  error
	}{{21, ErrClaudeLine}, {31, ErrClaudeMissingParent}} {
		m := s.Malformed[i]
		if m.Line != w.line || !errors.Is(m.Err, w.err) || !strings.HasSuffix(m.Path, clMain+".jsonl") {
			t.Errorf("malformed[%d] = %v, want line %d: %v", i, &m, w.line, w.err)
		}
	}
}

func checkClaudeMain(t *testing.T, ctx context.Context, store session.Store) {
	t.Helper()
	s, err := session.Open(ctx, store, clMain)
	if err != nil {
		t.Fatal(err)
	}
	h := s.Header()
	if s.Title() != "Login bug" || h.Cwd != "/home/u/proj" || !h.Timestamp.Equal(time.Date(2026, 1, 10, 9, 0, 1, 7e6, time.UTC)) {
		t.Errorf("header: title %q, cwd %q, time %v", s.Title(), h.Cwd, h.Timestamp)
	}
	// The tree: branches at u9 (an edited prompt) and u19 (an API error,
	// then the retry); the compaction under the line before it; the
	// line with a missing parent under the line before it in the file.
	children := func(id string) []string {
		var out []string
		for _, e := range s.Children(id) {
			out = append(out, e.ID())
		}
		return out
	}
	for _, c := range []struct {
		id   string
		kids []string
	}{
		{clU(1), []string{clU(2)}},
		{clU(2), []string{clU(5)}}, // u3 and u4 are merged into u2
		{clU(8), []string{clU(24)}},
		{clU(24), []string{clU(9)}},
		{clU(9), []string{clU(10), clU(12)}},
		{clU(10), []string{clU(11)}},
		{clU(16), []string{clU(17)}},
		{clU(17), []string{clU(19)}}, // the compact summary (u18) is the compaction's
		{clU(19), []string{clU(21), clU(20)}},
		{clU(21), []string{clU(22)}},
	} {
		if got := children(c.id); !slices.Equal(got, c.kids) {
			t.Errorf("children of %s = %v, want %v", c.id, got, c.kids)
		}
	}
	if n := len(s.Roots()); n != 1 {
		t.Errorf("%d roots", n)
	}
	for _, id := range []string{clU(3), clU(4), clU(18), "broken"} {
		if _, ok := s.Entry(id); ok {
			t.Errorf("entry %s exists", id)
		}
	}
	// Timestamps as written.
	e, _ := s.Entry(clU(5))
	if e.Timestamp() != "2026-01-10T09:00:05.035Z" {
		t.Errorf("u5 timestamp %s", e.Timestamp())
	}
	// The merged assistant message: blocks in order, the last line's usage.
	m := clMessage(t, s, clU(2))
	if len(m.Content) != 3 || m.Content[0].Type != session.BlockThinking || m.Content[1].Text != "I'll read the file." || m.Content[2].Name != "Read" {
		t.Errorf("merged message: %+v", m.Content)
	}
	if m.Provider != "anthropic" || m.Model != "claude-sonnet-4-5-20250929" || m.StopReason != session.StopToolUse {
		t.Errorf("merged message: %s/%s %s", m.Provider, m.Model, m.StopReason)
	}
	if u := m.Usage; u == nil || u.Input != 3 || u.Output != 40 || u.CacheRead != 5000 || u.CacheWrite != 200 {
		t.Errorf("merged usage: %+v", m.Usage)
	}
	if u := clMessage(t, s, clU(6)).Usage; u == nil || u.Input != 12 || u.Output != 30 {
		t.Errorf("usage with tokens as strings: %+v", u)
	}
	if b := clMessage(t, s, clU(9)).Content[0]; !b.Redacted || b.ThinkingSignature != "ZW5jcnlwdGVk" {
		t.Errorf("redacted thinking: %+v", b)
	}
	if b := clMessage(t, s, clU(10)).Content[1]; b.Type != session.BlockImage || b.MimeType != "image/png" {
		t.Errorf("image: %+v", b)
	}
	if m := clMessage(t, s, clU(13)); m.StopReason != session.StopToolUse {
		t.Errorf("null stop_reason with a call: %s", m.StopReason)
	}
	if m := clMessage(t, s, clU(21)); m.StopReason != session.StopError || m.ErrorMessage != "API Error: 529 overloaded" {
		t.Errorf("API error: %s %q", m.StopReason, m.ErrorMessage)
	}
	r := clMessage(t, s, clU(7))
	if r.Role != session.RoleToolResult || !r.IsError || r.ToolName != "Bash" || string(r.Details) != `"Error: exit status 1"` {
		t.Errorf("error result: %s %v %s %s", r.Role, r.IsError, r.ToolName, r.Details)
	}
	if r := clMessage(t, s, clU(5)); !strings.Contains(string(r.Details), `"numLines":3`) {
		t.Errorf("toolUseResult: %s", r.Details)
	}
	// Tool pairing before the compaction: every call answered in order.
	c, err := s.ContextAt(clU(14))
	if err != nil {
		t.Fatal(err)
	}
	roles := clRoles(c.Messages)
	want := "user assistant toolResult assistant toolResult toolResult toolResult assistant user assistant toolResult"
	if roles != want || len(c.Dangling)+len(c.Orphans)+len(c.Pending) != 0 {
		t.Errorf("context at u14: %s (dangling %v, orphans %v, pending %v)", roles, c.Dangling, c.Orphans, c.Pending)
	}
	// After the compaction: its summary, then what followed.
	c, err = s.ContextAt(clU(20))
	if err != nil {
		t.Fatal(err)
	}
	if got := clRoles(c.Messages); got != "compactionSummary user assistant" || !strings.Contains(c.Messages[0].Summary, "login bug is fixed") {
		t.Errorf("context at u20: %s %q", got, c.Messages[0].Summary)
	}
	// The summary is a label of its leaf.
	if l := s.Labels()[clU(20)]; l != "Fix the login bug" {
		t.Errorf("label of u20: %q", l)
	}
	// The current leaf is after u20: the records outside the graph.
	if _, err := s.PathTo(s.LeafID()); err != nil || !slices.ContainsFunc(mustPath(t, s), func(e session.Entry) bool { return e.ID() == clU(20) }) {
		t.Errorf("leaf %s is not after u20", s.LeafID())
	}
}

func mustPath(t *testing.T, s *session.Session) []session.Entry {
	p, err := s.PathTo(s.LeafID())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func clMessage(t *testing.T, s *session.Session, id string) *session.Message {
	t.Helper()
	e, ok := s.Entry(id)
	if !ok {
		t.Fatalf("no entry %s", id)
	}
	m, err := e.Message()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func clRoles(ms []*session.Message) string {
	var r []string
	for _, m := range ms {
		r = append(r, m.Role)
	}
	return strings.Join(r, " ")
}

func checkClaudeChildren(t *testing.T, ctx context.Context, store session.Store) {
	t.Helper()
	kids, err := session.ListChildren(ctx, store, clMain)
	if err != nil {
		t.Fatal(err)
	}
	titles := map[string]string{}
	for _, k := range kids {
		titles[k.ID] = k.Title
	}
	want := map[string]string{
		clMain + "_sidechain-" + clU(101): "Find the callers of Login", // its first prompt
		clMain + "_agent-e5f6a7b8":        "Write auth tests",          // its meta.json's description
		clMain + "_agent-a1b2c3d4":        "Explore the repository",
	}
	if len(titles) != len(want) {
		t.Fatalf("children %v, want %v", titles, want)
	}
	for id, title := range want {
		if got, ok := titles[id]; !ok || got != title {
			t.Errorf("child %s: title %q (listed %v), want %q", id, got, ok, title)
		}
	}
	s, err := session.Open(ctx, store, clMain+"_sidechain-"+clU(101))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Context()
	if got := clRoles(c.Messages); got != "user assistant toolResult assistant" || len(c.Dangling)+len(c.Orphans) != 0 {
		t.Errorf("sidechain context: %s", got)
	}
	s, err = session.Open(ctx, store, clMain+"_agent-a1b2c3d4")
	if err != nil {
		t.Fatal(err)
	}
	if h := s.Header(); !strings.Contains(string(mustGet(h.Extra, "claude")), `"toolUseId":"toolu_5"`) {
		t.Errorf("agent not linked to its Task call: %s", mustGet(h.Extra, "claude"))
	}
	s, err = session.Open(ctx, store, clMain+"_agent-e5f6a7b8")
	if err != nil {
		t.Fatal(err)
	}
	if h := s.Header(); h.ParentSession != clMain || !strings.Contains(string(mustGet(h.Extra, "claude")), `"toolUseId":"toolu_9"`) {
		t.Errorf("subagent header: %+v", h)
	}
}

func mustGet(f session.Fields, k string) []byte { v, _ := f.Get(k); return v }

func TestClaudeDetectAndOwned(t *testing.T) {
	main := filepath.Join(clDir, clMain+".jsonl")
	beside := filepath.Join(clDir, "agent-a1b2c3d4.jsonl")
	sub := filepath.Join(clDir, clMain, "subagents", "agent-e5f6a7b8.jsonl")
	for _, p := range []string{main, beside, sub} {
		if f, err := Detect(p); err != nil || f != Claude {
			t.Errorf("Detect(%s) = %s, %v", p, f, err)
		}
	}
	for p, want := range map[string]bool{main: false, beside: true, sub: true, filepath.Join(clDir, clMain, "subagents", "agent-e5f6a7b8.meta.json"): true} {
		if got := ownedIn(t, clDir, p); got != want {
			t.Errorf("owned(%s) = %v", p, got)
		}
	}
	// A first line longer than the head.
	if !claudeSniff([]byte(`{"parentUuid":null,"isSidechain":false,"message":{"content":"` + strings.Repeat("x", 100))) {
		t.Error("a long first line is not recognised")
	}
	// Other formats are not Claude Code's.
	for _, head := range []string{
		`{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00Z","cwd":"/"}` + "\n" + `{"type":"message","id":"a","parentId":null}`,
		`{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}`,
		"{\n  \"info\": {\"id\": \"ses_1\"},\n  \"messages\": []\n}",
		"not json",
		// An export holding a Claude record kept as a custom entry.
		`{"version":1,"header":{"id":"x"},"entries":[` + "\n" + `{"type":"custom","id":"a","parentId":null,"data":{"parentUuid":null,"sessionId":"s","uuid":"u"}}` + "\n]}",
		// A first line longer than the head, of another format.
		`{"type":"custom","data":{"parentUuid":null,"sessionId":"s","text":"` + strings.Repeat("x", 100),
	} {
		if claudeSniff([]byte(head)) {
			t.Errorf("sniff(%q) = true", head)
		}
	}
}

// An agent file whose session's file is not beside it is a session of
// its own, still a child of that session.
func TestClaudeLoneAgent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(clDir, "agent-a1b2c3d4.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "agent-a1b2c3d4.jsonl")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if ownedIn(t, dir, p) {
		t.Fatal("a lone agent file is owned")
	}
	store := session.NewMemoryStore()
	rep, err := Import(ctx, store, dir, nil)
	if err != nil || len(rep.Imported) != 1 {
		t.Fatalf("import: %v %+v", err, rep)
	}
	kids, err := session.ListChildren(ctx, store, clMain)
	if err != nil || len(kids) != 1 || kids[0].ID != clMain+"_agent-a1b2c3d4" {
		t.Fatalf("children: %v %+v", err, kids)
	}
}
