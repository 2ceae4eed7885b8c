package workspace

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func randTree(r *rand.Rand, ign bool) []spec {
	names := []string{"a", "b", "c", "d\xff"}
	leaves := map[string]spec{}
	n := 1 + r.IntN(8)
	for range n {
		depth := 1 + r.IntN(3)
		var segs []string
		for range depth {
			segs = append(segs, names[r.IntN(len(names))])
		}
		p := strings.Join(segs, "/")
		switch r.IntN(6) {
		case 0:
			leaves[p] = spec{path: p + "/"}
		case 1:
			leaves[p] = spec{path: p, content: "->" + []string{"x", "../a", "/etc"}[r.IntN(3)]}
		default:
			leaves[p] = spec{path: p, content: fmt.Sprintf("c%d\n", r.IntN(3)), mode: []os.FileMode{0o644, 0o755, 0o600}[r.IntN(3)]}
		}
	}
	if ign {
		for range r.IntN(3) {
			depth := r.IntN(3)
			var segs []string
			for range depth {
				segs = append(segs, names[r.IntN(len(names))])
			}
			segs = append(segs, "z.ign")
			p := strings.Join(segs, "/")
			leaves[p] = spec{path: p, content: "ignored"}
		}
	}
	var keys []string
	for k := range leaves {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []spec
	var kept []string
outer:
	for _, k := range keys {
		for _, q := range kept {
			if strings.HasPrefix(k, q+"/") {
				continue outer
			}
		}
		kept = append(kept, k)
		out = append(out, leaves[k])
	}
	return out
}

// TestRestoreRandomTrees: random trees (files with modes, symlinks, empty
// directories, non-UTF-8 names, types changing at a path, ignored files
// in new directories) restored to each other: the tree is as recorded,
// ignored files stay, the dry run lists what the restore does, and a
// restore limited to Paths changes only those.
func TestRestoreRandomTrees(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skip("non-UTF-8 names and symlinks")
	}
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		dir := t.TempDir()
		gi := spec{path: ".gitignore", content: "*.ign\n"}
		build(t, dir, append(randTree(r, false), gi)...)
		w := reopen(t, dir, mustStore(), nil)
		a := snap(t, w)
		stA := state(t, dir)
		// mutate to B: wipe and rebuild (keep .gitignore)
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.Name() != ".gitignore" {
				os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
		build(t, dir, randTree(r, true)...)
		b := snap(t, w)
		stB := state(t, dir)
		dry, err := w.Restore(ctx, a.ID, &RestoreOptions{Expect: b.ID, DryRun: true})
		if errors.Is(err, ErrInTheWay) {
			continue
		}
		if err != nil {
			t.Fatalf("seed %d: dry: %v\nA %q\nB %q\n%s", seed, err, stA, stB, b.Manifest.Encode())
		}
		equalState(t, state(t, dir), stB)
		res, err := w.Restore(ctx, a.ID, &RestoreOptions{Expect: b.ID})
		if err != nil {
			t.Fatalf("seed %d: %v\nA %q\nB %q", seed, err, stA, stB)
		}
		if !slices.Equal(dry.Changes, res.Changes) {
			t.Errorf("seed %d: dry %v real %v", seed, dry.Changes, res.Changes)
		}
		got := state(t, dir)
		want := map[string]string{}
		for k, v := range stA {
			want[k] = v
		}
		for k, v := range stB {
			if strings.HasSuffix(k, ".ign") {
				want[k] = v
				for d := parentOf(k); d != ""; d = parentOf(d) {
					want[d] = "dir"
				}
			}
		}
		if !mapsEqual(got, want) {
			t.Errorf("seed %d:\nA %q\nB %q\ngot %q\nchanges %v", seed, stA, stB, got, res.Changes)
			equalState(t, got, want)
			t.FailNow()
		}
		// Back to B restricted to one top-level name, compared with B there.
		top := []string{"a", "b", "c", "d\xff"}[seed%4]
		stA2 := state(t, dir)
		dry2, err := w.Restore(ctx, b.ID, &RestoreOptions{Expect: a.ID, Paths: []string{top}, DryRun: true})
		if err == nil {
			res2, err := w.Restore(ctx, b.ID, &RestoreOptions{Expect: a.ID, Paths: []string{top}})
			if err != nil {
				t.Fatalf("seed %d: paths: %v", seed, err)
			}
			if !slices.Equal(dry2.Changes, res2.Changes) {
				t.Errorf("seed %d: paths: dry %v real %v", seed, dry2.Changes, res2.Changes)
			}
			got := state(t, dir)
			for k := range mergeKeys(got, stB, stA2) {
				var want string
				if k == top || strings.HasPrefix(k, top+"/") {
					want = stB[k]
				} else {
					want = stA2[k]
				}
				if got[k] != want && !strings.HasSuffix(k, ".ign") && !(want == "" && got[k] == "dir") {
					t.Errorf("seed %d: paths %q: %q: got %q want %q\nA %q\nB %q\nchanges %v", seed, top, k, got[k], want, stA, stB, res2.Changes)
				}
			}
			w.Restore(ctx, a.ID, &RestoreOptions{Force: true})
		} else if !errors.Is(err, ErrInTheWay) {
			t.Fatalf("seed %d: paths dry: %v", seed, err)
		}
		hasIgn := false
		for k := range stB {
			hasIgn = hasIgn || strings.HasSuffix(k, ".ign")
		}
		if c := snap(t, w); c.ID != a.ID && !hasIgn {
			t.Errorf("seed %d: snapshot after restore differs\n%s\n%s", seed, a.Manifest.Encode(), c.Manifest.Encode())
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func mergeKeys(ms ...map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			out[k] = true
		}
	}
	return out
}
