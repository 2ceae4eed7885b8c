package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	session "github.com/agentsession/session"
)

// agent is a session on a store with blobs and a workspace on its blob
// store, as a host sets them up.
func agent(t *testing.T, store session.Store, specs ...spec) (*session.Session, *Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	build(t, dir, specs...)
	blobs, ok := session.BlobsOf(store)
	if !ok {
		t.Fatal("no blobs")
	}
	w := reopen(t, dir, blobs, nil)
	s, err := session.Create(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, w, dir
}

func step(t *testing.T, s *session.Session, w *Workspace, text string) (session.Entry, *Recorded) {
	t.Helper()
	res, err := s.Append(ctx, session.UserText(text))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Record(ctx, s, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res, r
}

func TestRecordRewindUndo(t *testing.T) {
	store := session.NewMemoryStore()
	s, w, dir := agent(t, store, spec{path: "main.go", content: "package main\n"})
	_, r1 := step(t, s, w, "start")
	if r1.Entry.IsZero() || r1.Diff != nil {
		t.Fatalf("%+v", r1)
	}
	st1 := state(t, dir)
	cp, err := s.Checkpoint(ctx, "before-edit")
	if err != nil {
		t.Fatal(err)
	}
	build(t, dir, spec{path: "main.go", content: "package main\n\nfunc main() {}\n"}, spec{path: "util.go", content: "package main\n"})
	_, r2 := step(t, s, w, "edit")
	var ws session.WorkspaceSnapshot
	if err := decodeSnap(r2.Entry, &ws); err != nil || ws.Files != 2 || ws.Additions != 3 || ws.Deletions != 0 || ws.Kind != session.SnapshotStep {
		t.Fatalf("%+v %v", ws, err)
	}
	st2 := state(t, dir)
	// Nothing changed: nothing appended.
	if _, r := step(t, s, w, "idle"); !r.Entry.IsZero() {
		t.Fatal("an unchanged workspace was recorded again")
	}
	d, err := DiffEntries(ctx, w, s, r1.Entry.ID(), s.LeafID(), nil)
	if err != nil || len(d.Files) != 2 {
		t.Fatalf("%+v %v", d, err)
	}
	// The user edits util.go by hand: a rewind refuses, then forced keeps
	// the edit in Before.
	build(t, dir, spec{path: "util.go", content: "package main // user\n"})
	if _, err := Rewind(ctx, s, w, "before-edit", nil); !errors.As(err, new(*ConflictError)) {
		t.Fatalf("err = %v", err)
	}
	stUser := state(t, dir)
	leaf := s.LeafID()
	rv, err := Rewind(ctx, s, w, "before-edit", &RevertOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	equalState(t, state(t, dir), st1)
	if rv.From != leaf || rv.To != cp.EntryID || rv.Entry.IsZero() {
		t.Fatalf("%+v", rv)
	}
	if err := decodeSnap(rv.Entry, &ws); err != nil || ws.Kind != session.SnapshotRevert || ws.Previous != rv.Before.ID || ws.Snapshot != r1.Snapshot.ID {
		t.Fatalf("%+v", ws)
	}
	if id, _ := SnapshotAt(s, ""); id != r1.Snapshot.ID {
		t.Fatal("the leaf's snapshot is not the target's")
	}
	// Undo brings back what the user had, edit included.
	if _, err := Undo(ctx, s, w, nil); err != nil {
		t.Fatal(err)
	}
	equalState(t, state(t, dir), stUser)
	// Branch back to the edit: its files.
	if _, err := Branch(ctx, s, w, r2.Entry.ID(), &RevertOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	equalState(t, state(t, dir), st2)
	// A dry run changes nothing, the session included.
	n := s.Len()
	rv, err = Rewind(ctx, s, w, r1.Entry.ID(), &RevertOptions{DryRun: true})
	if err != nil || len(rv.Restore.Changes) == 0 || s.Len() != n {
		t.Fatalf("%+v %v", rv, err)
	}
	equalState(t, state(t, dir), st2)
}

func decodeSnap(e session.Entry, ws *session.WorkspaceSnapshot) error {
	var c session.Custom
	if err := e.Decode(&c); err != nil {
		return err
	}
	if c.CustomType != session.CustomSnapshot {
		return errors.New("not a snapshot entry")
	}
	return jsonUnmarshal(c.Data, ws)
}

func TestForkSameAndOtherStore(t *testing.T) {
	root := t.TempDir()
	fs1, err := session.OpenFileStore(filepath.Join(root, "one"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, w, dir := agent(t, fs1, spec{path: "a", content: "1\n"})
	_, r1 := step(t, s, w, "one")
	build(t, dir, spec{path: "a", content: "2\n"})
	step(t, s, w, "two")
	blobsBefore := countFiles(t, fs1.Blobs().Dir())
	// Same store: references only, the files back to e1.
	f, rv, err := Fork(ctx, s, w, &ForkOptions{ForkOptions: session.ForkOptions{At: r1.Entry.ID()}})
	if err != nil {
		t.Fatal(err)
	}
	if got := countFiles(t, fs1.Blobs().Dir()); got != blobsBefore {
		t.Errorf("a fork in the same store stored blobs: %d -> %d", blobsBefore, got)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "a")); string(data) != "1\n" || rv == nil {
		t.Fatalf("not restored: %q", data)
	}
	if id, _ := SnapshotAt(f, ""); id != r1.Snapshot.ID {
		t.Fatal("the fork's snapshot")
	}
	// Another store: the blobs the fork's snapshots name are copied.
	fs2, err := session.OpenFileStore(filepath.Join(root, "two"), nil)
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := Fork(ctx, s, nil, &ForkOptions{ForkOptions: session.ForkOptions{Store: fs2}})
	if err != nil {
		t.Fatal(err)
	}
	id, err := SnapshotAt(g, "")
	if err != nil {
		t.Fatal(err)
	}
	w2 := reopen(t, t.TempDir(), fs2, nil)
	if _, err := w2.Restore(ctx, id, &RestoreOptions{Force: true}); err != nil {
		t.Fatalf("the fork's store lacks its snapshot: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(w2.Dir(), "a")); string(data) != "2\n" {
		t.Fatalf("%q", data)
	}
}

func countFiles(t *testing.T, dir string) int {
	ents, _ := os.ReadDir(dir)
	return len(ents)
}

// TestRecordDurableOrder: with a FileStore, a snapshot's contents and
// manifest are in the store when its entry is appended.
func TestRecordDurableOrder(t *testing.T) {
	fs1, err := session.OpenFileStore(t.TempDir(), &session.FileStoreOptions{Sync: session.SyncEveryAppend})
	if err != nil {
		t.Fatal(err)
	}
	s, w, _ := agent(t, fs1, spec{path: "x", content: "x"}, spec{path: "y/z", content: "z"})
	_, r := step(t, s, w, "go")
	m, err := DecodeManifest(must(fs1.GetBlob(ctx, r.Snapshot.ID)))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range m.Entries {
		if _, err := fs1.GetBlob(ctx, e.Ref()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecordAfterCollectWithNegativeGrace: a session is deleted and its
// blobs collected (Grace -1, nobody writing); the same workspace, its
// stat cache vouching for every file and nothing changed, then records
// into another session, whose snapshot must be whole (manifest and
// contents in the store).
func TestRecordAfterCollectWithNegativeGrace(t *testing.T) {
	root := t.TempDir()
	store, err := session.OpenFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, w, dir := agent(t, store, spec{path: "main.go", content: "package main\n"}, spec{path: "lib/x.go", content: "package lib\n"})
	later(w)
	step(t, a, w, "a")
	if err := store.Delete(ctx, a.ID()); err != nil {
		t.Fatal(err)
	}
	res, err := session.CollectBlobs(ctx, store, &session.CollectOptions{Grace: -1})
	if err != nil || len(res.Deleted) == 0 {
		t.Fatalf("%+v %v", res, err)
	}
	b, err := session.Create(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, r := step(t, b, w, "b")
	m, err := w.Manifest(ctx, r.Snapshot.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.GetBlob(ctx, r.Snapshot.ID); err != nil {
		t.Errorf("manifest: %v", err)
	}
	for _, e := range m.Entries {
		if e.Type == File {
			if _, err := store.GetBlob(ctx, e.Ref()); err != nil {
				t.Errorf("%s: %v", e.Path, err)
			}
		}
	}
	build(t, dir, spec{path: "main.go", content: "package main // changed\n"})
	if _, err := w.Restore(ctx, r.Snapshot.ID, &RestoreOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
}
