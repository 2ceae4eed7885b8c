//go:build linux

package importer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	session "github.com/agentsession/session"
)

// A link swapped in while an import reads is not followed, even one that
// stays inside the root: the side files of a session are its own. Between
// the check of each path and its open, the test exchanges (atomically,
// renameat2 RENAME_EXCHANGE) the session's subagents directory, or an
// agent's meta.json, with a link to another session's; the open must
// refuse what it finds, and the store hold nothing of the other session.
func TestImportSymlinkSwapRace(t *testing.T) {
	const canary = "CANARY-SWAPPED-IN-3b7e"
	in := t.TempDir()
	sub := filepath.Join(in, "s", "subagents")
	writeFile(t, filepath.Join(in, "s.jsonl"), clLine("u-1", "", "s", "mine"))
	writeFile(t, filepath.Join(sub, "agent-a1.jsonl"), clAgentLine("a-1", "s", "a1", "my agent"))
	writeFile(t, filepath.Join(sub, "agent-a1.meta.json"), `{"description":"my agent's task"}`)
	// The other session, inside the root: its subagents and a JSON file.
	// The links are relative: os.Root follows those that stay inside.
	writeFile(t, filepath.Join(in, "o", "subagents", "agent-a1.jsonl"), clAgentLine("o-1", "o", "a1", canary))
	writeFile(t, filepath.Join(in, "o", "subagents", "agent-a1.meta.json"), `{"description":"`+canary+`"}`)
	writeFile(t, filepath.Join(in, "o", "secret.json"), `{"description":"`+canary+`"}`)
	swapDir, swapMeta := filepath.Join(in, "s", "swap-dir"), filepath.Join(sub, "swap-meta")
	if err := os.Symlink(filepath.Join("..", "o", "subagents"), swapDir); err != nil {
		t.Skip(err)
	}
	if err := os.Symlink(filepath.Join("..", "..", "o", "secret.json"), swapMeta); err != nil {
		t.Skip(err)
	}
	exchange := func(a, b string) {
		if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
			t.Skipf("renameat2: %v", err)
		}
	}
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		at    string // the path (rel) whose open is raced
		swap  func()
		undo  func()
		whole bool // the import itself still succeeds
	}{
		{"the subagents directory", filepath.Join("s", "subagents", "agent-a1.jsonl"),
			func() { exchange(sub, swapDir) }, func() { exchange(sub, swapDir) }, true},
		{"a meta.json", filepath.Join("s", "subagents", "agent-a1.meta.json"),
			func() { exchange(filepath.Join(sub, "agent-a1.meta.json"), swapMeta) },
			func() { exchange(filepath.Join(sub, "agent-a1.meta.json"), swapMeta) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			swapped := false
			hookAfterCheck = func(rel string) {
				if rel == c.at && !swapped {
					swapped = true
					c.swap()
				}
			}
			defer func() { hookAfterCheck = nil }()
			store := session.NewMemoryStore()
			rep, err := Import(ctx, store, filepath.Join(in, "s.jsonl"), nil)
			if swapped {
				c.undo()
			}
			if !swapped {
				t.Fatalf("the open of %s was never raced", c.at)
			}
			if got := storeDump(t, ctx, store); strings.Contains(got, canary) {
				t.Fatalf("followed a link swapped in after the check: the store holds the other session's files (%v)", err)
			}
			if c.whole && (rep == nil || len(rep.Imported) == 0) {
				t.Fatalf("the session itself did not import: %v", err)
			}
		})
	}
}
