package importer

// The one rule for what an import reads, used by every format.
//
// An import reads the file or the directory the user named, and nothing
// outside it. Every file a reader opens (the session's file, the files
// its agent keeps beside it, a directory walked) goes through a root:
//
//   - The root is the directory the user named, or, for a file, the
//     directory that holds it (where Claude Code keeps a session's
//     subagents; a format may widen it to the tree its agent writes, as
//     OpenCode's storage directory, never past what the file's own path
//     names). A named file or directory that is a symbolic link is
//     followed once: the user named it.
//   - Below the root nothing is followed: a symbolic link, at any level,
//     is reported and not read (ErrSymlink); so are FIFOs, sockets and
//     devices (ErrNotRegular), which are opened, if at all, without
//     blocking. The opens go through os.Root, which keeps them inside the
//     root even if the tree changes while it is read.
//   - A name that comes from a file's contents (a session id, an agent
//     id) becomes a path element only when it is one plain name (elem):
//     not empty, not "." or "..", no separator, no NUL. Otherwise the
//     side files it would name are not looked for.
//   - Every open states the most it reads; a larger file is refused
//     (session.ErrTooLarge) before any of it is read.
//
// The root remembers the files its readers opened, so that a directory
// import can name every file it did not import (Report.NotImported).

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	session "github.com/agentsession/session"
)

// ErrOutsideRoot is the error of a path that would leave the import root:
// a name from a file's contents holding "..", a separator or an absolute
// path.
var ErrOutsideRoot = errors.New("importer: outside the import root")

// ErrSymlink is the reason a symbolic link below the import root is not
// read: an import never follows one out of what the user named, nor
// within it.
var ErrSymlink = errors.New("importer: a symbolic link, not followed")

// ErrNotRegular is the reason a FIFO, socket, device or other special
// file is not read.
var ErrNotRegular = errors.New("importer: not a regular file")

// ErrTooDeep is the reason a directory more than MaxDepth levels below
// the import root is not read.
var ErrTooDeep = errors.New("importer: a directory too deep below the import root, not read")

// MaxDepth is how many directory levels below the import root a walk
// descends (the deepest layout an agent writes, OpenCode's storage tree,
// uses four).
const MaxDepth = 32

// root is a directory an import reads below, and nothing else.
type root struct {
	r   *os.Root
	fd  *os.File // the root directory, for the opens element by element (root_unix.go)
	dir string   // its path, for reports

	mu     sync.Mutex
	opened map[string]bool // the files readers opened (not only sniffed), by rel
	memo   map[string]any  // what a reader worked out once per import (memoize)
}

func openRoot(dir string) (*root, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	fd, err := os.Open(dir)
	if err != nil {
		r.Close()
		return nil, err
	}
	return &root{r: r, fd: fd, dir: dir, opened: map[string]bool{}}, nil
}

func (rt *root) close() error { return errors.Join(rt.r.Close(), rt.fd.Close()) }

// path is rel's path, for reports.
func (rt *root) path(rel string) string { return filepath.Join(rt.dir, rel) }

// elem returns name when it can be one element of a path below the root:
// a plain name from a file's contents, not a way out of it.
func elem(name string) (string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") ||
		!filepath.IsLocal(name) || filepath.VolumeName(name) != "" {
		return "", fmt.Errorf("%w: %q is not a plain name", ErrOutsideRoot, name)
	}
	return name, nil
}

// check returns rel's file information when rel is a path below the root
// none of whose elements is a symbolic link; the last must be a regular
// file (or, with dir, a directory).
func (rt *root) check(rel string, dir bool) (fs.FileInfo, error) {
	if !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("%w: %s", ErrOutsideRoot, rel)
	}
	rel = filepath.Clean(rel)
	parts := strings.Split(filepath.ToSlash(rel), "/")
	var st fs.FileInfo
	for i := range parts {
		p := filepath.FromSlash(strings.Join(parts[:i+1], "/"))
		var err error
		if st, err = rt.r.Lstat(p); err != nil {
			return nil, err
		}
		last := i == len(parts)-1
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			return nil, fmt.Errorf("%s: %w", rt.path(p), ErrSymlink)
		case !last && !st.IsDir():
			return nil, fmt.Errorf("%s: %w", rt.path(p), fs.ErrNotExist)
		}
	}
	switch {
	case dir && !st.IsDir():
		return nil, fmt.Errorf("%s: not a directory: %w", rt.path(rel), fs.ErrNotExist)
	case !dir && !st.Mode().IsRegular():
		return nil, fmt.Errorf("%s: %w (%s)", rt.path(rel), ErrNotRegular, kindOf(st.Mode()))
	}
	return st, nil
}

func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file"
}

// hookAfterCheck, set by tests, runs between the check of a path and its
// open: where a link swapped in would be followed if the open trusted
// the check.
var hookAfterCheck func(rel string)

// open opens the regular file rel for reading, refusing it when it is
// larger than max bytes. The file is noted as read unless sniff.
func (rt *root) open(rel string, max int64, sniff bool) (*os.File, error) {
	if _, err := rt.check(rel, false); err != nil {
		return nil, err
	}
	if hookAfterCheck != nil {
		hookAfterCheck(rel)
	}
	// Element by element, following no link (root_unix.go), and without
	// blocking: should the file become a FIFO after the check, the open
	// does not wait for a writer (the check below refuses it).
	f, err := rt.openNoFollow(rel)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w (%s)", rt.path(rel), ErrNotRegular, kindOf(st.Mode()))
	}
	if err == nil && max > 0 && st.Size() > max {
		err = fmt.Errorf("%s: %w (%d bytes, the cap is %d)", rt.path(rel), session.ErrTooLarge, st.Size(), max)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	if !sniff {
		rt.mu.Lock()
		rt.opened[filepath.Clean(rel)] = true
		rt.mu.Unlock()
	}
	return f, nil
}

// readFile reads the regular file rel whole, refusing one over max bytes
// (which a file growing as it is read cannot pass either).
func (rt *root) readFile(rel string, max int64) ([]byte, error) {
	f, err := rt.open(rel, max, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("%s: %w (it grew past the cap of %d bytes as it was read)", rt.path(rel), session.ErrTooLarge, max)
	}
	return b, err
}

// head reads at most n bytes of the start of rel, to tell its format.
func (rt *root) head(rel string, n int) ([]byte, error) {
	f, err := rt.open(rel, 0, true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readUpTo(f, n)
}

func readUpTo(f io.Reader, n int) ([]byte, error) {
	buf := make([]byte, n)
	k, err := io.ReadFull(f, buf)
	if k == 0 && err == io.EOF {
		return nil, fmt.Errorf("%w (the file is empty)", ErrUnknownFormat)
	}
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	return buf[:k], nil
}

// isFile reports whether rel is a regular file below the root, reached
// through no symbolic link.
func (rt *root) isFile(rel string) bool {
	_, err := rt.check(rel, false)
	return err == nil
}

// readDir lists the directory rel (sorted by name); one that is a
// symbolic link, or under one, is not read.
func (rt *root) readDir(rel string) ([]fs.DirEntry, error) {
	if rel != "." {
		if _, err := rt.check(rel, true); err != nil {
			return nil, err
		}
	}
	return fs.ReadDir(rt.r.FS(), filepath.ToSlash(filepath.Clean(rel)))
}

// walk visits the tree below rel in lexical order (fs.WalkDir over the
// root: a symbolic link is visited, never descended into). fn gets the
// rel path of each entry. A directory below rel that cannot be read, or
// lies more than MaxDepth levels below the root, is passed to skip with
// the reason and not descended into: one unreadable directory does not
// end the walk. An error about rel itself ends it.
func (rt *root) walk(rel string, fn func(rel string, d fs.DirEntry) error, skip func(rel string, err error)) error {
	rel = filepath.Clean(rel)
	if rel != "." {
		if _, err := rt.check(rel, true); err != nil {
			return err
		}
	}
	top := filepath.ToSlash(rel)
	return fs.WalkDir(rt.r.FS(), top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == top || d == nil || !d.IsDir() {
				return err
			}
			skip(filepath.FromSlash(p), err)
			return fs.SkipDir
		}
		if d.IsDir() && p != "." && strings.Count(p, "/")+1 > MaxDepth {
			skip(filepath.FromSlash(p), ErrTooDeep)
			return fs.SkipDir
		}
		return fn(filepath.FromSlash(p), d)
	})
}

// memoize returns what make gives for key, calling it once per root.
func (rt *root) memoize(key string, make func() any) any {
	rt.mu.Lock()
	v, ok := rt.memo[key]
	rt.mu.Unlock()
	if ok {
		return v
	}
	v = make()
	rt.mu.Lock()
	if rt.memo == nil {
		rt.memo = map[string]any{}
	}
	rt.memo[key] = v
	rt.mu.Unlock()
	return v
}

// read reports whether a reader opened rel.
func (rt *root) read(rel string) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.opened[filepath.Clean(rel)]
}

// readList is the files readers opened, sorted.
func (rt *root) readList() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := make([]string, 0, len(rt.opened))
	for p := range rt.opened {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
