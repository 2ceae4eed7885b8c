package importer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// clFile writes lines as the transcript of session "s1" in a new
// directory and returns its path.
func clFile(t testing.TB, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s1.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// clImport reads path and stores it in a MemoryStore, which must take
// it, and opens the session.
func clImport(t *testing.T, path string) (*Parsed, *session.Session) {
	t.Helper()
	ctx := context.Background()
	ps, err := readAt(ctx, readClaude, path)
	if err != nil {
		t.Fatal(err)
	}
	store := session.NewMemoryStore()
	if _, err := Import(ctx, store, path, &Options{Format: Claude}); err != nil {
		t.Fatal(err)
	}
	s, err := session.Open(ctx, store, ps[0].Header.ID)
	if err != nil {
		t.Fatal(err)
	}
	return ps[0], s
}

const clTS = `"sessionId":"s1","timestamp":"2026-02-01T10:00:00.000Z"`

// Real files have members of types the samples lack: none of them may
// fail an import.
func TestClaudeTolerant(t *testing.T) {
	for _, c := range []struct {
		name  string
		lines []string
		check func(t *testing.T, p *Parsed, s *session.Session)
	}{
		{"content is one block", []string{
			`{"type":"user","uuid":"a","parentUuid":null,` + clTS + `,"message":{"role":"user","content":{"type":"text","text":"hi"}}}`,
		}, func(t *testing.T, p *Parsed, s *session.Session) {
			if m := clMessage(t, s, "a"); m.Text() != "hi" {
				t.Errorf("text %q", m.Text())
			}
		}},
		{"message is a string", []string{
			`{"type":"user","uuid":"a",` + clTS + `,"message":"hello"}`,
		}, func(t *testing.T, p *Parsed, s *session.Session) {
			if m := clMessage(t, s, "a"); m.Text() != "hello" {
				t.Errorf("text %q", m.Text())
			}
		}},
		{"numbers as strings, ids as numbers, no message", []string{
			`{"type":"user","uuid":12,"parentUuid":null,"isSidechain":"false",` + clTS + `,"message":{"content":"q"}}`,
			`{"type":"assistant","uuid":"b","parentUuid":12,"timestamp":7,"message":{"id":"m","content":[{"type":"text","text":"r"}],"usage":{"input_tokens":"7","output_tokens":"x","cache_read_input_tokens":-3,"cache_creation_input_tokens":1.5e3}}}`,
			`{"type":"assistant","uuid":"c","parentUuid":"b"}`,
		}, func(t *testing.T, p *Parsed, s *session.Session) {
			u := clMessage(t, s, "b").Usage
			if u == nil || u.Input != 7 || u.Output != 0 || u.CacheRead != 0 || u.CacheWrite != 1500 {
				t.Errorf("usage %+v", u)
			}
			if e, _ := s.Entry("b"); e.ParentID() != "12" || e.Timestamp() != "2026-02-01T10:00:00.000Z" {
				t.Errorf("b: parent %q, time %s", e.ParentID(), e.Timestamp())
			}
			if m := clMessage(t, s, "c"); m.Role != session.RoleAssistant || len(m.Content) != 0 {
				t.Errorf("c: %+v", m)
			}
		}},
		{"odd blocks", []string{
			`{"type":"user","uuid":"a",` + clTS + `,"message":{"content":[{"type":"document","source":{"type":"url","url":"u"}},"bare",5,{"type":"image","source":{"type":"url","url":"x"}},{"text":"no type"}]}}`,
			`{"type":"assistant","uuid":"b","parentUuid":"a",` + clTS + `,"message":{"id":"m","content":[{"type":"tool_use","id":"t1","name":"N","input":"not an object"},{"type":"server_tool_use","id":"s"}],"stop_reason":null}}`,
			`{"type":"user","uuid":"c","parentUuid":"b",` + clTS + `,"message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":null,"is_error":"true"}]}}`,
		}, func(t *testing.T, p *Parsed, s *session.Session) {
			var types []string
			for _, b := range clMessage(t, s, "a").Content {
				types = append(types, b.Type)
			}
			if got := strings.Join(types, " "); got != "document text claude.value claude.image claude.block" {
				t.Errorf("user blocks: %s", got)
			}
			m := clMessage(t, s, "b")
			if len(m.Content) != 2 || string(m.Content[0].Arguments) != `{"input":"not an object"}` || m.Content[1].Type != "server_tool_use" || m.StopReason != session.StopToolUse {
				t.Errorf("assistant: %+v", m)
			}
			if r := clMessage(t, s, "c"); !r.IsError || r.ToolName != "N" || len(r.Content) != 0 {
				t.Errorf("result: %+v", r)
			}
		}},
		{"a split message around its first result", []string{
			`{"type":"user","uuid":"a",` + clTS + `,"message":{"content":"go"}}`,
			`{"type":"assistant","uuid":"b1","parentUuid":"a",` + clTS + `,"message":{"id":"m","content":[{"type":"tool_use","id":"t1","name":"A","input":{}}],"usage":{"output_tokens":1}}}`,
			`{"type":"user","uuid":"r1","parentUuid":"b1",` + clTS + `,"message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"1"}]}}`,
			`{"type":"assistant","uuid":"b2","parentUuid":"r1",` + clTS + `,"message":{"id":"m","content":[{"type":"tool_use","id":"t2","name":"B","input":{}}],"usage":{"output_tokens":9}}}`,
			`{"type":"user","uuid":"r2","parentUuid":"b2",` + clTS + `,"message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":"2"}]}}`,
		}, func(t *testing.T, p *Parsed, s *session.Session) {
			// One message with both calls, as Claude Code shows it (the
			// result between its lines is moved after them), the usage
			// counted once.
			if u := s.Usage(); u.Output != 9 {
				t.Errorf("total output %d, want 9", u.Output)
			}
			c := s.Context()
			if got := clRoles(c.Messages); got != "user assistant toolResult toolResult" || len(c.Orphans)+len(c.Dangling) != 0 {
				t.Errorf("context %s", got)
			}
		}},
		{"lines repeating the earlier blocks", []string{
			`{"type":"assistant","uuid":"b1",` + clTS + `,"message":{"id":"m","content":[{"type":"text","text":"x"}]}}`,
			`{"type":"assistant","uuid":"b2","parentUuid":"b1",` + clTS + `,"message":{"id":"m","content":[{"type":"text","text":"x"},{"type":"tool_use","id":"t","name":"T","input":{}}]}}`,
		}, func(t *testing.T, p *Parsed, s *session.Session) {
			if m := clMessage(t, s, "b1"); len(m.Content) != 2 || len(p.Entries) != 1 {
				t.Errorf("merged %+v (%d entries)", m.Content, len(p.Entries))
			}
		}},
		{"a uuid repeated with other content", []string{
			`{"type":"user","uuid":"a",` + clTS + `,"message":{"content":"one"}}`,
			`{"type":"user","uuid":"a","parentUuid":"a",` + clTS + `,"message":{"content":"two"}}`,
		}, func(t *testing.T, p *Parsed, s *session.Session) {
			if len(p.Malformed) != 1 || !errors.Is(p.Malformed[0].Err, ErrClaudeDuplicate) || p.Malformed[0].Line != 2 {
				t.Fatalf("malformed %v", p.Malformed)
			}
			if e, ok := s.Entry("a~2"); !ok || e.ParentID() != "a" {
				t.Errorf("a~2: %v %v", e, ok)
			}
		}},
		{"uuids that cannot be ids", []string{
			`{"type":"user","uuid":"a\nb",` + clTS + `,"message":{"content":"one"}}`,
			`{"type":"user","uuid":"` + strings.Repeat("x", session.MaxIDLength+1) + `","parentUuid":"a\nb",` + clTS + `,"message":{"content":"two"}}`,
		}, func(t *testing.T, p *Parsed, s *session.Session) {
			if len(p.Entries) != 2 || p.Entries[1].ParentID() != p.Entries[0].ID() || len(p.Malformed) != 0 {
				t.Errorf("entries %v, malformed %v", p.Entries, p.Malformed)
			}
			for _, e := range p.Entries {
				if len(e.ID()) != 8 {
					t.Errorf("id %q is not derived", e.ID())
				}
			}
		}},
		{"a cycle", []string{
			`{"type":"user","uuid":"a","parentUuid":"b",` + clTS + `,"message":{"content":"one"}}`,
			`{"type":"user","uuid":"b","parentUuid":"a",` + clTS + `,"message":{"content":"two"}}`,
		}, func(t *testing.T, p *Parsed, s *session.Session) {
			if len(p.Malformed) != 1 || !errors.Is(p.Malformed[0].Err, ErrClaudeCycle) || len(p.Entries) != 2 {
				t.Errorf("malformed %v, %d entries", p.Malformed, len(p.Entries))
			}
		}},
		{"the title from the summary of the last branch", []string{
			`{"type":"summary","summary":"Old title","leafUuid":"a"}`,
			`{"type":"summary","summary":"Title","leafUuid":"b"}`,
			`{"type":"summary","summary":"Title","leafUuid":"b"}`,
			`{"type":"user","uuid":"a",` + clTS + `,"message":{"content":"q"}}`,
			`{"type":"assistant","uuid":"b","parentUuid":"a",` + clTS + `,"message":{"id":"m","content":"r"}}`,
		}, func(t *testing.T, p *Parsed, s *session.Session) {
			if s.Title() != "Title" || s.Labels()["a"] != "Old title" || s.Labels()["b"] != "Title" {
				t.Errorf("title %q, labels %v", s.Title(), s.Labels())
			}
			if len(p.Entries) != 4 {
				t.Errorf("%d entries: a repeated summary is kept once", len(p.Entries))
			}
		}},
		{"only a summary", []string{
			`{"type":"summary","summary":"Elsewhere","leafUuid":"zz"}`,
		}, func(t *testing.T, p *Parsed, s *session.Session) {
			if s.Title() != "Elsewhere" || len(p.Entries) != 1 || p.Entries[0].Type() != session.TypeCustom {
				t.Errorf("title %q, entries %v", s.Title(), p.Entries)
			}
		}},
		{"a compact boundary without its summary", []string{
			`{"type":"user","uuid":"a",` + clTS + `,"message":{"content":"q"}}`,
			`{"type":"system","subtype":"compact_boundary","uuid":"c","parentUuid":null,"logicalParentUuid":"a",` + clTS + `,"compactMetadata":{"preTokens":"99"}}`,
			`{"type":"user","uuid":"d","parentUuid":"c",` + clTS + `,"message":{"content":"next"}}`,
		}, func(t *testing.T, p *Parsed, s *session.Session) {
			e, _ := s.Entry("c")
			var c session.Compaction
			if err := e.Decode(&c); err != nil || c.TokensBefore != 99 || e.ParentID() != "a" {
				t.Errorf("compaction %+v %v", c, err)
			}
			if got := clRoles(s.Context().Messages); got != "compactionSummary user" {
				t.Errorf("context %s", got)
			}
		}},
		{"no timestamps", []string{
			`{"type":"user","uuid":"a","message":{"content":"q"}}`,
			`{"type":"file-history-snapshot","messageId":"a","snapshot":{}}`,
		}, func(t *testing.T, p *Parsed, s *session.Session) {
			if len(p.Entries) != 2 || p.Unknown["claude.file-history-snapshot"] != 1 {
				t.Errorf("entries %d, unknown %v", len(p.Entries), p.Unknown)
			}
		}},
		{"not objects", []string{
			`[1,2]`, `"x"`, `{"type":"user","uuid":"a"} trailing`, `{"type":"user","uuid":"a",` + clTS + `,"message":{"content":"ok"}}`,
		}, func(t *testing.T, p *Parsed, s *session.Session) {
			if len(p.Malformed) != 3 || len(p.Entries) != 1 {
				t.Errorf("malformed %v, %d entries", p.Malformed, len(p.Entries))
			}
			for i, m := range p.Malformed {
				if m.Line != i+1 || !errors.Is(m.Err, ErrClaudeLine) {
					t.Errorf("malformed[%d] = %v", i, &m)
				}
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, s := clImport(t, clFile(t, c.lines...))
			c.check(t, p, s)
		})
	}
}

// Lines past the bounds are reported, and what is within them imports.
func TestClaudeLimits(t *testing.T) {
	defer func(l, n int) { claudeMaxLineBytes, claudeMaxLines = l, n }(claudeMaxLineBytes, claudeMaxLines)
	claudeMaxLineBytes, claudeMaxLines = 200, 3
	long := `{"type":"user","uuid":"x",` + clTS + `,"message":{"content":"` + strings.Repeat("a", 300) + `"}}`
	path := clFile(t,
		`{"type":"user","uuid":"a",`+clTS+`,"message":{"content":"q"}}`,
		long,
		`{"type":"user","uuid":"b","parentUuid":"a",`+clTS+`,"message":{"content":"r"}}`,
		`{"type":"user","uuid":"c","parentUuid":"b",`+clTS+`,"message":{"content":"s"}}`,
	)
	p, s := clImport(t, path)
	if len(p.Malformed) != 2 || p.Malformed[0].Line != 2 || p.Malformed[1].Line != 4 {
		t.Fatalf("malformed %v", p.Malformed)
	}
	if s.Len() != 2 {
		t.Errorf("%d entries, want 2", s.Len())
	}
}
