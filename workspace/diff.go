package workspace

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"

	session "github.com/agentsession/session"
)

// Status is how a path differs between two trees.
type Status string

// The statuses of a FileDiff.
const (
	Added       Status = "added"
	Deleted     Status = "deleted"
	Modified    Status = "modified" // content changed (the mode may have too)
	ModeChanged Status = "mode"     // only the permissions changed
	TypeChanged Status = "type"     // a file became a symlink, or the other way
)

// DiffOptions configures Diff. The zero value (or nil) counts lines and
// gives no diff text.
type DiffOptions struct {
	// Unified adds each text file's unified diff (FileDiff.Unified).
	Unified bool
	// Context is the number of unchanged lines around each hunk of a
	// unified diff; default 3.
	Context int
	// Paths restricts the diff to these paths and what is under them.
	Paths []string
}

// FileDiff is the change of one path. Renames are a deletion and an
// addition.
type FileDiff struct {
	Path             string
	Status           Status
	OldType, NewType Type // 0 for the side where the path is absent
	OldMode, NewMode fs.FileMode
	// Binary is set when either side has a NUL byte in its first 8000
	// bytes (git's rule): no lines are counted.
	Binary bool
	// Additions and Deletions count the lines added and deleted (a
	// symlink's target counts as one line).
	Additions, Deletions int
	// Note says why the content could not be compared line by line (a
	// side too large to be stored, or unreadable).
	Note string
	// Unified is the unified diff (DiffOptions.Unified), "" for binary
	// files and changes of mode only.
	Unified string
}

// DiffResult is the difference between two trees, OpenCode's summary
// (files, additions, deletions) with each file's change.
type DiffResult struct {
	From, To  string // the snapshot ids compared ("" for the working tree)
	Files     []FileDiff
	Additions int
	Deletions int
}

// Diff compares snapshot from with snapshot to; "" for either means the
// working tree as it is now (read with the stat cache, nothing stored).
// Unreadable paths on either side are left out.
func (w *Workspace) Diff(ctx context.Context, from, to string, opts *DiffOptions) (*DiffResult, error) {
	var o DiffOptions
	if opts != nil {
		o = *opts
	}
	if o.Context <= 0 {
		o.Context = udiff.DefaultContextLines
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.prefetch(ctx, from, to)
	a, err := w.side(ctx, from)
	if err != nil {
		return nil, err
	}
	b := a
	if to != from {
		if b, err = w.side(ctx, to); err != nil {
			return nil, err
		}
	}
	res := &DiffResult{From: from, To: to}
	err = mergeManifests(a.m, b.m, o.Paths, func(x, y *Entry) error {
		if x != nil && y != nil && x.same(y) || x != nil && x.Type == Unreadable || y != nil && y.Type == Unreadable ||
			x != nil && y != nil && x.Type == Dir && y.Type == Dir {
			return nil
		}
		if x != nil && x.Type == Dir && y == nil || y != nil && y.Type == Dir && x == nil {
			return nil // empty directories have no lines; Restore takes care of them
		}
		fd, err := w.diffFile(ctx, a, b, x, y, &o)
		if err != nil {
			return err
		}
		if fd != nil {
			res.Files = append(res.Files, *fd)
			res.Additions += fd.Additions
			res.Deletions += fd.Deletions
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// tside is one side of a diff: a manifest, and where its contents are.
type tside struct {
	id string // "" for the working tree
	m  *Manifest
}

// prefetch reads the manifests of snapshots a and b, when neither is
// at hand, side by side; callers hold mu.
func (w *Workspace) prefetch(ctx context.Context, a, b string) {
	if a == "" || b == "" || a == b || w.manifests[a] != nil || w.manifests[b] != nil {
		return
	}
	var mb *Manifest
	done := make(chan struct{})
	go func() {
		defer close(done)
		mb, _ = w.fetchManifest(ctx, b)
	}()
	ma, _ := w.fetchManifest(ctx, a)
	<-done
	if ma != nil {
		w.remember(a, ma)
	}
	if mb != nil {
		w.remember(b, mb)
	}
}

// side reads one side of a diff; callers hold mu.
func (w *Workspace) side(ctx context.Context, id string) (*tside, error) {
	if id != "" {
		m, err := w.manifest(ctx, id)
		if err != nil {
			return nil, err
		}
		return &tside{id: id, m: m}, nil
	}
	m, _, _, err := w.record(ctx, false)
	if err != nil {
		return nil, err
	}
	return &tside{m: m}, nil
}

// mergeManifests calls fn for each path of a or b (nil for the side where
// it is absent), in path order, restricted to paths when given.
func mergeManifests(a, b *Manifest, paths []string, fn func(x, y *Entry) error) error {
	i, j := 0, 0
	for i < len(a.Entries) || j < len(b.Entries) {
		var x, y *Entry
		switch {
		case j >= len(b.Entries) || i < len(a.Entries) && a.Entries[i].Path < b.Entries[j].Path:
			x = &a.Entries[i]
			i++
		case i >= len(a.Entries) || b.Entries[j].Path < a.Entries[i].Path:
			y = &b.Entries[j]
			j++
		default:
			x, y = &a.Entries[i], &b.Entries[j]
			i++
			j++
		}
		p := x
		if p == nil {
			p = y
		}
		if !underAny(p.Path, paths) {
			continue
		}
		if err := fn(x, y); err != nil {
			return err
		}
	}
	return nil
}

// underAny reports whether path is one of paths or under one (every path
// when there are none).
func underAny(path string, paths []string) bool {
	if len(paths) == 0 {
		return true
	}
	for _, p := range paths {
		p = cleanPath(p)
		if p == "" || path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// cleanPath reads a path of Paths as a user spells it ("./a", "a/",
// "a/./b", "a//b", "/a"): slash-separated, relative to the workspace; ""
// for the whole tree. One that climbs out ("../x") matches nothing.
func cleanPath(p string) string {
	p = path.Clean(strings.TrimLeft(p, "/"))
	if p == "." {
		return ""
	}
	return p
}

// diffFile compares one path's two sides.
func (w *Workspace) diffFile(ctx context.Context, a, b *tside, x, y *Entry, o *DiffOptions) (*FileDiff, error) {
	fd := &FileDiff{}
	switch {
	case x == nil:
		fd.Path, fd.Status = y.Path, Added
	case y == nil:
		fd.Path, fd.Status = x.Path, Deleted
	case x.Type == Dir || y.Type == Dir || (x.Type == Symlink) != (y.Type == Symlink):
		fd.Path, fd.Status = x.Path, TypeChanged
	case x.Hash == y.Hash && x.Target == y.Target && x.Type == y.Type:
		fd.Path, fd.Status = x.Path, ModeChanged
	default:
		fd.Path, fd.Status = x.Path, Modified
	}
	if x != nil {
		fd.OldType, fd.OldMode = x.Type, x.Mode
	}
	if y != nil {
		fd.NewType, fd.NewMode = y.Type, y.Mode
	}
	if fd.Status == ModeChanged {
		return fd, nil
	}
	old, okOld, err := w.content(ctx, a, x)
	if err != nil {
		return nil, err
	}
	cur, okNew, err := w.content(ctx, b, y)
	if err != nil {
		return nil, err
	}
	if !okOld || !okNew {
		fd.Note = "content not stored (larger than MaxFileBytes): lines not counted"
		return fd, nil
	}
	if isBinary(old) || isBinary(cur) {
		fd.Binary = true
		if o.Unified {
			fd.Unified = "Binary files " + label("a/", x) + " and " + label("b/", y) + " differ\n"
		}
		return fd, nil
	}
	edits := udiff.Lines(old, cur)
	for _, e := range edits {
		fd.Deletions += countLines(old[e.Start:e.End])
		fd.Additions += countLines(e.New)
	}
	if o.Unified {
		u, err := udiff.ToUnified(label("a/", x), label("b/", y), old, edits, o.Context)
		if err != nil {
			return nil, fmt.Errorf("workspace: diff %s: %w", strconvQuote(fd.Path), err)
		}
		fd.Unified = u
	}
	return fd, nil
}

// content returns an entry's content as text ("" for none, a symlink's
// target, a directory's nothing); ok is false when it is not stored.
func (w *Workspace) content(ctx context.Context, s *tside, e *Entry) (string, bool, error) {
	if e == nil {
		return "", true, nil
	}
	switch e.Type {
	case Symlink:
		return e.Target, true, nil
	case Dir:
		return "", true, nil
	case Oversized, Unreadable:
		return "", false, nil
	}
	if s.id == "" {
		// The working tree: the file as it is now.
		f, err := openNoFollow(w.abs(e.Path))
		if err != nil {
			return "", false, nil
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, w.opts.MaxFileBytes+1))
		if err != nil || int64(len(data)) > w.opts.MaxFileBytes {
			return "", false, nil
		}
		return string(data), true, nil
	}
	data, err := w.blob(ctx, e)
	if err != nil {
		return "", false, err
	}
	return string(data), true, nil
}

// blob returns a stored file's content, checked against its hash and
// the manifest's size.
func (w *Workspace) blob(ctx context.Context, e *Entry) ([]byte, error) {
	data, err := w.opts.Blobs.GetBlob(ctx, e.Ref())
	if err != nil {
		return nil, &BlobError{Path: e.Path, Ref: e.Ref(), Err: err}
	}
	if !verifies(w.opts.Blobs) && hashOf(data) != e.Hash {
		return nil, &BlobError{Path: e.Path, Ref: e.Ref(), Err: fmt.Errorf("%w: content does not match its hash", session.ErrCorrupt)}
	}
	if int64(len(data)) != e.Size {
		// The manifest is wrong about it: a restored file would never
		// be as the snapshot has it.
		return nil, &BlobError{Path: e.Path, Ref: e.Ref(), Err: fmt.Errorf("%w: %d bytes, the manifest says %d", session.ErrCorrupt, len(data), e.Size)}
	}
	return data, nil
}

// BlobError is a stored content that cannot be had: missing
// (session.ErrNotFound) or not matching its hash (session.ErrCorrupt).
type BlobError struct {
	Path string // the path whose content it is
	Ref  string
	Err  error
}

func (e *BlobError) Error() string {
	return "workspace: content of " + strconvQuote(e.Path) + " (" + e.Ref + "): " + e.Err.Error()
}

func (e *BlobError) Unwrap() error { return e.Err }

// isBinary is git's test: a NUL in the first 8000 bytes.
func isBinary(s string) bool {
	return strings.IndexByte(s[:min(len(s), 8000)], 0) >= 0
}

// countLines counts lines, a last one without a newline included.
func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// label names a side of a unified diff as git does: prefix and path,
// quoted when the path is not plain printable UTF-8; /dev/null for none.
func label(prefix string, e *Entry) string {
	if e == nil {
		return "/dev/null"
	}
	s := prefix + e.Path
	plain := utf8.ValidString(s)
	for _, r := range s {
		if !plain || r == '"' || r == '\\' || !unicode.IsPrint(r) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return strconv.Quote(s)
}

var _ = bytes.Equal
