package importer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/importer"
)

// A Codex rollout imports into any store: its messages, tool calls and
// results, models and usage; the records without a place of their own
// are reported by type.
func Example_codex() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	path := filepath.Join("testdata", "codex", "rollout-2025-08-18T01-16-13-c3c4b301-27c8-4c70-b6e4-46b99fdf0236.jsonl")
	rep, err := importer.Import(ctx, store, path, nil)
	if err != nil {
		panic(err)
	}
	imp := rep.Imported[0]
	fmt.Println(imp.Format, imp.ID)
	var kinds []string
	for k, n := range imp.Unknown {
		kinds = append(kinds, fmt.Sprintf("%s x%d", k, n))
	}
	sort.Strings(kinds)
	fmt.Println("not imported:", kinds)

	s, err := session.Open(ctx, store, imp.ID)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	fmt.Println("cwd:", s.Header().Cwd)
	for _, m := range s.Context().Messages {
		switch m.Role {
		case session.RoleAssistant:
			fmt.Printf("assistant: %q, %d tool call(s)\n", m.Text(), len(m.ToolCalls()))
		case session.RoleToolResult:
			fmt.Printf("result of %s: %q\n", m.ToolName, m.Text())
		default:
			fmt.Printf("%s: %.20q\n", m.Role, m.Text())
		}
	}
	// Output:
	// codex c3c4b301-27c8-4c70-b6e4-46b99fdf0236
	// not imported: [codex.state (bookkeeping) x2]
	// cwd: /home/dev/legacy
	// custom: "<environment_context"
	// user: "hello codex"
	// assistant: "", 1 tool call(s)
	// result of shell: "hi\n"
	// assistant: "It printed hi.", 0 tool call(s)
}
