package workspace_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/workspace"
)

// project makes a small project directory for the examples.
func project(files map[string]string) string {
	dir, err := os.MkdirTemp("", "workspace-example-")
	if err != nil {
		log.Fatal(err)
	}
	for name, content := range files {
		write(dir, name, content)
	}
	return dir
}

func write(dir, name, content string) {
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		log.Fatal(err)
	}
}

// A snapshot records the tree in a blob store; Diff compares it with the
// files as they are now ("" is the working tree).
func ExampleWorkspace_Snapshot() {
	ctx := context.Background()
	dir := project(map[string]string{
		"main.go":    "package main\n\nfunc main() {}\n",
		".gitignore": "*.log\n",
		"build.log":  "ignored\n",
	})
	defer os.RemoveAll(dir)
	w, err := workspace.Open(dir, &workspace.Options{Blobs: session.NewMemoryStore()})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	snap, err := w.Snapshot(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("files recorded:", snap.Files) // main.go and .gitignore; build.log is ignored

	write(dir, "main.go", "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n")
	write(dir, "util.go", "package main\n")
	d, err := w.Diff(ctx, snap.ID, "", nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range d.Files {
		fmt.Printf("%s %s +%d -%d\n", f.Status, f.Path, f.Additions, f.Deletions)
	}
	fmt.Printf("total: %d files, +%d -%d\n", len(d.Files), d.Additions, d.Deletions)
	// Output:
	// files recorded: 2
	// modified main.go +3 -1
	// added util.go +1 -0
	// total: 2 files, +4 -1
}

// Restore brings the directory back to a snapshot. Expect is the
// snapshot the caller believes the files hold: a path changed since then
// by someone else is a conflict, not silently overwritten. A dry run
// lists the changes first.
func ExampleWorkspace_Restore() {
	ctx := context.Background()
	dir := project(map[string]string{"a.txt": "one\n", "b.txt": "two\n"})
	defer os.RemoveAll(dir)
	w, err := workspace.Open(dir, &workspace.Options{Blobs: session.NewMemoryStore()})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	before, err := w.Snapshot(ctx)
	if err != nil {
		log.Fatal(err)
	}
	write(dir, "a.txt", "ONE\n")
	os.Remove(filepath.Join(dir, "b.txt"))
	write(dir, "c.txt", "three\n")
	after, err := w.Snapshot(ctx)
	if err != nil {
		log.Fatal(err)
	}

	dry, err := w.Restore(ctx, before.ID, &workspace.RestoreOptions{Expect: after.ID, DryRun: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range dry.Changes {
		fmt.Println("would", c.Op, c.Path)
	}
	if _, err := w.Restore(ctx, before.ID, &workspace.RestoreOptions{Expect: after.ID}); err != nil {
		log.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "a.txt"))
	_, err = os.Stat(filepath.Join(dir, "c.txt"))
	fmt.Printf("a.txt: %q, c.txt gone: %t\n", a, os.IsNotExist(err))
	// Output:
	// would update a.txt
	// would create b.txt
	// would delete c.txt
	// a.txt: "one\n", c.txt gone: true
}

// Record appends a snapshot entry to a session at each step; Rewind takes
// the conversation and the files back together, and records the revert
// so that Undo can take it back.
func ExampleRewind() {
	ctx := context.Background()
	dir := project(map[string]string{"main.go": "package main\n"})
	defer os.RemoveAll(dir)
	store := session.NewMemoryStore()
	blobs, _ := session.BlobsOf(store) // the snapshots live where the session lives
	w, err := workspace.Open(dir, &workspace.Options{Blobs: blobs})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	s, err := session.Create(ctx, store, nil)
	if err != nil {
		log.Fatal(err)
	}
	s.Append(ctx, session.UserText("Add a helper."))
	if _, err := workspace.Record(ctx, s, w, nil); err != nil {
		log.Fatal(err)
	}
	s.Checkpoint(ctx, "before-helper")
	write(dir, "helper.go", "package main\n\nfunc helper() {}\n")
	s.Append(ctx, session.AssistantText("Added helper.go."))
	r, err := workspace.Record(ctx, s, w, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("recorded: +%d -%d\n", r.Diff.Additions, r.Diff.Deletions)

	rv, err := workspace.Rewind(ctx, s, w, "before-helper", nil)
	if err != nil {
		log.Fatal(err)
	}
	_, err = os.Stat(filepath.Join(dir, "helper.go"))
	fmt.Println("rewound:", rv.Restore.Changes[0].Op, rv.Restore.Changes[0].Path, "- helper.go gone:", os.IsNotExist(err))

	if _, err := workspace.Undo(ctx, s, w, nil); err != nil {
		log.Fatal(err)
	}
	_, err = os.Stat(filepath.Join(dir, "helper.go"))
	fmt.Println("undone: helper.go back:", err == nil)
	// Output:
	// recorded: +3 -0
	// rewound: delete helper.go - helper.go gone: true
	// undone: helper.go back: true
}

// Snapshots are blobs of the session's store: deleting the session, then
// collecting, frees the contents no remaining session's snapshot names,
// and keeps those another session's snapshots share.
func Example_garbageCollection() {
	ctx := context.Background()
	dir := project(map[string]string{"shared.go": "package main\n"})
	defer os.RemoveAll(dir)
	store := session.NewMemoryStore()
	blobs, _ := session.BlobsOf(store)
	w, err := workspace.Open(dir, &workspace.Options{Blobs: blobs})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	kept, _ := session.Create(ctx, store, nil)
	if _, err := workspace.Record(ctx, kept, w, nil); err != nil { // manifest 1 and shared.go
		log.Fatal(err)
	}
	gone, _ := session.Create(ctx, store, nil)
	write(dir, "scratch.go", "package main // only the deleted session saw this\n")
	if _, err := workspace.Record(ctx, gone, w, nil); err != nil { // manifest 2 and scratch.go
		log.Fatal(err)
	}
	gone.Close()
	store.Delete(ctx, gone.ID())

	res, err := session.CollectBlobs(ctx, store, &session.CollectOptions{Grace: -1}) // no writer meanwhile
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("manifests followed:", res.Manifests, "kept:", res.Kept, "deleted:", len(res.Deleted))
	// Output:
	// manifests followed: 1 kept: 2 deleted: 2
}
