package importer

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// Transcripts published by another project (testdata/claude/public, see
// its PROVENANCE.md) import as the conversation Claude Code and that
// project show: one tree, the path to the leaf in file order, compact
// boundaries joined to what they compacted, subagents apart.

const clPublic = "testdata/claude/public/claude-code-log"

func TestClaudePublicTranscripts(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		file string
		id   string
		// roles of the context at the leaf
		roles string
		// the uuids on the path from the root to the leaf, in order
		// (lines merged into one message count under the first)
		path []string
		// the children's ids and titles
		kids map[string]string
	}{
		{
			file:  "representative_messages.jsonl",
			id:    "test_session",
			roles: "user assistant user assistant toolResult assistant user assistant toolResult assistant user",
			path:  []string{"msg_001", "msg_002", "msg_003", "msg_004", "msg_005", "msg_006", "msg_007", "msg_008", "msg_009", "msg_010", "msg_011"},
		},
		{
			file:  "edge_cases.jsonl",
			id:    "edge_cases",
			roles: "user assistant user assistant toolResult user user user assistant toolResult user",
			path:  []string{"edge_001", "edge_002", "edge_003", "edge_004", "edge_005", "edge_006", "edge_007", "edge_008", "edge_009", "edge_010", "edge_011"},
		},
		{
			file: "dag_compact_after_rewind.jsonl",
			id:   "s1",
			// The compaction's summary, then what followed it.
			roles: "compactionSummary user assistant",
			path:  []string{"u1", "a1", "b2u", "b2a", "b2u2", "b2a2", "cb", "p1u", "p1a"},
		},
		{
			file:  "minimal_showcase/55550000-0000-4000-8000-000000000001.jsonl",
			id:    "55550000-0000-4000-8000-000000000001",
			roles: "user assistant toolResult assistant toolResult assistant toolResult assistant toolResult toolResult assistant",
			path:  []string{"sc-u1", "sc-a1", "sc-r1", "sc-a2", "sc-r2", "sc-a3", "sc-r3", "sc-a4", "sc-r4", "sc-r5", "sc-a5"},
			kids: map[string]string{
				"55550000-0000-4000-8000-000000000001_agent-showcol1": "Survey the web module",
				"55550000-0000-4000-8000-000000000001_agent-showcol2": "Survey the jobs module",
			},
		},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			for name, mk := range clStores(t) {
				t.Run(name, func(t *testing.T) {
					store, reopen := mk()
					rep, err := Import(ctx, store, filepath.Join(clPublic, c.file), nil)
					if err != nil {
						t.Fatal(err)
					}
					if len(rep.Imported) != 1+len(c.kids) {
						t.Fatalf("imported %d sessions, want %d: %+v", len(rep.Imported), 1+len(c.kids), rep.Imported)
					}
					for _, m := range rep.Imported[0].Malformed {
						if !errors.Is(m.Err, ErrClaudeFileOrder) {
							t.Errorf("reported: %v", &m)
						}
					}
					store = reopen()
					s, err := session.Open(ctx, store, c.id)
					if err != nil {
						t.Fatal(err)
					}
					roots := 0
					for e := range s.Entries() {
						if e.ParentID() == "" {
							roots++
						}
					}
					if roots != 1 {
						t.Errorf("%d roots, want one tree", roots)
					}
					msgs := s.Context().Messages
					if got := clRoles(msgs); got != c.roles {
						t.Errorf("context roles\n got %s\nwant %s", got, c.roles)
					}
					path := mustPath(t, s)
					var ids []string
					for _, e := range path {
						if e.Type() == "message" || e.Type() == "compaction" {
							ids = append(ids, e.ID())
						}
					}
					if !slices.Equal(ids, c.path) {
						t.Errorf("path to the leaf\n got %v\nwant %v", ids, c.path)
					}
					for id, title := range c.kids {
						k, err := session.Open(ctx, store, id)
						if err != nil {
							t.Fatalf("child %s: %v", id, err)
						}
						if k.Title() != title || k.Header().ParentSession != c.id {
							t.Errorf("child %s: title %q, parent %q", id, k.Title(), k.Header().ParentSession)
						}
						if n := len(k.Context().Messages); n < 2 {
							t.Errorf("child %s: %d messages", id, n)
						}
					}
				})
			}
		})
	}
}

// Lines whose parentUuid is null (or absent) after the first are placed
// after the line before them in the file, as the conversation is shown;
// the import says so once, not once a line.
func TestClaudeNullParentsFileOrder(t *testing.T) {
	for _, absent := range []bool{false, true} {
		name := "null"
		if absent {
			name = "absent"
		}
		t.Run(name, func(t *testing.T) {
			line := func(uuid, typ, text string) string {
				l := clLine(uuid, "", "s", text)
				if typ == "assistant" {
					l = strings.Replace(l, `"type":"user","message":{"role":"user","content":`, `"type":"assistant","message":{"role":"assistant","model":"m","content":`, 1)
				}
				if absent {
					l = strings.Replace(l, `"parentUuid":null,`, ``, 1)
				}
				return l
			}
			path := clFile(t,
				line("n1", "user", "one"),
				line("n2", "assistant", "two"),
				line("n3", "user", "three"),
				line("n4", "assistant", "four"),
			)
			if f, err := Detect(path); err != nil || f != Claude {
				t.Errorf("Detect = %s, %v", f, err)
			}
			p, s := clImport(t, path)
			if got := clRoles(s.Context().Messages); got != "user assistant user assistant" {
				t.Errorf("context %s", got)
			}
			n := 0
			for _, m := range p.Malformed {
				if errors.Is(m.Err, ErrClaudeFileOrder) {
					n++
					if m.Line != 2 || !strings.Contains(m.Err.Error(), "3 lines") {
						t.Errorf("reported %v", &m)
					}
				}
			}
			if n != 1 {
				t.Errorf("reported %d times: %v", n, p.Malformed)
			}
		})
	}
}

// The guard behind every Claude Code import: a tree whose leaf is not
// on the chain of the file's last message is refused, not imported as
// another conversation.
func TestClaudeCheckShown(t *testing.T) {
	mk := func(uuid string, n int) *claudeLine {
		return &claudeLine{n: n, typ: "user", uuid: uuid}
	}
	nodes := []*clNode{
		{l: mk("a", 1), id: "a"},
		{l: mk("b", 2), id: "b", parent: "a"},
		{l: mk("c", 3), id: "c", parent: "a"},
	}
	b := &clBuilder{alias: map[string]string{"a": "a", "b": "b", "c": "c"}}
	b.items = []*clItem{{id: "a"}, {id: "c", parent: "a"}, {id: "b", parent: "a"}} // the leaf is b
	if err := b.checkShown(nodes); !errors.Is(err, ErrClaudeConversation) {
		t.Errorf("leaf off the last line's chain: %v", err)
	}
	b.items = []*clItem{{id: "a"}, {id: "b", parent: "a"}, {id: "c", parent: "a"}}
	if err := b.checkShown(nodes); err != nil {
		t.Errorf("leaf on it: %v", err)
	}
}
