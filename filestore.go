package session

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"
)

// SyncPolicy says when a FileStore writes appends out and makes them
// durable with fdatasync.
//
// Appends are written whole lines at a time under an exclusive file lock
// that the store keeps for a moment after each append (the write lease:
// a millisecond after the last append of a burst, at most 10 ms), so that
// a burst of appends pays for locking once. Other processes wait for the
// lease before they read or write, so they never see a partial append.
//
// With SyncOnFlush and SyncEveryAppend an append is written before it
// returns: a crash of the process loses nothing that returned. SyncNever,
// the fast mode for bulk work, gathers appends in memory while the lease
// is held and writes them when it ends (and at Flush and Close).
//
// What a crash can lose, by policy:
//
//	                 process crash               machine crash
//	SyncOnFlush      nothing that returned       appends since the last Flush
//	SyncEveryAppend  nothing that returned       nothing that returned
//	SyncNever        the last ~10 ms of appends  the last few seconds
//
// A write or sync that fails (a full disk, a file size limit, an I/O
// error) is rolled back, the file cut to its length before the writes
// that failed (for a sync, the writes since the last sync, unless
// another writer's lines follow them; see syncOwn), and the error is
// latched: it wraps ErrWriteFailed, and every later call on the
// session through this store returns it (Append, Load, LoadTail,
// Rewrite, Flush; Session.Close returns it and still lets the file go),
// for as long as the store is open, since appends that had returned may
// be lost with it (with SyncNever, those gathered and not yet written).
// Other sessions of the store are not affected. To go on, close the
// Session handles on the session and the store, open a new FileStore and
// open the session again: it reads what the file holds.
type SyncPolicy int

const (
	// SyncOnFlush, the default, writes each append before it returns and
	// syncs at Session.Flush (call it at the end of each turn) and at
	// Close: a machine crash loses at most the turn in progress.
	SyncOnFlush SyncPolicy = iota
	// SyncNever never syncs and gathers appends in memory for up to
	// 10 ms before writing them: fastest, for bulk work; a crash of the
	// process may lose the last appends, a crash of the machine the last
	// few seconds.
	SyncNever
	// SyncEveryAppend syncs before each append returns: an append that
	// returned survives a machine crash.
	SyncEveryAppend
)

func (p SyncPolicy) String() string {
	switch p {
	case SyncOnFlush:
		return "on-flush"
	case SyncNever:
		return "never"
	case SyncEveryAppend:
		return "every-append"
	}
	return "SyncPolicy(" + strconv.Itoa(int(p)) + ")"
}

// FileStoreOptions configures a FileStore. The zero value (or nil) gives
// the defaults documented on each field.
type FileStoreOptions struct {
	// Sync is when appends are made durable; default SyncOnFlush.
	Sync SyncPolicy
	// Strict makes Load fail with ErrCorrupt on a malformed line instead
	// of skipping and counting it.
	Strict bool
	// MaxStringChars bounds every string in an appended entry; longer ones
	// are cut with a notice. Default 500,000; negative means no limit.
	MaxStringChars int
	// BlobDir holds the content-addressed blobs (large images). Default:
	// "blobs" beside the root, as in <root>/../blobs.
	BlobDir string
	// MinBlobBytes is the size of base64 image data from which it is
	// stored once as a blob instead of inline. Default 1024; negative
	// keeps every image inline.
	MinBlobBytes int
	// PlainBlobs writes blobs uncompressed, as oh-my-pi does, so that
	// oh-my-pi resolves the blobs of sessions written here. Default:
	// zstd-compressed. Both forms are read.
	PlainBlobs bool
	// MaxBlobBytes bounds the decoded size of one blob; default
	// DefaultMaxBlobBytes.
	MaxBlobBytes int64
	// Limits bound the lines and sessions the store reads and writes
	// (see Limits); the zero value is the defaults.
	Limits Limits
	// MaxOpenFiles bounds how many session files the store keeps open;
	// beyond it the least recently used are closed (and opened again when
	// used). Default 64. A Session's Close closes its file at once.
	MaxOpenFiles int
}

// DefaultMaxOpenFiles is the default FileStoreOptions.MaxOpenFiles.
const DefaultMaxOpenFiles = 64

// maxSessions bounds how many sessions a store keeps what it knows of
// (their ids among it); beyond it, those with no open file are
// forgotten, to be read again if used.
const maxSessions = 4096

// DefaultMaxStringChars is the default FileStoreOptions.MaxStringChars.
const DefaultMaxStringChars = 500_000

// DefaultMinBlobBytes is the default FileStoreOptions.MinBlobBytes.
const DefaultMinBlobBytes = 1024

// FileStore keeps each session in one JSONL file in the seed format
// (version 3), in the seed layout:
//
//	<root>/--<cwd>--/<timestamp>_<id>.jsonl
//
// where <cwd> is the working directory without its leading separator and
// with '/', '\' and ':' turned into '-', and <timestamp> is the creation
// time in ISO 8601 with ':' and '.' turned into '-'. The pi and oh-my-pi
// agents read and write the same tree. Archived sessions move under
// <root>/.archive with the same layout.
//
// Several processes may use the same root: every append, read and
// rewrite holds an advisory lock on the file (flock), an append first
// learns what others appended, and a handle notices when another process
// replaced the file. See the package documentation for what a crash can
// and cannot lose.
//
// A FileStore is safe for concurrent use. Close it when done.
type FileStore struct {
	root    string // absolute
	r       *os.Root
	opts    FileStoreOptions
	limits  sizeLimits
	lim     Limits // opts.Limits with defaults
	blobs   *BlobDir
	maxOpen int

	createMu sync.Mutex
	mu       sync.Mutex
	paths    map[string]string // session id -> file, relative to root
	sessions map[string]*fileSession
	index    map[string]*indexEntry // rel path -> listing cache
	// The index was changed since it was saved; it was loaded.
	indexDirty, indexLoaded bool
	openFiles               int    // sessions whose file is open
	clock                   uint64 // counts uses, for least-recently-used
	last                    time.Time
	closed                  bool
	// fileOnly: a store OpenFile made for a file outside any store's
	// layout. It holds the files opened by path and nothing else: no
	// scan of the directory, no leftovers removed, no listing index or
	// blob written, no session created.
	fileOnly bool
	// wholeReads counts the whole-file reads, for the tests that check
	// that catching up does without them.
	wholeReads atomic.Int64
}

var (
	_ Store     = (*FileStore)(nil)
	_ Flusher   = (*FileStore)(nil)
	_ BlobStore = (*FileStore)(nil)
)

// fileSession is what the store knows of one session file between calls.
type fileSession struct {
	mu     sync.Mutex
	id     string
	used   uint64   // store's clock at the last use; guarded by the store's mu
	open   bool     // f is open; guarded by the store's mu
	rel    string   // path relative to root
	f      *os.File // open read-write; nil until first used
	ino    uint64
	size   int64 // end of the last whole line written: where pending goes
	cut    bool  // bytes after size are a torn line to cut off first
	needNL bool  // the last line is whole but lacks its newline
	// pending holds appended lines not yet written (SyncNever gathers
	// them): only while the write lease is held, so no other process can
	// write or read in between. They are written when the lease ends, at
	// Flush and Close, and once maxPending bytes have gathered.
	pending []byte
	// flight is the write of earlier pending lines under way in the
	// background, so that encoding the next appends and writing the
	// previous ones overlap; pending lines go after it.
	flight *flight
	spare  []byte // the buffer of the last flight, for reuse
	// The write lease: after an append the exclusive file lock is kept
	// for a moment, so a burst of appends pays for locking once.
	locked   bool // this store holds the exclusive lock on f
	lockedAt time.Time
	lastUse  time.Time
	timer    *time.Timer
	armed    bool // timer is set to fire
	last     string
	ids      idSet
	count    int
	title    string
	header   Header
	loaded   bool
	// dirtyFrom is where this store's writes since its last sync start
	// in the file (-1: none); othersAfter, that another writer's lines
	// came after them. A failed sync takes those writes back when no
	// other writer's follow them (see syncOwn).
	dirtyFrom   int64
	othersAfter bool
	err         error // latched persistence error
	// What the listing shows is out of date since an append at updated.
	changed bool
	updated time.Time // guarded by the store's mu too
	// lines counts the file's lines up to where the next one goes (size
	// and what is pending), and marks where the latest entries end, for
	// LoadTail.
	lines int
	marks marks
}

// OpenFileStore opens (creating it, mode 0700, if needed) the session
// tree at root. Leftover temporary files of interrupted rewrites are
// removed.
func OpenFileStore(root string, opts *FileStoreOptions) (*FileStore, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("session: file store: %w", err)
	}
	if err := mkdirAll(abs); err != nil {
		return nil, fmt.Errorf("session: file store: %w", err)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("session: file store: %w", err)
	}
	s := newFileStore(abs, r, opts)
	if err := s.scan(true); err != nil {
		r.Close()
		return nil, err
	}
	s.blobs.removeStaleTemps()
	return s, nil
}

// parser returns a line parser with the store's limits, strict if the
// store is and strict is set.
func (s *FileStore) parser(strict bool) logParser {
	return (&ReadOptions{Strict: strict && s.opts.Strict, Limits: s.opts.Limits}).parser()
}

// newFileStore makes the store of root (absolute, open as r) with opts.
func newFileStore(root string, r *os.Root, opts *FileStoreOptions) *FileStore {
	s := &FileStore{
		root: root, r: r,
		limits: sizeLimits{maxChars: DefaultMaxStringChars, minBlob: DefaultMinBlobBytes}, maxOpen: DefaultMaxOpenFiles,
		paths: map[string]string{}, sessions: map[string]*fileSession{}, index: map[string]*indexEntry{},
	}
	if opts != nil {
		s.opts = *opts
		if opts.MaxStringChars != 0 {
			s.limits.maxChars = opts.MaxStringChars
		}
		if opts.MinBlobBytes != 0 {
			s.limits.minBlob = opts.MinBlobBytes
		}
		if opts.MaxOpenFiles > 0 {
			s.maxOpen = opts.MaxOpenFiles
		}
	}
	if s.opts.BlobDir == "" {
		s.opts.BlobDir = filepath.Join(filepath.Dir(root), "blobs")
	}
	s.blobs = OpenBlobDir(s.opts.BlobDir, &BlobDirOptions{
		Plain: s.opts.PlainBlobs, MaxBytes: s.opts.MaxBlobBytes,
		// A blob must be durable before the line that refers to it.
		Sync: s.opts.Sync != SyncNever,
	})
	s.limits.blobs = s.blobs
	s.lim = s.opts.Limits.withDefaults()
	return s
}

// mkdirAll makes the directory path and its missing parents, each mode
// 0700 whatever the umask (a restrictive umask would otherwise make a
// parent the store cannot create the next level in).
func mkdirAll(path string) error {
	if fi, err := os.Stat(path); err == nil {
		if !fi.IsDir() {
			return &os.PathError{Op: "mkdir", Path: path, Err: syscall.ENOTDIR}
		}
		return nil
	}
	if parent := filepath.Dir(path); parent != path {
		if err := mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := mkdirOS(path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// mkdirRoot is mkdirAll for a path inside r.
func mkdirRoot(r *os.Root, path string) error {
	if fi, err := r.Stat(path); err == nil {
		if !fi.IsDir() {
			return &os.PathError{Op: "mkdir", Path: path, Err: syscall.ENOTDIR}
		}
		return nil
	}
	if parent := filepath.Dir(path); parent != "." && parent != path {
		if err := mkdirRoot(r, parent); err != nil {
			return err
		}
	}
	if err := mkdirIn(r, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// Root returns the store's root directory, as an absolute path.
func (s *FileStore) Root() string { return s.root }

// Blobs returns the store's blob directory (FileStoreOptions.BlobDir).
func (s *FileStore) Blobs() *BlobDir { return s.blobs }

// PutBlob implements BlobStore with the store's blob directory.
func (s *FileStore) PutBlob(ctx context.Context, data []byte) (string, error) {
	return s.blobs.PutBlob(ctx, data)
}

// GetBlob implements BlobStore with the store's blob directory.
func (s *FileStore) GetBlob(ctx context.Context, ref string) ([]byte, error) {
	return s.blobs.GetBlob(ctx, ref)
}

// Close closes the files the store holds open. Sessions using it fail
// with ErrClosed afterwards.
func (s *FileStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	sessions := make([]*fileSession, 0, len(s.sessions))
	for _, fsess := range s.sessions {
		sessions = append(sessions, fsess)
	}
	s.mu.Unlock() // lock order: a session's mu before the store's
	var errs []error
	for _, fsess := range sessions {
		fsess.mu.Lock()
		if fsess.timer != nil {
			fsess.timer.Stop()
		}
		if fsess.f != nil {
			errs = append(errs, s.syncAndRelease(context.Background(), fsess))
			errs = append(errs, fsess.f.Close())
			fsess.f, fsess.locked = nil, false
		}
		s.refreshIndex(fsess)
		fsess.err = ErrClosed
		fsess.mu.Unlock()
	}
	s.saveIndex()
	errs = append(errs, s.r.Close())
	s.mu.Lock()
	return errors.Join(errs...)
}

// tick returns a time later than any handed out before.
func (s *FileStore) tick() time.Time {
	t := time.Now()
	if !t.After(s.last) {
		t = s.last.Add(time.Nanosecond)
	}
	s.last = t
	return t
}

// ---- Layout ----

const (
	archiveDir = ".archive"
	fileExt    = ".jsonl"
)

// CwdDir returns the directory name the seed layout uses for cwd: the
// working directory without its leading separator, '/', '\' and ':'
// turned into '-', between "--" and "--" (and control characters, which
// few file systems take in a name, turned into '-' too; bytes that are
// not UTF-8 become U+FFFD, as in the header). A name longer than file systems
// allow (maxDirName bytes), for a deep working directory, keeps its
// first bytes and ends with '-', 16 hexadecimal digits of the SHA-256 of
// cwd, and "--": pi, which has no such rule, cannot create sessions for
// such a directory at all.
func CwdDir(cwd string) string {
	c := strings.TrimLeft(StoredString(cwd), `/\`)
	c = strings.NewReplacer("/", "-", `\`, "-", ":", "-").Replace(c)
	if strings.ContainsFunc(c, unicode.IsControl) {
		// No file system takes NUL in a name, and few other controls.
		c = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return '-'
			}
			return r
		}, c)
	}
	name := "--" + c + "--"
	if len(name) <= maxDirName {
		return name
	}
	sum := sha256.Sum256([]byte(cwd))
	keep := maxDirName - len("----") - 1 - 16
	for keep > 0 && !utf8.RuneStart(c[keep]) {
		keep-- // cut between characters
	}
	return "--" + c[:keep] + "-" + hex.EncodeToString(sum[:8]) + "--"
}

// maxDirName is the longest file name most file systems take (NAME_MAX).
const maxDirName = 255

// fileName returns the seed-layout file name of a session.
func fileName(h Header) string {
	ts := h.Timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	stamp := strings.NewReplacer(":", "-", ".", "-").Replace(formatTime(ts))
	return stamp + "_" + h.ID + fileExt
}

// idOfFile returns the session id in a seed-layout file name, or "".
func idOfFile(name string) string {
	if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, fileExt) {
		return ""
	}
	_, id, ok := strings.Cut(strings.TrimSuffix(name, fileExt), "_")
	if !ok || ValidateID(id) != nil {
		return ""
	}
	return id
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

func isIndex(base string) bool       { return base == indexName }
func isSessionFile(base string) bool { return idOfFile(base) != "" }

// scan reads the directory tree and refreshes the id → file map. With
// clean, it also removes temporary files left by interrupted rewrites.
// Callers must not hold s.mu.
func (s *FileStore) scan(clean bool) error {
	found := map[string]string{}
	for _, top := range []string{".", archiveDir} {
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
			if !strings.HasPrefix(d, "--") || !strings.HasSuffix(d, "--") || len(d) < 4 {
				continue
			}
			dir := filepath.Join(top, d)
			names, err := readDirNames(s.r, dir)
			if err != nil {
				continue // not a directory, or gone
			}
			for _, n := range names {
				if clean && ownTemp(n, isSessionFile) {
					removeStaleTemp(s.r, filepath.Join(dir, n))
					continue
				}
				if id := idOfFile(n); id != "" {
					if _, dup := found[id]; !dup || top == "." {
						found[id] = filepath.Join(dir, n)
					}
				}
			}
		}
	}
	s.mu.Lock()
	for id, rel := range s.paths {
		if filepath.IsAbs(rel) {
			found[id] = rel // opened by path, outside the tree
		}
	}
	s.paths = found
	s.mu.Unlock()
	return nil
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
	f, err := r.OpenFile(rel, os.O_RDWR, 0)
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

// file returns the state of session id, finding its file if needed.
func (s *FileStore) file(id string) (*fileSession, error) {
	s.mu.Lock()
	fsess, known := s.sessions[id] // ids in the map were validated
	closed := s.closed
	if known {
		s.clock++
		fsess.used = s.clock
	}
	s.mu.Unlock()
	if known && !closed {
		return fsess, nil
	}
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		if fsess, ok := s.sessions[id]; ok {
			s.mu.Unlock()
			return fsess, nil
		}
		rel, ok := s.paths[id]
		if ok {
			s.clock++
			fsess := &fileSession{id: id, rel: rel, used: s.clock, dirtyFrom: -1}
			s.sessions[id] = fsess
			idle := s.idleSessions()
			s.mu.Unlock()
			s.forgetIdle(idle)
			return fsess, nil
		}
		s.mu.Unlock()
		if attempt > 0 {
			return nil, fmt.Errorf("%w: session %s", ErrNotFound, id)
		}
		if s.fileOnly {
			return nil, fmt.Errorf("%w: session %s", ErrNotFound, id)
		}
		// Another process may have created it since the last scan.
		if err := s.scan(false); err != nil {
			return nil, err
		}
	}
}

// forget drops what the store knows of a session whose file is gone.
func (s *FileStore) forget(fsess *fileSession) {
	s.mu.Lock()
	if s.sessions[fsess.id] == fsess {
		delete(s.sessions, fsess.id)
	}
	if s.paths[fsess.id] == fsess.rel {
		delete(s.paths, fsess.id)
	}
	s.mu.Unlock()
	s.closeFile(fsess)
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
		return r.OpenFile(filepath.Base(rel), os.O_RDWR, 0)
	}
	return s.r.OpenFile(rel, os.O_RDWR, 0)
}

// ---- Create ----

// Create implements Store. The file is written whole under a temporary
// name and then linked into place, so a crash never leaves a session
// file without its header.
func (s *FileStore) Create(ctx context.Context, h Header) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateID(h.ID); err != nil {
		return err
	}
	if s.fileOnly {
		return fmt.Errorf("session: create %s: this store holds only the file opened by path in %s; create sessions in a FileStore opened on a sessions root", h.ID, s.root)
	}
	if err := lockCtx(ctx, &s.createMu); err != nil { // one create at a time: check, write, register
		return err
	}
	defer s.createMu.Unlock()
	if _, err := s.file(h.ID); err == nil {
		return fmt.Errorf("%w: session %s", ErrExists, h.ID)
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	h.Version = CurrentVersion
	if h.Timestamp.IsZero() {
		h.Timestamp = time.Now().UTC().Truncate(time.Millisecond)
	}
	line, err := h.appendJSON(nil)
	if err != nil {
		return err
	}
	if err := s.lim.checkWrite(0, 0, 1, func(int) int { return len(line) }); err != nil {
		return fmt.Errorf("session: create %s: the header: %w", h.ID, err)
	}
	line = append(line, '\n')
	dir := CwdDir(h.Cwd)
	if err := mkdirRoot(s.r, dir); err != nil {
		return fmt.Errorf("session: create %s: %w", h.ID, err)
	}
	// Other processes may create the same id at the same moment (their
	// file names differ by the time): the directory's lock orders the
	// creates of a directory, and each looks for the id under it. (Two
	// creates of one id for different directories are not told apart.)
	d, err := s.r.Open(dir)
	if err != nil {
		return fmt.Errorf("session: create %s: %w", h.ID, err)
	}
	defer d.Close()
	if err := lockFile(ctx, d, true); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("session: create %s: lock %s: %w", h.ID, s.path(dir), err)
	}
	defer unlockFile(d)
	if names, err := d.Readdirnames(-1); err == nil {
		for _, n := range names {
			if idOfFile(n) == h.ID {
				return fmt.Errorf("%w: session %s", ErrExists, h.ID)
			}
		}
	}
	rel := filepath.Join(dir, fileName(h))
	if err := s.writeNew(rel, line, false); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: session %s", ErrExists, h.ID)
		}
		return fmt.Errorf("session: create %s: %w", s.path(rel), err)
	}
	s.mu.Lock()
	s.paths[h.ID] = rel
	s.sessions[h.ID] = &fileSession{id: h.ID, rel: rel, dirtyFrom: -1}
	s.index[rel] = &indexEntry{updated: s.tick()} // size 0: revalidated on List
	s.mu.Unlock()
	return nil
}

// writeNew writes data to a temporary file beside rel, syncs it (unless
// it is a new file and the policy is SyncNever) and puts it at rel: replacing what is there
// when replace is set, failing with fs.ErrExist otherwise. The directory
// is synced afterwards.
func (s *FileStore) writeNew(rel string, data []byte, replace bool) error {
	r, name := s.r, rel
	if filepath.IsAbs(rel) {
		var err error
		if r, err = os.OpenRoot(filepath.Dir(rel)); err != nil {
			return err
		}
		defer r.Close()
		name = filepath.Base(rel)
	}
	// Always synced, whatever the policy: renaming an unsynced file over
	// a good one could leave neither after a crash, and a new session's
	// file must never survive without its header.
	return writeAtomic(r, name, data, replace, true)
}

// writeAtomic puts data at name in r through a temporary file in the same
// directory (mode 0600, locked while it is written so that cleaners in
// other processes leave it alone), renamed (replace) or linked (no
// replace: fs.ErrExist if name exists) into place, with the file and
// then the directory synced when sync is set.
func writeAtomic(r *os.Root, name string, data []byte, replace, sync bool) (err error) {
	dir := filepath.Dir(name)
	tmp := filepath.Join(dir, "."+filepath.Base(name)+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
	f, err := createIn(r, tmp)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil { // whatever the umask
		f.Close()
		_ = removeIn(r, tmp)
		return err
	}
	defer func() {
		f.Close()
		if err != nil {
			_ = removeIn(r, tmp)
		}
	}()
	_ = lockFile(context.Background(), f, true) // a new file: no one else holds it
	if n, werr := writeAt(f, data, 0); werr != nil || n < len(data) {
		return cmp.Or(werr, io.ErrShortWrite)
	}
	if sync && mutant != "rename-before-sync" {
		if err = fsync(f); err != nil {
			return err
		}
	}
	if replace {
		err = renameIn(r, tmp, name)
	} else if err = linkIn(r, tmp, name); err == nil {
		_ = removeIn(r, tmp)
	}
	if err != nil {
		return err
	}
	if sync && mutant == "rename-before-sync" {
		_ = fsync(f)
	}
	if sync {
		err = syncDir(r, dir)
	}
	return err
}

// ---- Reading ----

// Load implements Store. Version 1 and 2 files are migrated and the file
// is rewritten atomically in version 3. A file that cannot be read as a
// session is left as it is and gives an error naming it. Blob references
// are resolved.
func (s *FileStore) Load(ctx context.Context, id string) (*Log, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fsess, err := s.file(id)
	if err != nil {
		return nil, err
	}
	if err := lockCtx(ctx, &fsess.mu); err != nil {
		return nil, err
	}
	defer fsess.mu.Unlock()
	if fsess.err != nil {
		// Latched for the life of the store (see SyncPolicy): a handle
		// that loaded the session afresh must not make another forget its
		// lost appends.
		return nil, fsess.err
	}
	log, err := s.load(ctx, fsess)
	if err != nil {
		return nil, err
	}
	return log, nil
}

// load reads the whole file and resets fsess from it. Callers hold
// fsess.mu.
func (s *FileStore) load(ctx context.Context, fsess *fileSession) (*Log, error) {
	for attempt := 0; ; attempt++ {
		if err := s.ensureOpen(fsess); err != nil {
			return nil, err
		}
		held := fsess.locked // under our own write lease: already exclusive
		if held {
			if err := s.writePending(fsess); err != nil {
				return nil, err
			}
		} else {
			if err := lockFile(ctx, fsess.f, false); err != nil {
				return nil, s.lockErr(fsess, err)
			}
		}
		size, _, nlink, err := fileState(fsess.f)
		var (
			log  *Log
			data []byte
			end  fileEnd
		)
		if err == nil && (nlink > 0 || attempt >= 3) {
			s.wholeReads.Add(1)
			log, data, end, err = readLogFile(fsess.f, size, &ReadOptions{Strict: s.opts.Strict, Limits: s.opts.Limits})
		}
		if held {
			fsess.lastUse = time.Now() // a reload under the lease: the append comes next
		} else {
			unlockFile(fsess.f)
		}
		if nlink == 0 && err == nil && attempt < 3 {
			s.closeFile(fsess) // replaced by a rewrite: open the new file
			continue
		}
		var ce *CorruptError
		var ve *UnsupportedVersionError
		var le *LimitError
		if errors.As(err, &ce) || errors.As(err, &ve) || errors.As(err, &le) {
			return nil, WithPath(err, s.path(fsess.rel))
		}
		if err != nil {
			return nil, s.ioErr(fsess, "read", err)
		}
		if log.Header.ID != fsess.id {
			return nil, &CorruptError{Path: s.path(fsess.rel), Line: 1, Err: fmt.Errorf("header names session %q, not %q", log.Header.ID, fsess.id)}
		}
		if log.MigratedFrom != 0 {
			if err := s.migrate(ctx, fsess, data, log); err != nil {
				return nil, err
			}
			continue // read what was written
		}
		fsess.reset(log, end)
		if err := s.resolveBlobs(ctx, log, data); err != nil {
			return nil, err
		}
		return log, nil
	}
}

// ensureOpen opens the session's file if it is not open.
func (s *FileStore) ensureOpen(fsess *fileSession) error {
	if fsess.f != nil {
		return nil
	}
	f, err := s.openRel(fsess.rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.forget(fsess)
			return fmt.Errorf("%w: session %s (%s is gone)", ErrNotFound, fsess.id, s.path(fsess.rel))
		}
		return s.ioErr(fsess, "open", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return s.ioErr(fsess, "stat", err)
	}
	// What the store knows of the file still holds if it is the same
	// file: what others appended is learned at the next lock.
	ino, _ := identity(fi)
	if ino != fsess.ino || ino == 0 {
		fsess.loaded = false
	}
	fsess.f, fsess.ino = f, ino
	s.mu.Lock()
	fsess.open = true
	s.openFiles++
	victims := s.leastUsedOpen(fsess)
	s.mu.Unlock()
	for _, v := range victims {
		// Busy ones are skipped (and never waited for, which could
		// deadlock): the bound is met at a later open.
		if v.mu.TryLock() {
			_ = s.letGo(v) // an error is latched on v
			v.mu.Unlock()
		}
	}
	return nil
}

// leastUsedOpen returns the open sessions, other than keep, to close for
// the open files to stay within the bound. Callers hold s.mu.
func (s *FileStore) leastUsedOpen(keep *fileSession) []*fileSession {
	over := s.openFiles - s.maxOpen
	if over <= 0 {
		return nil
	}
	var open []*fileSession
	for _, f := range s.sessions {
		if f.open && f != keep {
			open = append(open, f)
		}
	}
	slices.SortFunc(open, func(a, b *fileSession) int { return cmp.Compare(a.used, b.used) })
	return open[:min(over, len(open))]
}

// idleSessions returns sessions to forget once the store knows too many:
// the least used of those whose file is closed. Callers hold s.mu.
func (s *FileStore) idleSessions() []*fileSession {
	over := len(s.sessions) - maxSessions
	if over <= 0 {
		return nil
	}
	var idle []*fileSession
	for _, f := range s.sessions {
		if !f.open {
			idle = append(idle, f)
		}
	}
	slices.SortFunc(idle, func(a, b *fileSession) int { return cmp.Compare(a.used, b.used) })
	return idle[:min(over, len(idle))]
}

// forgetIdle drops sessions idleSessions chose, unless busy or reopened.
func (s *FileStore) forgetIdle(idle []*fileSession) {
	for _, f := range idle {
		if !f.mu.TryLock() {
			continue
		}
		s.mu.Lock()
		if !f.open && f.err == nil && s.sessions[f.id] == f { // a latched error stays known
			delete(s.sessions, f.id)
		}
		s.mu.Unlock()
		f.mu.Unlock()
	}
}

// closeSession lets the file of a session go, after writing what is
// pending: Session.Close calls it. What the store knows of the session
// stays, so that other handles go on where they were.
func (s *FileStore) closeSession(id string) error {
	s.mu.Lock()
	fsess := s.sessions[id]
	s.mu.Unlock()
	if fsess == nil {
		return nil
	}
	fsess.mu.Lock()
	defer fsess.mu.Unlock()
	return s.letGo(fsess)
}

// letGo writes what is pending, syncs what SyncOnFlush promised to sync
// at the next Flush (which finds no file to sync once it is closed), and
// closes the file. Callers hold fsess.mu.
func (s *FileStore) letGo(fsess *fileSession) error {
	if fsess.f == nil {
		return nil
	}
	err := s.syncAndRelease(context.Background(), fsess)
	s.refreshIndex(fsess)
	s.closeFile(fsess)
	return err
}

// readAll reads a whole file, and reports whether it has been replaced
// (unlinked by a rename) since it was opened.
func readAll(f *os.File) ([]byte, bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if _, nlink := identity(fi); nlink == 0 {
		return nil, true, nil
	}
	data := make([]byte, fi.Size())
	n, err := f.ReadAt(data, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	return data[:n], false, nil
}

// reset makes fsess describe the file read as log, which ends as end says.
func (fsess *fileSession) reset(log *Log, end fileEnd) {
	fsess.size, fsess.cut, fsess.needNL = goodEnd(end, log.Torn != nil)
	fsess.ids = make(idSet, len(log.Entries))
	fsess.title = ""
	for _, e := range log.Entries {
		fsess.ids.add(e.id)
		fsess.noteTitle(e)
	}
	fsess.count = len(log.Entries)
	fsess.last = lastID(log.Entries)
	fsess.header = log.Header.Clone()
	fsess.loaded = true
	fsess.lines = log.lines
	if log.Torn != nil {
		fsess.lines--
	}
	fsess.marks.reset()
	fsess.mark()
	fsess.dirtyFrom, fsess.othersAfter = -1, false
}

// goodEnd returns where the next append goes in a file: after its last
// newline when the rest is a torn line (cut), at the end otherwise
// (needNL when the last line, whole, lacks its newline).
func goodEnd(end fileEnd, torn bool) (at int64, cut, needNL bool) {
	switch {
	case end.size == 0 || end.endsNL:
		return end.size, false, false
	case torn:
		return end.lastLine, true, false
	}
	return end.size, false, true
}

func (fsess *fileSession) noteTitle(e Entry) {
	if e.kind != kindSessionInfo {
		return
	}
	var n SessionName
	if e.payload(&n); strings.TrimSpace(n.Name) != "" {
		fsess.title = strings.TrimSpace(n.Name)
	}
}

// migrate rewrites a version 1 or 2 file in version 3, if it still holds
// data when the lock is taken.
func (s *FileStore) migrate(ctx context.Context, fsess *fileSession, data []byte, log *Log) error {
	if err := s.acquire(ctx, fsess); err != nil {
		return err
	}
	defer s.closeFile(fsess) // read again, whatever happened
	now, replaced, err := readAll(fsess.f)
	if err != nil {
		return s.ioErr(fsess, "read", err)
	}
	if replaced || !bytes.Equal(now, data) {
		return nil // someone else changed it
	}
	out, err := migrateFile(data, log.MigratedFrom)
	if err != nil {
		return WithPath(&CorruptError{Line: 1, Err: err}, s.path(fsess.rel))
	}
	if err := s.writeNew(fsess.rel, out, true); err != nil {
		return fmt.Errorf("session: migrate %s: %w", s.path(fsess.rel), err)
	}
	return nil
}

// Write lease timings: the lock is let go after leaseIdle without an
// append, and at the first append after leaseMax, so that other processes
// wait at most about that long.
const (
	leaseIdle = time.Millisecond
	leaseMax  = 10 * time.Millisecond
)

// acquire takes the exclusive file lock unless this store holds it.
// Callers hold fsess.mu and have the file open.
func (s *FileStore) acquire(ctx context.Context, fsess *fileSession) error {
	if fsess.locked {
		return nil
	}
	if err := lockFile(ctx, fsess.f, true); err != nil {
		return s.lockErr(fsess, err)
	}
	fsess.locked, fsess.lockedAt = true, time.Now()
	return nil
}

// release writes what is pending and lets the exclusive file lock go.
// A write error is latched (and returned).
func (s *FileStore) release(fsess *fileSession) error {
	if !fsess.locked {
		return nil
	}
	err := s.writePending(fsess)
	fsess.locked = false
	_ = unlockFile(fsess.f)
	return err
}

// appendLarge writes lines in pieces of about maxPending bytes, each
// encoded while the one before is written. If one fails, the file goes
// back to its length before the first: the append is all or nothing.
func (s *FileStore) appendLarge(fsess *fileSession, lines [][]byte, end string) error {
	if err := s.writePending(fsess); err != nil {
		return err
	}
	start := fsess.size
	fail := func(err error) error {
		if terr := truncateFile(fsess.f, start); terr != nil {
			err = errors.Join(err, fmt.Errorf("rollback: %w", terr))
		}
		fsess.size = start
		return err // latched by land
	}
	for i, l := range lines {
		fsess.pending = appendLine(fsess.pending, l, i, len(lines), end)
		if len(fsess.pending) >= maxPending {
			if err := s.land(fsess); err != nil {
				return fail(err)
			}
			s.launch(fsess)
		}
	}
	if err := s.writePending(fsess); err != nil {
		return fail(err)
	}
	return nil
}

// maxPending is how many bytes of appended lines gather before they are
// written even though the lease is still held.
const maxPending = 256 << 10

// writePending writes the pending lines at the end of the file, after
// waiting for the write under way. A failed or short write is rolled back
// (the file is cut to its previous length) and latched: the pending
// appends are lost, and every later call on the session says so. Callers
// hold fsess.mu and the lock.
func (s *FileStore) writePending(fsess *fileSession) error {
	if err := s.land(fsess); err != nil {
		return err
	}
	if len(fsess.pending) == 0 {
		return nil
	}
	s.launch(fsess)
	return s.land(fsess)
}

// flight is one write of pending lines.
type flight struct {
	done chan struct{}
	buf  []byte
	err  error
}

// launch starts writing the pending lines in the background. There must
// be no flight under way.
func (s *FileStore) launch(fsess *fileSession) {
	fl := &flight{done: make(chan struct{}), buf: fsess.pending}
	fsess.pending, fsess.spare = fsess.spare[:0], nil
	fsess.flight = fl
	f, off, cut := fsess.f, fsess.size, fsess.cut
	fsess.cut = false
	go func() {
		defer close(fl.done)
		if cut && mutant != "no-torn-cut" {
			if err := truncateFile(f, off); err != nil {
				fl.err = fmt.Errorf("cut torn line: %w", err)
				return
			}
		}
		n, err := writeAt(f, fl.buf, off)
		if err == nil && n < len(fl.buf) {
			err = io.ErrShortWrite
		}
		fl.err = err
	}()
}

// land waits for the write under way, if any, and takes its outcome: the
// file grows, or on an error it is cut back and the error latched (with
// what was pending after it, lost too).
func (s *FileStore) land(fsess *fileSession) error {
	fl := fsess.flight
	if fl == nil {
		return nil
	}
	<-fl.done
	fsess.flight = nil
	if fl.err != nil {
		err := fl.err
		if terr := truncateFile(fsess.f, fsess.size); terr != nil {
			err = errors.Join(err, fmt.Errorf("rollback: %w", terr))
		}
		fsess.pending = fsess.pending[:0]
		return s.latch(fsess, "append to", err)
	}
	if fsess.dirtyFrom < 0 {
		fsess.dirtyFrom = fsess.size
	}
	fsess.size += int64(len(fl.buf))
	if cap(fl.buf) <= 4*maxPending {
		fsess.spare = fl.buf[:0]
	}
	return nil
}

// unwritten is how many appended bytes are not in the file yet.
func (fsess *fileSession) unwritten() int64 {
	n := int64(len(fsess.pending))
	if fsess.flight != nil {
		n += int64(len(fsess.flight.buf))
	}
	return n
}

// keep holds the lock after an append for the next one, until the idle
// timer lets it go; past leaseMax, or with SyncEveryAppend, it lets go
// at once.
func (s *FileStore) keep(fsess *fileSession) error {
	now := time.Now()
	if s.opts.Sync == SyncEveryAppend || now.Sub(fsess.lockedAt) > leaseMax {
		return s.release(fsess)
	}
	s.holdAt(fsess, now)
	return nil
}

// hold keeps the lock for leaseIdle from now, whatever the policy.
func (s *FileStore) hold(fsess *fileSession) { s.holdAt(fsess, time.Now()) }

func (s *FileStore) holdAt(fsess *fileSession, now time.Time) {
	fsess.lastUse = now
	if fsess.armed {
		return // the timer, when it fires, sees the new use and waits on
	}
	fsess.armed = true
	wait := fsess.leaseLeft(now)
	if fsess.timer == nil {
		fsess.timer = time.AfterFunc(wait, func() { s.expire(fsess) })
	} else {
		fsess.timer.Reset(wait)
	}
}

// leaseLeft is how long the lease may still be held: until leaseIdle
// after the last use, and no later than leaseMax after it was taken.
func (fsess *fileSession) leaseLeft(now time.Time) time.Duration {
	return min(leaseIdle-now.Sub(fsess.lastUse), leaseMax-now.Sub(fsess.lockedAt))
}

// expire is the idle timer of the write lease. An error writing the
// pending lines is latched for the next call on the session.
func (s *FileStore) expire(fsess *fileSession) {
	fsess.mu.Lock()
	defer fsess.mu.Unlock()
	if !fsess.locked {
		fsess.armed = false
		return
	}
	if wait := fsess.leaseLeft(time.Now()); wait > 0 {
		fsess.timer.Reset(wait)
		return
	}
	fsess.armed = false
	_ = s.release(fsess)
}

// closeFile closes the session's file (which lets its lock go). Callers
// have written what was pending, or mean to drop it (the file is gone).
func (s *FileStore) closeFile(fsess *fileSession) {
	if fsess.f != nil {
		fsess.f.Close()
		fsess.f = nil
		s.mu.Lock()
		if fsess.open {
			fsess.open = false
			s.openFiles--
		}
		s.mu.Unlock()
	}
	fsess.locked = false
	if fsess.flight != nil {
		<-fsess.flight.done // dropped, but not left writing to a closed file
		fsess.flight = nil
	}
	fsess.pending = fsess.pending[:0]
}

// lockErr is the error of a wait for the file lock: ctx.Err() itself when
// ctx ended the wait, as every call that takes a ctx returns it.
func (s *FileStore) lockErr(fsess *fileSession, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return s.ioErr(fsess, "lock", err)
}

// ioErr wraps a file system error with the session's file.
func (s *FileStore) ioErr(fsess *fileSession, op string, err error) error {
	return fmt.Errorf("session: %s %s: %w", op, s.path(fsess.rel), err)
}

// ---- Appending ----

// idSet holds the ids of a session's entries as 64-bit hashes: a quarter
// of the memory of the strings, for a store that only asks whether an id
// is taken. Two ids with one hash (about one chance in 10^10 for a
// session of a million entries) would make an append of the second fail
// with ErrConflict, which a Session answers by retrying with new ids.
type idSet map[uint64]struct{}

var idSeed = maphash.MakeSeed()

func (s idSet) add(id string)      { s[maphash.String(idSeed, id)] = struct{}{} }
func (s idSet) has(id string) bool { _, ok := s[maphash.String(idSeed, id)]; return ok }

// Append implements Store: one write of whole lines at the end of the
// file, under an exclusive file lock, after learning what other
// processes appended. A failed or short write is rolled back by
// truncating the file to its previous length, and the error is latched
// (ErrWriteFailed; see SyncPolicy): every later call on the session
// through this store returns it. ErrConflict also reports that another
// process replaced the file (a rewrite), so that Session handles reload.
func (s *FileStore) Append(ctx context.Context, id string, opts AppendOptions, entries ...Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkEntries(entries); err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	fsess, err := s.file(id)
	if err != nil {
		return err
	}
	// Apply the size limits (blobs included, which may write and sync
	// files) before taking the session's lock, so that the write lease it
	// may hold ends on time.
	var few [4][]byte
	lines, err := s.storedLines(ctx, few[:0], entries)
	if err != nil {
		return err
	}
	if err := lockCtx(ctx, &fsess.mu); err != nil {
		return err
	}
	defer fsess.mu.Unlock()
	if fsess.err != nil {
		return fsess.err
	}
	if err := s.ensureOpen(fsess); err != nil {
		return err // the file may have been closed to bound the open files
	}
	if !fsess.loaded {
		if _, err := s.load(ctx, fsess); err != nil {
			return err
		}
	}
	if err := s.lockForAppend(ctx, fsess, opts); err != nil {
		return errors.Join(err, s.release(fsess))
	}
	err = s.appendLocked(ctx, fsess, opts, lines, entries)
	if err != nil {
		if !errors.Is(err, ErrConflict) || fsess.err != nil {
			// A failed write lets the lock go at once: other processes
			// must not wait on a session this store can no longer write.
			_ = s.release(fsess)
			return err
		}
		// The loser of a race keeps the lock for its retry: a Session
		// reloads (under this lock) and appends again at once, and would
		// otherwise lose again and again to a busy writer.
		s.hold(fsess)
		return err
	}
	return s.keep(fsess)
}

// lockForAppend takes the write lock and learns what others did, unless
// the lease is still held (then no one else can have written).
func (s *FileStore) lockForAppend(ctx context.Context, fsess *fileSession, opts AppendOptions) error {
	for attempt := 0; ; attempt++ {
		if fsess.locked {
			return nil
		}
		if err := s.acquire(ctx, fsess); err != nil {
			return err
		}
		replaced, err := s.catchUp(ctx, fsess)
		if err != nil || !replaced {
			return err
		}
		// Another process replaced the file: it has been read again. A
		// conditional append was decided on the old one.
		if opts.IfLast != "" || opts.IfEmpty || attempt > 3 {
			return fmt.Errorf("%w: %s was rewritten by another writer", ErrConflict, s.path(fsess.rel))
		}
	}
}

// appendLocked adds the lines (without their newlines) under the write lock: written at
// once (and, with SyncEveryAppend, synced), or with SyncNever gathered
// and written once enough have gathered or the lease ends.
func (s *FileStore) appendLocked(ctx context.Context, fsess *fileSession, opts AppendOptions, lines [][]byte, entries []Entry) error {
	done, err := retried(entries, fsess.ids.has, func() (bool, error) { return s.storedAs(fsess, lines, entries) })
	if err != nil || done {
		return err
	}
	if err := checkAppend(opts, fsess.last); err != nil {
		return err
	}
	// The lines of an append of several entries carry a marker naming
	// its last entry, so that readers take them all or none (group.go).
	end, extra := "", 0
	if len(lines) > 1 && mutant != "no-marks" {
		end = markEnd(entries[len(entries)-1].id)
		extra = len(appendMarked(nil, []byte("{}"), len(lines)-2, len(lines), end)) - 2
	}
	// Never write what a reader would refuse.
	if err := s.lim.checkWrite(fsess.size+fsess.unwritten(), fsess.lines-1, len(lines), func(i int) int {
		if i < len(lines)-1 {
			return len(lines[i]) + extra
		}
		return len(lines[i])
	}); err != nil {
		return fmt.Errorf("session: append to %s: %w", s.path(fsess.rel), err)
	}
	if len(lines) > 1 && fsess.count == 0 && fsess.lines == 1 && fsess.unwritten() == 0 && !fsess.cut {
		// The first append of a session, of several entries (a fork, a
		// copy, a first turn): the whole file, no markers needed.
		if err := s.appendWhole(ctx, fsess, lines, entries); err != nil {
			return err
		}
	} else {
		if err := s.queue(fsess, lines, end, extra); err != nil {
			return err
		}
		fsess.appended(entries)
	}
	s.touched(fsess)
	return nil
}

// appended notes entries, whose lines were just written or gathered.
func (fsess *fileSession) appended(entries []Entry) {
	for _, e := range entries {
		fsess.ids.add(e.id)
		fsess.noteTitle(e)
	}
	fsess.count += len(entries)
	fsess.last = entries[len(entries)-1].id
	fsess.lines += len(entries)
	fsess.mark()
}

// queue writes or gathers the lines of an append at the end of the file,
// as the policy says, marked with end when there are several.
func (s *FileStore) queue(fsess *fileSession, lines [][]byte, end string, extra int) error {
	if fsess.needNL && len(fsess.pending) == 0 {
		fsess.pending = append(fsess.pending, '\n')
		fsess.needNL = false
	}
	n := extra * (len(lines) - 1)
	for _, l := range lines {
		n += len(l) + 1
	}
	if n > maxPending {
		// A fork or an import appends megabytes at once: written a piece
		// at a time rather than gathered whole.
		if err := s.appendLarge(fsess, lines, end); err != nil {
			return err
		}
	} else {
		for i, l := range lines {
			fsess.pending = appendLine(fsess.pending, l, i, len(lines), end)
		}
	}
	switch {
	case s.opts.Sync != SyncNever:
		// Written before the append returns: a crash of the process
		// loses nothing that returned.
		if err := s.writePending(fsess); err != nil {
			return err
		}
	case len(fsess.pending) >= maxPending:
		// SyncNever gathers appends and writes them in the background
		// while the next ones are encoded.
		if err := s.land(fsess); err != nil {
			return err
		}
		s.launch(fsess)
	}
	if s.opts.Sync == SyncEveryAppend {
		return s.syncOwn(fsess)
	}
	return nil
}

// appendWhole writes the first append of a session, of several entries,
// as a whole file: the header line as it is and the lines, written beside
// the file, synced and renamed over it. A crash leaves the session empty
// or with the whole append, and its lines need no marker, so a fork or a
// copy reads back line for line as its source. Callers hold the
// exclusive lock, with nothing pending; they keep it on the new file.
func (s *FileStore) appendWhole(ctx context.Context, fsess *fileSession, lines [][]byte, entries []Entry) error {
	n := fsess.size + 1
	for _, l := range lines {
		n += int64(len(l)) + 1
	}
	data := make([]byte, fsess.size, n)
	if _, err := fsess.f.ReadAt(data, 0); err != nil {
		return s.ioErr(fsess, "read", err)
	}
	if fsess.needNL {
		data = append(data, '\n')
	}
	for _, l := range lines {
		data = append(append(data, l...), '\n')
	}
	if err := s.writeNew(fsess.rel, data, true); err != nil {
		return fmt.Errorf("session: append to %s: %w", s.path(fsess.rel), err)
	}
	// The append has happened. The session is in the new file: lock it
	// before anyone else writes to it, if no one has yet, and go on from
	// what was written; otherwise (or if anything fails now) let the
	// store read the file again when next needed.
	s.closeFile(fsess)
	fsess.loaded = false
	if s.ensureOpen(fsess) != nil || !tryLockFile(fsess.f) {
		s.closeFile(fsess)
		return nil
	}
	fsess.locked, fsess.lockedAt = true, time.Now()
	fsess.size, fsess.needNL, fsess.cut = int64(len(data)), false, false
	fsess.dirtyFrom, fsess.othersAfter = -1, false
	fsess.loaded = true
	fsess.marks.reset()
	fsess.appended(entries)
	if replaced, err := s.catchUp(ctx, fsess); err != nil || replaced {
		s.closeFile(fsess)
		fsess.loaded = false
	}
	return nil
}

// latch records a persistence error on the session and returns it.
func (s *FileStore) latch(fsess *fileSession, op string, err error) error {
	fsess.err = fmt.Errorf("%w: %w", ErrWriteFailed, s.ioErr(fsess, op, err))
	return fsess.err
}

func (fsess *fileSession) titleOrHeader() string {
	if fsess.title != "" {
		return fsess.title
	}
	return fsess.header.Title
}

// encodeAppend appends to buf the lines of entries as they go to the
// file: long strings cut, large images moved to the blob store (see
// FileStoreOptions). keep, when not nil, names entries to write as they
// are: lines the file holds already, which a rewrite leaves untouched.
func (s *FileStore) encodeAppend(ctx context.Context, buf []byte, entries []Entry, keep func(raw []byte) bool) ([]byte, error) {
	lines, err := s.storedLinesKeep(ctx, nil, entries, keep)
	if err != nil {
		return nil, err
	}
	for _, l := range lines {
		buf = append(append(buf, l...), '\n')
	}
	return buf, nil
}

// storedLines appends to lines the line of each entry as it goes to the
// file (see encodeAppend), without newlines; mostly the entry's own bytes.
func (s *FileStore) storedLines(ctx context.Context, lines [][]byte, entries []Entry) ([][]byte, error) {
	return s.storedLinesKeep(ctx, lines, entries, nil)
}

func (s *FileStore) storedLinesKeep(ctx context.Context, lines [][]byte, entries []Entry, keep func(raw []byte) bool) ([][]byte, error) {
	for _, e := range entries {
		line := e.bytes()
		if !s.limits.small(line, e.noImage) && (keep == nil || !keep(line)) {
			var err error
			if line, err = s.limits.limit(ctx, line); err != nil {
				return nil, err
			}
		}
		lines = append(lines, line)
	}
	return lines, nil
}

// catchUp learns, under the file lock, what other processes did since
// this store last looked: appended lines are indexed; a replaced file is
// read again (replaced is then true and the lock is no longer held).
func (s *FileStore) catchUp(ctx context.Context, fsess *fileSession) (replaced bool, err error) {
	size, _, nlink, err := fileState(fsess.f)
	if err != nil {
		return false, s.ioErr(fsess, "stat", err)
	}
	if nlink == 0 || size < fsess.size {
		// Replaced by a rewrite, or cut short by someone else: start over.
		s.closeFile(fsess)
		if _, err := s.load(ctx, fsess); err != nil {
			return false, err
		}
		return true, nil
	}
	if size == fsess.size && !fsess.cut {
		return false, nil
	}
	// Others appended (or a torn line is still there): read the new bytes.
	if fsess.dirtyFrom >= 0 && size > fsess.size {
		fsess.othersAfter = true
	}
	tail := make([]byte, size-fsess.size)
	if _, err := fsess.f.ReadAt(tail, fsess.size); err != nil && !errors.Is(err, io.EOF) {
		return false, s.ioErr(fsess, "read", err)
	}
	rest := tail
	if fsess.needNL {
		// Our last line lacked a newline; another writer may have added it.
		if len(rest) > 0 && rest[0] == '\n' {
			rest = rest[1:]
			fsess.size++
			fsess.needNL = false
		}
	}
	// Lines are read as the whole-file reader reads them (leniently, the
	// lines of an append a crash cut short left out), so that the
	// entries counted here are those a Load returns.
	p := s.parser(false)
	p.line, p.gotHeader = fsess.lines, true
	var got []seenLine
	fsess.cut = false
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			// A last line without newline: whole (needs one) or torn (cut).
			e, ok, _ := p.entryLine(rest, false)
			if p.torn != nil {
				fsess.cut = true
				break
			}
			fsess.size += int64(len(rest))
			fsess.needNL = true
			if ok {
				got = append(got, seenLine{e: e, end: fsess.size + 1, line: p.line})
			}
			break
		}
		e, ok, _ := p.entryLine(rest[:i], true)
		fsess.size += int64(i + 1)
		if ok {
			got = append(got, seenLine{e: e, end: fsess.size, line: p.line})
		}
		rest = rest[i+1:]
	}
	keep := kept(got, p.marked)
	for k, g := range got {
		fsess.ids.add(g.e.id) // a cut append's ids too: never reused
		if keep[k] {
			fsess.noteTitle(g.e)
			fsess.count++
			fsess.last = g.e.id
			fsess.marks.push(mark{n: fsess.count, last: g.e.id, off: g.end, line: g.line})
		}
	}
	fsess.lines = p.line
	if fsess.cut {
		fsess.lines-- // the torn line is not one
	}
	return false, nil
}

// Flush implements Flusher: with SyncOnFlush it makes the appends so far
// durable. It returns a latched error.
func (s *FileStore) Flush(ctx context.Context, id string) error {
	fsess, err := s.file(id)
	if err != nil {
		return err
	}
	if err := lockCtx(ctx, &fsess.mu); err != nil {
		return err
	}
	defer fsess.mu.Unlock()
	if fsess.err != nil {
		return fsess.err
	}
	if fsess.f == nil {
		return nil
	}
	// The turn is over: write it, make it durable, let other writers in.
	return s.syncAndRelease(ctx, fsess)
}

// syncAndRelease writes what is pending, syncs what this store wrote
// when the policy says so at Flush (SyncOnFlush), under the exclusive
// lock, and lets the lock go. Callers hold fsess.mu and have the file
// open.
func (s *FileStore) syncAndRelease(ctx context.Context, fsess *fileSession) error {
	if s.opts.Sync != SyncOnFlush || (fsess.dirtyFrom < 0 && fsess.unwritten() == 0) {
		return s.release(fsess)
	}
	if err := s.acquire(ctx, fsess); err != nil {
		return err
	}
	err := s.writePending(fsess)
	if err == nil {
		err = s.syncOwn(fsess)
	}
	return errors.Join(err, s.release(fsess))
}

// syncOwn makes this store's writes since its last sync durable.
// Callers hold the exclusive lock, with nothing pending.
//
// A failed sync leaves the file in a state no one knows: the writes it
// covered may or may not reach the disk, and the system may not say so
// again (a later sync can succeed without writing them, as PostgreSQL
// learned). So the writes are taken back, the file cut to where they
// started, when no other writer's lines came after them; otherwise they
// stay, as other writers have built on them. Either way the error is
// latched: the session refuses every later call through this store, and
// the next store to open it reads what the file holds.
func (s *FileStore) syncOwn(fsess *fileSession) error {
	if fsess.dirtyFrom < 0 {
		return nil
	}
	err := datasync(fsess.f)
	if err == nil {
		fsess.dirtyFrom, fsess.othersAfter = -1, false
		return nil
	}
	size, _, _, serr := fileState(fsess.f)
	switch {
	case serr == nil && !fsess.othersAfter && size == fsess.size:
		if terr := truncateFile(fsess.f, fsess.dirtyFrom); terr != nil {
			err = fmt.Errorf("%w (taking back the writes since the last sync failed too: %v)", err, terr)
		} else {
			err = fmt.Errorf("%w (the writes since the last sync were taken back)", err)
			fsess.size = fsess.dirtyFrom
		}
	default:
		err = fmt.Errorf("%w (the writes since the last sync stay in the file: another writer's follow them)", err)
	}
	fsess.dirtyFrom = -1
	return s.latch(fsess, "sync", err)
}

// ---- Rewriting ----

// Rewrite implements Store: under the exclusive file lock, the file is
// read again and checked against opts (the conditions, and lines that
// are not entries, which are kept unless opts.DropUnreadable); then the
// new file is written beside the old one, synced, renamed over it, and
// the directory synced. Other processes' handles notice the replacement
// at their next append or load.
func (s *FileStore) Rewrite(ctx context.Context, id string, opts RewriteOptions, h Header, entries []Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if h.ID != id {
		return fmt.Errorf("session: rewrite of %s with a header for %s", id, h.ID)
	}
	for i, e := range entries {
		if e.IsZero() {
			return fmt.Errorf("session: rewrite with zero Entry at %d", i)
		}
	}
	fsess, err := s.file(id)
	if err != nil {
		return err
	}
	if err := lockCtx(ctx, &fsess.mu); err != nil {
		return err
	}
	defer fsess.mu.Unlock()
	if fsess.err != nil {
		return fsess.err
	}
	for attempt := 0; ; attempt++ {
		if err := s.ensureOpen(fsess); err != nil {
			return err
		}
		if err := s.acquire(ctx, fsess); err != nil {
			return err
		}
		if err := s.writePending(fsess); err != nil {
			return err
		}
		data, replaced, err := readAll(fsess.f)
		if err != nil {
			s.closeFile(fsess)
			return s.ioErr(fsess, "read", err)
		}
		if replaced && attempt < 3 {
			s.closeFile(fsess) // another process replaced it: check the new file
			continue
		}
		err = s.rewriteChecked(fsess, opts, data, h, entries)
		s.closeFile(fsess)
		if err != nil {
			return err
		}
		// Done: what the store knows of the file is read again when next
		// needed (a failure to read it now would report a rewrite that
		// happened as failed).
		fsess.loaded = false
		s.touched(fsess)
		return nil
	}
}

// rewriteChecked replaces the file, whose bytes are data, if they meet
// opts. Callers hold the exclusive file lock.
func (s *FileStore) rewriteChecked(fsess *fileSession, opts RewriteOptions, data []byte, h Header, entries []Entry) error {
	old, err := DecodeLog(data, &ReadOptions{Limits: s.opts.Limits})
	if err != nil {
		return WithPath(err, s.path(fsess.rel))
	}
	if old.MigratedFrom != 0 {
		return fmt.Errorf("%w: %s is in format version %d; load it first to migrate it", ErrConflict, s.path(fsess.rel), old.MigratedFrom)
	}
	if err := opts.Check(lastID(old.Entries), len(old.Entries)); err != nil {
		return err
	}
	if !opts.DropUnreadable {
		if err := unreadableError(s.path(fsess.rel), old, "the rewrite"); err != nil {
			return err
		}
	}
	return s.rewriteLocked(fsess, h, entries, data)
}

// unreadableError is the *CorruptError that refuses an operation (what)
// that would drop the lines of log that are not entries, or nil if it
// has none.
func unreadableError(path string, log *Log, what string) error {
	bad := append(slices.Clone(log.Malformed), log.Partial...)
	if len(bad) == 0 {
		return nil
	}
	slices.SortFunc(bad, func(a, b LineError) int { return cmp.Compare(a.Line, b.Line) })
	lines := make([]string, 0, min(len(bad), 10))
	for i, m := range bad {
		if i == 10 {
			lines = append(lines, "...")
			break
		}
		lines = append(lines, strconv.Itoa(m.Line))
	}
	return &CorruptError{Path: path, Line: bad[0].Line, Err: fmt.Errorf(
		"%s would drop %d line(s) that are not entries (line %s: malformed, or of an append a crash cut short); run \"agentsession verify\" on it, and pass DropUnreadable to drop them",
		what, len(bad), strings.Join(lines, ", "))}
}

// rewriteLocked replaces the file with h and entries. The caller holds
// the file lock on the old file, whose bytes are old. The size limits
// apply to entries that are not lines of the file already (those stay
// byte for byte).
func (s *FileStore) rewriteLocked(fsess *fileSession, h Header, entries []Entry, old []byte) error {
	h.Version = CurrentVersion
	buf, err := h.appendJSON(nil)
	if err != nil {
		return err
	}
	buf = append(buf, '\n')
	var lines map[string]bool
	keep := func(raw []byte) bool {
		if lines == nil {
			lines = map[string]bool{}
			for _, l := range bytes.Split(old, []byte{'\n'}) {
				if !s.limits.small(l, false) {
					lines[string(l)] = true
				}
			}
		}
		return lines[string(raw)]
	}
	if buf, err = s.encodeAppend(context.Background(), buf, entries, keep); err != nil {
		return err
	}
	if err := s.lim.checkLog(buf); err != nil {
		return fmt.Errorf("session: rewrite %s: %w", s.path(fsess.rel), err)
	}
	if err := s.writeNew(fsess.rel, buf, true); err != nil {
		return fmt.Errorf("session: rewrite %s: %w", s.path(fsess.rel), err)
	}
	return nil
}

// ---- Delete, archive ----

// Delete implements Store.
func (s *FileStore) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fsess, err := s.file(id)
	if err != nil {
		return err
	}
	if err := lockCtx(ctx, &fsess.mu); err != nil {
		return err
	}
	defer fsess.mu.Unlock()
	err = s.remove(fsess.rel)
	s.forget(fsess)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	return err
}

func (s *FileStore) remove(rel string) error {
	if filepath.IsAbs(rel) {
		if err := removeOS(rel); err != nil {
			return err
		}
		return syncDirOS(filepath.Dir(rel))
	}
	if err := removeIn(s.r, rel); err != nil {
		return err
	}
	return syncDir(s.r, filepath.Dir(rel)) // a delete that returned stays done
}

// Archive moves a session under <root>/.archive, which hides it from
// listings unless ListOptions.Archived is set. It can still be opened.
func (s *FileStore) Archive(ctx context.Context, id string) error {
	return s.move(ctx, id, true)
}

// Restore brings an archived session back.
func (s *FileStore) Restore(ctx context.Context, id string) error {
	return s.move(ctx, id, false)
}

func (s *FileStore) move(ctx context.Context, id string, archive bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fsess, err := s.file(id)
	if err != nil {
		return err
	}
	if err := lockCtx(ctx, &fsess.mu); err != nil {
		return err
	}
	defer fsess.mu.Unlock()
	if filepath.IsAbs(fsess.rel) || s.fileOnly {
		return fmt.Errorf("session: %s is outside the store's tree", s.path(fsess.rel))
	}
	s.refreshIndex(fsess) // the entry moves with the file
	prefix := archiveDir + string(filepath.Separator)
	from := fsess.rel
	if strings.HasPrefix(from, prefix) == archive {
		return nil // already there
	}
	to := prefix + from
	if !archive {
		to = strings.TrimPrefix(from, prefix)
	}
	if err := mkdirRoot(s.r, filepath.Dir(to)); err != nil {
		return fmt.Errorf("session: archive %s: %w", id, err)
	}
	if err := renameIn(s.r, from, to); err != nil {
		return fmt.Errorf("session: archive %s: %w", id, err)
	}
	// The move is durable before it returns, whatever the policy.
	if err := syncDir(s.r, filepath.Dir(to)); err != nil {
		return fmt.Errorf("session: archive %s: %w", id, err)
	}
	if err := syncDir(s.r, filepath.Dir(from)); err != nil {
		return fmt.Errorf("session: archive %s: %w", id, err)
	}
	s.mu.Lock()
	s.paths[id] = to
	fsess.rel = to
	if ie := s.index[from]; ie != nil {
		delete(s.index, from)
		ie.info.Archived = archive
		s.index[to] = ie
	}
	s.mu.Unlock()
	return nil
}

// ---- Opening by path, continuing ----

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
	if named := idOfFile(filepath.Base(abs)); named != "" && named != h.ID {
		return nil, &CorruptError{Path: abs, Line: 1, Err: fmt.Errorf("header names session %q, the file name %q", h.ID, named)}
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
	f, err := os.Open(path)
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
// session. Close the session, then the returned store, when done.
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

// resolveBlobs puts the content of blob references back into the
// entries of log, which was read from data.
func (s *FileStore) resolveBlobs(ctx context.Context, log *Log, data []byte) error {
	if log.refs == refsUnknown {
		log.refs = refsIn(data)
	}
	if log.refs == refsNone {
		return nil // the usual case, found out while reading
	}
	return resolveBlobs(ctx, log, s.blobs, s.lim)
}

// MigrateFile upgrades the session file at path to the current format
// version, rewriting it atomically (temporary file, fsync, rename, fsync
// of the directory) under the file lock, and returns the version it had.
// A current file is left untouched and gives CurrentVersion; with dryRun
// nothing is written. A file that cannot be read as a session gives an
// error naming it and is never written to.
func MigrateFile(ctx context.Context, path string, dryRun bool) (from int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	r, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return 0, err
	}
	defer r.Close()
	name := filepath.Base(path)
	f, err := r.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := lockFile(ctx, f, !dryRun); err != nil {
		return 0, fmt.Errorf("session: lock %s: %w", path, err)
	}
	defer unlockFile(f)
	data, _, err := readAll(f)
	if err != nil {
		return 0, fmt.Errorf("session: read %s: %w", path, err)
	}
	log, err := DecodeLog(data, nil)
	if err != nil {
		return 0, WithPath(err, path)
	}
	if log.MigratedFrom == 0 {
		return CurrentVersion, nil
	}
	if dryRun {
		return log.MigratedFrom, nil
	}
	out, err := migrateFile(data, log.MigratedFrom)
	if err != nil {
		return 0, WithPath(&CorruptError{Line: 1, Err: err}, path)
	}
	if err := writeAtomic(r, name, out, true, true); err != nil {
		return 0, fmt.Errorf("session: migrate %s: %w", path, err)
	}
	return log.MigratedFrom, nil
}
