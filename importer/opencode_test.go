package importer

import (
	"context"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

const (
	ocID = "ses_4f2a9c1e7ffeAbCdEf0123456"
	ocT0 = int64(1761700000000)
)

var (
	ocExport      = filepath.Join("testdata", "opencode", "session-export.json")
	ocParentChild = filepath.Join("testdata", "opencode", "parent-and-child.json")
)

func TestOpenCodeDetect(t *testing.T) {
	for _, path := range []string{ocExport, ocParentChild} {
		if f, err := Detect(path); err != nil || f != OpenCode {
			t.Errorf("Detect(%s) = %q, %v", path, f, err)
		}
	}
	cases := map[string]bool{
		`{"info":{"id":"ses_1"},"messages":[]}`:                true,
		"{\n  \"info\": {\n    \"id\": \"ses_1\",":             true,
		`[{"info":{"id":"ses_1"},"messages":[]}]`:              true,
		`{"info":"x","messages":[]}`:                           false,
		`{"format":"agentsession","header":{},"info":{}}`:      false,
		`{"timestamp":"x","type":"session_meta","payload":{}}`: false,
	}
	for head, want := range cases {
		if got := sniffOpenCode([]byte(head)); got != want {
			t.Errorf("sniffOpenCode(%s) = %v, want %v", head, got, want)
		}
	}
}

func TestOpenCodeImport(t *testing.T) {
	ctx := context.Background()
	importStores(t, func(t *testing.T, store session.Store, reopen func() session.Store) {
		rep, err := Import(ctx, store, ocExport, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Imported) != 1 || len(rep.Errors) != 0 {
			t.Fatalf("report: %+v", rep)
		}
		got := rep.Imported[0]
		wantUnknown := map[string]int{"opencode.agent": 1, "opencode.hologram": 1, "opencode.message": 1, "opencode.patch": 1,
			"opencode.retry": 1, "opencode.snapshot": 1, "opencode.subtask": 1, "opencode.text (ignored)": 1}
		if got.ID != ocID || !reflect.DeepEqual(got.Unknown, wantUnknown) {
			t.Errorf("imported %s, unknown %v", got.ID, got.Unknown)
		}
		if len(got.Malformed) != 1 || !strings.Contains(got.Malformed[0].Error(), "message 8") {
			t.Errorf("malformed: %v", got.Malformed)
		}

		store = reopen()
		s := openImported(t, store, ocID)
		h := s.Header()
		if s.Title() != "Fix the build" || h.Cwd != "/home/dev/web" || h.ParentSession != "ses_parent0000000000000000" ||
			h.Timestamp.UnixMilli() != ocT0-1000 {
			t.Errorf("title %q, header %+v", s.Title(), h)
		}
		if v, ok := h.Extra.Get("opencode"); !ok || !strings.Contains(string(v), `"slug":"brave-otter"`) {
			t.Errorf("info not kept: %s", v)
		}

		// Before the compaction: steps split, results after their calls.
		comp := firstEntryOfType(t, s, session.TypeCompaction)
		before, err := s.ContextAt(comp.ParentID())
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"user", "assistant", "toolResult:toolu_01", "assistant", "toolResult:toolu_02", "assistant", "user", "assistant"}
		if r := roleList(before.Messages); !reflect.DeepEqual(r, want) {
			t.Errorf("roles:\n got %v\nwant %v", r, want)
		}
		if len(before.Dangling) != 1 || before.Dangling[0].CallID != "toolu_03" || len(before.Orphans) != 0 {
			t.Errorf("dangling %v (want the running edit), orphans %v", before.Dangling, before.Orphans)
		}
		m := before.Messages
		if c := m[0].Content; len(c) != 3 || c[1].Type != session.BlockImage || c[1].MimeType != "image/png" ||
			c[2].Text != "[file: Makefile (text/plain)]" || m[0].Timestamp != ocT0 {
			t.Errorf("user message: %+v", m[0])
		}
		a := m[1]
		if a.Provider != "anthropic" || a.Model != "claude-sonnet-4-5" || a.StopReason != session.StopToolUse ||
			len(a.Content) != 3 || a.Content[0].Thinking != "The build fails; look at the log." || a.Timestamp != ocT0+1100 {
			t.Errorf("first step: %+v", a)
		}
		if u := a.Usage; u == nil || u.Input != 1200 || u.Output != 80 || u.CacheRead != 500 || u.CacheWrite != 100 || u.Cost.Total != 0.0125 {
			t.Errorf("first step usage: %+v", a.Usage)
		}
		if r := m[2]; r.Text() != "error: missing dep" || r.IsError || r.ToolName != "bash" || r.Timestamp != ocT0+2500 ||
			!strings.Contains(string(r.Details), `"title":"make"`) {
			t.Errorf("bash result: %+v", r)
		}
		if r := m[4]; !r.IsError || r.Text() != "File not found: /nope" {
			t.Errorf("read error: %+v", r)
		}
		if m[5].Text() != "Fixed: added the dependency." || m[5].StopReason != session.StopEnd || m[5].Timestamp < m[4].Timestamp {
			t.Errorf("last step: %+v", m[5])
		}
		if m[6].Text() != "Now review it" || m[7].StopReason != session.StopAborted || m[7].ErrorMessage != "The operation was aborted." ||
			m[7].Usage == nil || m[7].Usage.Input != 300 {
			t.Errorf("review turn: %+v / %+v", m[6], m[7])
		}

		// At the leaf: the summary, the kept tail (from the message
		// tail_start_id names), then what followed.
		leaf := s.Context()
		want = []string{"compactionSummary", "user", "assistant", "user", "assistant", "toolResult:toolu_08"}
		if r := roleList(leaf.Messages); !reflect.DeepEqual(r, want) {
			t.Errorf("roles at the leaf:\n got %v\nwant %v", r, want)
		}
		if !strings.HasPrefix(leaf.Messages[0].Summary, "Summary: fixed the build") || leaf.Messages[0].TokensBefore != 4000 {
			t.Errorf("summary: %+v", leaf.Messages[0])
		}
		last := leaf.Messages[4]
		if string(last.Content[1].Arguments) != `{"input":"ls -la"}` || last.Usage.Input != 90 || last.Usage.Cost.Total != 0.001 {
			t.Errorf("tolerant message: %+v, usage %+v", last, last.Usage)
		}
		if leaf.Model == nil || leaf.Model.ModelID != "claude-sonnet-4-5" {
			t.Errorf("model: %v", leaf.Model)
		}
		if u := s.Usage(); math.Abs(u.Cost.Total-0.0305) > 1e-9 || u.Input != 1200+1400+1500+300+90 {
			t.Errorf("session usage: %+v", u)
		}

		rep, err = Import(ctx, store, ocExport, nil)
		if err != nil || len(rep.Imported) != 0 || len(rep.Skipped) != 1 {
			t.Errorf("re-import: %+v, %v", rep, err)
		}
	})
}

func TestOpenCodeChildren(t *testing.T) {
	const parent, child = "ses_parentAAAAAAAAAAAAAAAAAA", "ses_childBBBBBBBBBBBBBBBBBBBB"
	ctx := context.Background()
	importStores(t, func(t *testing.T, store session.Store, reopen func() session.Store) {
		rep, err := Import(ctx, store, ocParentChild, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Imported) != 2 || rep.Imported[0].ID != parent || rep.Imported[1].ID != child || rep.Imported[1].ParentSession != parent {
			t.Fatalf("imported: %+v", rep.Imported)
		}
		store = reopen()
		c := openImported(t, store, child)
		if c.Header().ParentSession != parent || c.Title() != "Child (@reviewer subagent)" {
			t.Errorf("child header %+v", c.Header())
		}
		p := openImported(t, store, parent)
		if r := roleList(p.Context().Messages); !reflect.DeepEqual(r, []string{"user", "assistant"}) {
			t.Errorf("parent roles %v", r)
		}
		if u := p.Usage(); u.Cost.Total != 0.5 || u.Input != 10 {
			t.Errorf("message-level usage: %+v", u)
		}
	})
}

// TestOpenCodeTolerant: exports with members of unexpected types import;
// a file that is not an export is refused with an error.
func TestOpenCodeTolerant(t *testing.T) {
	cases := []struct {
		name, body string
		entries    int
		malformed  int
		fails      bool
	}{
		{"empty messages", `{"info":{"id":"ses_1"},"messages":[]}`, 0, 0, false},
		{"no messages", `{"info":{"id":"ses_1"}}`, 0, 0, false},
		{"messages not a list", `{"info":{"id":"ses_1"},"messages":{}}`, 0, 1, false},
		{"bad id", `{"info":{"id":"ses/../x","time":"now","title":5},"messages":[null,"x"]}`, 0, 2, false},
		{"wrong types", `{"info":{"id":"ses_1"},"messages":[
			{"info":{"role":"user","time":{"created":"x"}},"parts":[{"type":"text","text":5},{"type":"file","url":7}]},
			{"info":{"role":"assistant","tokens":[],"cost":{},"error":"boom"},"parts":[{"type":"tool","state":"done"},{"type":"step-finish","tokens":null},{"type":7}]},
			{"info":{"role":"assistant","summary":true},"parts":[{"type":"text","text":""}]},
			{"info":null,"parts":null}]}`, 5, 0, false},
		{"not json", `{"info":`, 0, 0, true},
		{"not an export", `{"something":"else"}`, 0, 0, true},
		{"a number", `42`, 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps, err := parseOpenCode(context.Background(), []byte(c.body), "x.json")
			if c.fails {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p := ps[0]
			if len(p.Entries) != c.entries || len(p.Malformed) != c.malformed {
				t.Errorf("%d entries, malformed %v", len(p.Entries), p.Malformed)
			}
			if err := write(context.Background(), session.NewMemoryStore(), p, "", &Options{}, &Report{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
