// Workspace shows the files an agent edits going back with the
// conversation: each step is recorded as a snapshot of a temporary
// project, a step breaks the build, and one Rewind takes the
// conversation and the files back to before it; then the diff of what
// the rewind undid is printed, and Undo takes the rewind back.
//
//	go run ./examples/workspace
//
// It is a module of its own, as the workspace package is (its
// dependencies stay out of the session module); the repository's go.work
// runs it from the root.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/workspace"
)

func main() {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "agentsession-workspace-")
	check(err)
	defer os.RemoveAll(tmp)
	project := filepath.Join(tmp, "project")

	// The project the agent works on, and the store its sessions live in:
	// the snapshots go to the same store's blobs.
	write(project, "go.mod", "module example.com/hello\n\ngo 1.22\n")
	write(project, "main.go", "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(greeting())\n}\n")
	write(project, "greet.go", "package main\n\nfunc greeting() string { return \"hello\" }\n")
	write(project, ".gitignore", "bin/\n")
	write(project, "bin/hello", "a build output, ignored: never recorded, never touched\n")
	store, err := session.OpenFileStore(filepath.Join(tmp, "sessions"), nil)
	check(err)
	blobs, _ := session.BlobsOf(store)
	w, err := workspace.Open(project, &workspace.Options{Blobs: blobs})
	check(err)
	defer w.Close()
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: project})
	check(err)
	defer s.Close()

	// Step 1: the files as the agent found them.
	must(s.Append(ctx, session.UserText("Make the greeting friendlier.")))
	must(workspace.Record(ctx, s, w, nil))
	// The agent edits greet.go, adds a test, and the step is recorded:
	// the entry holds the snapshot's id and the diff's totals.
	must(s.Append(ctx, session.AssistantText("Done: greeting() now says hello, world.")))
	write(project, "greet.go", "package main\n\nfunc greeting() string { return \"hello, world\" }\n")
	write(project, "greet_test.go", "package main\n\nimport \"testing\"\n\nfunc TestGreeting(t *testing.T) {\n\tif greeting() == \"\" {\n\t\tt.Fatal(\"empty\")\n\t}\n}\n")
	good := must(workspace.Record(ctx, s, w, nil))
	check(s.Label(ctx, good.Entry.ID(), "friendly"))
	fmt.Printf("step recorded: %d files, +%d -%d\n", len(good.Diff.Files), good.Diff.Additions, good.Diff.Deletions)

	// Step 2 breaks the build: greet.go deleted, main.go mangled.
	must(s.Append(ctx, session.UserText("Now inline greeting() into main.")))
	must(s.Append(ctx, session.AssistantText("Inlined it and removed greet.go.")))
	check(os.Remove(filepath.Join(project, "greet.go")))
	write(project, "main.go", "package main\n\nfunc main() {\n\tfmt.Println(\"hello, world\"\n}\n")
	broken := must(workspace.Record(ctx, s, w, nil))
	fmt.Printf("step recorded: %d files, +%d -%d\n", len(broken.Diff.Files), broken.Diff.Additions, broken.Diff.Deletions)

	// Go back to before the agent broke the build: conversation and files.
	rv := must(workspace.Rewind(ctx, s, w, "friendly", nil))
	fmt.Printf("rewound to %q: %d files restored\n", "friendly", len(rv.Restore.Changes))
	for _, c := range rv.Restore.Changes {
		fmt.Printf("  %-6s %s\n", c.Op, c.Path)
	}
	fmt.Println("what the rewind undid:")
	d := must(w.Diff(ctx, rv.Before.ID, rv.Snapshot, &workspace.DiffOptions{Unified: true}))
	for _, f := range d.Files {
		fmt.Printf("  %-8s %s +%d -%d\n", f.Status, f.Path, f.Additions, f.Deletions)
	}
	for _, f := range d.Files {
		if f.Path == "main.go" {
			fmt.Print(indent(f.Unified))
		}
	}
	ignored, err := os.ReadFile(filepath.Join(project, "bin/hello"))
	check(err)
	fmt.Printf("ignored file untouched: %t\n", strings.HasPrefix(string(ignored), "a build output"))

	// The rewind is itself recorded, so it can be taken back.
	must(workspace.Undo(ctx, s, w, nil))
	_, err = os.Stat(filepath.Join(project, "greet.go"))
	fmt.Printf("after Undo, greet.go is gone again: %t\n", os.IsNotExist(err))
}

func write(dir, name, content string) {
	p := filepath.Join(dir, filepath.FromSlash(name))
	check(os.MkdirAll(filepath.Dir(p), 0o755))
	check(os.WriteFile(p, []byte(content), 0o644))
}

func indent(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString("    " + line)
	}
	return b.String()
}

func must[T any](v T, err error) T {
	check(err)
	return v
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
