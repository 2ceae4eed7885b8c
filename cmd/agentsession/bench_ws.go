package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/workspace"
)

// bench's workspace section: the workspace package against the shadow
// git repository OpenCode keeps (git add -A + write-tree; git diff
// --stat; git read-tree + checkout-index -a -f), timed in the same run on
// the same copy of a tree. It is workspace/bench_test.go's benchmarks
// made a command: the same tree, the same edits.

// wsBenchResult is the workspace section of bench --json: durations in
// nanoseconds (medians), sizes in bytes.
type wsBenchResult struct {
	Tree                       string          `json:"tree"` // the tree copied
	Files                      int             `json:"files"`
	TreeBytes                  int64           `json:"treeBytes"`
	SnapshotFirstNs            int64           `json:"snapshotFirstNs"`
	SnapshotUnchangedNs        int64           `json:"snapshotUnchangedNs"`
	SnapshotUnchangedNoWatchNs int64           `json:"snapshotUnchangedNoWatchNs"`
	SnapshotEdit10Ns           int64           `json:"snapshotEdit10Ns"`
	Diff10Ns                   int64           `json:"diff10Ns"`
	Restore10Ns                int64           `json:"restore10Ns"`
	StoredBytes                int64           `json:"storedBytes"`
	Git                        *gitBenchResult `json:"git"`    // null without git
	PerGit                     *wsPerGit       `json:"perGit"` // null without git
	GitSkipped                 string          `json:"gitSkipped"`
}

// gitBenchResult is the shadow-git method's figures.
type gitBenchResult struct {
	SnapshotFirstNs     int64 `json:"snapshotFirstNs"`
	SnapshotUnchangedNs int64 `json:"snapshotUnchangedNs"`
	SnapshotEdit10Ns    int64 `json:"snapshotEdit10Ns"`
	Diff10Ns            int64 `json:"diff10Ns"`
	Restore10Ns         int64 `json:"restore10Ns"`
	StoredBytes         int64 `json:"storedBytes"`
}

// wsPerGit is each workspace figure over git's.
type wsPerGit struct {
	SnapshotFirst     float64 `json:"snapshotFirst"`
	SnapshotUnchanged float64 `json:"snapshotUnchanged"`
	SnapshotEdit10    float64 `json:"snapshotEdit10"`
	Diff10            float64 `json:"diff10"`
	Restore10         float64 `json:"restore10"`
	StoredBytes       float64 `json:"storedBytes"`
}

// wsRacyWait is how long the bench waits after copying the tree, so that
// both methods see files older than their caches' racy-timestamp margin
// (the workspace package's is 2 s), as a tree edited a while ago is.
var wsRacyWait = 2*time.Second + 100*time.Millisecond

// How many times each workspace measure runs (the median is kept).
const (
	wsFirstRuns = 3
	wsRuns      = 5
)

// defaultWSTree is the tree bench copies by default: the Go
// distribution's src/net, from `go env GOROOT` (else $GOROOT); "" when no
// Go is found.
func defaultWSTree() string {
	goroot := ""
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		goroot = strings.TrimSpace(string(out))
	}
	if goroot == "" {
		goroot = os.Getenv("GOROOT")
	}
	if goroot == "" {
		return ""
	}
	tree := filepath.Join(goroot, "src", "net")
	if fi, err := os.Stat(tree); err != nil || !fi.IsDir() {
		return ""
	}
	return tree
}

// copyTree copies the directories, regular files and symlinks of src
// into dst, and returns the files' count and bytes.
func copyTree(src, dst string) (files int, size int64, err error) {
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
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
			files++
			size += int64(len(data))
			return os.WriteFile(to, data, fi.Mode().Perm()|0o200)
		}
		return nil
	})
	return files, size, err
}

// editSet returns 10 text files of the tree spread over it (Go files
// first, as the workspace benchmarks take).
func editSet(dir string) ([]string, error) {
	var goFiles, text []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil || fi.Size() > workspace.DefaultMaxFileBytes {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil || bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
			return err
		}
		text = append(text, p)
		if strings.HasSuffix(p, ".go") {
			goFiles = append(goFiles, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	all := goFiles
	if len(all) < 10 {
		all = text
	}
	if len(all) < 10 {
		return nil, fmt.Errorf("%s has %d text files: the workspace measures edit 10", dir, len(all))
	}
	out := make([]string, 10)
	for i := range out {
		out[i] = all[i*len(all)/10]
	}
	return out, nil
}

// editFiles changes each file: a line added at the start, one at the end.
func editFiles(files []string, round int) error {
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		data = append([]byte("// edited "+strconv.Itoa(round)+"\n"), data...)
		data = append(data, "// end "+strconv.Itoa(round)+"\n"...)
		if err := os.WriteFile(f, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// dirBytes is the size of the regular files under dir.
func dirBytes(dir string) int64 {
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

// shadowGit is a shadow git repository of a tree, as OpenCode keeps one.
type shadowGit struct{ gitDir, tree string }

func newShadowGit(gitDir, tree string) (*shadowGit, error) {
	s := &shadowGit{gitDir: gitDir, tree: tree}
	_, err := s.git("init", "-q")
	return s, err
}

func (s *shadowGit) git(args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"--git-dir=" + s.gitDir, "--work-tree=" + s.tree}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@b", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@b")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return strings.TrimSpace(string(out)), nil
}

// snapshot is OpenCode's: git add -A, then git write-tree.
func (s *shadowGit) snapshot() (string, error) {
	if _, err := s.git("add", "-A"); err != nil {
		return "", err
	}
	return s.git("write-tree")
}

// restore is OpenCode's revert: git read-tree, then checkout-index.
func (s *shadowGit) restore(tree string) error {
	if _, err := s.git("read-tree", tree); err != nil {
		return err
	}
	_, err := s.git("checkout-index", "-a", "-f")
	return err
}

// timed runs f and returns how long it took.
func timed(f func() error) (int64, error) {
	runtime.GC()
	t := time.Now()
	err := f()
	return time.Since(t).Nanoseconds(), err
}

// runWSBench copies src into base and measures the workspace package and,
// where git is on PATH, the shadow-git method on the copy.
func runWSBench(ctx context.Context, base, src string, prog *progress) (*wsBenchResult, error) {
	res := &wsBenchResult{Tree: src}
	tree := filepath.Join(base, "ws-tree")
	prog.set("bench: workspace: copying "+src, 0, 0)
	var err error
	if res.Files, res.TreeBytes, err = copyTree(src, tree); err != nil {
		return nil, fmt.Errorf("copying the workspace tree: %w", err)
	}
	files, err := editSet(tree)
	if err != nil {
		return nil, err
	}
	time.Sleep(wsRacyWait)
	var sh *shadowGit
	if _, err := exec.LookPath("git"); err != nil {
		res.GitSkipped = "git is not on PATH: no shadow-git comparison"
	} else {
		res.Git = &gitBenchResult{}
	}
	open := func(blobs string, noWatch bool) (*workspace.Workspace, error) {
		return workspace.Open(tree, &workspace.Options{Blobs: session.OpenBlobDir(blobs, nil), NoWatch: noWatch})
	}

	// The first snapshot, into an empty store (git: an empty shadow
	// repository); the last run's store is kept for what follows.
	var first, gitFirst []int64
	blobs := filepath.Join(base, "ws-blobs")
	var w *workspace.Workspace
	var a *workspace.Snapshot
	var ta string
	for run := range wsFirstRuns {
		prog.set("bench: workspace: first snapshot", run, wsFirstRuns)
		last := run == wsFirstRuns-1
		if w != nil {
			w.Close()
		}
		os.RemoveAll(blobs)
		if w, err = open(blobs, false); err != nil {
			return nil, err
		}
		ns, err := timed(func() (err error) { a, err = w.Snapshot(ctx); return err })
		if err != nil {
			return nil, err
		}
		first = append(first, ns)
		if res.Git == nil {
			continue
		}
		gitDir := filepath.Join(base, "ws-shadow")
		os.RemoveAll(gitDir)
		s, err := newShadowGit(gitDir, tree)
		if err != nil {
			return nil, err
		}
		if ns, err = timed(func() (err error) { ta, err = s.snapshot(); return err }); err != nil {
			return nil, err
		}
		gitFirst = append(gitFirst, ns)
		if last {
			sh = s
		}
	}
	defer w.Close()
	res.SnapshotFirstNs, res.StoredBytes = median(first), dirBytes(blobs)
	if sh != nil {
		res.Git.SnapshotFirstNs, res.Git.StoredBytes = median(gitFirst), dirBytes(filepath.Join(sh.gitDir, "objects"))
	}

	// A snapshot with nothing changed: with the watcher (Linux), as a host
	// keeps its Workspace open, and without, as every walk stats every path.
	prog.set("bench: workspace: unchanged snapshots", 0, 0)
	if res.SnapshotUnchangedNs, err = timeN(wsRuns, func() error { _, err := w.Snapshot(ctx); return err }); err != nil {
		return nil, err
	}
	nw, err := open(blobs, true)
	if err != nil {
		return nil, err
	}
	defer nw.Close()
	if _, err := nw.Snapshot(ctx); err != nil {
		return nil, err
	}
	if res.SnapshotUnchangedNoWatchNs, err = timeN(wsRuns, func() error { _, err := nw.Snapshot(ctx); return err }); err != nil {
		return nil, err
	}
	if sh != nil {
		if res.Git.SnapshotUnchangedNs, err = timeN(wsRuns, func() error { _, err := sh.snapshot(); return err }); err != nil {
			return nil, err
		}
	}

	// A snapshot after 10 files were edited.
	round := 0
	var edited, gitEdited []int64
	var b *workspace.Snapshot
	var tb string
	for run := range wsRuns {
		prog.set("bench: workspace: snapshots after editing 10 files", run, wsRuns)
		round++
		if err := editFiles(files, round); err != nil {
			return nil, err
		}
		ns, err := timed(func() (err error) { b, err = w.Snapshot(ctx); return err })
		if err != nil {
			return nil, err
		}
		edited = append(edited, ns)
		if sh == nil {
			continue
		}
		round++
		if err := editFiles(files, round); err != nil {
			return nil, err
		}
		if ns, err = timed(func() (err error) { tb, err = sh.snapshot(); return err }); err != nil {
			return nil, err
		}
		gitEdited = append(gitEdited, ns)
	}
	res.SnapshotEdit10Ns = median(edited)
	if sh != nil {
		res.Git.SnapshotEdit10Ns = median(gitEdited)
	}

	// The diff of the two snapshots, 10 files apart, as the diff command
	// does it: a new Workspace, the manifests read from the store (git:
	// diff --stat of the two trees).
	prog.set("bench: workspace: diffs", 0, 0)
	if res.Diff10Ns, err = timeN(wsRuns, func() error {
		dw, err := open(blobs, true)
		if err != nil {
			return err
		}
		defer dw.Close()
		d, err := dw.Diff(ctx, a.ID, b.ID, nil)
		if err == nil && len(d.Files) != len(files) {
			err = fmt.Errorf("the diff of the edited tree has %d files, want %d", len(d.Files), len(files))
		}
		return err
	}); err != nil {
		return nil, err
	}
	if sh != nil {
		if res.Git.Diff10Ns, err = timeN(wsRuns, func() error { _, err := sh.git("diff", "--stat", ta, tb); return err }); err != nil {
			return nil, err
		}
	}

	// Restoring the 10 edited files (git: read-tree and checkout-index -a
	// -f, OpenCode's revert). Git's runs come after, as checkout-index
	// rewrites every file, which the workspace's next walk would read
	// again.
	var restored, gitRestored []int64
	for run := range wsRuns {
		prog.set("bench: workspace: restores of 10 edited files", run, wsRuns)
		round++
		if err := editFiles(files, round); err != nil {
			return nil, err
		}
		cur, err := w.Snapshot(ctx)
		if err != nil {
			return nil, err
		}
		ns, err := timed(func() error {
			r, err := w.Restore(ctx, a.ID, &workspace.RestoreOptions{Expect: cur.ID})
			if err == nil && len(r.Changes) != len(files) {
				err = fmt.Errorf("the restore made %d changes, want %d", len(r.Changes), len(files))
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		restored = append(restored, ns)
	}
	for run := 0; sh != nil && run < wsRuns; run++ {
		prog.set("bench: shadow git: restores of 10 edited files", run, wsRuns)
		round++
		if err := editFiles(files, round); err != nil {
			return nil, err
		}
		if _, err := sh.snapshot(); err != nil {
			return nil, err
		}
		ns, err := timed(func() error { return sh.restore(ta) })
		if err != nil {
			return nil, err
		}
		gitRestored = append(gitRestored, ns)
	}
	res.Restore10Ns = median(restored)
	if sh != nil {
		res.Git.Restore10Ns = median(gitRestored)
		g := res.Git
		res.PerGit = &wsPerGit{
			SnapshotFirst:     ratio3(res.SnapshotFirstNs, g.SnapshotFirstNs),
			SnapshotUnchanged: ratio3(res.SnapshotUnchangedNs, g.SnapshotUnchangedNs),
			SnapshotEdit10:    ratio3(res.SnapshotEdit10Ns, g.SnapshotEdit10Ns),
			Diff10:            ratio3(res.Diff10Ns, g.Diff10Ns),
			Restore10:         ratio3(res.Restore10Ns, g.Restore10Ns),
			StoredBytes:       ratio3(res.StoredBytes, g.StoredBytes),
		}
	}
	return res, nil
}

// ratio3 is a/b to three significant figures: the workspace's ratios
// to git run far below 0.01 (an unchanged tree with the watcher).
func ratio3(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(float64(a)/float64(b), 'g', 3, 64), 64)
	return r
}

// wsRows are the workspace section's rows of bench's table.
func wsRows(r *wsBenchResult) [][2]string {
	vs := func(ws, git int64, per float64, show func(int64) string) string {
		if r.Git == nil {
			return show(ws)
		}
		return fmt.Sprintf("%s (git %s: %.3g×)", show(ws), show(git), per)
	}
	g, p := r.Git, r.PerGit
	if g == nil {
		g, p = &gitBenchResult{}, &wsPerGit{}
	}
	return [][2]string{
		{"workspace tree", fmt.Sprintf("%s, %s (a copy of %s)", plural(r.Files, "file"), size(r.TreeBytes), r.Tree)},
		{"  first snapshot", vs(r.SnapshotFirstNs, g.SnapshotFirstNs, p.SnapshotFirst, dur)},
		{"  snapshot, nothing changed", vs(r.SnapshotUnchangedNs, g.SnapshotUnchangedNs, p.SnapshotUnchanged, dur)},
		{"  same, without the watcher", dur(r.SnapshotUnchangedNoWatchNs)},
		{"  snapshot after editing 10 files", vs(r.SnapshotEdit10Ns, g.SnapshotEdit10Ns, p.SnapshotEdit10, dur)},
		{"  diff of the 10 files", vs(r.Diff10Ns, g.Diff10Ns, p.Diff10, dur)},
		{"  restore of the 10 files", vs(r.Restore10Ns, g.Restore10Ns, p.Restore10, dur)},
		{"  stored for the tree", vs(r.StoredBytes, g.StoredBytes, p.StoredBytes, size)},
	}
}

// errNoWSTree is the reason the workspace section is skipped by default
// where no Go tree is found.
var errNoWSTree = errors.New("no Go distribution found (`go env GOROOT`, $GOROOT) to copy src/net from; --ws-tree DIR names a tree")
