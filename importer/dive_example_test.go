package importer_test

import (
	"context"
	"fmt"
	"path/filepath"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/importer"
)

// A suspended Dive session imports into any store: its turns as
// messages (Dive's tool results split out of its user messages, named
// after their calls), the call still awaiting its result left pending,
// and Dive's suspension a typed suspension entry (Session.Suspended).
func Example_dive() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	path := filepath.Join("testdata", "dive", "dive-suspended.jsonl")
	rep, err := importer.Import(ctx, store, path, nil)
	if err != nil {
		panic(err)
	}
	imp := rep.Imported[0]
	fmt.Println(imp.Format, imp.ID, imp.Entries, "entries")

	s, err := session.Open(ctx, store, imp.ID)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	fmt.Printf("title %q\n", s.Title())
	c := s.Context()
	for _, m := range c.Messages {
		switch m.Role {
		case session.RoleAssistant:
			fmt.Printf("assistant: %q, %d tool call(s)\n", m.Text(), len(m.ToolCalls()))
		case session.RoleToolResult:
			fmt.Printf("result of %s: %q\n", m.ToolName, m.Text())
		default:
			fmt.Printf("%s: %q\n", m.Role, m.Text())
		}
	}
	for _, p := range c.Suspended {
		fmt.Println("suspended:", p.Name, p.CallID)
	}
	for e := range s.Entries() {
		var p struct {
			CustomType string `json:"customType"`
		}
		if e.Type() == session.TypeCustom && e.Decode(&p) == nil {
			fmt.Println("custom entry:", p.CustomType)
		}
	}
	// Output:
	// dive dive-suspended 6 entries
	// title "Deploy"
	// user: "hi"
	// assistant: "Hello.", 0 tool call(s)
	// user: "Deploy v2 to prod."
	// assistant: "Checking the release, then asking for approval.", 2 tool call(s)
	// result of lookup: "v2: 14 commits"
	// suspended: approve toolu_approve
	// custom entry: agentsession.suspension
}
