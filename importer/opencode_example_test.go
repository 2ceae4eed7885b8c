package importer_test

import (
	"context"
	"fmt"
	"path/filepath"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/importer"
)

// An `opencode export` file imports with its title, its subagent
// sessions as children, and each message's tokens and cost as usage.
func Example_openCode() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	path := filepath.Join("testdata", "opencode", "parent-and-child.json")
	rep, err := importer.Import(ctx, store, path, &importer.Options{Format: importer.OpenCode})
	if err != nil {
		panic(err)
	}
	for _, imp := range rep.Imported {
		s, err := session.Open(ctx, store, imp.ID)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s %q parent=%q cost=%.2f\n", imp.ID, s.Title(), imp.ParentSession, s.Usage().Cost.Total)
		s.Close()
	}
	// Import again: the sessions are there already.
	rep, _ = importer.Import(ctx, store, path, nil)
	fmt.Println("imported", len(rep.Imported), "skipped", len(rep.Skipped))
	// Output:
	// ses_parentAAAAAAAAAAAAAAAAAA "Parent" parent="" cost=0.50
	// ses_childBBBBBBBBBBBBBBBBBBBB "Child (@reviewer subagent)" parent="ses_parentAAAAAAAAAAAAAAAAAA" cost=0.50
	// imported 0 skipped 2
}
