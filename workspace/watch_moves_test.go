package workspace

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	session "github.com/agentsession/session"
)

// TestWatcherAgreesWithMoves: directories moved out of the tree, in from
// outside and within it, files changed in a directory moved out: the
// watched snapshot is always the one a walk without the watcher takes.
func TestWatcherAgreesWithMoves(t *testing.T) {
	for _, ahead := range []bool{false, true} {
		dir := t.TempDir()
		out := t.TempDir()
		store := session.NewMemoryStore()
		w := reopen(t, dir, store, nil)
		if ahead {
			later(w)
		}
		r := rand.New(rand.NewPCG(5, 4))
		names := []string{"a", "b", "c/d", "c/e/f", "g/h/i", "g/j"}
		dirs := []string{"c", "c/e", "g", "g/h", "k", "k/l"}
		for round := range 400 {
			for range 1 + r.IntN(3) {
				p := filepath.Join(dir, names[r.IntN(len(names))])
				switch r.IntN(6) {
				case 0, 1:
					os.MkdirAll(filepath.Dir(p), 0o755)
					os.RemoveAll(p)
					os.WriteFile(p, []byte(fmt.Sprint(r.IntN(5))), 0o644)
				case 2: // move a dir out
					d := filepath.Join(dir, dirs[r.IntN(len(dirs))])
					os.RemoveAll(filepath.Join(out, "x"))
					os.Rename(d, filepath.Join(out, "x"))
				case 3: // move a dir in (from outside)
					d := filepath.Join(dir, dirs[r.IntN(len(dirs))])
					src := filepath.Join(out, "x")
					if _, err := os.Stat(src); err != nil {
						build(t, out, spec{path: fmt.Sprintf("x/h/i"), content: fmt.Sprint(round)}, spec{path: "x/e/f", content: "zz"})
					}
					os.MkdirAll(filepath.Dir(d), 0o755)
					os.RemoveAll(d)
					os.Rename(src, d)
				case 4: // rename a dir inside
					a := filepath.Join(dir, dirs[r.IntN(len(dirs))])
					b := filepath.Join(dir, dirs[r.IntN(len(dirs))])
					os.MkdirAll(filepath.Dir(b), 0o755)
					os.RemoveAll(b)
					os.Rename(a, b)
				case 5: // modify a file in the moved-out dir
					os.WriteFile(filepath.Join(out, "x", "h", "i"), []byte(fmt.Sprint(r.IntN(100))), 0o644)
				}
			}
			got := snap(t, w)
			fresh := reopen(t, dir, store, &Options{NoWatch: true})
			want := snap(t, fresh)
			if got.ID != want.ID {
				t.Fatalf("ahead %v round %d: watched\n%s\nfresh\n%s", ahead, round, got.Manifest.Encode(), want.Manifest.Encode())
			}
		}
	}
}
