package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// The files of testdata/dive were written by Dive v1.26.0's own
// FileStore (see testdata/dive/README.md).
var diveDir = filepath.Join("testdata", "dive")

func diveFile(name string) string { return filepath.Join(diveDir, name+".jsonl") }

// diveCopy copies testdata files into a temporary directory and returns
// it: the imports read real files there.
func diveCopy(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		b, err := os.ReadFile(diveFile(n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n+".jsonl"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// diveLines returns the lines of a testdata file.
func diveLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(diveFile(name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func writeLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

var diveNames = []string{"dive-fork", "dive-kinds", "dive-main", "dive-suspended", "dive-suspended-fork", "dive-torn"}

func TestDiveDetect(t *testing.T) {
	for _, n := range diveNames {
		if f, err := Detect(diveFile(n)); err != nil || f != Dive {
			t.Errorf("Detect(%s) = %q, %v", n, f, err)
		}
	}
	for _, p := range []string{codexNew, codexOld, ocExport} {
		if f, err := Detect(p); err != nil || f == Dive {
			t.Errorf("Detect(%s) = %q, %v", p, f, err)
		}
	}
	cases := map[string]bool{
		`{"line_type":"header","data":{"id":"s1","created_at":"2026-01-01T00:00:00Z"}}`: true,
		`{"line_type":"header","data":{}}`:                                              true,
		`{"data":{"id":"s1"},"line_type":"header"}`:                                     true,
		// Another version: recognised, then refused with ErrDiveVersion.
		`{"line_type":"header_v2","data":{"id":"s1"}}`: true,
		// A first line longer than the head.
		`{"line_type":"header","data":{"id":"s1","metadata":{"x":"` + strings.Repeat("x", 70000): true,
		`{"line_type":"header","data":null}`:                                                     false,
		`{"line_type":"event","data":{"id":"evt-1","type":"turn"}}`:                              false,
		`{"timestamp":"2025-10-29T00:59:38Z","type":"session_meta","payload":{"id":"x"}}`:        false,
		`{"type":"session","version":3,"id":"x"}`:                                                false,
		`{"info":{"id":"ses_1"},"messages":[]}`:                                                  false,
		`not json`:                                                                               false,
	}
	for head, want := range cases {
		h := []byte(head)
		if len(h) > 64<<10 {
			h = h[:64<<10]
		}
		if got := sniffDive(h); got != want {
			t.Errorf("sniffDive(%.60s) = %v, want %v", head, got, want)
		}
	}
}

// TestDiveImport imports each real file into a MemoryStore and a
// FileStore, reopens the store and checks what a session holds: its
// header, its context at the leaf, its usage (Dive's TotalUsage), what
// was reported; importing again stores nothing twice.
func TestDiveImport(t *testing.T) {
	type usage struct{ in, out, cacheRead, cacheWrite int64 }
	cases := []struct {
		name, parent, title string
		entries             int
		unknown             map[string]int
		malformed           []int
		roles               []string // of the context at the leaf
		pending             []string
		usage               usage // as Dive's TotalUsage reads it
	}{
		{name: "dive-main", title: "Fix the flaky test", entries: 13,
			roles: []string{"compactionSummary", "user", "assistant"}, usage: usage{340, 97, 720, 50}},
		{name: "dive-fork", parent: "dive-main", title: "Fix the flaky test", entries: 15,
			roles: []string{"compactionSummary", "user", "assistant", "user", "assistant"}, usage: usage{380, 103, 720, 50}},
		{name: "dive-suspended", title: "Deploy", entries: 6,
			roles:   []string{"user", "assistant", "user", "assistant", "toolResult:toolu_lookup"},
			pending: []string{"toolu_approve"}, usage: usage{110, 30, 0, 0}},
		{name: "dive-suspended-fork", parent: "dive-suspended", title: "Deploy", entries: 6,
			unknown: map[string]int{"dive.turn_metadata": 1},
			roles:   []string{"user", "assistant", "user", "assistant", "toolResult:toolu_lookup"},
			pending: []string{"toolu_approve"}, usage: usage{110, 30, 0, 0}},
		{name: "dive-kinds", entries: 13,
			roles: []string{"compactionSummary", "user", "assistant"}, usage: usage{550, 55, 0, 0}},
		{name: "dive-torn", entries: 4, malformed: []int{4},
			roles: []string{"user", "assistant", "user", "assistant"}, usage: usage{30, 3, 0, 0}},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(diveCopy(t, c.name), c.name+".jsonl")
			importStores(t, func(t *testing.T, store session.Store, reopen func() session.Store) {
				rep, err := Import(ctx, store, path, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(rep.Imported) != 1 || len(rep.Errors) != 0 {
					t.Fatalf("report: %+v", rep)
				}
				got := rep.Imported[0]
				if got.ID != c.name || got.Format != Dive || got.ParentSession != c.parent || got.Entries != c.entries {
					t.Errorf("imported %s (%s, parent %q, %d entries)", got.ID, got.Format, got.ParentSession, got.Entries)
				}
				if len(got.Unknown) != 0 || len(c.unknown) != 0 {
					if !reflect.DeepEqual(got.Unknown, c.unknown) {
						t.Errorf("unknown %v, want %v", got.Unknown, c.unknown)
					}
				}
				var lines []int
				for _, m := range got.Malformed {
					lines = append(lines, m.Line)
					if !errors.Is(m.Err, ErrDiveTorn) {
						t.Errorf("malformed %v: not ErrDiveTorn", &m)
					}
				}
				if !reflect.DeepEqual(lines, c.malformed) {
					t.Errorf("malformed lines %v, want %v", lines, c.malformed)
				}

				s := openImported(t, reopen(), c.name)
				if h := s.Header(); h.ParentSession != c.parent || s.Title() != c.title || h.Timestamp.IsZero() {
					t.Errorf("header %+v, title %q", h, s.Title())
				}
				leaf := s.Context()
				if r := roleList(leaf.Messages); !reflect.DeepEqual(r, c.roles) {
					t.Errorf("roles at the leaf:\n got %v\nwant %v", r, c.roles)
				}
				var pending []string
				for _, p := range append(leaf.Pending, leaf.Suspended...) {
					pending = append(pending, p.CallID)
				}
				if !reflect.DeepEqual(pending, c.pending) || len(leaf.Dangling) != 0 {
					t.Errorf("pending %v (want %v), dangling %v", leaf.Pending, c.pending, leaf.Dangling)
				}
				if u := s.Usage(); (usage{u.Input, u.Output, u.CacheRead, u.CacheWrite}) != c.usage {
					t.Errorf("usage %+v, want %+v", u, c.usage)
				}
				if _, err := s.Messages(ctx); err != nil {
					t.Error(err)
				}

				// Importing again stores nothing twice.
				rep, err = Import(ctx, reopen(), path, nil)
				if err != nil || len(rep.Imported) != 0 || len(rep.Skipped) != 1 {
					t.Errorf("re-import: %+v, %v", rep, err)
				}
			})
		})
	}
}

// TestDiveMain checks the mapping of each kind of record of dive-main.
func TestDiveMain(t *testing.T) {
	ctx := context.Background()
	importStores(t, func(t *testing.T, store session.Store, reopen func() session.Store) {
		if _, err := Import(ctx, store, diveFile("dive-main"), nil); err != nil {
			t.Fatal(err)
		}
		s := openImported(t, reopen(), "dive-main")
		lines := diveLines(t, "dive-main")

		// The header: created_at, and the members not mapped kept in "dive".
		var hl struct {
			Data struct {
				CreatedAt string `json:"created_at"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(lines[0]), &hl); err != nil {
			t.Fatal(err)
		}
		h := s.Header()
		if h.Timestamp.UnixMilli() != millisOf(hl.Data.CreatedAt) {
			t.Errorf("header time %v, created_at %s", h.Timestamp, hl.Data.CreatedAt)
		}
		extra, _ := h.Extra.Get("dive")
		if !strings.Contains(string(extra), `"metadata":{"project":"agentsession","tags":["tests","ci"]}`) || !strings.Contains(string(extra), `"updated_at"`) {
			t.Errorf("header extra: %s", extra)
		}

		// Before the compaction: every call answered by its result, the
		// tool results split out of Dive's user messages.
		comp := firstEntryOfType(t, s, session.TypeCompaction)
		before, err := s.ContextAt(comp.ParentID())
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"user", "assistant", "toolResult:toolu_ls", "toolResult:toolu_img", "user", "assistant",
			"user", "assistant", "toolResult:toolu_test", "assistant"}
		if r := roleList(before.Messages); !reflect.DeepEqual(r, want) {
			t.Fatalf("roles before the compaction:\n got %v\nwant %v", r, want)
		}
		if len(before.Dangling) != 0 || len(before.Orphans) != 0 {
			t.Errorf("dangling %v, orphans %v", before.Dangling, before.Orphans)
		}
		m := before.Messages
		if b := m[0].Content; len(b) != 3 || b[0].Text != "List the files and show me the logo." ||
			b[1].Type != session.BlockImage || b[1].MimeType != "image/png" || b[1].Data == "" || b[2].Type != "document" {
			t.Errorf("user message: %+v", b)
		} else if b[2].Title != "NOTES.md" || b[2].MimeType != "text/plain" || b[2].Text == "" {
			t.Errorf("document: %+v", b[2])
		}
		a := m[1]
		if a.StopReason != session.StopToolUse || len(a.Content) != 4 || a.Content[0].Thinking != "I should list the files and look at the logo." ||
			a.Content[0].ThinkingSignature != "sig-abc" || a.Content[1].Text != "Let me look." ||
			a.Content[2].Name != "ls" || string(a.Content[2].Arguments) != `{"path":"."}` {
			t.Errorf("first assistant message: %+v", a)
		}
		if id, _ := a.Extra.Get("responseId"); string(id) != `"msg_01"` {
			t.Errorf("responseId %s", id)
		}
		if m[2].ToolName != "ls" || m[2].Text() != "a.go\nb.go" || m[2].IsError {
			t.Errorf("ls result: %+v", m[2])
		}
		if c := m[3].Content; m[3].ToolName != "read_image" || len(c) != 2 || c[0].Text != "logo.png, 4x4" || c[1].Type != session.BlockImage || c[1].MimeType != "image/png" {
			t.Errorf("image result: %+v", m[3])
		}
		if m[4].Text() != "note: the listing hides dot files" {
			t.Errorf("the hook's context after the results: %+v", m[4])
		}
		if b := m[5].Content[0]; !b.Redacted || b.ThinkingSignature != "EmwKAhgBEgy3va3pzix" {
			t.Errorf("redacted thinking: %+v", b)
		}
		// The turn's usage on its last assistant message, none on the others.
		if u := m[5].Usage; u == nil || u.Input != 150 || u.Output != 60 || u.CacheRead != 720 || u.CacheWrite != 50 || u.TotalTokens != 980 {
			t.Errorf("turn usage: %+v", u)
		} else if r, _ := u.Extra.Get("reasoning"); string(r) != "12" {
			t.Errorf("reasoning tokens: %s", r)
		}
		if u := a.Usage; u != nil && u.Input+u.Output != 0 {
			t.Errorf("usage on the first message of the turn: %+v", u)
		}
		if !m[8].IsError || m[8].ToolName != "bash" || !strings.Contains(m[8].Text(), "TestFlaky timed out") {
			t.Errorf("failed tool: %+v", m[8])
		}
		if u := m[9].Usage; u == nil || u.Cost.Total != 0.03 || u.Cost.Input != 0.01 {
			t.Errorf("cost: %+v", u)
		}

		// The compaction: its summary, Dive's metadata in its details.
		var cp session.Compaction
		if err := comp.Decode(&cp); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(cp.Summary, "ran the tests: TestFlaky times out.") || cp.FirstKeptEntryID != "" ||
			string(cp.Details) != `{"metadata":{"original_event_count":2,"original_message_count":8}}` {
			t.Errorf("compaction: %+v (%s)", cp, cp.Details)
		}
		if !strings.HasPrefix(comp.ID(), "evt-") {
			t.Errorf("compaction id %s: the event's", comp.ID())
		}
		leaf := s.Context()
		if leaf.Messages[0].Summary != cp.Summary || leaf.Messages[2].Text() != "We listed the files and ran the tests; TestFlaky times out." {
			t.Errorf("after the compaction: %+v", leaf.Messages)
		}
	})
}

// TestDiveSuspended: the pending call stays pending, and the header's
// suspension is a typed suspension entry holding Dive's members verbatim.
func TestDiveSuspended(t *testing.T) {
	ctx := context.Background()
	importStores(t, func(t *testing.T, store session.Store, reopen func() session.Store) {
		if _, err := Import(ctx, store, diveFile("dive-suspended"), nil); err != nil {
			t.Fatal(err)
		}
		s := openImported(t, reopen(), "dive-suspended")
		var last session.Entry
		for e := range s.Entries() {
			last = e
		}
		var p customPayload
		if err := last.Decode(&p); err != nil || last.Type() != session.TypeCustom || p.CustomType != session.CustomSuspension {
			t.Fatalf("last entry %s: %v", last.JSON(), err)
		}
		v := s.Suspended()
		if v == nil || len(v.Calls) != 1 || v.Calls[0].CallID != "toolu_approve" || v.Calls[0].Name != "approve" || len(v.Pending) != 1 {
			t.Fatalf("suspended: %+v", v)
		}
		var hl struct {
			Data map[string]json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(diveLines(t, "dive-suspended")[0]), &hl); err != nil {
			t.Fatal(err)
		}
		want := `{"suspended":` + string(hl.Data["suspended"]) + `,"pending_tool_calls":` + string(hl.Data["pending_tool_calls"]) +
			`,"completed_tool_calls":` + string(hl.Data["completed_tool_calls"]) + `}`
		if string(v.State) != want {
			t.Errorf("suspension state:\n got %s\nwant %s", v.State, want)
		}
		if h, _ := s.Header().Extra.Get("dive"); bytes.Contains(h, []byte("pending")) {
			t.Errorf("the header repeats the suspension: %s", h)
		}
		leaf := s.Context()
		if len(leaf.Suspended) != 1 || leaf.Suspended[0].Name != "approve" || len(leaf.Pending) != 0 {
			t.Errorf("pending %+v, suspended %+v", leaf.Pending, leaf.Suspended)
		}
		// The messages for a model end with the results there are: the
		// pending call awaits its result, none is made up for it.
		msgs, err := s.Messages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m := msgs[len(msgs)-1]; m.ToolCallID != "toolu_lookup" || m.IsError || m.Synthetic() {
			t.Errorf("last message for a model: %+v", m)
		}
	})
}

// TestDiveKinds: the rarer content kinds of dive-kinds.
func TestDiveKinds(t *testing.T) {
	p, err := readAt(context.Background(), readDive, diveFile("dive-kinds"))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*session.Message
	var kinds []string
	for _, e := range p[0].Entries {
		kinds = append(kinds, e.Type())
		if m, err := e.Message(); err == nil && m != nil {
			msgs = append(msgs, m)
		}
	}
	if want := []string{"custom_message", "message", "message", "message", "message", "message", "message", "message", "message", "message", "compaction", "message", "message"}; !reflect.DeepEqual(kinds, want) {
		t.Fatalf("entries %v", kinds)
	}
	var sys customMessagePayload
	if err := p[0].Entries[0].Decode(&sys); err != nil || sys.CustomType != "dive.system" || sys.Content != "You are terse." {
		t.Errorf("system message: %+v, %v", sys, err)
	}
	if b := msgs[0].Content; len(b) != 1 || b[0].Type != "reminder" {
		t.Errorf("reminder: %+v", b)
	}
	if b := msgs[2].Content; len(b) != 3 || b[0].Type != "server_tool_use" || b[1].Type != "web_search_tool_result" || b[2].Text != "Griesemer, Pike and Thompson." {
		t.Errorf("web search: %+v", b)
	} else if !strings.Contains(string(b[2].Citations), "web_search_result_location") {
		t.Errorf("citations: %s", b[2].Citations)
	}
	if u := msgs[2].Usage; u == nil || u.Input != 200 {
		t.Errorf("usage: %+v", u)
	} else if v, _ := u.Extra.Get("service_tier"); string(v) != `"standard"` {
		t.Errorf("usage extra: %+v", u.Extra)
	}
	r := msgs[5:8]
	if r[0].Text() != "vet: no issues" || r[0].ToolName != "vet" {
		t.Errorf("string result: %+v", r[0])
	}
	if r[1].ToolName != "say" || len(r[1].Content) != 1 || r[1].Content[0].Type != "audio" {
		t.Errorf("audio result: %+v", r[1])
	}
	if r[2].ToolName != "" || r[2].ToolCallID != "toolu_gone" || !r[2].IsError {
		t.Errorf("result without its call: %+v", r[2])
	}
	if b := msgs[8].Content[0]; b.Text != "I will not run the third." || b.Type != session.BlockRefusal {
		t.Errorf("refusal: %+v", b)
	}
	var cp session.Compaction
	if err := p[0].Entries[10].Decode(&cp); err != nil || cp.Summary != "Asked who wrote Go; ran vet and say." ||
		!bytes.Contains(cp.Details, []byte(`"messages":[{"role":"user","content":[{"type":"summary"`)) {
		t.Errorf("compaction of a summary block: %+v (%s), %v", cp, cp.Details, err)
	}
}

// TestDiveMalformed: unreadable lines are reported by number and the
// rest imports; the last one cut short is ErrDiveTorn.
func TestDiveMalformed(t *testing.T) {
	l := diveLines(t, "dive-torn")
	path := filepath.Join(t.TempDir(), "s.jsonl")
	writeLines(t, path, l[0], l[1], `{"line_type":"event","data":{"id":"x",`, "", l[2], `not json at all`, l[3])
	store := session.NewMemoryStore()
	rep, err := Import(context.Background(), store, path, nil)
	if err != nil || len(rep.Imported) != 1 {
		t.Fatalf("%+v, %v", rep, err)
	}
	mal := rep.Imported[0].Malformed
	if len(mal) != 3 || mal[0].Line != 3 || mal[1].Line != 6 || mal[2].Line != 7 {
		t.Fatalf("malformed %v", mal)
	}
	if errors.Is(mal[0].Err, ErrDiveTorn) || errors.Is(mal[1].Err, ErrDiveTorn) || !errors.Is(mal[2].Err, ErrDiveTorn) {
		t.Errorf("torn: %v", mal)
	}
	if !strings.Contains(mal[2].Error(), "s.jsonl:7:") {
		t.Errorf("error text %q", mal[2].Error())
	}
	if rep.Imported[0].Entries != 4 {
		t.Errorf("%d entries", rep.Imported[0].Entries)
	}

	// A header of another version is refused, not read as an empty session.
	v2 := filepath.Join(t.TempDir(), "v2.jsonl")
	writeLines(t, v2, `{"line_type":"header_v2","data":{"id":"s1"}}`, l[1])
	rep, err = Import(context.Background(), store, v2, nil)
	if !errors.Is(err, ErrDiveVersion) || len(rep.Imported) != 0 {
		t.Errorf("header_v2: %+v, %v", rep, err)
	}
	// Nothing readable at all.
	junk := filepath.Join(t.TempDir(), "junk.jsonl")
	writeLines(t, junk, "nothing", "here")
	rep, err = Import(context.Background(), store, junk, &Options{Format: Dive})
	if !errors.Is(err, ErrNothingRead) {
		t.Errorf("junk: %+v, %v", rep, err)
	}
}

// TestDiveLongLine: a line over the cap is reported, not held, and the
// lines after it import.
func TestDiveLongLine(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 64 MiB")
	}
	l := diveLines(t, "dive-torn")
	head := l[0] + "\n" + `{"line_type":"event","data":{"messages":[{"role":"user","content":"`
	r := io.MultiReader(strings.NewReader(head), io.LimitReader(repeatByte('x'), DiveMaxLineBytes), strings.NewReader("\n"+l[1]+"\n"))
	p, err := parseDive(context.Background(), r, "long.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Malformed) != 1 || p.Malformed[0].Line != 2 || !errors.Is(p.Malformed[0].Err, session.ErrTooLarge) {
		t.Errorf("malformed: %v", p.Malformed)
	}
	if p.Header.ID != "dive-torn" || len(p.Entries) != 2 {
		t.Errorf("header %+v, %d entries", p.Header, len(p.Entries))
	}
}

// TestDiveReimport: a Dive session imported, then grown in Dive (turns
// appended, a torn line healed and written again, a compaction), imports
// again as the rest appended; one Dive rewrote otherwise (a suspended
// turn resumed) is a conflict, and the stored session is left as it is.
func TestDiveReimport(t *testing.T) {
	ctx := context.Background()
	main := diveLines(t, "dive-main")
	torn := diveLines(t, "dive-torn")
	susp := diveLines(t, "dive-suspended")
	// The suspended turn resumed (SaveResumedTurn): the header's
	// suspension cleared, the turn's tool results completed and answered.
	resumedHeader := `{"line_type":"header","data":{"id":"dive-suspended","title":"Deploy","created_at":"2026-11-27T20:11:02.06Z","updated_at":"2026-11-27T20:12:00Z"}}`
	resumedTurn := strings.Replace(susp[2], `"content":[{"text":"v2: 14 commits","type":"text"}]}]}]`,
		`"content":[{"text":"v2: 14 commits","type":"text"}]},{"type":"tool_result","tool_use_id":"toolu_approve","content":[{"text":"approved","type":"text"}]}]},{"role":"assistant","content":[{"type":"text","text":"Deployed."}]}]`, 1)
	resumedTurn = strings.Replace(resumedTurn, `,"metadata":{"suspended":true}`, "", 1)
	if resumedTurn == susp[2] {
		t.Fatal("the suspended turn changed shape: update the test")
	}
	healed := `{"line_type":"event","data":{"id":"evt-3","type":"turn","timestamp":"2026-11-27T20:12:00Z","messages":[{"role":"user","content":[{"type":"text","text":"question 3"}]},{"role":"assistant","content":[{"type":"text","text":"answer 3"}]}],"usage":{"input_tokens":30,"output_tokens":3}}}`

	const (
		resumes = iota
		skips
		conflicts
	)
	cases := []struct {
		name          string
		before, after []string
		want, resumed int // resumed: the entries stored before
	}{
		{"turns appended", main[:3], main, resumes, 10},
		{"compaction appended", main[:3], main[:4], resumes, 10},
		{"torn line healed", torn, append(append([]string{}, torn[:3]...), healed), resumes, 4},
		// The header is not compared: the stored one stays.
		{"title changed", main, append([]string{strings.Replace(main[0], "Fix the flaky test", "Renamed", 1)}, main[1:]...), skips, 0},
		{"suspended turn resumed", susp, []string{resumedHeader, susp[1], resumedTurn}, conflicts, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			importStores(t, func(t *testing.T, store session.Store, reopen func() session.Store) {
				path := filepath.Join(t.TempDir(), "s.jsonl")
				writeLines(t, path, c.before...)
				rep, err := Import(ctx, store, path, nil)
				if err != nil || len(rep.Imported) != 1 {
					t.Fatalf("first import: %+v, %v", rep, err)
				}
				id := rep.Imported[0].ID
				stored, err := reopen().Load(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				writeLines(t, path, c.after...)
				store = reopen()
				rep, err = Import(ctx, store, path, nil)
				switch c.want {
				case skips:
					if err != nil || len(rep.Skipped) != 1 {
						t.Errorf("want a skip: %+v, %v", rep, err)
					}
					return
				case conflicts:
					if !errors.Is(err, session.ErrConflict) {
						t.Fatalf("want a conflict: %+v, %v", rep, err)
					}
					now, err := reopen().Load(ctx, id)
					if err != nil || !reflect.DeepEqual(entryStrings(now.Entries), entryStrings(stored.Entries)) {
						t.Errorf("the stored session changed (%v)", err)
					}
					return
				}
				if err != nil || len(rep.Imported) != 1 || rep.Imported[0].Resumed != c.resumed {
					t.Fatalf("second import: %+v, %v", rep, err)
				}
				// The same context as a direct import of the grown file.
				direct := session.NewMemoryStore()
				if _, err := Import(ctx, direct, path, nil); err != nil {
					t.Fatal(err)
				}
				a, b := openImported(t, reopen(), id), openImported(t, direct, id)
				if x, y := entryStrings(collect(a)), entryStrings(collect(b)); !reflect.DeepEqual(x, y) {
					t.Errorf("resumed import differs from a direct one:\n%v\n%v", x, y)
				}
			})
		})
	}
}

func collect(s *session.Session) []session.Entry {
	var out []session.Entry
	for e := range s.Entries() {
		out = append(out, e)
	}
	return out
}

func entryStrings(es []session.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = string(e.JSON())
	}
	return out
}

// TestDiveDirectory: a directory of Dive files imports each, a fork
// with its parent named; again, each is skipped.
func TestDiveDirectory(t *testing.T) {
	ctx := context.Background()
	dir := diveCopy(t, diveNames...)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a session\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A rewrite Dive did not rename (a crash): not a session of its own.
	tmp := filepath.Join(dir, "dive-main.jsonl.tmp-1234567")
	if err := os.WriteFile(tmp, []byte(strings.Join(diveLines(t, "dive-fork"), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	store := session.NewMemoryStore()
	var progress []int
	rep, err := Import(ctx, store, dir, &Options{Progress: func(done, total int) { progress = append(progress, done) }})
	if err != nil || len(rep.Errors) != 0 {
		t.Fatalf("%+v, %v", rep, err)
	}
	var ids []string
	for _, s := range rep.Imported {
		ids = append(ids, s.ID+"<"+s.ParentSession)
	}
	sort.Strings(ids)
	want := []string{"dive-fork<dive-main", "dive-kinds<", "dive-main<", "dive-suspended-fork<dive-suspended", "dive-suspended<", "dive-torn<"}
	if !reflect.DeepEqual(ids, want) || len(progress) != len(diveNames) {
		t.Errorf("imported %v, progress %v", ids, progress)
	}
	rep, err = Import(ctx, store, dir, &Options{Format: Dive})
	if err != nil || len(rep.Skipped) != len(diveNames) || len(rep.Imported) != 0 {
		t.Errorf("again: %+v, %v", rep, err)
	}
	// Named alone, the temporary file is read (and here it holds a
	// session of its own).
	if f, err := Detect(tmp); err != nil || f != Dive {
		t.Errorf("Detect(tmp) = %q, %v", f, err)
	}
	rep, err = Import(ctx, store, tmp, nil)
	if err != nil || len(rep.Skipped) != 1 || rep.Skipped[0].ID != "dive-fork" {
		t.Errorf("the temporary file alone: %+v, %v", rep, err)
	}
}

// TestDiveTolerant feeds files whose members have unexpected types or
// values: they import, nothing panics, and what can be read is.
func TestDiveTolerant(t *testing.T) {
	hdr := `{"line_type":"header","data":{"id":"s1","created_at":"2026-01-01T00:00:00Z"}}` + "\n"
	ev := func(data string) string { return `{"line_type":"event","data":` + data + "}\n" }
	cases := []struct {
		name, body string
		check      func(t *testing.T, p *Parsed)
	}{
		{"wrong types", `{"line_type":"header","data":{"id":5,"title":[],"created_at":1,"metadata":"x","suspended":"yes","forked_from":{}}}` + "\n" +
			ev(`{"id":7,"type":"turn","timestamp":3,"messages":[1,"two",null,{"role":5,"content":{}},{"role":"assistant","content":[{"type":"tool_use","input":"ls -la"},{"type":"thinking","thinking":9},{"type":"image","source":"x"},{"type":"text","text":{}}]}],"usage":{"input_tokens":"12","output_tokens":-3,"cost":5,"reasoning_tokens":"many"}}`) +
			ev(`{"type":"turn","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":5,"content":{"type":"image","data":"AAAA"},"is_error":"true"},{"type":"tool_result","content":7},{"type":"text"}]}],"metadata":[1]}`) +
			ev(`{"type":"compaction","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]}`) +
			ev(`{"type":"compaction","messages":"summary?"}`) +
			ev(`{"type":"turn","messages":[],"usage":{"input_tokens":4}}`),
			func(t *testing.T, p *Parsed) {
				if len(p.Malformed) != 0 || len(p.Entries) < 8 || session.ValidateID(p.Header.ID) != nil {
					t.Errorf("%d entries, malformed %v, id %q", len(p.Entries), p.Malformed, p.Header.ID)
				}
				if !reflect.DeepEqual(p.Unknown, map[string]int{"dive.message": 3, "dive.5": 1, "dive.compaction": 2, "dive.usage": 1, "dive.turn_metadata": 1}) {
					t.Errorf("unknown %v", p.Unknown)
				}
			}},
		{"line and event types", hdr + `{"line_type":"checkpoint","data":{"x":1}}` + "\n" + hdr +
			ev(`{"id":"e1","type":"pause (v2)","messages":[{"role":"user","content":"hi"}]}`) + `{"line_type":"event"}` + "\n" + `[]` + "\n" + `{"line_type":"event","data":{}}`,
			func(t *testing.T, p *Parsed) {
				want := map[string]int{"dive.checkpoint": 1, "dive.header": 1, "dive.pause__v2_ (read as a turn)": 1, "dive.event": 1, "dive.event (read as a turn)": 1}
				if !reflect.DeepEqual(p.Unknown, want) || len(p.Malformed) != 1 || p.Malformed[0].Line != 6 {
					t.Errorf("unknown %v, malformed %v", p.Unknown, p.Malformed)
				}
				if m, _ := p.Entries[2].Message(); m == nil || m.Text() != "hi" || p.Entries[2].ID() != "e1" {
					t.Errorf("event of another type: %s", p.Entries[2].JSON())
				}
			}},
		{"roles", hdr + ev(`{"type":"turn","messages":[{"id":"d1","role":"developer","content":[{"type":"text","text":"be brief"}]},{"role":"tool","content":[{"type":"text","text":"?"}]},{"role":"system","content":[]},{"role":"system","content":[{"type":"text","text":"see"},{"type":"image","source":{"type":"url","url":"https://x"}}]},{"id":"m1","role":"user","content":[{"type":"text","text":"a"},{"type":"tool_result","tool_use_id":"c9","content":"r"},{"type":"text","text":"b"}],"extra":true}]}`),
			func(t *testing.T, p *Parsed) {
				var types []string
				for _, e := range p.Entries {
					types = append(types, e.Type())
				}
				if want := []string{"custom_message", "custom", "custom", "custom", "message", "message", "message"}; !reflect.DeepEqual(types, want) {
					t.Fatalf("entries %v", types)
				}
				if !reflect.DeepEqual(p.Unknown, map[string]int{"dive.tool": 1, "dive.system": 2}) {
					t.Errorf("unknown %v", p.Unknown)
				}
				var dev customMessagePayload
				if err := p.Entries[0].Decode(&dev); err != nil || dev.CustomType != "dive.developer" || string(dev.Details) != `{"id":"d1"}` {
					t.Errorf("developer message: %s", p.Entries[0].JSON())
				}
				m, _ := p.Entries[4].Message()
				if id, _ := m.Extra.Get("diveId"); string(id) != `"m1"` || m.Text() != "a" {
					t.Errorf("user message: %s", p.Entries[4].JSON())
				}
				if d, _ := m.Extra.Get("dive"); string(d) != `{"extra":true}` {
					t.Errorf("its other members: %s", d)
				}
			}},
		{"no header", ev(`{"id":"e1","type":"turn","messages":[{"role":"user","content":"hi"}]}`),
			func(t *testing.T, p *Parsed) {
				if p.Header.ID != "stem" || len(p.Entries) != 1 {
					t.Errorf("header %+v, %d entries", p.Header, len(p.Entries))
				}
			}},
		{"id Dive allows", `{"line_type":"header","data":{"id":"team:alpha"}}`,
			func(t *testing.T, p *Parsed) {
				if p.Header.ID != "team:alpha" {
					t.Errorf("header %+v", p.Header)
				}
			}},
		{"id no store takes", `{"line_type":"header","data":{"id":"team\u0000alpha"}}`,
			func(t *testing.T, p *Parsed) {
				if v, _ := p.Header.Extra.Get("diveId"); string(v) != `"team\u0000alpha"` || p.Header.ID != "stem" {
					t.Errorf("header %+v", p.Header)
				}
			}},
		{"suspended, no events", `{"line_type":"header","data":{"id":"s2","suspended":true,"pending_tool_calls":[{"id":"c1","name":"ask"}]}}`,
			func(t *testing.T, p *Parsed) {
				if len(p.Entries) != 1 || p.Entries[0].Type() != session.TypeCustom {
					t.Errorf("%d entries", len(p.Entries))
				}
			}},
		{"repeated ids", hdr + ev(`{"id":"e1","type":"turn","messages":[{"role":"user","content":"a"}]}`) + ev(`{"id":"e1","type":"turn","messages":[{"role":"user","content":"b"}]}`),
			func(t *testing.T, p *Parsed) {
				if len(p.Entries) != 2 || p.Entries[0].ID() == p.Entries[1].ID() {
					t.Errorf("entries %v", p.Entries)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := parseDive(context.Background(), strings.NewReader(c.body), filepath.Join("x", "stem.jsonl"))
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

// BenchmarkImportDive imports a Dive file of 5,000 turns (each a
// prompt, a tool call with thinking, its result and an answer: 20,000
// entries, made from the turn shape of Dive's agent) into a MemoryStore.
func BenchmarkImportDive(b *testing.B) {
	const turns = 5000
	var sb strings.Builder
	sb.WriteString(`{"line_type":"header","data":{"id":"dive-bench","title":"bench","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}}` + "\n")
	for i := range turns {
		fmt.Fprintf(&sb, `{"line_type":"event","data":{"id":"evt-%d","type":"turn","timestamp":"2026-01-01T00:00:00Z","messages":[`+
			`{"role":"user","content":[{"type":"text","text":"step %d: read file %d and summarise it"}]},`+
			`{"id":"msg_%d","role":"assistant","content":[{"type":"thinking","thinking":"I will read the file.","signature":"sig"},{"type":"tool_use","id":"toolu_%d","name":"read","input":{"path":"src/file%d.go"}}]},`+
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":[{"text":"package p%d\n\nfunc F%d() int { return %d }\n","type":"text"}]}]},`+
			`{"role":"assistant","content":[{"type":"text","text":"File %d defines F%d."}]}],`+
			`"usage":{"input_tokens":%d,"output_tokens":20,"cache_read_input_tokens":1000}}}`+"\n", i, i, i, i, i, i, i, i, i, i, i, i, 100+i)
	}
	path := filepath.Join(b.TempDir(), "dive-bench.jsonl")
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(sb.Len()))
	b.ResetTimer()
	for range b.N {
		rep, err := Import(context.Background(), session.NewMemoryStore(), path, nil)
		if err != nil || rep.Imported[0].Entries != 4*turns {
			b.Fatalf("%+v, %v", rep, err)
		}
	}
	b.ReportMetric(float64(4*turns*b.N)/b.Elapsed().Seconds(), "entries/s")
}
