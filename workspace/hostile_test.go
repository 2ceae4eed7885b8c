package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// TestHostileManifests: manifests crafted to escape the directory or to
// write through a link are refused before anything is written, or
// restored without anything outside changing.
func TestHostileManifests(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	build(t, outside, spec{path: "target", content: "outside\n"}, spec{path: "sub/x", content: "outside x\n"})
	os.MkdirAll(dir, 0o755)
	store := session.NewMemoryStore()
	w := reopen(t, dir, store, nil)
	content := []byte("evil\n")
	ref, _ := store.PutBlob(ctx, content)
	f := func(path string) string { return "f 644 5 " + ref + " " + path + "\n" }
	const magic = manifestMagic
	refused := map[string]string{
		"dotdot":              magic + f(`"../escape"`),
		"dotdot inside":       magic + f(`"a/../../escape"`),
		"absolute":            magic + f(`"/tmp/escape"`),
		"absolute outside":    magic + f(`"`+filepath.ToSlash(filepath.Join(outside, "target"))+`"`),
		"nul":                 magic + f(`"a\x00b"`),
		"empty path":          magic + f(`""`),
		"empty segment":       magic + f(`"a//b"`),
		"trailing slash":      magic + f(`"a/"`),
		"dot":                 magic + f(`"./a"`),
		"dot segment":         magic + f(`"a/./b"`),
		"git hooks":           magic + f(`".git/hooks/post-checkout"`),
		"git any case":        magic + f(`"sub/.GIT/config"`),
		"duplicate":           magic + f(`"a"`) + f(`"a"`),
		"unsorted":            magic + f(`"b"`) + f(`"a"`),
		"through symlink":     magic + "l 777 " + itoa(len(outside)) + ` - "l" "` + outside + `"` + "\n" + f(`"l/target"`),
		"under a file":        magic + f(`"f"`) + f(`"f/x"`),
		"under an empty dir":  magic + `d 755 0 - "d"` + "\n" + f(`"d/x"`),
		"non-canonical quote": magic + f(`"\x61"`),
		"unquoted":            magic + f(`a`),
		"bad magic":           "agentsession-workspace-manifest 2\n" + f(`"a"`),
		"no magic":            f(`"a"`),
		"no final newline":    strings.TrimSuffix(magic+f(`"a"`), "\n"),
		"bad ref":             magic + `f 644 5 blob:sha256:ABC "a"` + "\n",
		"upper hex":           magic + "f 644 5 blob:sha256:" + strings.ToUpper(ref[len(session.BlobPrefix):]) + ` "a"` + "\n",
		"bad mode":            magic + "f 1777 5 " + ref + ` "a"` + "\n",
		"mode leading zero":   magic + "f 0644 5 " + ref + ` "a"` + "\n",
		"negative size":       magic + "f 644 -5 " + ref + ` "a"` + "\n",
		"trailing bytes":      magic + "f 644 5 " + ref + ` "a" x` + "\n",
		"empty symlink":       magic + `l 777 0 - "l" ""` + "\n",
		"crlf":                magic + "f 644 5 " + ref + ` "a"` + "\r\n",
		"unknown type":        magic + "x 644 5 " + ref + ` "a"` + "\n",
		"long path":           magic + f(`"`+strings.Repeat("a", MaxPathBytes+1)+`"`),
		"dir with content":    magic + "d 755 0 " + ref + ` "d"` + "\n",
		"symlink nul target":  magic + `l 777 3 - "l" "a\x00b"` + "\n",
	}
	if len(refused) < 20 {
		t.Fatal("fewer than 20 variants")
	}
	for name, m := range refused {
		id, err := store.PutBlob(ctx, []byte(m))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Restore(ctx, id, &RestoreOptions{Force: true}); !errors.Is(err, ErrManifest) {
			t.Errorf("%s: restore gave %v, want ErrManifest", name, err)
		}
		if _, err := DecodeManifest([]byte(m)); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	// Accepted manifests meeting a tree that links outside: the links
	// are replaced, never written through.
	os.Symlink(outside, filepath.Join(dir, "l"))
	os.Symlink(filepath.Join(outside, "target"), filepath.Join(dir, "t"))
	os.Symlink(outside, filepath.Join(dir, "d"))
	accepted := []string{
		magic + f(`"l/target"`) + f(`"t"`),
		magic + `d 755 0 - "d"` + "\n" + f(`"l/sub/x"`),
		magic + "l 777 " + itoa(len(outside)) + ` - "l" "` + outside + `"` + "\n",
		magic + f(`"l/sub/x"`),
		magic + "l 777 8 - \"up\" \"../../..\"\n",
		magic + f(`"up/x"`),
	}
	for i, m := range accepted {
		id, _ := store.PutBlob(ctx, []byte(m))
		if _, err := w.Restore(ctx, id, &RestoreOptions{Force: true}); err != nil {
			t.Fatalf("accepted %d: %v", i, err)
		}
		if fi, err := os.Lstat(filepath.Join(dir, "l")); i == 0 && (err != nil || !fi.IsDir()) {
			t.Fatalf("l is not a directory: %v", err)
		}
	}
	equalState(t, state(t, outside), map[string]string{"target": "file -rw-r--r-- outside\n", "sub": "dir", "sub/x": "file -rw-r--r-- outside x\n"})
	ents, _ := os.ReadDir(base)
	if len(ents) != 2 {
		t.Errorf("something was written beside the workspace: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(base, "escape")); err == nil {
		t.Error("escaped")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestRestoreThroughReplacedDir: a directory of the snapshot replaced by
// a symlink (to a directory outside holding the same names, or to one
// inside) is a change like any other: restored without Force, the link
// removed and the directory made again, nothing written through it, no
// conflict for what the link's target holds.
func TestRestoreThroughReplacedDir(t *testing.T) {
	for _, inside := range []bool{false, true} {
		base := t.TempDir()
		dir := filepath.Join(base, "ws")
		outside := filepath.Join(base, "outside")
		build(t, outside, spec{path: "file", content: "outside\n"}, spec{path: "deep/x", content: "outside x\n"})
		build(t, dir, spec{path: "sub/file", content: "mine\n"}, spec{path: "sub/deep/x", content: "mine x\n"}, spec{path: "other/file", content: "other\n"}, spec{path: "other/deep/x", content: "other x\n"})
		w := reopen(t, dir, session.NewMemoryStore(), nil)
		a := snap(t, w)
		want := state(t, dir)
		os.RemoveAll(filepath.Join(dir, "sub"))
		target := outside
		if inside {
			target = "other"
		}
		if err := os.Symlink(target, filepath.Join(dir, "sub")); err != nil {
			t.Fatal(err)
		}
		b := snap(t, w)
		dry, err := w.Restore(ctx, a.ID, &RestoreOptions{Expect: b.ID, DryRun: true})
		if err != nil {
			t.Fatalf("inside %v: dry run: %v", inside, err)
		}
		res, err := w.Restore(ctx, a.ID, &RestoreOptions{Expect: b.ID})
		if err != nil {
			t.Fatalf("inside %v: %v", inside, err)
		}
		if !slices.Equal(dry.Changes, res.Changes) {
			t.Errorf("dry run %v, restore %v", dry.Changes, res.Changes)
		}
		equalState(t, state(t, dir), want)
		equalState(t, state(t, outside), map[string]string{"file": "file -rw-r--r-- outside\n", "deep": "dir", "deep/x": "file -rw-r--r-- outside x\n"})
	}
}

// TestRestoreSizeMismatch: a manifest whose size for a file is not its
// content's length is corrupt: the restore (and its dry run) fails with
// session.ErrCorrupt before anything changes, rather than writing a file
// that never matches the snapshot.
func TestRestoreSizeMismatch(t *testing.T) {
	store := session.NewMemoryStore()
	dir := t.TempDir()
	build(t, dir, spec{path: "keep", content: "mine\n"})
	w := reopen(t, dir, store, nil)
	ref, _ := store.PutBlob(ctx, []byte("hello"))
	m := manifestMagic + "f 644 3 " + ref + ` "a"` + "\n" + "f 644 5 " + ref + ` "b"` + "\n"
	id, _ := store.PutBlob(ctx, []byte(m))
	before := state(t, dir)
	for _, dry := range []bool{true, false} {
		_, err := w.Restore(ctx, id, &RestoreOptions{Force: true, DryRun: dry})
		var be *BlobError
		if !errors.As(err, &be) || !errors.Is(err, session.ErrCorrupt) || be.Path != "a" {
			t.Fatalf("dry run %v: err = %v", dry, err)
		}
		equalState(t, state(t, dir), before)
	}
}
