package importer_test

import (
	"context"
	"fmt"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/importer"
)

// Importing a directory of Claude Code transcripts (a copy of
// ~/.claude/projects): each session is stored with its subagents as
// child sessions; the report says what was imported and what could not
// be read.
func ExampleImport_claude() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	rep, err := importer.Import(ctx, store, "testdata/claude/projects", nil)
	if err != nil {
		panic(err)
	}
	for _, s := range rep.Imported {
		fmt.Printf("%s: %d entries, %d unreadable lines, parent %q\n", s.ID, s.Entries, len(s.Malformed), s.ParentSession)
	}
	s, err := session.Open(ctx, store, "5e55a1de-0000-4000-8000-000000000001")
	if err != nil {
		panic(err)
	}
	fmt.Println("title:", s.Title())
	for _, m := range s.Context().Messages {
		fmt.Printf("%s: %.40s\n", m.Role, m.Text())
	}
	// Output:
	// 5e55a1de-0000-4000-8000-000000000001: 26 entries, 2 unreadable lines, parent ""
	// 5e55a1de-0000-4000-8000-000000000001_sidechain-00000101-aaaa-4bbb-8ccc-000000000101: 4 entries, 0 unreadable lines, parent "5e55a1de-0000-4000-8000-000000000001"
	// 5e55a1de-0000-4000-8000-000000000001_agent-e5f6a7b8: 2 entries, 0 unreadable lines, parent "5e55a1de-0000-4000-8000-000000000001"
	// 5e55a1de-0000-4000-8000-000000000001_agent-a1b2c3d4: 2 entries, 0 unreadable lines, parent "5e55a1de-0000-4000-8000-000000000001"
	// title: Login bug
	// compactionSummary: This session is being continued from a p
	// user: Now add a test
	// assistant: Added auth_test.go.
}
