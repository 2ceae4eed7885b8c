package importer

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

const (
	codexNewID = "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"
	codexOldID = "c3c4b301-27c8-4c70-b6e4-46b99fdf0236"
)

var (
	codexNew = filepath.Join("testdata", "codex", "rollout-2025-10-29T00-59-38-"+codexNewID+".jsonl")
	codexOld = filepath.Join("testdata", "codex", "rollout-2025-08-18T01-16-13-"+codexOldID+".jsonl")
)

func millisOf(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

func TestCodexDetect(t *testing.T) {
	for _, path := range []string{codexNew, codexOld} {
		if f, err := Detect(path); err != nil || f != Codex {
			t.Errorf("Detect(%s) = %q, %v", path, f, err)
		}
	}
	cases := map[string]bool{
		`{"timestamp":"2025-10-29T00:59:38Z","type":"session_meta","payload":{"id":"x"}}`:                          true,
		`{"id":"x","timestamp":"2025-08-18T01:16:13Z","instructions":null}`:                                        true,
		`{"id":"x","timestamp":"2025-08-18T01:16:13Z","git":{}}`:                                                   true,
		`{"timestamp":"2025-10-29T00:59:38Z","type":"session_meta","payload":{"id":"` + strings.Repeat("x", 70000): true,
		`{"type":"user","uuid":"u1","sessionId":"s"}`:                                                              false,
		`{"type":"session","id":"x","version":3}`:                                                                  false,
		`{"info":{"id":"ses_1"},"messages":[]}`:                                                                    false,
		`not json`:                                                                                                 false,
	}
	for head, want := range cases {
		h := []byte(head)
		if len(h) > 64<<10 {
			h = h[:64<<10]
		}
		if got := sniffCodex(h); got != want {
			t.Errorf("sniffCodex(%.60s) = %v, want %v", head, got, want)
		}
	}
}

func TestCodexImport(t *testing.T) {
	ctx := context.Background()
	importStores(t, func(t *testing.T, store session.Store, reopen func() session.Store) {
		rep, err := Import(ctx, store, codexNew, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Imported) != 1 || len(rep.Errors) != 0 {
			t.Fatalf("report: %+v", rep)
		}
		got := rep.Imported[0]
		if got.ID != codexNewID || got.Format != Codex {
			t.Errorf("imported %s as %s", got.ID, got.Format)
		}
		wantUnknown := map[string]int{
			"codex.user_message (duplicate)": 1, "codex.agent_message (duplicate)": 1, "codex.agent_reasoning (duplicate)": 1,
			"codex.web_search_call": 1, "codex.exec_command_end": 1, "codex.task_complete": 1, "codex.token_count": 1,
			"codex.context_compacted": 1, "codex.world_state": 1, "codex.image_generation_call": 1, "codex.turn_aborted": 1,
		}
		if !reflect.DeepEqual(got.Unknown, wantUnknown) {
			t.Errorf("unknown:\n got %v\nwant %v", got.Unknown, wantUnknown)
		}
		if len(got.Malformed) != 2 || got.Malformed[0].Line != 32 || got.Malformed[1].Line != 39 {
			t.Errorf("malformed: %v", got.Malformed)
		}

		store = reopen()
		s := openImported(t, store, codexNewID)
		if s.Title() != "List and patch files" {
			t.Errorf("title %q", s.Title())
		}
		h := s.Header()
		if h.Cwd != "/home/dev/proj" || !h.Timestamp.Equal(time.UnixMilli(millisOf("2025-10-29T00:59:38.308Z"))) {
			t.Errorf("header: cwd %q, time %v", h.Cwd, h.Timestamp)
		}

		// Before the compaction: every call answered by its result.
		comp := firstEntryOfType(t, s, session.TypeCompaction)
		before, err := s.ContextAt(comp.ParentID())
		if err != nil {
			t.Fatal(err)
		}
		wantRoles := []string{"custom", "custom", "user", "assistant", "toolResult:call_1", "assistant",
			"toolResult:call_2", "toolResult:call_3", "assistant", "user", "assistant", "toolResult:call_4", "assistant"}
		if r := roleList(before.Messages); !reflect.DeepEqual(r, wantRoles) {
			t.Errorf("roles before the compaction:\n got %v\nwant %v", r, wantRoles)
		}
		if len(before.Dangling) != 0 || len(before.Orphans) != 0 {
			t.Errorf("dangling %v, orphans %v", before.Dangling, before.Orphans)
		}
		m := before.Messages
		if m[0].CustomType != "codex.developer" || !strings.Contains(m[0].Text(), "workspace-write") {
			t.Errorf("developer message: %+v", m[0])
		}
		if m[1].CustomType != "codex.environment_context" || !strings.Contains(m[1].Text(), "/home/dev/proj") {
			t.Errorf("environment: %+v", m[1])
		}
		if m[2].Text() != "list the files" || len(m[2].Content) != 2 || m[2].Content[1].Type != session.BlockImage ||
			m[2].Content[1].MimeType != "image/png" || m[2].Timestamp != millisOf("2025-10-29T00:59:39Z") {
			t.Errorf("user message: %+v", m[2])
		}
		a := m[3]
		if a.Model != "gpt-5-codex" || a.Provider != "openai" || a.StopReason != session.StopToolUse ||
			len(a.Content) != 2 || a.Content[0].Type != session.BlockThinking || a.Content[0].Thinking != "**Planning** the listing" {
			t.Errorf("first assistant message: %+v", a)
		}
		if u := a.Usage; u == nil || u.Input != 800 || u.CacheRead != 200 || u.Output != 50 || u.TotalTokens != 1050 {
			t.Errorf("first usage: %+v", a.Usage)
		}
		if c := a.Content[1]; c.Name != "shell" || string(c.Arguments) != `{"command":["ls"],"workdir":"/home/dev/proj"}` {
			t.Errorf("function call: %+v", c)
		}
		if c := m[5].Content; len(c) != 2 || c[0].Name != "apply_patch" || c[1].Name != "local_shell" ||
			!strings.Contains(string(c[0].Arguments), "Begin Patch") {
			t.Errorf("custom and local shell calls: %+v", c)
		}
		if m[6].IsError || m[6].ToolName != "apply_patch" || !m[7].IsError || m[7].ToolName != "local_shell" {
			t.Errorf("results: %+v / %+v", m[6], m[7])
		}
		if u := m[8].Usage; u == nil || u.Input != 300 || u.CacheRead != 1200 { // a usage given as a string still reads
			t.Errorf("third usage: %+v", m[8].Usage)
		}
		if c := m[11].Content; len(c) != 2 || c[1].Type != session.BlockImage {
			t.Errorf("image result: %+v", c)
		}
		if m[10].Model != "gpt-5" || string(m[10].Content[0].Arguments) != `{"path":"shot.png"}` {
			t.Errorf("call after the model change: %+v", m[10])
		}

		// At the leaf: the summary, then what followed.
		leaf := s.Context()
		if r := roleList(leaf.Messages); !reflect.DeepEqual(r, []string{"compactionSummary", "user", "assistant"}) {
			t.Errorf("roles at the leaf: %v", r)
		}
		if leaf.Messages[0].Summary != "Summary: listed files, added c.go, viewed a screenshot." {
			t.Errorf("summary: %q", leaf.Messages[0].Summary)
		}
		if leaf.Messages[1].Text() != "a string where a list belongs" || leaf.Messages[2].StopReason != session.StopAborted {
			t.Errorf("after the compaction: %+v", leaf.Messages[1:])
		}
		if leaf.Model == nil || *leaf.Model != (session.ModelRef{Provider: "openai", ModelID: "gpt-5"}) || leaf.ThinkingLevel != "medium" {
			t.Errorf("model %v, thinking %q", leaf.Model, leaf.ThinkingLevel)
		}
		if u := s.Usage(); u.Input != 800+300+300+2000 || u.Output != 50+80+20+10 {
			t.Errorf("session usage: %+v", u)
		}

		// Importing again stores nothing twice.
		rep, err = Import(ctx, store, codexNew, nil)
		if err != nil || len(rep.Imported) != 0 || len(rep.Skipped) != 1 {
			t.Errorf("re-import: %+v, %v", rep, err)
		}
	})
}

func TestCodexImportOld(t *testing.T) {
	ctx := context.Background()
	importStores(t, func(t *testing.T, store session.Store, reopen func() session.Store) {
		rep, err := Import(ctx, store, codexOld, &Options{Format: Codex})
		if err != nil || len(rep.Imported) != 1 {
			t.Fatalf("%+v, %v", rep, err)
		}
		if u := rep.Imported[0].Unknown; !reflect.DeepEqual(u, map[string]int{"codex.state (bookkeeping)": 2}) {
			t.Errorf("unknown: %v", u)
		}
		s := openImported(t, reopen(), codexOldID)
		if s.Header().Cwd != "/home/dev/legacy" {
			t.Errorf("cwd %q", s.Header().Cwd)
		}
		c := s.Context()
		// The environment Codex injects as a user message is context, as
		// its developer messages are: the model sees it, and the session
		// is not titled after it.
		if r := roleList(c.Messages); !reflect.DeepEqual(r, []string{"custom", "user", "assistant", "toolResult:call_a", "assistant"}) {
			t.Errorf("roles %v", r)
		}
		if c.Messages[0].CustomType != "codex.environment_context" {
			t.Errorf("environment: %+v", c.Messages[0])
		}
		page, err := reopen().List(ctx, session.ListOptions{})
		if err != nil || len(page.Sessions) != 1 || strings.HasPrefix(page.Sessions[0].Title, "<") {
			t.Errorf("listed: %+v, %v", page, err)
		}
		at := millisOf("2025-08-18T01:16:13.522Z")
		for _, m := range c.Messages {
			if m.Timestamp != at {
				t.Errorf("%s at %d, want the session's time", m.Role, m.Timestamp)
			}
		}
		if c.Messages[3].Text() != "hi\n" || c.Messages[3].ToolName != "shell" || c.Messages[4].Text() != "It printed hi." {
			t.Errorf("messages: %+v", c.Messages[3:])
		}
	})
}

// TestCodexTolerant feeds rollouts whose members have unexpected types:
// they import, nothing panics, and what can be read is.
func TestCodexTolerant(t *testing.T) {
	meta := `{"timestamp":"2025-10-29T00:00:00Z","type":"session_meta","payload":{"id":"s1","cwd":7,"model_provider":["x"]}}` + "\n"
	cases := []struct {
		name, body string
		check      func(t *testing.T, p *Parsed)
	}{
		{"wrong types", `{"timestamp":5,"type":"response_item","payload":{"type":"function_call","name":1,"arguments":123,"call_id":{}}}
{"timestamp":"x","type":"response_item","payload":{"type":"function_call_output","call_id":null,"output":false}}
{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":"lots","output_tokens":1e300}}}}
{"type":"response_item","payload":{"type":"message","role":"assistant","content":[1,"two",{"type":"output_text","text":3},null]}}
{"type":"response_item","payload":{"type":"reasoning","summary":"none","encrypted_content":5}}
{"type":"compacted","payload":{"message":null,"replacement_history":{}}}
{"type":"turn_context","payload":{"model":{},"effort":1}}
{"type":"event_msg","payload":"just a string"}
{"type":"event_msg","payload":{"type":{}}}`, func(t *testing.T, p *Parsed) {
			if len(p.Malformed) != 0 || len(p.Entries) < 8 {
				t.Errorf("%d entries, malformed %v", len(p.Entries), p.Malformed)
			}
		}},
		{"no meta", `{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}`,
			func(t *testing.T, p *Parsed) {
				if session.ValidateID(p.Header.ID) != nil || len(p.Entries) != 1 {
					t.Errorf("header %+v, %d entries", p.Header, len(p.Entries))
				}
			}},
		{"subagent", `{"type":"session_meta","payload":{"id":"s2","source":{"subagent":{"thread_spawn":{"parent_thread_id":"p1","depth":1}}}}}`,
			func(t *testing.T, p *Parsed) {
				if p.Header.ParentSession != "p1" {
					t.Errorf("parent %q", p.Header.ParentSession)
				}
			}},
		{"fork", `{"type":"session_meta","payload":{"id":"s3","forked_from_id":"p2"}}
{"type":"session_meta","payload":{"id":"p2"}}`, func(t *testing.T, p *Parsed) {
			if p.Header.ID != "s3" || p.Header.ParentSession != "p2" || len(p.Entries) != 2 {
				t.Errorf("header %+v, %d entries", p.Header, len(p.Entries))
			}
		}},
		{"reasoning", `{"type":"session_meta","payload":{"id":"s4"}}
{"type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"short"}],"content":[{"type":"reasoning_text","text":"long"}]}}
{"type":"response_item","payload":{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"raw only"}]}}
{"type":"response_item","payload":{"type":"reasoning","summary":[],"encrypted_content":"opaque"}}`, func(t *testing.T, p *Parsed) {
			m, err := p.Entries[1].Message()
			if err != nil || len(m.Content) != 3 {
				t.Fatalf("%+v, %v", m, err)
			}
			b := m.Content
			raw, _ := b[0].Extra.Get("reasoningContent")
			if b[0].Thinking != "short" || !strings.Contains(string(raw), "long") || b[1].Thinking != "raw only" ||
				!b[2].Redacted || b[2].Thinking != "" {
				t.Errorf("thinking blocks: %+v", b)
			}
		}},
		{"unreadable compaction", `{"type":"session_meta","payload":{"id":"s5"}}
{"type":"compacted","payload":{"message":"","replacement_history":[{"type":"compaction","encrypted_content":"x"}]}}`,
			func(t *testing.T, p *Parsed) {
				if len(p.Entries) != 2 || p.Entries[1].Type() != session.TypeCustom || p.Unknown["codex.compacted"] != 1 {
					t.Errorf("%d entries, unknown %v", len(p.Entries), p.Unknown)
				}
			}},
		{"bad id", `{"type":"session_meta","payload":{"id":"a\u0000b"}}`, func(t *testing.T, p *Parsed) {
			if v, _ := p.Header.Extra.Get("codexId"); string(v) != `"a\u0000b"` || session.ValidateID(p.Header.ID) != nil {
				t.Errorf("header %+v", p.Header)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := c.body
			if c.name == "wrong types" {
				body = meta + body
			}
			p, err := parseCodex(context.Background(), strings.NewReader(body), "x.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, p)
			if err := write(context.Background(), session.NewMemoryStore(), p, "", &Options{}, &Report{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCodexLongLine: a line over the cap is reported, not held, and the
// lines after it import.
func TestCodexLongLine(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 64 MiB")
	}
	head := `{"timestamp":"2025-10-29T00:00:00Z","type":"session_meta","payload":{"id":"s1"}}` + "\n" + `{"type":"response_item","payload":{"text":"`
	tail := "\n" + `{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"after"}]}}` + "\n"
	r := io.MultiReader(strings.NewReader(head), io.LimitReader(repeatByte('x'), CodexMaxLineBytes), strings.NewReader(tail))
	p, err := parseCodex(context.Background(), r, "long.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Malformed) != 1 || p.Malformed[0].Line != 2 || !errors.Is(p.Malformed[0].Err, session.ErrTooLarge) {
		t.Errorf("malformed: %v", p.Malformed)
	}
	if n := len(p.Entries); n != 2 {
		t.Errorf("%d entries, want the meta and the user message", n)
	}
}

// TestCodexNameFallback: a rollout without a usable meta takes its id
// and time from its file name, and keeps the meta's id.
func TestCodexNameFallback(t *testing.T) {
	body := `{"type":"session_meta","payload":{"id":"not\nvalid"}}` + "\n" +
		`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}`
	src := filepath.Join("x", "rollout-2025-10-29T00-59-38-"+codexNewID+".jsonl")
	p, err := parseCodex(context.Background(), strings.NewReader(body), src)
	if err != nil {
		t.Fatal(err)
	}
	h := p.Header
	if h.ID != codexNewID || h.Timestamp.UnixMilli() != millisOf("2025-10-29T00:59:38Z") {
		t.Errorf("header %+v", h)
	}
	if v, _ := h.Extra.Get("codexId"); string(v) != `"not\nvalid"` {
		t.Errorf("codexId %s", v)
	}
	if e := p.Entries[1]; e.Time().UnixMilli() != h.Timestamp.UnixMilli() {
		t.Errorf("entry time %v", e.Time())
	}
}
