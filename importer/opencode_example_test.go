package importer_test

import (
	"context"
	"errors"
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

// OpenCode's storage directory (versions up to 1.1) imports as the
// `opencode export` of each of its sessions would; the files of the tree
// that hold no session are named, with the reason. (The tree is one
// OpenCode's own tests write: see its PROVENANCE.md.)
func Example_openCodeStorage() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	dir := filepath.Join("testdata", "opencode", "public", "opencode-json-migration", "current", "storage")
	rep, err := importer.Import(ctx, store, dir, nil)
	if err != nil {
		panic(err)
	}
	for _, imp := range rep.Imported {
		s, err := session.Open(ctx, store, imp.ID)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s %q: %s\n", imp.ID, s.Title(), s.Context().Messages[0].Text())
		s.Close()
	}
	for _, n := range rep.NotImported {
		fmt.Println("not imported:", filepath.Base(n.Path), errors.Is(n.Err, importer.ErrOpenCodeNotSession))
	}
	// Output:
	// ses_test456def "Test Session": Hello, world!
	// not imported: migration true
	// not imported: proj_test123abc.json true
}
