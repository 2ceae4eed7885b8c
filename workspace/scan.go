package workspace

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// The walk: every directory of the workspace that is not ignored, listed
// and stat'ed by a few goroutines, files and symlinks recorded with their
// stat data (the contents are read afterwards, and only where the stat
// cache cannot vouch for them).

type fileType uint8

const (
	typeOther fileType = iota
	typeFile
	typeDir
	typeSymlink
)

// statKey is what the stat cache compares: git's stat data (size,
// modification and change times, inode, device, permissions, type).
type statKey struct {
	size, mtime, ctime int64
	ino, dev           uint64
	perm               fs.FileMode
	typ                fileType
}

var errChanged = errors.New("changed while read")

// Problem is a path a snapshot could not record as it is: unreadable,
// vanished, changed while read, not a regular file, or too large to store.
// None is fatal.
type Problem struct {
	Path string // slash-separated, relative to the workspace
	Err  error
}

func (p Problem) String() string { return strconvQuote(p.Path) + ": " + p.Err.Error() }

// ErrTooLarge is the Err of a Problem for a file over Options.MaxFileBytes,
// recorded by hash and size but not stored.
var ErrTooLarge = errors.New("larger than MaxFileBytes: recorded by hash and size, not stored")

// ErrNotRegular is the Err of a Problem for a socket, FIFO or device,
// which is not recorded.
var ErrNotRegular = errors.New("not a regular file, directory or symlink: not recorded")

// node is an entry of the walk with the stat data it was found with.
type node struct {
	Entry
	st   statKey
	read bool // its content was read by this snapshot
	gone bool // it vanished before it could be read
}

// tempPrefix starts the names of Restore's temporary files and staging
// directory, which walks skip (one a crash left behind is removed by the
// next Restore).
const tempPrefix = ".agentsession-restore-"

// tree is the result of a walk.
type tree struct {
	nodes []node // sorted by path
	// dirs holds every directory walked ("" for the root), and whether it
	// holds, at any depth, something the walk did not record (ignored,
	// not regular, unreadable), which Restore must leave in place.
	dirs     map[string]bool
	problems []Problem
	temps    []string // Restore's leftovers
}

type walkJob struct {
	rel   string   // "" for the root
	segs  []string // rel split at /
	st    *statKey // as the parent listed it (nil for the root)
	chain []gitignore.Pattern
	rules *rules
}

// walk lists the workspace.
func (w *Workspace) walk(ctx context.Context) (*tree, error) {
	t := &tree{dirs: map[string]bool{}}
	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		queue    = []walkJob{{}}
		pending  = 1
		fatal    error
		withIgn  []string // directories with something not recorded in them
		allNodes [][]node
	)
	// The root's rules: .git/info/exclude, then the options' patterns
	// (which stay last, the highest priority, in every directory).
	if data, err := readSmall(filepath.Join(w.dir, ".git", "info", "exclude")); err == nil {
		queue[0].chain = parseIgnore(data, nil)
	}
	worker := func() {
		var local []node
		defer func() {
			mu.Lock()
			allNodes = append(allNodes, local)
			mu.Unlock()
		}()
		for {
			mu.Lock()
			for len(queue) == 0 && pending > 0 && fatal == nil {
				cond.Wait()
			}
			if pending == 0 || fatal != nil {
				mu.Unlock()
				cond.Broadcast()
				return
			}
			j := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			mu.Unlock()

			var sub []walkJob
			var probs []Problem
			ign := false
			err := ctx.Err()
			if err == nil {
				sub, probs, ign = w.walkDir(j, &local)
			}
			mu.Lock()
			if err != nil && fatal == nil {
				fatal = err
			}
			t.dirs[j.rel] = false
			if ign {
				withIgn = append(withIgn, j.rel)
			}
			t.problems = append(t.problems, probs...)
			queue = append(queue, sub...)
			pending += len(sub) - 1
			mu.Unlock()
			cond.Broadcast()
		}
	}
	var wg sync.WaitGroup
	for range w.workers {
		wg.Add(1)
		go func() { defer wg.Done(); worker() }()
	}
	wg.Wait()
	if fatal != nil {
		return nil, fatal
	}
	for _, ns := range allNodes {
		t.nodes = append(t.nodes, ns...)
	}
	slices.SortFunc(t.nodes, func(a, b node) int { return strings.Compare(a.Path, b.Path) })
	for _, d := range withIgn {
		for {
			if t.dirs[d] {
				break // and its parents already
			}
			t.dirs[d] = true
			if d == "" {
				break
			}
			d = parentOf(d)
		}
	}
	for i := range t.problems {
		if errors.Is(t.problems[i].Err, errTemp) {
			t.temps = append(t.temps, t.problems[i].Path)
		}
	}
	t.problems = slices.DeleteFunc(t.problems, func(p Problem) bool { return errors.Is(p.Err, errTemp) })
	slices.SortFunc(t.problems, func(a, b Problem) int { return strings.Compare(a.Path, b.Path) })
	return t, nil
}

var errTemp = errors.New("restore's temporary file")

// walkDir lists one directory: its files and symlinks go to out, its
// subdirectories come back as jobs; ign tells that something in it is not
// recorded.
func (w *Workspace) walkDir(j walkJob, out *[]node) (sub []walkJob, probs []Problem, ign bool) {
	abs := w.abs(j.rel)
	d, err := openDir(abs, j.st)
	if err != nil {
		if j.rel == "" {
			return nil, []Problem{{Path: ".", Err: err}}, true
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, []Problem{{Path: j.rel, Err: err}}, true
		}
		*out = append(*out, node{Entry: Entry{Path: j.rel, Type: Unreadable}})
		return nil, []Problem{{Path: j.rel, Err: err}}, true
	}
	defer d.close()
	names, err := d.names()
	if err != nil {
		if j.rel != "" {
			*out = append(*out, node{Entry: Entry{Path: j.rel, Type: Unreadable}})
		}
		return nil, []Problem{{Path: cmpOr(j.rel, "."), Err: err}}, true
	}
	if len(names) == 0 {
		if j.rel != "" {
			*out = append(*out, node{Entry: Entry{Path: j.rel, Type: Dir, Mode: 0o755}})
		}
		return nil, nil, false
	}
	chain, r := j.chain, j.rules
	if j.rel == "" || slices.Contains(names, ".gitignore") {
		if st, err := d.lstat(".gitignore"); err == nil && st.typ == typeFile {
			if data, err := readSmall(filepath.Join(abs, ".gitignore")); err == nil {
				chain = append(slices.Clip(chain), parseIgnore(data, j.segs)...)
			}
		}
		r = newRules(append(slices.Clip(chain), w.extra...))
	}
	segs := append(slices.Clip(j.segs), "")
	for _, name := range names {
		rel := name
		if j.rel != "" {
			rel = j.rel + "/" + name
		}
		if isGitDir(name) {
			ign = true
			continue
		}
		if strings.HasPrefix(name, tempPrefix) {
			probs = append(probs, Problem{Path: rel, Err: errTemp})
			ign = true
			continue
		}
		st, err := d.lstat(name)
		if err != nil {
			ign = true
			if !errors.Is(err, fs.ErrNotExist) {
				*out = append(*out, node{Entry: Entry{Path: rel, Type: Unreadable}})
			}
			probs = append(probs, Problem{Path: rel, Err: err})
			continue
		}
		segs[len(segs)-1] = name
		if r.ignored(segs, st.typ == typeDir) {
			ign = true
			continue
		}
		switch st.typ {
		case typeDir:
			stc := st
			sub = append(sub, walkJob{rel: rel, segs: slices.Clone(segs), st: &stc, chain: chain, rules: r})
		case typeFile:
			*out = append(*out, node{Entry: Entry{Path: rel, Type: File, Mode: st.perm, Size: st.size}, st: st})
		case typeSymlink:
			target, err := d.readlink(name)
			if err != nil || target == "" || strings.IndexByte(target, 0) >= 0 {
				if err == nil {
					err = errors.New("unusable symlink target")
				}
				ign = true
				if !errors.Is(err, fs.ErrNotExist) {
					*out = append(*out, node{Entry: Entry{Path: rel, Type: Unreadable}})
				}
				probs = append(probs, Problem{Path: rel, Err: err})
				continue
			}
			*out = append(*out, node{Entry: Entry{Path: rel, Type: Symlink, Mode: 0o777, Size: int64(len(target)), Target: target}, st: st})
		default:
			ign = true
			probs = append(probs, Problem{Path: rel, Err: ErrNotRegular})
		}
	}
	return sub, probs, ign
}

// readSmall reads an ignore file (at most 1 MiB of it), not following a
// symlink.
func readSmall(path string) ([]byte, error) {
	f, err := openNoFollow(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 1<<20))
}

func parentOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// abs returns the file system path of a workspace path.
func (w *Workspace) abs(rel string) string {
	if rel == "" {
		return w.dir
	}
	return w.dir + string(os.PathSeparator) + filepath.FromSlash(rel)
}
