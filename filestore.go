package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentsession/session/internal/names"
)

// The FileStore itself: its options, opening and closing it, and what it
// does to a session as a whole (Create, Load, Delete, Archive, Restore).
// The rest of it is in files by concern:
//
//	filestore_session.go  what the store knows of one session, its open
//	                      file and the write lease; the lock order
//	filestore_write.go    Append, the sync policies, Flush
//	filestore_rewrite.go  Rewrite, migrating old files, atomic replacement
//	filestore_tail.go     LoadTail: reading only what is new
//	filestore_list.go     List and the listing index
//	filestore_layout.go   the seed layout: names, finding files, OpenFile
//	filestore_blob.go     the store's blobs
//	filestore_lock_*.go   the OS file lock and file identity, per system
//	filestore_sync_*.go   fdatasync, per system
//	fsops.go              every change to the file system, in one place

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
// rewrite holds a lock on the file (flock on Unix, LockFileEx on
// Windows), an append first learns what others appended, and a handle
// notices when another process replaced the file. See SyncPolicy and
// docs/files-and-crashes.md for what a crash can and cannot lose. On Windows a
// directory's entries are not synced (the system has no call for it; see
// docs/files-and-crashes.md, "Platforms"): a power loss there may lose a name a call returned.
//
// What a load or a listing takes in memory is bounded by
// FileStoreOptions.Limits, however large a file is or a compressed one
// decompresses to: about the log's bytes plus 2*MaxLineBytes + 32 MiB to
// open a session, about 2*MaxLineBytes + 16 MiB to list one (see
// Limits).
//
// A FileStore is safe for concurrent use. Close it when done.
type FileStore struct {
	// Set when the store is opened, and only read afterwards.
	root    string // absolute
	r       *os.Root
	opts    FileStoreOptions
	limits  sizeLimits
	lim     Limits // opts.Limits with defaults
	blobs   *BlobDir
	maxOpen int
	// fileOnly: a store OpenFile made for a file outside any store's
	// layout. It holds the files opened by path and nothing else: no
	// scan of the directory, no leftovers removed, no listing index or
	// blob written, no session created.
	fileOnly bool
	flat     bool // LayoutFlat

	// The lock order, createMu before a session's fileSession.mu before
	// mu, is written out at the top of filestore_session.go.
	createMu sync.Mutex        // one Create at a time
	mu       sync.Mutex        // guards the fields below
	paths    map[string]string // session id -> file, relative to root
	unread   map[string]string // hashed stem -> file whose header could not be read (scan)
	sessions map[string]*fileSession
	index    map[string]*indexEntry // rel path -> listing cache
	// The index was changed since it was saved; it was loaded.
	indexDirty, indexLoaded bool
	// scanned: the tree was read (paths holds every session); the first
	// read also removes stale temporary files.
	scanned   bool
	openFiles int    // sessions whose file is open
	clock     uint64 // counts uses, for least-recently-used
	last      time.Time
	closed    bool

	// Events (filestore_watch.go): the hub, and the watcher that feeds
	// it while anyone is subscribed; watchMu orders its start and stop.
	hub     Hub
	watchMu sync.Mutex
	watch   atomic.Pointer[watcher]

	// wholeReads counts the whole-file reads, for the tests that check
	// that catching up does without them.
	wholeReads atomic.Int64

	// bg counts the path indexes being built (filestore_loadpath.go);
	// Close waits for them. closing is closed by Close: a build waiting
	// for its turn (pathIndexDelay) starts at once.
	bg      sync.WaitGroup
	closing chan struct{}
}

var (
	_ Store         = (*FileStore)(nil)
	_ Flusher       = (*FileStore)(nil)
	_ BlobStore     = (*FileStore)(nil)
	_ SessionCloser = (*FileStore)(nil)
)

// FileStoreOptions configures a FileStore. The zero value (or nil) gives
// the defaults documented on each field.
type FileStoreOptions struct {
	// Sync is when appends are made durable; default SyncOnFlush.
	Sync SyncPolicy
	// Strict makes Load fail with ErrCorrupt on a malformed line instead
	// of skipping and counting it.
	Strict bool
	// MaxStringChars bounds every string in an appended entry, counted in
	// UTF-16 code units as pi counts; longer ones are cut to it, the notice
	// included (TruncationNotice), never inside a character, as oh-my-pi
	// cuts them (IsTruncated recognizes them); a limit under the notice's
	// 47 characters counts as 47. Signed and encrypted provider blocks and
	// images are never cut. Default 500,000; negative means no limit.
	MaxStringChars int
	// BlobDir holds the content-addressed blobs (large images). Default:
	// <root>/.blobs, so that the store writes nothing outside its root;
	// blobs not found there are also looked for in <root>/../blobs (the
	// earlier default), which is only read. For oh-my-pi to resolve the
	// images of sessions written here, set <root>/../blobs (where it
	// keeps them) and PlainBlobs.
	BlobDir string
	// MinBlobBytes is the size of base64 image data from which it is
	// stored once as a blob instead of inline. Default 1024; negative
	// keeps every image inline.
	MinBlobBytes int
	// PlainBlobs writes blobs uncompressed, as oh-my-pi does, so that
	// oh-my-pi resolves the blobs of sessions written here. Default:
	// zstd-compressed. Both forms are read.
	PlainBlobs bool
	// OnTruncate, when set, is called for each entry whose strings the
	// store cut to MaxStringChars (by an append, a create or a rewrite),
	// once the write that stored it has succeeded, from the goroutine
	// that wrote, with the store's and the writing Session's locks held:
	// it must not call into either (hand the report to another goroutine
	// if it must). Without it (and without RefuseTruncation), a cut is
	// seen only in the text (TruncationNotice, IsTruncated) and in what a
	// reader of the file gets: the Session that wrote keeps the whole
	// string in memory.
	OnTruncate func(Truncation)
	// RefuseTruncation makes a write that would cut a string fail with a
	// *TruncationError (ErrTooLarge) instead, storing nothing of it, its
	// blobs included.
	RefuseTruncation bool
	// Layout is how session files are laid out under the root; default
	// LayoutSeed, pi's.
	Layout Layout
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
	// PollInterval is how often the watcher that feeds subscribers (see
	// Subscribe) looks at the tree when it cannot be told of changes
	// (fsnotify could not start, or PollOnly). Default
	// DefaultPollInterval (50 ms).
	PollInterval time.Duration
	// PollOnly makes the watcher poll even where fsnotify works: for a
	// root on a network file system, whose changes made by other
	// machines the local notices do not report.
	PollOnly bool
	// CompressArchive makes Archive (and so Sweep) store the archived
	// log zstd-compressed: W10k's 67 MB take 9.7 MB. Reads are
	// transparent, and streamed: a compressed log is never held whole
	// to be read, and one that decompresses past the Limits is refused
	// as it passes them. An append unarchives the session first. See
	// CompressArchived.
	CompressArchive bool
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

// OpenFileStore opens (creating it, mode 0700, if needed) the session
// tree at root. It does not read the tree: the store's first call that
// looks a session up or lists them does, and removes leftover temporary
// files of interrupted rewrites then. (A listing reads the tree anyway,
// for sessions other processes made since; a read at open as well cost
// a new process's first listing of 10,000 sessions a quarter of its time.)
func OpenFileStore(root string, opts *FileStoreOptions) (*FileStore, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("session: file store: %w", err)
	}
	if err := mkdirAll(abs, false); err != nil {
		return nil, fmt.Errorf("session: file store: %w", err)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("session: file store: %w", err)
	}
	s := newFileStore(abs, r, opts)
	if _, err := readDirNames(r, "."); err != nil { // a root it cannot read fails here, not at the first call
		r.Close()
		return nil, fmt.Errorf("session: file store: %w", err)
	}
	s.blobs.removeStaleTemps()
	return s, nil
}

// newFileStore makes the store of root (absolute, open as r) with opts.
func newFileStore(root string, r *os.Root, opts *FileStoreOptions) *FileStore {
	s := &FileStore{
		root: root, r: r,
		limits: sizeLimits{maxChars: DefaultMaxStringChars, minBlob: DefaultMinBlobBytes}, maxOpen: DefaultMaxOpenFiles,
		paths: map[string]string{}, sessions: map[string]*fileSession{}, index: map[string]*indexEntry{},
		closing: make(chan struct{}),
	}
	if opts != nil {
		s.opts = *opts
		s.flat = opts.Layout == LayoutFlat
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
	bo := &BlobDirOptions{Plain: s.opts.PlainBlobs, MaxBytes: s.opts.MaxBlobBytes, Sync: s.opts.Sync.syncsBlobs()}
	if s.opts.BlobDir == "" {
		s.opts.BlobDir, bo.Fallback = defaultBlobDirs(root)
	}
	s.blobs = OpenBlobDir(s.opts.BlobDir, bo)
	s.limits.blobs = s.blobs
	s.lim = s.opts.Limits.withDefaults()
	s.hub.OnFirst = s.startWatch
	s.hub.OnLast = func() { s.stopWatch(false) }
	return s
}

// parser returns a line parser with the store's limits, strict if the
// store is and strict is set.
func (s *FileStore) parser(strict bool) logParser {
	return (&ReadOptions{Strict: strict && s.opts.Strict, Limits: s.opts.Limits}).parser()
}

// Root returns the store's root directory, as an absolute path.
func (s *FileStore) Root() string { return s.root }

// Close closes the files the store holds open. Sessions using it fail
// with ErrClosed afterwards.
func (s *FileStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.closing)
	s.mu.Unlock()
	s.stopWatch(true)
	s.hub.Close()
	s.mu.Lock()
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
	s.bg.Wait()
	s.sweepPathIndexes()
	forgetUnindexable(s)
	errs = append(errs, s.r.Close(), s.blobs.Close()) // its pins end with it
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

// Create implements Store. The file is written whole under a temporary
// name and then linked into place, so a crash never leaves a session
// file without its header.
func (s *FileStore) Create(ctx context.Context, h Header) error {
	return s.create(ctx, h, nil)
}

// CreateWithEntries implements EntryCreator: the header and the entries
// are one file, written whole and linked into place as Create's is, so a
// crash leaves the session with all of them or no session at all.
func (s *FileStore) CreateWithEntries(ctx context.Context, h Header, entries []Entry) error {
	return s.create(ctx, h, entries)
}

func (s *FileStore) create(ctx context.Context, h Header, entries []Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateID(h.ID); err != nil {
		return err
	}
	if err := checkEntries(entries); err != nil {
		return err
	}
	// The lines of the entries that an append would not write as they
	// are (strings over the size limit, images large enough for a blob),
	// as it would write them, blobs written first, before the create
	// lock: other creates need not wait for blobs. The others are written
	// as they are (writeLines).
	stored, cuts, err := s.storedOnly(ctx, h.ID, entries)
	if err != nil {
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
	if err := s.foreign(h.ID); err != nil {
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
	// The entries' lines are written in pieces, copied from the file the
	// entries were read from or built from them (writeLines): a fork of
	// a long session writes tens of megabytes, which need not be held
	// whole.
	if err := s.lim.checkWrite(int64(len(line)), 0, len(entries), func(i int) int {
		if l, ok := stored[i]; ok {
			return len(l)
		}
		return entries[i].Len()
	}); err != nil {
		return fmt.Errorf("session: create %s: %w", h.ID, err)
	}
	var more func(io.Writer) error // what follows the header in the file
	if len(entries) > 0 {
		more = func(w io.Writer) error { return writeLines(w, entries, stored) }
	}
	dir := names.CwdDir(h.Cwd)
	if s.flat {
		dir = "."
	}
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
			if fileHolds(n, h.ID, s.flat) {
				if s.flat {
					if err := s.foreignAt(h.ID, n); err != nil {
						return err
					}
				}
				return fmt.Errorf("%w: session %s", ErrExists, h.ID)
			}
		}
	}
	rel := filepath.Join(dir, s.fileName(h))
	s.markOwn(h.ID, ChangeCreated, nil)
	if len(entries) > 0 {
		s.markOwn(h.ID, "", entries)
	}
	ino, err := s.writeNew(rel, line, more, false)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: session %s", ErrExists, h.ID)
		}
		return fmt.Errorf("session: create %s: %w", s.path(rel), err)
	}
	s.mu.Lock()
	s.paths[h.ID] = rel
	// writeNew synced the file and its directory, and mkdirRoot the
	// directory's entries up: the name is durable.
	s.sessions[h.ID] = &fileSession{id: h.ID, rel: rel, dirtyFrom: -1, nameDurable: true, ownIno: ino}
	s.index[rel] = &indexEntry{updated: s.tick()} // size 0: revalidated on List
	s.mu.Unlock()
	s.nudge(rel)
	s.releaseCreated(entries, stored) // the pins of the blobs the entries refer to
	s.reportCuts(cuts)
	return nil
}

// Load implements Store. Version 1 and 2 files are migrated and the file
// is rewritten atomically in version 3. A file that cannot be read as a
// session is left as it is and gives an error naming it. Blob references
// are resolved.
func (s *FileStore) Load(ctx context.Context, id string) (*Log, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fsess, err := s.file(id)
	if errors.Is(err, ErrNotFound) {
		if ferr := s.foreign(id); ferr != nil {
			return nil, ferr
		}
	}
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
		if s.flat && !errors.Is(err, ErrNotFound) {
			// In the flat layout, another agent's file is where ours
			// would be (Dive's): say so.
			if ferr := s.foreignAt(id, fsess.rel); ferr != nil {
				return nil, ferr
			}
		}
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
		held, err := s.lockToRead(ctx, fsess)
		if err != nil {
			return nil, err
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
			if attempt >= 5 {
				return nil, fmt.Errorf("%w: %s is in format version %d and keeps changing while it is migrated", ErrConflict, s.path(fsess.rel), log.MigratedFrom)
			}
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

// Delete implements Store. The file is removed under its exclusive lock,
// so that no handle of another process is writing to it then; every
// handle on the session, in any process, fails with ErrNotFound from
// then on (each notices the file is gone under the lock, at its next
// append or flush) and none writes it back to life.
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
	if err := s.lockToDelete(ctx, fsess); err != nil {
		return err
	}
	if err := s.ownFile(fsess); err != nil {
		return errors.Join(err, s.release(fsess))
	}
	return s.deleteLocked(id, fsess)
}

// deleteLocked removes the file of session id. Callers hold fsess.mu
// and the file's lock (lockToDelete).
func (s *FileStore) deleteLocked(id string, fsess *fileSession) error {
	rel := fsess.rel
	s.settle(rel) // subscribers see what came before the delete
	s.markOwn(id, ChangeDeleted, nil)
	err := s.remove(rel)
	if err == nil && isArchived(rel) {
		_ = removeIn(s.r, archiveMark(rel)) // a mark alone is never read
	}
	if err == nil {
		_ = removeIn(s.r, compactingRel(id)) // none, mostly
		_ = removeIn(s.r, s.pathIndexName(id))
	}
	s.forget(fsess) // closes the file, which lets the lock go
	if err == nil {
		s.opDone(id, ChangeDeleted, rel)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	return err
}

// lockToDelete takes the exclusive lock on the file at the session's
// name (not one a rewrite elsewhere replaced, or moved). Callers hold
// fsess.mu.
func (s *FileStore) lockToDelete(ctx context.Context, fsess *fileSession) error {
	if filepath.IsAbs(fsess.rel) || s.fileOnly {
		return nil // a file opened by path: removed as it is
	}
	return s.lockAtName(ctx, fsess)
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
