package workspace

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

func modes(t *testing.T, f func(t *testing.T, noWatch bool)) {
	for _, nw := range []bool{false, true} {
		t.Run(fmt.Sprintf("nowatch=%v", nw), func(t *testing.T) { f(t, nw) })
	}
}

func reopen(t *testing.T, dir string, store session.BlobStore, o *Options) *Workspace {
	t.Helper()
	opts := Options{Blobs: store}
	if o != nil {
		opts = *o
		opts.Blobs = store
	}
	w, err := Open(dir, &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// TestEveryChange: every kind of change is recorded, diffed, and undone
// by a restore, both ways.
func TestEveryChange(t *testing.T) {
	modes(t, func(t *testing.T, noWatch bool) {
		dir := t.TempDir()
		store := session.NewMemoryStore()
		build(t, dir,
			spec{path: "keep.txt", content: "same\n"},
			spec{path: "edit.txt", content: "a\nb\nc\n"},
			spec{path: "gone.txt", content: "bye\n"},
			spec{path: "run.sh", content: "#!/bin/sh\n", mode: 0o755},
			spec{path: "chmod.txt", content: "x\n", mode: 0o644},
			spec{path: "tofile", content: "->keep.txt"},
			spec{path: "retarget", content: "->keep.txt"},
			spec{path: "tolink.txt", content: "plain\n"},
			spec{path: "dir2file/inner.txt", content: "in\n"},
			spec{path: "file2dir", content: "was a file\n"},
			spec{path: "empty/"},
			spec{path: "bin.dat", content: "\x00\x01\x02"},
			spec{path: "deep/a/b/c.txt", content: "deep\n"},
			spec{path: "private.txt", content: "secret\n", mode: 0o600},
		)
		w := reopen(t, dir, store, &Options{NoWatch: noWatch})
		a := snap(t, w)
		stA := state(t, dir)

		os.WriteFile(filepath.Join(dir, "edit.txt"), []byte("a\nB\nc\nd\n"), 0o644)
		os.Remove(filepath.Join(dir, "gone.txt"))
		os.Chmod(filepath.Join(dir, "run.sh"), 0o644)
		os.Chmod(filepath.Join(dir, "chmod.txt"), 0o755)
		os.Remove(filepath.Join(dir, "tofile"))
		os.WriteFile(filepath.Join(dir, "tofile"), []byte("now a file\n"), 0o644)
		os.Remove(filepath.Join(dir, "retarget"))
		os.Symlink("run.sh", filepath.Join(dir, "retarget"))
		os.Remove(filepath.Join(dir, "tolink.txt"))
		os.Symlink("edit.txt", filepath.Join(dir, "tolink.txt"))
		os.RemoveAll(filepath.Join(dir, "dir2file"))
		os.WriteFile(filepath.Join(dir, "dir2file"), []byte("file now\n"), 0o644)
		os.Remove(filepath.Join(dir, "file2dir"))
		build(t, dir, spec{path: "file2dir/x/y.txt", content: "y\n"}, spec{path: "new/dir/n.txt", content: "n1\nn2\n"}, spec{path: "newempty/"})
		os.Remove(filepath.Join(dir, "empty"))
		os.WriteFile(filepath.Join(dir, "bin.dat"), []byte("\x00\x01\x03\x04"), 0o644)
		os.RemoveAll(filepath.Join(dir, "deep"))
		b := snap(t, w)
		stB := state(t, dir)
		if a.ID == b.ID {
			t.Fatal("same id after changes")
		}

		d, err := w.Diff(ctx, a.ID, b.ID, &DiffOptions{Unified: true})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]FileDiff{}
		for _, f := range d.Files {
			got[f.Path] = f
		}
		want := map[string]Status{
			"edit.txt": Modified, "gone.txt": Deleted, "run.sh": ModeChanged, "chmod.txt": ModeChanged,
			"tofile": TypeChanged, "retarget": Modified, "tolink.txt": TypeChanged, "dir2file/inner.txt": Deleted,
			"dir2file": Added, "file2dir": Deleted, "file2dir/x/y.txt": Added, "new/dir/n.txt": Added,
			"bin.dat": Modified, "deep/a/b/c.txt": Deleted,
		}
		for p, st := range want {
			if got[p].Status != st {
				t.Errorf("%s: status %q, want %q", p, got[p].Status, st)
			}
		}
		if len(got) != len(want) {
			t.Errorf("diff has %d files, want %d: %+v", len(got), len(want), d.Files)
		}
		if f := got["edit.txt"]; f.Additions != 2 || f.Deletions != 1 || f.Unified == "" {
			t.Errorf("edit.txt: %+v", f)
		}
		if f := got["bin.dat"]; !f.Binary || f.Additions != 0 {
			t.Errorf("bin.dat: %+v", f)
		}
		if f := got["new/dir/n.txt"]; f.Additions != 2 {
			t.Errorf("n.txt: %+v", f)
		}
		if d.Additions == 0 || d.Deletions == 0 {
			t.Errorf("totals %d %d", d.Additions, d.Deletions)
		}
		// The working tree against a: the same diff.
		d2, err := w.Diff(ctx, a.ID, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(d2.Files) != len(d.Files) || d2.Additions != d.Additions || d2.Deletions != d.Deletions {
			t.Errorf("diff with the working tree %+v differs from %+v", d2, d)
		}

		res, err := w.Restore(ctx, a.ID, &RestoreOptions{Expect: b.ID})
		if err != nil {
			t.Fatal(err)
		}
		equalState(t, state(t, dir), stA)
		if len(res.Changes) == 0 {
			t.Error("no changes reported")
		}
		if c := snap(t, w); c.ID != a.ID {
			t.Errorf("snapshot after restore %s, want %s", c.ID, a.ID)
		}
		if _, err := w.Restore(ctx, b.ID, &RestoreOptions{Expect: a.ID}); err != nil {
			t.Fatal(err)
		}
		equalState(t, state(t, dir), stB)
		// A fresh workspace (no cache) agrees.
		w2 := reopen(t, dir, store, &Options{NoWatch: true})
		if c := snap(t, w2); c.ID != b.ID {
			t.Errorf("fresh snapshot %s, want %s", c.ID, b.ID)
		}
	})
}

// TestIncremental: an unchanged tree is not read again once its files are
// older than the racy margin; a file changed in the same tick as the
// snapshot that read it is read again.
func TestIncremental(t *testing.T) {
	modes(t, func(t *testing.T, noWatch bool) {
		dir := t.TempDir()
		build(t, dir, spec{path: "a", content: "1"}, spec{path: "d/b", content: "2"}, spec{path: "d/c", content: "3"})
		w := reopen(t, dir, session.NewMemoryStore(), &Options{NoWatch: noWatch})
		s1 := snap(t, w)
		if s1.Read != 3 {
			t.Fatalf("first read %d", s1.Read)
		}
		// Just written: racy, so read again.
		s2 := snap(t, w)
		if s2.Read != 3 || s2.ID != s1.ID {
			t.Fatalf("racy files not read again: %+v", s2)
		}
		later(w)
		snap(t, w)
		s3 := snap(t, w)
		if s3.Read != 0 || s3.Reused != 3 || s3.ID != s1.ID {
			t.Fatalf("unchanged tree read again: %+v", s3)
		}
		// Same size, same tick: the stat data may not change, the content does.
		p := filepath.Join(dir, "d", "b")
		fi, _ := os.Stat(p)
		os.WriteFile(p, []byte("9"), 0o644)
		os.Chtimes(p, fi.ModTime(), fi.ModTime())
		s4 := snap(t, w)
		if s4.ID == s1.ID || s4.Read != 1 {
			t.Fatalf("change not seen: %+v", s4)
		}
	})
}

// TestWatcherAgrees: after random operations, the watched workspace's
// snapshot is the one a fresh walk of everything gives.
func TestWatcherAgrees(t *testing.T) {
	for _, ahead := range []bool{false, true} {
		t.Run(fmt.Sprintf("ahead=%v", ahead), func(t *testing.T) { testWatcherAgrees(t, ahead) })
	}
}

// testWatcherAgrees: with ahead, the clock is past the racy margin, so
// that the watcher alone tells what changed.
func testWatcherAgrees(t *testing.T, ahead bool) {
	dir := t.TempDir()
	store := session.NewMemoryStore()
	w := reopen(t, dir, store, nil)
	if ahead {
		later(w)
	}
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "b", "c/d", "c/e", "f/g/h", "f/i", ".gitignore", "c/.gitignore", "ign/x"}
	for round := range 60 {
		for range 1 + r.IntN(4) {
			p := filepath.Join(dir, filepath.FromSlash(names[r.IntN(len(names))]))
			switch r.IntN(6) {
			case 0, 1:
				os.MkdirAll(filepath.Dir(p), 0o755)
				content := fmt.Sprint(r.IntN(3))
				if filepath.Base(p) == ".gitignore" {
					content = []string{"ign/\n", "*.x\n!keep.x\n", "d\n", ""}[r.IntN(4)]
				}
				os.RemoveAll(p)
				os.WriteFile(p, []byte(content), 0o644)
			case 2:
				os.RemoveAll(p)
			case 3:
				os.Chmod(p, fs755or644(r))
			case 4:
				if filepath.Dir(p) != dir {
					os.RemoveAll(filepath.Dir(p))
				}
			case 5:
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.RemoveAll(p)
				os.Symlink(names[r.IntN(len(names))], p)
			}
		}
		got := snap(t, w)
		fresh := reopen(t, dir, store, &Options{NoWatch: true})
		want := snap(t, fresh)
		if got.ID != want.ID {
			t.Fatalf("round %d: watched %s\n%s\nfresh %s\n%s", round, got.ID, got.Manifest.Encode(), want.ID, want.Manifest.Encode())
		}
	}
}

func fs755or644(r *rand.Rand) os.FileMode {
	if r.IntN(2) == 0 {
		return 0o755
	}
	return 0o644
}

// TestNonUTF8Names: names that are not UTF-8 are kept exactly.
func TestNonUTF8Names(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skip("the file system wants UTF-8 names")
	}
	names := []string{"caf\xe9.txt", "\xff\xfe", "dir\x80/x", "tab\there", "new\nline", `quote"back\slash`, "日本語.md"}
	var specs []spec
	for i, n := range names {
		specs = append(specs, spec{path: n, content: fmt.Sprint(i)})
	}
	w, dir, _ := open(t, specs...)
	a := snap(t, w)
	st := state(t, dir)
	for _, n := range names {
		if _, ok := a.Manifest.Lookup(n); !ok {
			t.Errorf("%q not recorded", n)
		}
	}
	m, err := DecodeManifest(a.Manifest.Encode())
	if err != nil || len(m.Entries) != len(names) {
		t.Fatal(err)
	}
	for _, n := range names {
		os.RemoveAll(filepath.Join(dir, n))
	}
	os.Remove(filepath.Join(dir, "dir\x80"))
	if _, err := w.Restore(ctx, a.ID, &RestoreOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	equalState(t, state(t, dir), st)
}

// TestSymlinksNeverFollowed: a symlink to a directory outside is recorded
// as a link; restoring never writes through one.
func TestSymlinksNeverFollowed(t *testing.T) {
	outside := t.TempDir()
	build(t, outside, spec{path: "secret", content: "outside\n"})
	w, dir, _ := open(t, spec{path: "out", content: "->" + outside}, spec{path: "f", content: "->" + filepath.Join(outside, "secret")}, spec{path: "dangling", content: "->nowhere"})
	a := snap(t, w)
	if a.Files != 0 || a.Symlinks != 3 {
		t.Fatalf("%+v", a)
	}
	for _, e := range a.Manifest.Entries {
		if e.Type != Symlink {
			t.Errorf("%+v", e)
		}
	}
	// Replace the links by files and restore: the links come back, the
	// outside is untouched.
	os.Remove(filepath.Join(dir, "f"))
	os.WriteFile(filepath.Join(dir, "f"), []byte("mine"), 0o644)
	b := snap(t, w)
	if _, err := w.Restore(ctx, a.ID, &RestoreOptions{Expect: b.ID}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "secret")); string(data) != "outside\n" {
		t.Fatal("wrote outside")
	}
	if target, err := os.Readlink(filepath.Join(dir, "f")); err != nil || target != filepath.Join(outside, "secret") {
		t.Fatal(target, err)
	}
	// A snapshot with a file where the tree has a symlink to a file
	// outside: the link is replaced, the outside file untouched.
	os.Remove(filepath.Join(dir, "f"))
	os.WriteFile(filepath.Join(dir, "f"), []byte("file\n"), 0o644)
	c := snap(t, w)
	os.Remove(filepath.Join(dir, "f"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "f"))
	if _, err := w.Restore(ctx, c.ID, &RestoreOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "secret")); string(data) != "outside\n" {
		t.Fatal("wrote through a symlink")
	}
	if fi, _ := os.Lstat(filepath.Join(dir, "f")); !fi.Mode().IsRegular() {
		t.Fatal("f is not a file")
	}
}

// TestMissingAndCorruptBlobs: a restore that lacks a content, or finds it
// corrupt, fails before it changes anything.
func TestMissingAndCorruptBlobs(t *testing.T) {
	for _, how := range []string{"missing", "corrupt"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			blobs := filepath.Join(t.TempDir(), "blobs")
			store := session.OpenBlobDir(blobs, nil)
			build(t, dir, spec{path: "a.txt", content: "aaa\n"}, spec{path: "b.txt", content: "bbb\n"})
			w := reopen(t, dir, store, nil)
			a := snap(t, w)
			build(t, dir, spec{path: "a.txt", content: "AAA\n"}, spec{path: "b.txt", content: "BBB\n"}, spec{path: "c.txt", content: "new\n"})
			b := snap(t, w)
			before := state(t, dir)
			e, _ := a.Manifest.Lookup("b.txt")
			file := filepath.Join(blobs, e.Hash)
			if how == "missing" {
				os.Remove(file)
			} else {
				os.WriteFile(file, []byte("not what it was"), 0o600)
			}
			_, err := w.Restore(ctx, a.ID, &RestoreOptions{Expect: b.ID})
			var be *BlobError
			if !errors.As(err, &be) || be.Path != "b.txt" {
				t.Fatalf("err = %v", err)
			}
			if how == "missing" && !errors.Is(err, session.ErrNotFound) || how == "corrupt" && !errors.Is(err, session.ErrCorrupt) {
				t.Fatalf("err = %v", err)
			}
			equalState(t, state(t, dir), before)
			// A dry run says so too.
			if _, err := w.Restore(ctx, a.ID, &RestoreOptions{Expect: b.ID, DryRun: true}); !errors.As(err, &be) {
				t.Fatalf("dry run: %v", err)
			}
		})
	}
}

// TestConflicts: a restore never overwrites or deletes a path changed
// since Expect, unless forced.
func TestConflicts(t *testing.T) {
	w, dir, _ := open(t, spec{path: "a", content: "1"}, spec{path: "b", content: "2"})
	a := snap(t, w)
	build(t, dir, spec{path: "a", content: "11"}, spec{path: "c", content: "3"})
	b := snap(t, w)
	// The user edits a and makes d after b was taken.
	build(t, dir, spec{path: "a", content: "user"}, spec{path: "c", content: "user c"}, spec{path: "b", content: "2"})
	before := state(t, dir)
	_, err := w.Restore(ctx, a.ID, &RestoreOptions{Expect: b.ID})
	var ce *ConflictError
	if !errors.As(err, &ce) || !slices.Equal(ce.Paths, []string{"a", "c"}) {
		t.Fatalf("err = %v", err)
	}
	equalState(t, state(t, dir), before)
	if _, err := w.Restore(ctx, a.ID, nil); !errors.Is(err, ErrNeedExpect) {
		t.Fatalf("err = %v", err)
	}
	if _, err := w.Restore(ctx, a.ID, &RestoreOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	equalState(t, state(t, dir), map[string]string{"a": "file -rw-r--r-- 1", "b": "file -rw-r--r-- 2"})
}

// TestIgnored: ignored files are neither recorded nor touched by a
// restore; a directory holding one stays.
func TestIgnored(t *testing.T) {
	w, dir, _ := open(t,
		spec{path: ".gitignore", content: "*.log\nbuild/\n"},
		spec{path: "src/main.go", content: "package main\n"},
	)
	a := snap(t, w)
	build(t, dir,
		spec{path: "app.log", content: "log"},
		spec{path: "build/out", content: "bin"},
		spec{path: "tmp/new.go", content: "x"},
		spec{path: "tmp/debug.log", content: "keep me"},
		spec{path: "src/main.go", content: "package main // changed\n"},
	)
	b := snap(t, w)
	for _, e := range b.Manifest.Entries {
		if e.Path == "app.log" || e.Path == "build/out" || e.Path == "tmp/debug.log" {
			t.Errorf("ignored %s recorded", e.Path)
		}
	}
	if _, err := w.Restore(ctx, a.ID, &RestoreOptions{Expect: b.ID}); err != nil {
		t.Fatal(err)
	}
	st := state(t, dir)
	for _, p := range []string{"app.log", "build/out", "tmp/debug.log"} {
		if st[p] == "" {
			t.Errorf("ignored %s removed", p)
		}
	}
	if st["tmp/new.go"] != "" || st["src/main.go"] != "file -rw-r--r-- package main\n" {
		t.Errorf("not restored: %v", st)
	}
	// An ignored file where the snapshot has one: a conflict unless forced.
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.log\nbuild/\nsrc/\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "src", "main.go"), []byte("ignored now"), 0o644)
	c := snap(t, w)
	if _, ok := c.Manifest.Lookup("src/main.go"); ok {
		t.Fatal("src/ not ignored")
	}
	_, err := w.Restore(ctx, a.ID, &RestoreOptions{Expect: c.ID})
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v", err)
	}
}

// TestDryRunAndPaths: a dry run lists and changes nothing; Paths limits a
// restore.
func TestDryRunAndPaths(t *testing.T) {
	w, dir, _ := open(t, spec{path: "a/x", content: "1"}, spec{path: "a/y", content: "2"}, spec{path: "b", content: "3"})
	a := snap(t, w)
	build(t, dir, spec{path: "a/x", content: "11"}, spec{path: "a/z", content: "new"}, spec{path: "b", content: "33"})
	b := snap(t, w)
	before := state(t, dir)
	res, err := w.Restore(ctx, a.ID, &RestoreOptions{Expect: b.ID, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{{"a/x", OpUpdate}, {"a/z", OpDelete}, {"b", OpUpdate}}
	if !slices.Equal(res.Changes, want) || !res.DryRun {
		t.Fatalf("%+v", res.Changes)
	}
	equalState(t, state(t, dir), before)
	res, err = w.Restore(ctx, a.ID, &RestoreOptions{Expect: b.ID, Paths: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Changes, want[:2]) {
		t.Fatalf("%+v", res.Changes)
	}
	st := state(t, dir)
	if st["a/x"] != "file -rw-r--r-- 1" || st["a/z"] != "" || st["b"] != "file -rw-r--r-- 33" {
		t.Fatalf("%v", st)
	}
}

// TestProblems: what cannot be read is reported, not fatal; a file over
// the cap is recorded by hash and size, and left alone by a restore.
func TestProblems(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, spec{path: "small", content: "s"}, spec{path: "big", content: string(make([]byte, 100))})
	if runtime.GOOS != "windows" {
		if err := mkfifo(filepath.Join(dir, "fifo")); err != nil {
			t.Fatal(err)
		}
	}
	w := reopen(t, dir, session.NewMemoryStore(), &Options{MaxFileBytes: 10})
	a := snap(t, w)
	e, ok := a.Manifest.Lookup("big")
	if !ok || e.Type != Oversized || e.Size != 100 || e.Hash != hashOf(make([]byte, 100)) {
		t.Fatalf("%+v", e)
	}
	var tooLarge, notRegular bool
	for _, p := range a.Skipped {
		tooLarge = tooLarge || p.Path == "big" && errors.Is(p.Err, ErrTooLarge)
		notRegular = notRegular || p.Path == "fifo" && errors.Is(p.Err, ErrNotRegular)
	}
	if !tooLarge || !notRegular && runtime.GOOS != "windows" {
		t.Fatalf("%v", a.Skipped)
	}
	os.WriteFile(filepath.Join(dir, "big"), []byte("changed"), 0o644)
	b := snap(t, w)
	res, err := w.Restore(ctx, a.ID, &RestoreOptions{Expect: b.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Left) != 1 || res.Left[0].Path != "big" {
		t.Fatalf("%+v", res)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "big")); string(data) != "changed" {
		t.Fatal("oversized file touched")
	}
	if os.Geteuid() != 0 && runtime.GOOS != "windows" {
		os.Chmod(filepath.Join(dir, "small"), 0)
		c := snap(t, w)
		if e, _ := c.Manifest.Lookup("small"); e.Type != Unreadable {
			t.Fatalf("%+v", e)
		}
	}
}

// TestCacheFile: a new process with the cache file reads nothing of an
// unchanged tree.
func TestCacheFile(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, spec{path: "a", content: "1"}, spec{path: "b/c", content: "2"})
	store := session.NewMemoryStore()
	cache := filepath.Join(t.TempDir(), "cache")
	w := reopen(t, dir, store, &Options{CacheFile: cache})
	later(w)
	a := snap(t, w)
	w2 := reopen(t, dir, store, &Options{CacheFile: cache})
	later(w2)
	b := snap(t, w2)
	if b.ID != a.ID || b.Read != 0 {
		t.Fatalf("%+v", b)
	}
	os.WriteFile(cache, []byte("garbage"), 0o600)
	w3 := reopen(t, dir, store, &Options{CacheFile: cache})
	if c := snap(t, w3); c.Read != 2 || c.ID != a.ID {
		t.Fatalf("%+v", c)
	}
}

// TestTrustStored: contents put longer ago than TrustStored are put
// again (a collector may have removed them).
func TestTrustStored(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, spec{path: "a", content: "1"})
	store := session.NewMemoryStore()
	w := reopen(t, dir, store, &Options{TrustStored: time.Minute})
	later(w)
	a := snap(t, w)
	e, _ := a.Manifest.Lookup("a")
	if err := store.DeleteBlob(ctx, e.Ref()); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	w.mu.Unlock()
	if b := snap(t, w); b.Read != 1 {
		t.Fatalf("%+v", b)
	}
	if _, err := store.GetBlob(ctx, e.Ref()); err != nil {
		t.Fatal(err)
	}
}

// TestDiffThenSnapshot: a diff against the working tree sees a change
// first; the next snapshot still records it.
func TestDiffThenSnapshot(t *testing.T) {
	w, dir, _ := open(t, spec{path: "a", content: "1\n"})
	later(w)
	a := snap(t, w)
	snap(t, w)
	build(t, dir, spec{path: "a", content: "2\n"})
	if d, err := w.Diff(ctx, a.ID, "", nil); err != nil || len(d.Files) != 1 {
		t.Fatal(d, err)
	}
	if b := snap(t, w); b.ID == a.ID {
		t.Fatal("the change a diff saw was not recorded")
	}
}

// TestCacheFileOtherStore: a cache file written by a workspace on one
// blob store, read by one on another store (a new process's memory
// store, another session store's blob directory), must not vouch that
// the contents are in the new store: its snapshot puts them.
func TestCacheFileOtherStore(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, spec{path: "a", content: "1"}, spec{path: "b/c", content: "2"})
	cache := filepath.Join(t.TempDir(), "cache")
	for _, stores := range [][2]session.BlobStore{
		{session.NewMemoryStore(), session.NewMemoryStore()},
		{session.OpenBlobDir(t.TempDir(), nil), session.OpenBlobDir(t.TempDir(), nil)},
		{session.OpenBlobDir(t.TempDir(), nil), session.NewMemoryStore()},
	} {
		os.Remove(cache)
		w := reopen(t, dir, stores[0], &Options{CacheFile: cache})
		later(w)
		a := snap(t, w)
		w2 := reopen(t, dir, stores[1], &Options{CacheFile: cache})
		later(w2)
		b := snap(t, w2)
		if b.ID != a.ID {
			t.Fatalf("%+v", b)
		}
		for _, ref := range []string{b.ID, "blob:sha256:" + hashOf([]byte("1")), "blob:sha256:" + hashOf([]byte("2"))} {
			if _, err := stores[1].GetBlob(ctx, ref); err != nil {
				t.Errorf("%T: %s: %v", stores[1], ref, err)
			}
		}
	}
	// The same blob directory, opened again: the cache vouches.
	bd := t.TempDir()
	os.Remove(cache)
	w := reopen(t, dir, session.OpenBlobDir(bd, nil), &Options{CacheFile: cache})
	later(w)
	snap(t, w)
	w2 := reopen(t, dir, session.OpenBlobDir(bd, nil), &Options{CacheFile: cache})
	later(w2)
	if b := snap(t, w2); b.Read != 0 {
		t.Fatalf("%+v", b)
	}
}

// TestWatcherDirectoryMovedIn: a directory moved out of the tree and
// another moved in at its path (its subdirectories at the same paths as
// the old one's, whose watches went away with the old one) is listed
// again, subdirectories included: the snapshot records the new files.
func TestWatcherDirectoryMovedIn(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	build(t, dir, spec{path: "x/h/i", content: "old"}, spec{path: "x/h/deep/j", content: "old j"}, spec{path: "y", content: "y"})
	store := session.NewMemoryStore()
	w := reopen(t, dir, store, nil)
	later(w)
	snap(t, w)
	snap(t, w) // the watches in place
	if err := os.Rename(filepath.Join(dir, "x"), filepath.Join(out, "old")); err != nil {
		t.Fatal(err)
	}
	build(t, out, spec{path: "new/h/i", content: "new"}, spec{path: "new/h/deep/j", content: "new j"})
	if err := os.Rename(filepath.Join(out, "new"), filepath.Join(dir, "x")); err != nil {
		t.Fatal(err)
	}
	got := snap(t, w)
	want := snap(t, reopen(t, dir, store, &Options{NoWatch: true}))
	if got.ID != want.ID {
		t.Fatalf("watched:\n%s\nfresh:\n%s", got.Manifest.Encode(), want.Manifest.Encode())
	}
	// The old directory, outside now, changes: nothing in the tree does.
	os.WriteFile(filepath.Join(out, "old", "h", "i"), []byte("changed outside"), 0o644)
	if again := snap(t, w); again.ID != want.ID {
		t.Fatalf("after a change outside:\n%s", again.Manifest.Encode())
	}
}

// TestPathsSpelledLoosely: Paths of a restore and of a diff are paths as
// a user spells them ("./a", "a/", "a/./x"): they restrict as "a" and
// "a/x" do.
func TestPathsSpelledLoosely(t *testing.T) {
	w, dir, _ := open(t, spec{path: "a/x", content: "1\n"}, spec{path: "a/y", content: "2\n"}, spec{path: "b", content: "3\n"})
	a := snap(t, w)
	build(t, dir, spec{path: "a/x", content: "11\n"}, spec{path: "a/y", content: "22\n"}, spec{path: "b", content: "33\n"})
	b := snap(t, w)
	for _, paths := range [][]string{{"./a"}, {"a/"}, {"./a/"}, {"a/./x", "a//y"}} {
		d, err := w.Diff(ctx, a.ID, b.ID, &DiffOptions{Paths: paths})
		if err != nil || len(d.Files) != 2 {
			t.Fatalf("%q: diff %+v %v", paths, d, err)
		}
		res, err := w.Restore(ctx, a.ID, &RestoreOptions{Expect: b.ID, Paths: paths, DryRun: true})
		if err != nil || len(res.Changes) != 2 {
			t.Fatalf("%q: restore %+v %v", paths, res, err)
		}
	}
}
