package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/agentsession/session/internal/names"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// What a FileStore knows of one session between calls (fileSession),
// in this order: finding the session and forgetting it; opening its file
// and closing it again (the bound on open files evicts the least used);
// what reads and appends teach it of the file; the write lease, the
// exclusive file lock kept for a moment after an append; the errors that
// name the file.
//
// # Lock order
//
// A FileStore takes its locks in this order, never the other way round:
//
//  1. FileStore.createMu: one Create at a time, from its check that the
//     id is free to the registration of the new file.
//  2. fileSession.mu: one call at a time on a session. It guards the
//     session's fields (all but those fileSession names as guarded by
//     FileStore.mu) and its open file, so the OS lock on that file, and
//     with it the write lease, is taken, kept and given back only under
//     it. A goroutine waits for one at the most: evicting another
//     session's file, or forgetting another session, it uses TryLock,
//     which never waits, and passes over a busy one. One reader of the
//     open file goes without it: a fork copying lines from the file its
//     entries were read from (filestore_lines.go) reads with ReadAt,
//     which an append or a cut beside it cannot disturb (the lines are
//     checked against their sums), and which fails once the store has
//     closed the file (the lines are then built from the entries).
//  3. OS file locks (lockFile): a session file's flock, its directory's
//     in Create, a new file's while writeAtomic writes it. Another
//     process may hold them for long: never waited for under
//     FileStore.mu.
//  4. FileStore.mu: the store's maps and counters, held for a moment.
//     Nothing is waited for under it. Code that holds it and needs a
//     session's lock lets it go first (Close and writeAllPending gather
//     the sessions under it, CloseSession finds its one, and only then
//     lock them).
//
// The write lease outlives the call that took it: the exclusive OS lock
// stays held after an append, fileSession.mu let go, until the lease's
// timer (expire, on a goroutine of its own) takes fileSession.mu and
// gives it back, or the next call on the session does. While
// fileSession.locked is set this store holds that lock, and no other
// writer can have written: "already under the lease" is that field,
// read and changed only under fileSession.mu. The background write of a
// flight touches no session state; it writes the bytes it was handed
// and reports through its channel, taken in under fileSession.mu (land).
//
// Locks outside the store come before all of these: a Session calls the
// store holding its own (Session.mu, the writerLocks turn), and the store
// never calls back. BlobDir.badMu and BlobDir.durMu are leaves.
//
// TestLockOrder (filestore_lockorder_test.go) checks this order in every
// function of the package, and that each field is used only under the
// lock that guards it.
//
// The lease's timer and the background write stay here rather than in a
// package of their own: both are a few dozen lines over fileSession's
// fields, under fileSession.mu; the timer must take that lock and write
// what is pending before it lets the file go, and the write goes through
// fsops.go, which records each change for the crash-state checker. A
// package boundary would hand all of that back as callbacks.

// fileSession is what the store knows of one session file between calls.
// Its mu guards every other field but id, which never changes, and those
// marked as guarded by the store's mu.
type fileSession struct {
	mu sync.Mutex
	id string

	used uint64 // store's clock at the last use; guarded by the store's mu
	open bool   // f is open; guarded by the store's mu
	// rel is the file's path relative to root (absolute for a file
	// outside the tree); it changes under both locks, so either is
	// enough to read it.
	rel string

	// The file, and where the next line goes.
	f      *os.File // open read-write; nil until first used
	ino    uint64
	size   int64 // end of the last whole line written: where pending goes
	cut    bool  // bytes after size are a torn line to cut off first
	needNL bool  // the last line is whole but lacks its newline
	// compressed: the file holds the log compressed (an archived
	// session, filestore_compress.go); nothing is written to it, and the
	// offsets above are those of the log's bytes.
	compressed bool

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
	// dirtyFrom is where this store's writes since its last sync start
	// in the file (-1: none); othersAfter, that another writer's lines
	// came after them. A failed sync takes those writes back when no
	// other writer's follow them (see syncOwn).
	dirtyFrom   int64
	othersAfter bool
	// syncWanted: entries this store acknowledged are in the file without
	// a write of its own (a retry found them there, another writer's
	// that may never have been synced): the next sync the policy makes
	// covers them. nameDurable: the file's name, and its directory's, are
	// known durable; a durable append must not rest on a name a crash
	// may take away (a create, rewrite or migration stopped before it
	// synced the directory).
	// ownIno is the inode of the file this store last put at the name
	// itself (writeNew: synced, its directory too), so that reopening it
	// keeps nameDurable.
	syncWanted  bool
	nameDurable bool
	ownIno      uint64
	err         error // latched persistence error

	// The write lease: after an append the exclusive file lock is kept
	// for a moment, so a burst of appends pays for locking once.
	locked   bool // this store holds the exclusive lock on f
	lockedAt time.Time
	lastUse  time.Time
	timer    *time.Timer
	armed    bool // timer is set to fire

	// What the file holds, as far as this store has read and written it.
	last   string
	ids    idSet
	count  int
	fold   InfoFold // the entries, folded for the listing
	header Header
	loaded bool
	// lines counts the file's lines up to where the next one goes (size
	// and what is pending), and marks where the latest entries end, for
	// LoadTail.
	lines int
	marks marks

	// What the listing shows is out of date since an append at updated.
	changed bool
	updated time.Time // guarded by the store's mu too
}

// idSet holds the ids of a session's entries as 64-bit hashes: a quarter
// of the memory of the strings, for a store that only asks whether an id
// is taken. Two ids with one hash (about one chance in 10^10 for a
// session of a million entries) would make an append of the second fail
// with ErrConflict, which a Session answers by retrying with new ids.
//
// A session opened through its path index (filestore_loadpath.go) keeps
// the index's sorted hashes as base and adds the ids appended since.
type idSet struct {
	m    map[uint64]struct{} // hashID
	base hashTable           // the ids of a path index, by stableIDHash (filestore_pathindex.go)
}

func newIDSet(n int) idSet { return idSet{m: make(map[uint64]struct{}, n)} }

func (s idSet) add(e Entry) { s.m[e.idHash()] = struct{}{} }

func (s idSet) has(e Entry) bool {
	if _, ok := s.m[e.idHash()]; ok {
		return true
	}
	if len(s.base.raw)+len(s.base.refs) == 0 {
		return false
	}
	_, ok := s.base.find(stableIDHash(e.id))
	return ok
}

// file returns the state of session id, finding its file if needed.
//
// Each entry point of the store (Load, Append, Flush ...) then takes
// fsess.mu itself, its defer beside it, and checks the latched error: the
// same few lines in each, on purpose, rather than a helper that returns
// holding the lock, so that a reader and the lock check see every lock
// and its release in the one function.
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
		if !ok {
			// A long id's file whose header could not be read: it is
			// this session's if its name is, and Load says what is wrong.
			if rel, ok = s.unread[names.FileStem(id)]; ok {
				s.paths[id] = rel
			}
		}
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

// follow looks for the session's file again when it is not where the
// store knew it (another process archived it, or brought it back), and
// reports whether it is elsewhere now, fsess.rel set there. Callers hold
// fsess.mu.
func (s *FileStore) follow(fsess *fileSession) bool {
	if filepath.IsAbs(fsess.rel) || s.fileOnly || s.scan(false) != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rel, ok := s.paths[fsess.id]
	if !ok || rel == fsess.rel {
		return false
	}
	fsess.rel = rel
	return true
}

// ensureOpen opens the session's file if it is not open.
func (s *FileStore) ensureOpen(fsess *fileSession) error {
	if fsess.f != nil {
		return nil
	}
	f, err := s.openRel(fsess.rel)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = s.openMoved(fsess) // moved (archived or brought back) elsewhere, or gone
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.forget(fsess)
			return fmt.Errorf("%w: session %s (%s is gone)", ErrNotFound, fsess.id, s.path(fsess.rel))
		}
		return s.ioErr(fsess, "open", err)
	}
	_, ino, _, err := fileState(f)
	if err != nil {
		f.Close()
		return s.ioErr(fsess, "stat", err)
	}
	// What the store knows of the file still holds if it is the same
	// file: what others appended is learned at the next lock.
	if ino != fsess.ino || ino == 0 {
		fsess.loaded = false
		// Another file under the name: durable if this store put it there.
		fsess.nameDurable = fsess.nameDurable && ino == fsess.ownIno && ino != 0
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

// CloseSession implements SessionCloser: it lets the file of a session
// go, after writing what is pending; Session.Close calls it. What the store knows of the session
// stays, so that other handles go on where they were.
func (s *FileStore) CloseSession(id string) error {
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
		if fsess.flight.done != nil {
			<-fsess.flight.done // dropped, but not left writing to a closed file
		}
		fsess.flight = nil
	}
	fsess.pending = fsess.pending[:0]
}

// reset makes fsess describe the file read as log, which ends as end says.
func (fsess *fileSession) reset(log *Log, end fileEnd) {
	fsess.size, fsess.cut, fsess.needNL = goodEnd(end, log.Torn != nil)
	fsess.compressed = end.compressed
	fsess.ids = newIDSet(len(log.Entries))
	fsess.fold = InfoFold{}
	for _, e := range log.Entries {
		fsess.ids.add(e)
		fsess.fold.Add(e)
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

// appended notes entries, whose lines were just written or gathered.
func (fsess *fileSession) appended(entries []Entry) {
	for _, e := range entries {
		fsess.ids.add(e)
		fsess.fold.Add(e)
	}
	fsess.count += len(entries)
	fsess.last = entries[len(entries)-1].id
	fsess.lines += len(entries)
	fsess.mark()
}

// Write lease timings: the lock is let go after leaseIdle without an
// append, and at the first append after leaseMax, so that other processes
// wait at most about that long.
const (
	leaseIdle = time.Millisecond
	leaseMax  = 10 * time.Millisecond
)

// lockAtName takes the exclusive lock on the session's file and checks
// that the session's name still leads to it: a file another store
// replaced (its link count is 0) or moved (into the archive or out of
// it) meanwhile is let go, and the one at the name, or where the session
// went, is locked instead. A session file's name changes only under its
// lock (moves, rewrites, compression), so the name holds for as long as
// the lock is held: who holds it may replace or move the file by name.
// Callers hold fsess.mu.
func (s *FileStore) lockAtName(ctx context.Context, fsess *fileSession) error {
	for attempt := 0; ; attempt++ {
		if err := s.ensureOpen(fsess); err != nil {
			return err
		}
		if err := s.acquire(ctx, fsess); err != nil {
			return err
		}
		if filepath.IsAbs(fsess.rel) || s.fileOnly {
			return nil
		}
		_, _, nlink, err := fileState(fsess.f)
		if err != nil {
			return errors.Join(s.ioErr(fsess, "stat", err), s.release(fsess))
		}
		here, gone := s.atName(fsess)
		if nlink > 0 && here {
			return nil
		}
		if nlink > 0 && gone && s.follow(fsess) {
			// Moved before the lock was taken: found where it went, and
			// kept locked, since a name changes only under the lock.
			if here, gone = s.atName(fsess); here {
				return nil
			}
		}
		if attempt >= 5 {
			_ = s.release(fsess)
			return fmt.Errorf("%w: %s keeps being moved or replaced by another writer", ErrConflict, s.path(fsess.rel))
		}
		if nlink > 0 {
			// Moved by a store that does not take the lock (an older
			// version): what this store gathered under its lease belongs
			// to this file, wherever it is now.
			if err := s.writePending(fsess); err != nil {
				return err
			}
		}
		s.closeFile(fsess) // lets the lock go
		if gone {
			s.follow(fsess) // moved: find where to
		}
	}
}

// atName reports whether the session's name leads to its open file
// (here), and whether it leads nowhere (gone). os.SameFile, unlike
// identity, tells files apart on every system.
func (s *FileStore) atName(fsess *fileSession) (here, gone bool) {
	a, err := fsess.f.Stat()
	if err != nil {
		return false, false
	}
	b, err := s.r.Lstat(fsess.rel)
	if err != nil {
		return false, errors.Is(err, fs.ErrNotExist)
	}
	return os.SameFile(a, b), false
}

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
	// The idle timer has nothing left to do: stopped, it costs no
	// goroutine wake-up (a turn's Flush lets the lease go every turn).
	// If it fired already, expire finds the lock gone.
	if fsess.armed && fsess.timer.Stop() {
		fsess.armed = false
	}
	return err
}

// lockToRead makes the file safe to read: under this store's own write
// lease it is already (what is pending is written first, for the read to
// see it); otherwise a shared lock is taken, for the caller to let go.
// held says which. Callers hold fsess.mu and have the file open.
func (s *FileStore) lockToRead(ctx context.Context, fsess *fileSession) (held bool, err error) {
	if fsess.locked {
		return true, s.writePending(fsess)
	}
	if err := lockFile(ctx, fsess.f, false); err != nil {
		return false, s.lockErr(fsess, err)
	}
	return false, nil
}

// keep holds the lock after an append for the next one, until the idle
// timer lets it go; past leaseMax, or with SyncEveryAppend, it lets go
// at once.
func (s *FileStore) keep(fsess *fileSession) error {
	now := time.Now()
	if s.opts.Sync.syncsEachAppend() || now.Sub(fsess.lockedAt) > leaseMax {
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
