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
	"time"

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

// dirState is what the last walk found in one directory, kept while a
// watcher vouches that nothing changed in it.
type dirState struct {
	st      *statKey // the directory's, as its parent listed it (nil for the root)
	inRules *rules   // the rules it was listed under (its parent's)
	gi      statKey
	chain   []gitignore.Pattern
	rules   *rules
	nodes   []node // its entries (files, symlinks; itself when empty or unreadable)
	subs    []walkJob
	probs   []Problem
	ign     bool
}

// walk lists the workspace. With a watcher, the directories where
// nothing happened since the last walk are not listed again.
func (w *Workspace) walk(ctx context.Context) (t *tree, err error) {
	t = &tree{dirs: map[string]bool{}}
	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		queue    = []walkJob{{}}
		pending  = 1
		fatal    error
		withIgn  []string // directories with something not recorded in them
		allNodes [][]node
	)
	now := w.now()
	dirty, full := w.drain(now)
	w.pending, w.pendingFull = nil, false
	// The root's rules: .git/info/exclude, then the options' patterns
	// (which stay last, the highest priority, in every directory).
	excl := filepath.Join(w.dir, ".git", "info", "exclude")
	exclSt, _ := lstatPath(excl)
	if exclSt != w.exclSt {
		full = true
	}
	if data, err := readSmall(excl); err == nil {
		queue[0].chain = parseIgnore(data, nil)
	}
	if !full && len(dirty) == 0 && w.lastTree != nil {
		// Nothing happened: the last walk's tree, afresh.
		lt := w.lastTree
		return &tree{nodes: slices.Clone(lt.nodes), dirs: lt.dirs, problems: lt.problems, temps: lt.temps}, nil
	}
	w.lastTree = nil
	w.walkedChanges = true // the fast path of Snapshot must not skip what this walk saw
	old := w.states
	if full || old == nil {
		old = map[string]*dirState{}
	}
	states := make(map[string]*dirState, len(old))
	defer func() {
		if err != nil {
			w.states, w.lastTree = nil, nil // the next walk is full
			return
		}
		for rel := range old {
			if _, ok := states[rel]; !ok {
				w.watch.forget(rel)
			}
		}
		w.states, w.exclSt = states, exclSt
		if full {
			w.lastFull = now
		}
	}()
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
			ds := old[j.rel]
			mu.Unlock()

			err := ctx.Err()
			if err == nil {
				if ds == nil || dirty[j.rel] || ds.inRules != j.rules || !sameDir(ds.st, j.st) || !w.watch.watched(j.rel) {
					ds = w.walkDir(j, ds)
				}
				local = append(local, ds.nodes...)
			}
			mu.Lock()
			if err != nil && fatal == nil {
				fatal = err
			}
			if err == nil {
				states[j.rel] = ds
				t.dirs[j.rel] = false
				if ds.ign {
					withIgn = append(withIgn, j.rel)
				}
				t.problems = append(t.problems, ds.probs...)
				queue = append(queue, ds.subs...)
				pending += len(ds.subs)
			}
			pending--
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
	n := 0
	for _, ns := range allNodes {
		n += len(ns)
	}
	t.nodes = make([]node, 0, n)
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
	var probs []Problem
	for _, p := range t.problems {
		if errors.Is(p.Err, errTemp) {
			t.temps = append(t.temps, p.Path)
		} else {
			probs = append(probs, p)
		}
	}
	t.problems = probs
	slices.SortFunc(t.problems, func(a, b Problem) int { return strings.Compare(a.Path, b.Path) })
	if w.watch != nil {
		w.lastTree = &tree{nodes: slices.Clone(t.nodes), dirs: t.dirs, problems: t.problems, temps: t.temps}
	}
	return t, nil
}

// drain collects what the watcher saw since the last walk: the
// directories to list again, or full for a walk of everything. Callers
// hold mu.
func (w *Workspace) drain(now time.Time) (dirty map[string]bool, full bool) {
	full = w.watch == nil || w.states == nil || now.Sub(w.lastFull) >= w.opts.RescanEvery || w.pendingFull
	if w.watch != nil {
		d, broken := w.watch.drain()
		full = full || broken
		if w.pending == nil {
			w.pending = d
		} else {
			for k := range d {
				w.pending[k] = true
			}
		}
	}
	if st, _ := lstatPath(filepath.Join(w.dir, ".git", "info", "exclude")); st != w.exclSt {
		full = true
	}
	w.pendingFull = full
	return w.pending, full
}

var errTemp = errors.New("restore's temporary file")

// walkDir lists one directory: its files and symlinks, its
// subdirectories to walk, and whether something in it is not recorded.
// prev is what the last walk found there, if anything: its ignore rules
// are kept when its .gitignore did not change, so that its
// subdirectories can be reused.
func (w *Workspace) walkDir(j walkJob, prev *dirState) *dirState {
	ds := &dirState{st: j.st, inRules: j.rules, chain: j.chain, rules: j.rules}
	abs := w.abs(j.rel)
	w.watch.add(abs, j.rel) // before listing: no change is missed
	d, err := openDir(abs, j.st)
	if err != nil {
		ds.ign = true
		if j.rel == "" {
			ds.probs = []Problem{{Path: ".", Err: err}}
			return ds
		}
		if !errors.Is(err, fs.ErrNotExist) {
			ds.nodes = append(ds.nodes, node{Entry: Entry{Path: j.rel, Type: Unreadable}})
		}
		ds.probs = []Problem{{Path: j.rel, Err: err}}
		return ds
	}
	defer d.close()
	names, err := d.names()
	if err != nil {
		ds.ign = true
		if j.rel != "" {
			ds.nodes = append(ds.nodes, node{Entry: Entry{Path: j.rel, Type: Unreadable}})
		}
		ds.probs = []Problem{{Path: cmpOr(j.rel, "."), Err: err}}
		return ds
	}
	if len(names) == 0 {
		if j.rel != "" {
			ds.nodes = append(ds.nodes, node{Entry: Entry{Path: j.rel, Type: Dir, Mode: 0o755}})
		}
		return ds
	}
	if j.rel == "" || slices.Contains(names, ".gitignore") {
		gi, err := d.lstat(".gitignore")
		if err != nil || gi.typ != typeFile {
			gi = statKey{}
		}
		ds.gi = gi
		none := gi == (statKey{})
		if prev != nil && prev.inRules == j.rules && prev.gi == gi && (none || w.old(gi, w.now())) {
			ds.chain, ds.rules = prev.chain, prev.rules
		} else {
			chain := j.chain
			if gi.typ == typeFile {
				if data, err := readSmall(filepath.Join(abs, ".gitignore")); err == nil {
					chain = append(slices.Clip(chain), parseIgnore(data, j.segs)...)
				}
			}
			ds.chain, ds.rules = chain, newRules(append(slices.Clip(chain), w.extra...))
		}
	}
	chain, r := ds.chain, ds.rules
	segs := append(slices.Clip(j.segs), "")
	for _, name := range names {
		rel := name
		if j.rel != "" {
			rel = j.rel + "/" + name
		}
		if isGitDir(name) {
			ds.ign = true
			continue
		}
		if strings.HasPrefix(name, tempPrefix) {
			ds.probs = append(ds.probs, Problem{Path: rel, Err: errTemp})
			ds.ign = true
			continue
		}
		st, err := d.lstat(name)
		if err != nil {
			ds.ign = true
			if !errors.Is(err, fs.ErrNotExist) {
				ds.nodes = append(ds.nodes, node{Entry: Entry{Path: rel, Type: Unreadable}})
			}
			ds.probs = append(ds.probs, Problem{Path: rel, Err: err})
			continue
		}
		segs[len(segs)-1] = name
		if r.ignored(segs, st.typ == typeDir) {
			ds.ign = true
			continue
		}
		switch st.typ {
		case typeDir:
			stc := st
			ds.subs = append(ds.subs, walkJob{rel: rel, segs: slices.Clone(segs), st: &stc, chain: chain, rules: r})
		case typeFile:
			ds.nodes = append(ds.nodes, node{Entry: Entry{Path: rel, Type: File, Mode: st.perm, Size: st.size}, st: st})
		case typeSymlink:
			target, err := d.readlink(name)
			if err != nil || target == "" || strings.IndexByte(target, 0) >= 0 {
				if err == nil {
					err = errors.New("unusable symlink target")
				}
				ds.ign = true
				if !errors.Is(err, fs.ErrNotExist) {
					ds.nodes = append(ds.nodes, node{Entry: Entry{Path: rel, Type: Unreadable}})
				}
				ds.probs = append(ds.probs, Problem{Path: rel, Err: err})
				continue
			}
			ds.nodes = append(ds.nodes, node{Entry: Entry{Path: rel, Type: Symlink, Mode: 0o777, Size: int64(len(target)), Target: target}, st: st})
		default:
			ds.ign = true
			ds.probs = append(ds.probs, Problem{Path: rel, Err: ErrNotRegular})
		}
	}
	return ds
}

// sameDir reports whether a directory, as its parent lists it now, is the
// one a dirState was listed from, unchanged: another directory moved in
// at its path (whose subdirectories' paths still have the watches of the
// old one's, gone with it) is listed again.
func sameDir(was, now *statKey) bool {
	return was == nil && now == nil || was != nil && now != nil && *was == *now
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
