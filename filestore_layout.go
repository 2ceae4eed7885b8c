package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentsession/session/internal/names"
)

// The seed layout, <root>/--<cwd>--/<timestamp>_<id>.jsonl: the names of
// directories and files, the scan that finds the sessions of a root,
// directories made durable, and opening a session file by its path
// (OpenPath, OpenFile), inside a store's tree or outside any.

const (
	archiveDir  = ".archive"
	blobDirName = ".blobs" // the default BlobDir, under the root
	fileExt     = ".jsonl"
)

// fileName returns the seed-layout file name of a session: its creation
// time and its id's stem (names.FileStem).
func (s *FileStore) fileName(h Header) string {
	if s.flat {
		return names.FileStem(h.ID) + fileExt
	}
	ts := h.Timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	stamp := strings.NewReplacer(":", "-", ".", "-").Replace(formatTime(ts))
	return stamp + "_" + names.FileStem(h.ID) + fileExt
}

// Layout is how a FileStore lays its session files out under its root.
type Layout int

const (
	// LayoutSeed is pi's and oh-my-pi's layout, the default: a directory
	// per working directory, <root>/--<cwd>--/<created>_<id>.jsonl.
	LayoutSeed Layout = iota
	// LayoutFlat keeps every session at <root>/<id>.jsonl (the id
	// escaped, as in the seed layout), archived ones at
	// <root>/.archive/<id>.jsonl: Dive's layout, for hosts without a
	// working directory. A file there that is not a session of this
	// format (Dive's own) is reported (ErrForeignFormat), never changed.
	LayoutFlat
)

// stemOfFile returns the id stem of a session file name, "" if the name
// is not one: "<created>_<stem>.jsonl" in the seed layout,
// "<stem>.jsonl" in the flat one.
func stemOfFile(name string, flat bool) string {
	if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, fileExt) {
		return ""
	}
	base := strings.TrimSuffix(name, fileExt)
	if flat {
		return base
	}
	_, stem, ok := strings.Cut(base, "_")
	if !ok {
		return ""
	}
	return stem
}

// idOfFile returns the session id in a session file name, or "". A long
// id's name (a hashed stem) does not hold the id: idOfRel reads it from
// the header.
func idOfFile(name string, flat bool) string {
	id, _, ok := names.ParseStem(stemOfFile(name, flat))
	if !ok {
		return ""
	}
	return id
}

// fileHolds reports whether a file of that name may hold session id.
func fileHolds(name, id string, flat bool) bool {
	stem := stemOfFile(name, flat)
	return stem != "" && stem == names.FileStem(id)
}

// isSessionFile reports whether name is a session file name.
func isSessionFile(name string, flat bool) bool {
	_, _, ok := names.ParseStem(stemOfFile(name, flat))
	return ok
}

// isOwnFile is isSessionFile in the store's layout.
func (s *FileStore) isOwnFile(name string) bool { return isSessionFile(name, s.flat) }

// idOfRel returns the id of the session file rel: from its name, or for
// a long id's, from its header (checked against the name); "" if it is
// not a session file.
func (s *FileStore) idOfRel(rel string) string {
	base := filepath.Base(rel)
	id, hashed, ok := names.ParseStem(stemOfFile(base, s.flat))
	if !ok || !hashed {
		return id
	}
	f, err := openRegular(s.r, rel, os.O_RDONLY)
	if err != nil {
		return ""
	}
	defer f.Close()
	h, err := NewDecoder(f, &ReadOptions{Limits: s.opts.Limits}).Header()
	if err != nil || ValidateID(h.ID) != nil || !fileHolds(base, h.ID, s.flat) {
		return ""
	}
	return h.ID
}

// ownTemp reports whether name is a temporary file writeAtomic made for
// a file whose name ours accepts: "." + that name + ".tmp-" + 1 to 13
// base-36 digits. Only such files are ever removed as leftovers, so that
// a file of the user's that merely looks like one is never touched.
func ownTemp(name string, ours func(base string) bool) bool {
	i := strings.LastIndex(name, ".tmp-")
	if i < 2 || name[0] != '.' {
		return false
	}
	suffix := name[i+len(".tmp-"):]
	if len(suffix) < 1 || len(suffix) > 13 {
		return false
	}
	for j := 0; j < len(suffix); j++ {
		if c := suffix[j]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return ours(name[1:i])
}

func isIndex(base string) bool { return base == indexName }

// testHookScanGap, when set, runs in a scan between its reading of the
// live sessions and of the archived ones, for tests.
var testHookScanGap func()

// scan reads the directory tree and refreshes the id → file map. With
// clean, and always the first time, it also removes temporary files left
// by interrupted rewrites.
// It reads under the moves lock (whileNoMove): a session being moved is
// found in one place or the other. Callers must not hold s.mu.
func (s *FileStore) scan(clean bool) error {
	return s.whileNoMove(func() error { return s.scanFiles(clean) })
}

// treeScans counts scans, for tests.
var treeScans atomic.Int64

// scanFiles is scan, for callers that hold the moves lock.
func (s *FileStore) scanFiles(clean bool) error {
	treeScans.Add(1)
	s.mu.Lock()
	known := len(s.paths) // about as many as the last scan found: the map grown once
	clean = clean || !s.scanned
	s.mu.Unlock()
	found, unread := make(map[string]string, known), map[string]string{}
	for _, top := range []string{".", archiveDir} {
		if top == archiveDir && testHookScanGap != nil {
			testHookScanGap()
		}
		dirs, err := readDirNames(s.r, top)
		if err != nil {
			if top == archiveDir {
				// No archive, or one the store cannot read (a symlink out
				// of the root, say): its sessions are not listed, and
				// every other session opens as before.
				continue
			}
			return fmt.Errorf("session: file store: %w", err)
		}
		for _, d := range dirs {
			if clean && top == "." && ownTemp(d, isIndex) {
				removeStaleTemp(s.r, d) // of the listing index
				continue
			}
			if s.flat {
				if clean && ownTemp(d, s.isOwnFile) {
					removeStaleTemp(s.r, filepath.Join(top, d))
					continue
				}
				s.scanFile(found, unread, top, filepath.Join(top, d), clean)
				continue
			}
			if !strings.HasPrefix(d, "--") || !strings.HasSuffix(d, "--") || len(d) < 4 {
				continue
			}
			dir := filepath.Join(top, d)
			names, err := readDirNames(s.r, dir)
			if err != nil {
				continue // not a directory, or gone
			}
			for _, n := range names {
				if clean && ownTemp(n, s.isOwnFile) {
					removeStaleTemp(s.r, filepath.Join(dir, n))
					continue
				}
				// dir is clean and n a name: Join would only clean again.
				s.scanFile(found, unread, top, dir+string(filepath.Separator)+n, clean)
			}
		}
	}
	s.mu.Lock()
	for id, rel := range s.paths {
		if filepath.IsAbs(rel) {
			found[id] = rel // opened by path, outside the tree
		}
	}
	s.paths, s.unread = found, unread
	s.scanned = true
	s.mu.Unlock()
	return nil
}

// ensureScanned reads the tree if the store has not yet: for callers
// that need every session's file known, not one looked up (file scans
// when it misses).
func (s *FileStore) ensureScanned() error {
	s.mu.Lock()
	done := s.scanned || s.fileOnly
	s.mu.Unlock()
	if done {
		return nil
	}
	return s.scan(true)
}

// scanFile takes the file rel, under top (the root or the archive), into
// found by its session's id; a long id's whose header cannot be read,
// into unread by its stem. A live file wins over an archived one; with
// clean, an archived name of the very file a live name has is removed
// (see dropCrashLink).
func (s *FileStore) scanFile(found, unread map[string]string, top, rel string, clean bool) {
	id := s.idOfRel(rel)
	if id == "" {
		if stem := stemOfFile(filepath.Base(rel), s.flat); strings.Contains(stem, "~") && s.isOwnFile(filepath.Base(rel)) {
			if _, dup := unread[stem]; !dup || top == "." {
				unread[stem] = rel
			}
		}
		return
	}
	prev, dup := found[id]
	if dup && top == archiveDir && clean {
		s.dropCrashLink(prev, rel)
	}
	if !dup || top == "." {
		found[id] = rel
	}
}

// dropCrashLink removes the archived name rel of the file that the live
// name live has too. Moving a file into the archive or out of it is one
// rename across two directories; a power loss before both directories
// were synced can leave the file under both names (never on a running
// system, where a rename is atomic). The move had not returned, so
// either place is right: the live one is kept, as scanFile prefers it.
// Two different files are both left alone.
func (s *FileStore) dropCrashLink(live, rel string) {
	a, err := s.r.Lstat(live)
	if err != nil {
		return
	}
	b, err := s.r.Lstat(rel)
	if err != nil || !os.SameFile(a, b) {
		return
	}
	if removeIn(s.r, rel) == nil {
		_ = syncDir(s.r, filepath.Dir(rel))
	}
}

func readDirNames(r *os.Root, dir string) ([]string, error) {
	d, err := r.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// removeStaleTemp removes a rewrite's temporary file whose writer is gone:
// a live writer holds a lock on it, and a file younger than a minute may
// belong to a writer that has not taken the lock yet.
func removeStaleTemp(r *os.Root, rel string) {
	f, err := openRegular(r, rel, os.O_RDWR)
	if err != nil {
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || time.Since(fi.ModTime()) < time.Minute || !tryLockFile(f) {
		return
	}
	_ = removeIn(r, rel)
}

// Path returns the file that holds session id (ErrNotFound if the store
// has no such session). Archiving and restoring move it.
func (s *FileStore) Path(id string) (string, error) {
	fsess, err := s.file(id)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.path(fsess.rel), nil
}

// path returns the file of a session for messages.
func (s *FileStore) path(rel string) string {
	if filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(s.root, rel)
}

// openRel opens a session file read-write through os.Root.
func (s *FileStore) openRel(rel string) (*os.File, error) {
	if filepath.IsAbs(rel) {
		r, err := os.OpenRoot(filepath.Dir(rel))
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return openRegular(r, filepath.Base(rel), os.O_RDWR)
	}
	return openRegular(s.r, rel, os.O_RDWR)
}

// errNotRegular is the reason a FIFO, device or directory at a session
// file's name is not read: a read of a FIFO would wait for a writer
// that never comes.
var errNotRegular = errors.New("not a regular file")

// openRegularPath is openRegular of a path the caller named (a link
// followed, as the caller's own path).
func openRegularPath(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|oNonblock, 0o600)
	if err != nil {
		return nil, err
	}
	return regularOnly(f, path)
}

// openRegular opens the regular file rel below r, without waiting on a
// FIFO (refused, as any file that is not regular, with errNotRegular).
func openRegular(r *os.Root, rel string, flag int) (*os.File, error) {
	f, err := r.OpenFile(rel, flag|oNonblock, 0o600) // the mode of a file O_CREATE makes
	if err != nil {
		return nil, err
	}
	return regularOnly(f, rel)
}

// regularOnly returns f if it is a regular file, else closes it.
func regularOnly(f *os.File, name string) (*os.File, error) {
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: errNotRegular}
	}
	return f, nil
}

// mkdirAll makes the directory path and its missing parents, each mode
// 0700 whatever the umask (a restrictive umask would otherwise make a
// parent the store cannot create the next level in), each one's parent
// synced after it. With durable, the entry of path and its parents' are
// made durable whoever made them (see entryDurable): what a call that
// promises durability rests on. OpenFileStore asks for nothing more than
// the directory: the calls that make promises make sure of the root then.
func mkdirAll(path string, durable bool) error { return mkdirAllUnder(path, durable, path) }

// mkdirAllUnder is mkdirAll, the entries made durable up to top's.
func mkdirAllUnder(path string, durable bool, top string) error {
	if fi, err := os.Stat(path); err == nil {
		if !fi.IsDir() {
			return &os.PathError{Op: "mkdir", Path: path, Err: syscall.ENOTDIR}
		}
		return durableIf(durable, path, top) // there, but perhaps not durable
	}
	if parent := filepath.Dir(path); parent != path {
		if err := mkdirAllUnder(parent, durable, top); err != nil {
			return err
		}
	}
	if err := mkdirOS(path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return durableIf(durable, path, top) // made by another meanwhile
		}
		return err
	}
	if !durable {
		return nil
	}
	return madeDurable(path, top)
}

// durableIf is entryDurable(dir, top) when durable is set.
func durableIf(durable bool, dir, top string) error {
	if !durable {
		return nil
	}
	return entryDurable(dir, top)
}

// mkdirRoot is mkdirAll for a path inside r, always durable: its callers
// (Create, Archive) promise what they did under every policy.
func mkdirRoot(r *os.Root, path string) error {
	abs := filepath.Join(r.Name(), path)
	if fi, err := r.Stat(path); err == nil {
		if !fi.IsDir() {
			return &os.PathError{Op: "mkdir", Path: path, Err: syscall.ENOTDIR}
		}
		return entryDurable(abs, r.Name())
	}
	if parent := filepath.Dir(path); parent != "." && parent != path {
		if err := mkdirRoot(r, parent); err != nil {
			return err
		}
	}
	if err := mkdirIn(r, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return entryDurable(abs, r.Name())
		}
		return err
	}
	return madeDurable(abs, r.Name())
}

// OpenPath opens the session in the file at path, which may lie outside
// the store's tree: the session is then known to this store by its id
// until it is closed.
func (s *FileStore) OpenPath(ctx context.Context, path string) (*Session, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	rel := abs
	if r, err := filepath.Rel(s.root, abs); err == nil && filepath.IsLocal(r) {
		rel = r
	}
	h, err := readHeader(abs, s.opts.Limits)
	if err != nil {
		return nil, err
	}
	if err := ValidateID(h.ID); err != nil {
		return nil, &CorruptError{Path: abs, Line: 1, Err: err}
	}
	if base := filepath.Base(abs); isSessionFile(base, s.flat) && !fileHolds(base, h.ID, s.flat) {
		return nil, &CorruptError{Path: abs, Line: 1, Err: fmt.Errorf("header names session %q, the file name another (%s)", h.ID, base)}
	}
	if err := s.ensureScanned(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if old, ok := s.paths[h.ID]; ok && old != rel {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: session %s is already in %s", ErrExists, h.ID, s.path(old))
	}
	s.paths[h.ID] = rel
	s.mu.Unlock()
	return Open(ctx, s, h.ID)
}

// readHeader reads the header of the log at path as every reader does,
// with the same limits (a header line of any size the writer accepts).
func readHeader(path string, lim Limits) (Header, error) {
	f, err := openRegularPath(path, os.O_RDONLY)
	if err != nil {
		return Header{}, fmt.Errorf("session: open %s: %w", path, err)
	}
	defer f.Close()
	h, err := NewDecoder(f, &ReadOptions{Limits: lim}).Header()
	if err != nil {
		return Header{}, WithPath(err, path)
	}
	return h, nil
}

// OpenFile opens the session file at path, with opts. A file in the seed
// layout (<root>/--<cwd>--/<file>, archived ones too) is opened on the
// FileStore of that root. Any other file is opened on a store that holds
// it alone: it writes nothing beside the file but the file itself (and
// the temporary file of a rewrite, renamed over it), removes nothing,
// keeps images inline unless opts.BlobDir is set, and creates no
// session. A file of format version 1 or 2 is migrated as it is opened,
// as pi does: rewritten in version 3, atomically, with its mode (see
// MigrateFile to keep a backup first). Close the session, then the
// returned store, when done.
func OpenFile(ctx context.Context, path string, opts *FileStoreOptions) (*Session, *FileStore, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, nil, fmt.Errorf("session: open %s: %w", abs, err)
	}
	var store *FileStore
	if root, ok := layoutRoot(abs); ok {
		store, err = OpenFileStore(root, opts)
	} else {
		store, err = openFileOnly(filepath.Dir(abs), opts)
	}
	if err != nil {
		return nil, nil, err
	}
	sess, err := store.OpenPath(ctx, abs)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return sess, store, nil
}

// layoutRoot returns the root of the seed layout path is in:
// <root>/--cwd--/file or <root>/.archive/--cwd--/file.
func layoutRoot(path string) (string, bool) {
	dir := filepath.Dir(path)
	base := filepath.Base(dir)
	if len(base) < 4 || !strings.HasPrefix(base, "--") || !strings.HasSuffix(base, "--") {
		return "", false
	}
	root := filepath.Dir(dir)
	if filepath.Base(root) == archiveDir {
		root = filepath.Dir(root)
	}
	return root, true
}

// openFileOnly opens the store OpenFile uses for files outside any
// store's layout (see FileStore.fileOnly), on their directory.
func openFileOnly(dir string, opts *FileStoreOptions) (*FileStore, error) {
	o := FileStoreOptions{}
	if opts != nil {
		o = *opts
	}
	if o.BlobDir == "" {
		// References are still looked up where the seed layout keeps
		// blobs, but nothing is put there.
		o.BlobDir = filepath.Join(filepath.Dir(filepath.Dir(dir)), "blobs")
		o.MinBlobBytes = -1
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("session: file store: %w", err)
	}
	s := newFileStore(dir, r, &o)
	s.fileOnly, s.indexLoaded = true, true
	return s, nil
}
