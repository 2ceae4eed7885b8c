package workspace

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

// Benchmarks against the shadow-git method OpenCode uses, timed in the
// same run on the same tree: a copy of $(go env GOROOT)/src (or
// AGENTSESSION_WS_TREE), or with -short a slice of it (src/net). Each
// benchmark has a /workspace and a /git sub-benchmark; run several
// counts and compare medians with benchstat:
//
//	go test -run '^$' -bench . -count 6 -timeout 60m > bench.txt
//	benchstat -col /impl bench.txt
//
// Without git, the /git sub-benchmarks skip.

// benchTree copies the workload into a new temporary directory and waits
// out the racy margin, so that both methods see a tree older than their
// caches.
func benchTree(b *testing.B) string {
	b.Helper()
	src := os.Getenv("AGENTSESSION_WS_TREE")
	if src == "" {
		src = filepath.Join(runtime.GOROOT(), "src")
		if testing.Short() {
			src = filepath.Join(src, "net")
		}
	}
	dst := b.TempDir()
	if err := copyTree(src, dst); err != nil {
		b.Fatal(err)
	}
	time.Sleep(racyMargin + 100*time.Millisecond)
	return dst
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case fi.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(t, to)
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, data, fi.Mode().Perm()|0o200)
		}
		return nil
	})
}

// editSet returns 10 text files of the tree spread over it.
func editSet(b *testing.B, dir string) []string {
	var all []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, ".go") {
			all = append(all, p)
		}
		return nil
	})
	if len(all) < 10 {
		b.Fatal("the tree has fewer than 10 Go files")
	}
	var out []string
	for i := range 10 {
		out = append(out, all[i*len(all)/10])
	}
	return out
}

// edit changes the files: a line added at the end, one changed at the
// start.
func edit(b *testing.B, files []string, round int) {
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		data = append([]byte("// edited "+strconv.Itoa(round)+"\n"), data...)
		data = append(data, "// end "+strconv.Itoa(round)+"\n"...)
		if err := os.WriteFile(f, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// shadow is a shadow git repository of a tree, as OpenCode keeps one.
type shadow struct {
	b            *testing.B
	gitDir, tree string
}

func newShadow(b *testing.B, tree string) *shadow {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed: no shadow-git comparison")
	}
	s := &shadow{b: b, gitDir: filepath.Join(b.TempDir(), "shadow"), tree: tree}
	s.git("init", "-q")
	return s
}

func (s *shadow) git(args ...string) string {
	cmd := exec.Command("git", append([]string{"--git-dir=" + s.gitDir, "--work-tree=" + s.tree}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@b", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@b")
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.b.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// snapshot is OpenCode's: git add -A, then git write-tree.
func (s *shadow) snapshot() string {
	s.git("add", "-A")
	return s.git("write-tree")
}

func dirBytes(b *testing.B, dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func newBench(b *testing.B, tree string) (*Workspace, string) {
	return newBenchOpts(b, tree, false)
}

// newBenchOpts is newBench, with the watcher off when noWatch: every
// snapshot then stats every path, as on a platform without inotify or at
// the walks of Options.RescanEvery.
func newBenchOpts(b *testing.B, tree string, noWatch bool) (*Workspace, string) {
	blobs := filepath.Join(b.TempDir(), "blobs")
	w, err := Open(tree, &Options{Blobs: session.OpenBlobDir(blobs, nil), NoWatch: noWatch})
	if err != nil {
		b.Fatal(err)
	}
	return w, blobs
}

// BenchmarkSnapshotFirst: the first snapshot of the tree into an empty
// store (git: an empty shadow repository). Reports the bytes stored.
func BenchmarkSnapshotFirst(b *testing.B) {
	tree := benchTree(b)
	b.Run("impl=workspace", func(b *testing.B) {
		var stored int64
		for b.Loop() {
			b.StopTimer()
			w, blobs := newBench(b, tree)
			b.StartTimer()
			snap(b, w)
			b.StopTimer()
			stored = dirBytes(b, blobs)
			os.RemoveAll(blobs)
			b.StartTimer()
		}
		b.ReportMetric(float64(stored), "stored-bytes")
	})
	b.Run("impl=git", func(b *testing.B) {
		var stored int64
		for b.Loop() {
			b.StopTimer()
			s := newShadow(b, tree)
			b.StartTimer()
			s.snapshot()
			b.StopTimer()
			stored = dirBytes(b, filepath.Join(s.gitDir, "objects"))
			os.RemoveAll(s.gitDir)
			b.StartTimer()
		}
		b.ReportMetric(float64(stored), "stored-bytes")
	})
}

// BenchmarkSnapshotUnchanged: a snapshot of a tree that has not changed
// since the last one.
func BenchmarkSnapshotUnchanged(b *testing.B) {
	tree := benchTree(b)
	for _, impl := range []string{"workspace", "workspace-nowatch"} {
		b.Run("impl="+impl, func(b *testing.B) {
			w, _ := newBenchOpts(b, tree, impl == "workspace-nowatch")
			snap(b, w)
			for b.Loop() {
				if s := snap(b, w); s.Read != 0 {
					b.Fatalf("read %d files of an unchanged tree", s.Read)
				}
			}
		})
	}
	b.Run("impl=git", func(b *testing.B) {
		s := newShadow(b, tree)
		s.snapshot()
		for b.Loop() {
			s.snapshot()
		}
	})
}

// BenchmarkSnapshotEdit10: a snapshot after 10 files were edited.
func BenchmarkSnapshotEdit10(b *testing.B) {
	tree := benchTree(b)
	files := editSet(b, tree)
	round := 0
	for _, impl := range []string{"workspace", "workspace-nowatch"} {
		b.Run("impl="+impl, func(b *testing.B) {
			w, _ := newBenchOpts(b, tree, impl == "workspace-nowatch")
			snap(b, w)
			for b.Loop() {
				b.StopTimer()
				round++
				edit(b, files, round)
				b.StartTimer()
				snap(b, w)
			}
		})
	}
	b.Run("impl=git", func(b *testing.B) {
		s := newShadow(b, tree)
		s.snapshot()
		for b.Loop() {
			b.StopTimer()
			round++
			edit(b, files, round)
			b.StartTimer()
			s.snapshot()
		}
	})
}

// BenchmarkDiff10: the diff (files, lines added and deleted) between two
// snapshots that differ in 10 files (git diff --stat of the two trees),
// and between a snapshot and the working tree (git diff --stat of the
// tree against the working tree).
func BenchmarkDiff10(b *testing.B) {
	tree := benchTree(b)
	files := editSet(b, tree)
	w, _ := newBench(b, tree)
	a := snap(b, w)
	var s *shadow
	var ta string
	if _, err := exec.LookPath("git"); err == nil {
		s = newShadow(b, tree)
		ta = s.snapshot()
	}
	edit(b, files, 1)
	bs := snap(b, w)
	var tb string
	if s != nil {
		tb = s.snapshot()
	}
	b.Run("op=snapshots/impl=workspace", func(b *testing.B) {
		// Warm: the Workspace keeps the manifests of its recent
		// snapshots, as a host diffing its steps has them.
		for b.Loop() {
			d, err := w.Diff(ctx, a.ID, bs.ID, nil)
			if err != nil || len(d.Files) != 10 {
				b.Fatal(err, d)
			}
		}
	})
	b.Run("op=snapshots-cold/impl=workspace", func(b *testing.B) {
		// Cold: both manifests read from the store, as a new process
		// (a command-line tool) reads them.
		for b.Loop() {
			w.mu.Lock()
			w.manifests, w.mfOrder = map[string]*Manifest{}, nil // read from the store each time
			w.mu.Unlock()
			d, err := w.Diff(ctx, a.ID, bs.ID, nil)
			if err != nil || len(d.Files) != 10 {
				b.Fatal(err, d)
			}
		}
	})
	for _, op := range []string{"snapshots", "snapshots-cold"} {
		b.Run("op="+op+"/impl=git", func(b *testing.B) {
			if s == nil {
				b.Skip("git is not installed")
			}
			for b.Loop() {
				s.git("diff", "--stat", ta, tb)
			}
		})
	}
	b.Run("op=worktree/impl=workspace", func(b *testing.B) {
		for b.Loop() {
			d, err := w.Diff(ctx, a.ID, "", nil)
			if err != nil || len(d.Files) != 10 {
				b.Fatal(err, d)
			}
		}
	})
	b.Run("op=worktree/impl=git", func(b *testing.B) {
		if s == nil {
			b.Skip("git is not installed")
		}
		for b.Loop() {
			s.git("diff", "--stat", ta)
		}
	})
}

// BenchmarkRestore10: bringing back 10 edited files (git: read-tree and
// checkout-index -a -f, OpenCode's revert).
func BenchmarkRestore10(b *testing.B) {
	tree := benchTree(b)
	files := editSet(b, tree)
	round := 0
	b.Run("impl=workspace", func(b *testing.B) {
		w, _ := newBench(b, tree)
		a := snap(b, w)
		for b.Loop() {
			b.StopTimer()
			round++
			edit(b, files, round)
			cur := snap(b, w)
			b.StartTimer()
			res, err := w.Restore(ctx, a.ID, &RestoreOptions{Expect: cur.ID})
			if err != nil || len(res.Changes) != 10 {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("impl=git", func(b *testing.B) {
		s := newShadow(b, tree)
		ta := s.snapshot()
		for b.Loop() {
			b.StopTimer()
			round++
			edit(b, files, round)
			s.snapshot()
			b.StartTimer()
			s.git("read-tree", ta)
			s.git("checkout-index", "-a", "-f")
		}
	})
}

// BenchmarkSnapshotMemory measures the peak resident memory of a process
// that opens the tree and takes its first snapshot (Linux: VmHWM).
func BenchmarkSnapshotMemory(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("peak memory is read from /proc")
	}
	tree := benchTree(b)
	var peak int64
	for b.Loop() {
		blobs := filepath.Join(b.TempDir(), "blobs")
		cmd := exec.Command(os.Args[0], "-test.run=^TestSnapshotChild$")
		cmd.Env = append(os.Environ(), "AGENTSESSION_WS_CHILD=snapshot", "AGENTSESSION_WS_DIR="+tree, "AGENTSESSION_WS_BLOBS="+blobs)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "peak-rss-bytes "); ok {
				peak, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		if peak == 0 {
			b.Fatalf("no peak reported:\n%s", out)
		}
	}
	b.ReportMetric(float64(peak), "peak-rss-bytes")
}

// TestSnapshotChild is the child of BenchmarkSnapshotMemory.
func TestSnapshotChild(t *testing.T) {
	if os.Getenv("AGENTSESSION_WS_CHILD") != "snapshot" {
		t.Skip("the child of BenchmarkSnapshotMemory")
	}
	w, err := Open(os.Getenv("AGENTSESSION_WS_DIR"), &Options{Blobs: session.OpenBlobDir(os.Getenv("AGENTSESSION_WS_BLOBS"), nil)})
	if err != nil {
		t.Fatal(err)
	}
	snap(t, w)
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			fmt.Printf("peak-rss-bytes %d\n", kb*1024)
		}
	}
}
