package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// RestoreOptions configures Restore.
type RestoreOptions struct {
	// Paths restricts the restore to these paths and what is under them.
	Paths []string
	// DryRun lists what would change and changes nothing (conflicts and
	// missing contents are still reported as errors).
	DryRun bool
	// Expect is the snapshot the caller believes the working tree holds.
	// A path that Restore would overwrite, delete or chmod must be as
	// Expect has it (compare-and-set, as IfLast is for logs); otherwise
	// Restore changes nothing and returns a *ConflictError. Required
	// unless Force.
	Expect string
	// Force restores whatever the working tree holds, overwriting changes
	// made since Expect (Expect, when given, is then ignored). Ignored
	// files in the way of a path of the snapshot are overwritten too.
	Force bool
	// Sync makes each file written durable (synced before it is renamed
	// into place, and its directory after), for power loss; a process
	// killed mid-restore leaves every file old or new either way.
	Sync bool
}

// Op is what Restore does to a path.
type Op string

// The operations of a restore.
const (
	OpCreate Op = "create" // a file or symlink that is not there
	OpUpdate Op = "update" // replaced: new content, or a new type
	OpDelete Op = "delete" // a file or symlink created since the snapshot
	OpMode   Op = "mode"   // permissions only
	OpMkdir  Op = "mkdir"
	OpRmdir  Op = "rmdir"
)

// Change is one operation of a restore.
type Change struct {
	Path string
	Op   Op
}

// RestoreResult says what a restore changed (or, dry, would change).
type RestoreResult struct {
	ID      string // the snapshot restored
	Changes []Change
	// Left lists the paths of the snapshot that cannot be restored and
	// were left as they are: content too large to have been stored, or
	// unreadable when recorded, or unreadable now.
	Left   []Problem
	DryRun bool
}

// ConflictError is returned when paths that Restore would change differ
// from what RestoreOptions.Expect holds (changed since, by someone else).
// Nothing was changed.
type ConflictError struct {
	Expect string
	Paths  []string
}

func (e *ConflictError) Error() string {
	qs := make([]string, 0, min(len(e.Paths), 10))
	for _, p := range e.Paths[:min(len(e.Paths), 10)] {
		qs = append(qs, strconvQuote(p))
	}
	more := ""
	if len(e.Paths) > 10 {
		more = fmt.Sprintf(" and %d more", len(e.Paths)-10)
	}
	return fmt.Sprintf("workspace: %d paths changed since snapshot %s: %s%s (restore with Force to overwrite them)", len(e.Paths), e.Expect, strings.Join(qs, ", "), more)
}

// ErrNeedExpect is returned by Restore given neither Expect nor Force.
var ErrNeedExpect = errors.New("workspace: restore needs Expect (the snapshot the tree is believed to hold) or Force")

// ErrInTheWay is wrapped by the error of a restore that would have to
// remove ignored files (a directory holding some where the snapshot has a
// file, an ignored directory where it has a file): nothing was changed.
var ErrInTheWay = errors.New("workspace: ignored files in the way")

// ErrMidRestore wraps an error met after the restore began changing the
// tree: each file is either as it was or as in the snapshot.
var ErrMidRestore = errors.New("workspace: restore interrupted")

// plan is what a restore will do.
type plan struct {
	writes  []write  // creates and updates
	deletes []string // files and symlinks
	rmdirs  []string
	mkdirs  []string
	modes   []write
	st      map[string]statKey // the stat data each changed path was planned with
	absent  map[string]bool    // paths planned as absent (an ignored file may be there)
	left    []Problem
	changes []Change
}

type write struct {
	e     *Entry
	op    Op
	stage string // its staged copy
}

// Restore brings the working tree back to snapshot id: contents, modes and
// symlinks as recorded, files created since removed, files deleted since
// recreated, empty directories as recorded; ignored files are not
// touched. It first plans, checks the plan against Expect and fetches and
// checks every content it needs, writing each to a staging directory in
// the workspace: a missing or corrupt content, or a conflict, fails the
// restore before any file changed. Then each path is replaced atomically
// (a rename of the staged copy), so that killed at any point the restore
// leaves every file either as it was or as in the snapshot. Every change
// goes through an os.Root of the directory: no path of a manifest, which
// is untrusted, can make it write or delete outside, and symlinks are
// created as links, never followed.
func (w *Workspace) Restore(ctx context.Context, id string, opts *RestoreOptions) (*RestoreResult, error) {
	var o RestoreOptions
	if opts != nil {
		o = *opts
	}
	if o.Expect == "" && !o.Force {
		return nil, ErrNeedExpect
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checkCollections()
	tgt, err := w.manifest(ctx, id)
	if err != nil {
		return nil, err
	}
	for i := range tgt.Entries {
		if p := tgt.Entries[i].Path; !localPath(p) {
			return nil, fmt.Errorf("%w: path %q is not local here", ErrManifest, p)
		}
	}
	var exp *Manifest
	if o.Expect != "" && !o.Force {
		if exp, err = w.manifest(ctx, o.Expect); err != nil {
			return nil, err
		}
	}
	start := w.now()
	_, _, t, err := w.record(ctx, false)
	if err != nil {
		return nil, err
	}
	p, conflicts, err := w.plan(tgt, exp, t, &o)
	if err != nil {
		return nil, err
	}
	res := &RestoreResult{ID: id, Changes: p.changes, Left: p.left, DryRun: o.DryRun}
	if len(conflicts) > 0 {
		slices.Sort(conflicts)
		return res, &ConflictError{Expect: o.Expect, Paths: slices.Compact(conflicts)}
	}
	root, err := os.OpenRoot(w.dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	defer root.Close()
	if o.DryRun {
		// Still check every content is there and whole.
		for _, wr := range p.writes {
			if wr.e.Type == File {
				if _, err := w.blob(ctx, wr.e); err != nil {
					return res, err
				}
			}
		}
		return res, nil
	}
	stage, err := w.stage(ctx, root, p, o.Sync)
	if err != nil {
		return res, err
	}
	err = w.apply(ctx, root, p, &o)
	if rerr := root.RemoveAll(stage); rerr != nil && err == nil {
		err = fmt.Errorf("%w: remove staging directory: %v", ErrMidRestore, rerr)
	}
	for _, tmp := range t.temps {
		_ = root.RemoveAll(tmp) // left by a restore that was killed
	}
	if err != nil {
		return res, err
	}
	// The cache learns what was written: its content is stored.
	for _, wr := range p.writes {
		if wr.e.Type != File {
			continue
		}
		if st, err := w.lstatIn(wr.e.Path); err == nil {
			w.cache[wr.e.Path] = cacheEntry{st: st, hash: wr.e.Hash, trusted: w.old(st, start), stored: start}
		}
	}
	if len(o.Paths) == 0 {
		w.last = id
	}
	w.saveCache()
	return res, nil
}

// localPath reports whether a manifest path can be used here: local, and
// on Windows free of its separators and drive letters.
func localPath(p string) bool {
	if runtime.GOOS == "windows" && strings.ContainsAny(p, `\:`) {
		return false
	}
	return filepath.IsLocal(filepath.FromSlash(p))
}

// plan computes the changes from the current tree t to tgt, and the paths
// where the tree differs from exp (nil: no check) among those it would
// change.
func (w *Workspace) plan(tgt, exp *Manifest, t *tree, o *RestoreOptions) (*plan, []string, error) {
	p := &plan{st: map[string]statKey{}, absent: map[string]bool{}}
	var conflicts []string
	cur := make(map[string]*node, len(t.nodes))
	for i := range t.nodes {
		if n := &t.nodes[i]; !n.gone && underAny(n.Path, o.Paths) {
			cur[n.Path] = n
		}
	}
	// check notes a conflict when path is not as exp has it.
	check := func(path string) {
		if exp == nil {
			return
		}
		e, inExp := exp.Lookup(path)
		c, inCur := cur[path]
		switch {
		case !inExp && !inCur:
		case inExp && inCur && e.same(&c.Entry) && c.Type != Unreadable:
		default:
			conflicts = append(conflicts, path)
		}
	}
	// Paths the snapshot leaves alone, and what they hold.
	var left []string
	needDir := map[string]bool{}
	for i := range tgt.Entries {
		e := &tgt.Entries[i]
		if !underAny(e.Path, o.Paths) {
			continue
		}
		for d := parentOf(e.Path); d != ""; d = parentOf(d) {
			if needDir[d] {
				break
			}
			needDir[d] = true
		}
		if e.Type == Dir {
			needDir[e.Path] = true
		}
		if e.Type == Oversized || e.Type == Unreadable {
			left = append(left, e.Path)
		}
	}
	underLeft := func(path string) bool {
		for _, l := range left {
			if path == l || strings.HasPrefix(path, l+"/") {
				return true
			}
		}
		return false
	}
	// What the snapshot has.
	for i := range tgt.Entries {
		e := &tgt.Entries[i]
		if !underAny(e.Path, o.Paths) {
			continue
		}
		c, inCur := cur[e.Path]
		_, isDir := t.dirs[e.Path]
		switch e.Type {
		case Oversized:
			if !inCur || c.Type != Oversized && c.Type != File || c.Hash != e.Hash || c.Mode != e.Mode {
				p.left = append(p.left, Problem{Path: e.Path, Err: errors.New("its content was too large to be stored: left as it is")})
			}
			continue
		case Unreadable:
			p.left = append(p.left, Problem{Path: e.Path, Err: errors.New("it was unreadable when recorded: left as it is")})
			continue
		case Dir:
			if isDir {
				continue
			}
			if inCur && c.Type == Dir {
				continue
			}
			p.mkdirs = append(p.mkdirs, e.Path)
			continue
		}
		// A file or a symlink.
		if inCur && c.Type == Unreadable {
			if !o.Force {
				p.left = append(p.left, Problem{Path: e.Path, Err: errors.New("unreadable now: left as it is")})
				continue
			}
		}
		if inCur && c.Type != Dir && c.Type != Unreadable && e.same(&c.Entry) {
			continue
		}
		if inCur && c.Type == e.Type && c.Type == File && c.Hash == e.Hash {
			check(e.Path)
			p.modes = append(p.modes, write{e: e, op: OpMode})
			p.st[e.Path] = c.st
			continue
		}
		check(e.Path)
		op := OpUpdate
		switch {
		case isDir || inCur && c.Type == Dir:
			// A directory where the snapshot has a file: it goes, with
			// what is in it (deleted below), if nothing ignored is.
			if t.dirs[e.Path] {
				return nil, nil, fmt.Errorf("%w: directory %q, where the snapshot has a %s", ErrInTheWay, e.Path, e.Type)
			}
		case inCur:
			p.st[e.Path] = c.st
		default:
			op = OpCreate
			p.absent[e.Path] = true
		}
		p.writes = append(p.writes, write{e: e, op: op})
	}
	// What the tree has that the snapshot does not.
	kept := map[string]bool{}
	for path, c := range cur {
		e, inTgt := tgt.Lookup(path)
		if underLeft(path) && !(inTgt && path == e.Path && e.Type != Oversized && e.Type != Unreadable) {
			markKept(kept, path)
			continue
		}
		needed := needDir[path]
		switch {
		case c.Type == Dir:
			if needed || inTgt && e.Type == Dir {
				markKept(kept, path)
				continue
			}
			if !inTgt {
				p.rmdirs = append(p.rmdirs, path)
				continue
			}
			// replaced by a file: rmdir before the write
			p.rmdirs = append(p.rmdirs, path)
		case c.Type == Unreadable:
			if inTgt && !needed && o.Force {
				continue // overwritten by the write above
			}
			markKept(kept, path)
			if needed {
				return nil, nil, fmt.Errorf("%w: %q is unreadable, where the snapshot has a directory", ErrInTheWay, path)
			}
			p.left = append(p.left, Problem{Path: path, Err: errors.New("unreadable now, not in the snapshot: left as it is")})
		case inTgt && !needed:
			if e.Type == Dir {
				// a file where the snapshot has an empty directory
				check(path)
				p.deletes = append(p.deletes, path)
				p.st[path] = c.st
				continue
			}
			markKept(kept, path) // same, or rewritten by rename
		default:
			check(path)
			p.deletes = append(p.deletes, path)
			p.st[path] = c.st
			if needed {
				p.mkdirs = append(p.mkdirs, path)
			}
		}
	}
	// Directories: those needed and missing are made; those not needed
	// whose content all goes, and that hold nothing ignored, are removed.
	for d := range needDir {
		if _, ok := t.dirs[d]; ok {
			continue
		}
		if c, ok := cur[d]; ok && c.Type == Dir {
			continue
		}
		if !slices.Contains(p.mkdirs, d) {
			p.mkdirs = append(p.mkdirs, d)
		}
	}
	for d, ign := range t.dirs {
		if d == "" || !underAny(d, o.Paths) || needDir[d] || kept[d] || underLeft(d) {
			continue
		}
		if e, ok := tgt.Lookup(d); ok && e.Type != File && e.Type != Symlink {
			continue
		}
		if ign {
			if e, ok := tgt.Lookup(d); ok {
				return nil, nil, fmt.Errorf("%w: directory %q holds ignored files, where the snapshot has a %s", ErrInTheWay, d, e.Type)
			}
			continue // it stays, for what is ignored in it
		}
		p.rmdirs = append(p.rmdirs, d)
	}
	// Ignored files at paths the snapshot writes or needs as directories.
	for _, wr := range p.writes {
		if p.absent[wr.e.Path] {
			if st, err := w.lstatIn(wr.e.Path); err == nil {
				if st.typ == typeDir {
					return nil, nil, fmt.Errorf("%w: ignored directory %q, where the snapshot has a %s", ErrInTheWay, wr.e.Path, wr.e.Type)
				}
				if !o.Force {
					conflicts = append(conflicts, wr.e.Path)
				}
			}
		}
	}
	for _, d := range p.mkdirs {
		if _, inCur := cur[d]; inCur {
			continue // deleted first
		}
		if st, err := w.lstatIn(d); err == nil {
			if st.typ == typeDir {
				continue
			}
			return nil, nil, fmt.Errorf("%w: ignored %q, where the snapshot has a directory", ErrInTheWay, d)
		}
	}
	slices.Sort(p.deletes)
	slices.SortFunc(p.rmdirs, func(a, b string) int { return strings.Compare(b, a) }) // deepest first
	p.rmdirs = slices.Compact(p.rmdirs)
	slices.Sort(p.mkdirs)
	p.mkdirs = slices.Compact(p.mkdirs)
	slices.SortFunc(p.writes, func(a, b write) int { return strings.Compare(a.e.Path, b.e.Path) })
	for _, d := range p.deletes {
		p.changes = append(p.changes, Change{Path: d, Op: OpDelete})
	}
	for _, d := range p.rmdirs {
		p.changes = append(p.changes, Change{Path: d, Op: OpRmdir})
	}
	for _, d := range p.mkdirs {
		p.changes = append(p.changes, Change{Path: d, Op: OpMkdir})
	}
	for _, wr := range p.writes {
		p.changes = append(p.changes, Change{Path: wr.e.Path, Op: wr.op})
	}
	for _, wr := range p.modes {
		p.changes = append(p.changes, Change{Path: wr.e.Path, Op: OpMode})
	}
	slices.SortStableFunc(p.changes, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(p.left, func(a, b Problem) int { return strings.Compare(a.Path, b.Path) })
	return p, conflicts, nil
}

func markKept(kept map[string]bool, path string) {
	for d := parentOf(path); d != "" && !kept[d]; d = parentOf(d) {
		kept[d] = true
	}
}

// stage fetches and checks every content the plan writes, into a staging
// directory of the workspace (removed again on failure): after it, the
// restore cannot fail for want of content.
func (w *Workspace) stage(ctx context.Context, root *os.Root, p *plan, sync bool) (string, error) {
	dir := tempPrefix + strconv.FormatUint(rand.Uint64(), 36)
	if len(p.writes) == 0 {
		return dir, nil
	}
	if err := root.Mkdir(dir, 0o700); err != nil {
		return dir, fmt.Errorf("workspace: staging directory: %w", err)
	}
	fail := func(err error) (string, error) {
		_ = root.RemoveAll(dir)
		return dir, err
	}
	for i := range p.writes {
		wr := &p.writes[i]
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		wr.stage = dir + "/" + strconv.Itoa(i)
		if wr.e.Type == Symlink {
			if err := root.Symlink(wr.e.Target, wr.stage); err != nil {
				return fail(fmt.Errorf("workspace: stage %s: %w", strconvQuote(wr.e.Path), err))
			}
			continue
		}
		data, err := w.blob(ctx, wr.e)
		if err != nil {
			return fail(err)
		}
		if err := writeStaged(root, wr.stage, data, wr.e.Mode, sync); err != nil {
			return fail(fmt.Errorf("workspace: stage %s: %w", strconvQuote(wr.e.Path), err))
		}
	}
	return dir, nil
}

func writeStaged(root *os.Root, name string, data []byte, mode fs.FileMode, sync bool) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode) // whatever the umask
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// apply carries out the plan: deletions, directories removed, directories
// made, staged copies renamed into place, modes. Before each change it
// checks the path still has the stat data it was planned with.
func (w *Workspace) apply(ctx context.Context, root *os.Root, p *plan, o *RestoreOptions) error {
	mid := func(path string, err error) error {
		return fmt.Errorf("%w at %s: %w", ErrMidRestore, strconvQuote(path), err)
	}
	same := func(path string) error {
		want, known := p.st[path]
		st, err := w.lstatIn(path)
		switch {
		case !known && errors.Is(err, fs.ErrNotExist):
			return nil
		case !known && p.absent[path] && o.Force:
			return nil
		case known && err == nil && st == want:
			return nil
		}
		return &ConflictError{Expect: o.Expect, Paths: []string{path}}
	}
	for _, d := range p.deletes {
		if err := ctx.Err(); err != nil {
			return mid(d, err)
		}
		if err := same(d); err != nil {
			return mid(d, err)
		}
		if err := root.Remove(filepath.FromSlash(d)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return mid(d, err)
		}
	}
	for _, d := range p.rmdirs {
		if err := root.Remove(filepath.FromSlash(d)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return mid(d, err)
		}
	}
	for _, d := range p.mkdirs {
		if err := root.Mkdir(filepath.FromSlash(d), 0o755); err != nil {
			if st, serr := w.lstatIn(d); serr != nil || st.typ != typeDir {
				return mid(d, err)
			}
		}
	}
	dirs := map[string]bool{}
	for _, wr := range p.writes {
		if err := ctx.Err(); err != nil {
			return mid(wr.e.Path, err)
		}
		if err := same(wr.e.Path); err != nil {
			return mid(wr.e.Path, err)
		}
		if err := root.Rename(filepath.FromSlash(wr.stage), filepath.FromSlash(wr.e.Path)); err != nil {
			return mid(wr.e.Path, err)
		}
		dirs[parentOf(wr.e.Path)] = true
	}
	for _, wr := range p.modes {
		if err := same(wr.e.Path); err != nil {
			return mid(wr.e.Path, err)
		}
		if err := chmodNoFollow(root, wr.e.Path, wr.e.Mode); err != nil {
			return mid(wr.e.Path, err)
		}
	}
	if o.Sync {
		for d := range dirs {
			if err := syncDir(root, d); err != nil {
				return mid(d, err)
			}
		}
	}
	return nil
}

// lstatIn returns the stat data of a workspace path without following a
// symlink anywhere on the way: a path under a symlink or a file does not
// exist (fs.ErrNotExist), whatever the link's target holds.
func (w *Workspace) lstatIn(rel string) (statKey, error) {
	for i := 0; i < len(rel); i++ {
		if rel[i] != '/' {
			continue
		}
		st, err := lstatPath(w.abs(rel[:i]))
		if err != nil {
			return statKey{}, err
		}
		if st.typ != typeDir {
			return statKey{}, &fs.PathError{Op: "lstat", Path: w.abs(rel), Err: fs.ErrNotExist}
		}
	}
	return lstatPath(w.abs(rel))
}

// chmodNoFollow sets the mode of a regular file, opened without
// following a symlink in its place.
func chmodNoFollow(root *os.Root, path string, mode fs.FileMode) error {
	f, err := root.OpenFile(filepath.FromSlash(path), os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Chmod(mode)
}

func syncDir(root *os.Root, d string) error {
	if d == "" {
		d = "."
	}
	f, err := root.Open(filepath.FromSlash(d))
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && runtime.GOOS != "windows" {
		return err
	}
	return nil
}
