package pgstore_test

import (
	"context"
	"encoding/json"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/importer"
)

// The importers write into any Store: the test files of every format
// (package importer's testdata) imported into PostgreSQL give the same
// sessions, with the same context at every leaf, as into a MemoryStore;
// and importing again stores nothing twice.
func TestImportIntoPostgres(t *testing.T) {
	ctx := context.Background()
	pg, _ := newStore(t)
	for _, src := range []string{
		"../importer/testdata/claude/projects",
		"../importer/testdata/codex",
		"../importer/testdata/opencode",
	} {
		mem := session.NewMemoryStore()
		want, err := importer.Import(ctx, mem, src, nil)
		if err != nil {
			t.Fatalf("%s into memory: %v", src, err)
		}
		got, err := importer.Import(ctx, pg, src, nil)
		if err != nil {
			t.Fatalf("%s into postgres: %v", src, err)
		}
		if len(got.Imported) != len(want.Imported) || len(got.Imported) == 0 {
			t.Fatalf("%s: %d sessions into postgres, %d into memory", src, len(got.Imported), len(want.Imported))
		}
		for _, imp := range want.Imported {
			sameLeaves(t, ctx, mem, pg, imp.ID)
		}
		again, err := importer.Import(ctx, pg, src, nil)
		// A directory may hold a session twice (OpenCode's export beside
		// its storage tree): the second was skipped the first time too.
		if err != nil || len(again.Imported) != 0 || len(again.Skipped) != len(want.Imported)+len(want.Skipped) {
			t.Fatalf("%s again: %v, imported %d, skipped %d", src, err, len(again.Imported), len(again.Skipped))
		}
	}
}

// sameLeaves compares the contexts of session id at every leaf in two
// stores, as JSON.
func sameLeaves(t *testing.T, ctx context.Context, a, b session.Store, id string) {
	t.Helper()
	sa, err := session.Open(ctx, a, id)
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close()
	sb, err := session.Open(ctx, b, id)
	if err != nil {
		t.Fatalf("%s in postgres: %v", id, err)
	}
	defer sb.Close()
	if sa.Len() != sb.Len() || sa.Title() != sb.Title() || sa.Header().ParentSession != sb.Header().ParentSession {
		t.Fatalf("%s: %d entries %q (parent %q) in memory, %d %q (parent %q) in postgres", id,
			sa.Len(), sa.Title(), sa.Header().ParentSession, sb.Len(), sb.Title(), sb.Header().ParentSession)
	}
	for _, leaf := range sa.Leaves() {
		ca, err := sa.ContextAt(leaf.ID())
		if err != nil {
			t.Fatal(err)
		}
		cb, err := sb.ContextAt(leaf.ID())
		if err != nil {
			t.Fatalf("%s at %s in postgres: %v", id, leaf.ID(), err)
		}
		ja, _ := json.Marshal(ca.Messages)
		jb, _ := json.Marshal(cb.Messages)
		if string(ja) != string(jb) {
			t.Errorf("%s: the context at %s differs between memory and postgres", id, leaf.ID())
		}
	}
}
