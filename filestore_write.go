package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The write path, in the order an append takes it: the sync policies and
// what each asks of the store; Append, which learns first what other
// processes appended (catchUp) and then writes or gathers the lines; the
// write of gathered lines in the background (a flight); Flush and the
// sync, and what a failed write or sync takes back and latches. It is
// one file, if a long one, because those steps call only one another and
// read best as the one path they are.

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

// What each policy asks of the store, in one place: the write path asks
// these, never which policy it is, so a new policy is a constant, its
// String and its answers here.

// gathers: appends are gathered in memory while the write lease is held
// and written when it ends (or once maxPending bytes have gathered);
// otherwise each is written before it returns.
func (p SyncPolicy) gathers() bool { return p == SyncNever }

// syncsEachAppend: each append is synced before it returns, and the
// write lease let go at once.
func (p SyncPolicy) syncsEachAppend() bool { return p == SyncEveryAppend }

// syncsAtFlush: Flush, and Close, sync what this store wrote.
func (p SyncPolicy) syncsAtFlush() bool { return p == SyncOnFlush }

// syncsBlobs: a blob is synced before the line that refers to it is
// written, for the line never to be durable without it.
func (p SyncPolicy) syncsBlobs() bool { return p != SyncNever }

// Append implements Store: one write of whole lines at the end of the
// file, under an exclusive file lock, after learning what other
// processes appended. A failed or short write is rolled back by
// truncating the file to its previous length, and the error is latched
// (ErrWriteFailed; see SyncPolicy): every later call on the session
// through this store returns it. ErrConflict also reports that another
// process replaced the file (a rewrite), so that Session handles reload.
func (s *FileStore) Append(ctx context.Context, id string, opts AppendOptions, entries ...Entry) (err error) {
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
	lines, cuts, err := s.storedLines(ctx, id, few[:0], entries)
	if err != nil {
		return err
	}
	if len(cuts) > 0 { // rare: no deferred call on the common path
		defer func() {
			if err == nil {
				s.reportCuts(cuts)
			}
		}()
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
	s.releaseWritten(lines...) // the pins of the blobs the entries refer to
	return s.keep(fsess)
}

// storedLines appends to lines the line of each entry as it goes to the
// file (see encodeAppend), without newlines; mostly the entry's own bytes.
// Strings cut are returned for the caller to report once the write has
// succeeded (see FileStoreOptions.OnTruncate); with RefuseTruncation, a
// cut is a *TruncationError instead.
func (s *FileStore) storedLines(ctx context.Context, id string, lines [][]byte, entries []Entry) ([][]byte, []Truncation, error) {
	return s.storedLinesKeep(ctx, id, lines, entries, nil)
}

// storedOnly returns, by index, the lines of the entries an append
// would not write as they are (strings over the size limit, images large
// enough for a blob; see sizeLimits.smallSized), as storedLines makes
// them, and what it cut. The others are written as they are.
func (s *FileStore) storedOnly(ctx context.Context, id string, entries []Entry) (map[int][]byte, []Truncation, error) {
	var stored map[int][]byte
	var cuts []Truncation
	for i, e := range entries {
		if s.limits.smallSized(e.Len(), e.raw, e.noImage) {
			continue
		}
		lines, c, err := s.storedLines(ctx, id, nil, entries[i:i+1])
		if err != nil {
			return nil, nil, err
		}
		if stored == nil {
			stored = map[int][]byte{}
		}
		stored[i], cuts = lines[0], append(cuts, c...)
	}
	return stored, cuts, nil
}

func (s *FileStore) storedLinesKeep(ctx context.Context, id string, lines [][]byte, entries []Entry, keep func(raw []byte) bool) ([][]byte, []Truncation, error) {
	var cuts []Truncation
	for _, e := range entries {
		line := e.bytes()
		if !s.limits.small(line, e.noImage) && (keep == nil || !keep(line)) {
			if s.opts.RefuseTruncation {
				// Look first, without blobs: a refused write stores nothing.
				dry := sizeLimits{maxChars: s.limits.maxChars, minBlob: -1}
				if _, n, err := dry.limit(ctx, line); err != nil {
					return nil, nil, err
				} else if n.strings > 0 {
					return nil, nil, &TruncationError{Truncation: Truncation{Session: id, EntryID: e.id, Strings: n.strings, Dropped: n.dropped}, Limit: s.limits.cutAt()}
				}
			}
			var err error
			var n cutCount
			if line, n, err = s.limits.limit(ctx, line); err != nil {
				return nil, nil, err
			}
			if n.strings > 0 {
				cuts = append(cuts, Truncation{Session: id, EntryID: e.id, Strings: n.strings, Dropped: n.dropped})
			}
		}
		lines = append(lines, line)
	}
	return lines, cuts, nil
}

// reportCuts tells the host what a write that succeeded cut.
func (s *FileStore) reportCuts(cuts []Truncation) {
	if s.opts.OnTruncate == nil {
		return
	}
	for _, c := range cuts {
		s.opts.OnTruncate(c)
	}
}

// lockForAppend takes the write lock and learns what others did, unless
// the lease is still held (then no one else can have written).
func (s *FileStore) lockForAppend(ctx context.Context, fsess *fileSession, opts AppendOptions) error {
	for attempt := 0; ; attempt++ {
		if fsess.isCompressed() {
			// A compressed archived session: written back plain and out
			// of the archive first. What it holds is what was read.
			if err := s.expandLocked(ctx, fsess, true); err != nil {
				return err
			}
		}
		if fsess.locked {
			return nil
		}
		if err := s.acquire(ctx, fsess); err != nil {
			return err
		}
		replaced, err := s.catchUp(ctx, fsess)
		if err != nil {
			return err
		}
		if !replaced && !fsess.isCompressed() {
			return nil
		}
		if !replaced {
			continue // compressed meanwhile by another process
		}
		// Another process replaced the file: it has been read again. A
		// conditional append was decided on the old one.
		if opts.IfLast != "" || opts.IfEmpty || attempt > 3 {
			return fmt.Errorf("%w: %s was rewritten by another writer", ErrConflict, s.path(fsess.rel))
		}
	}
}

// catchUp learns, under the file lock, what other processes did since
// this store last looked: appended lines are indexed; a replaced file is
// read again (replaced is then true and the lock is no longer held).
func (s *FileStore) catchUp(ctx context.Context, fsess *fileSession) (replaced bool, err error) {
	size, _, nlink, err := fileState(fsess.f)
	if err != nil {
		return false, s.ioErr(fsess, "stat", err)
	}
	if fsess.compressed && nlink > 0 {
		return false, nil // nothing is appended to a compressed file
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
		fsess.ids.add(g.e) // a cut append's ids too: never reused
		if keep[k] {
			fsess.fold.Add(g.e)
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

// appendLocked adds the lines (without their newlines) under the write lock: written at
// once (and, with SyncEveryAppend, synced), or with SyncNever gathered
// and written once enough have gathered or the lease ends.
func (s *FileStore) appendLocked(ctx context.Context, fsess *fileSession, opts AppendOptions, lines [][]byte, entries []Entry) error {
	done, err := retried(entries, fsess.ids.has, func() (bool, error) { return s.storedAs(fsess, lines, entries) })
	if err != nil {
		return err
	}
	if done {
		// The retry of an append that happened: its first attempt may
		// never have been synced (its process crashed first). What this
		// answer promises, the policy's sync makes true.
		fsess.syncWanted = true
		if s.opts.Sync.syncsEachAppend() {
			return s.syncOwn(fsess)
		}
		return nil
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
	s.markOwn(fsess.id, "", entries) // before the watcher can read them
	if len(lines) > 1 && fsess.count == 0 && fsess.lines == 1 && fsess.unwritten() == 0 && !fsess.cut && s.wholeAtName(fsess) {
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
	s.nudge(fsess.rel)
	return nil
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
	case !s.opts.Sync.gathers():
		// Written before the append returns: a crash of the process
		// loses nothing that returned.
		if err := s.writePending(fsess); err != nil {
			return err
		}
	case len(fsess.pending) >= maxPending:
		// Gathered appends (SyncNever) are written in the background
		// while the next ones are encoded.
		if err := s.land(fsess); err != nil {
			return err
		}
		s.launch(fsess)
	}
	if s.opts.Sync.syncsEachAppend() {
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
// wholeAtName reports whether the file can be replaced by name for a
// first append (appendWhole): its name still leads to it. A file another
// store moved meanwhile takes the lines at its end instead.
func (s *FileStore) wholeAtName(fsess *fileSession) bool {
	if filepath.IsAbs(fsess.rel) || s.fileOnly {
		return true
	}
	here, _ := s.atName(fsess)
	return here
}

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
	ino, err := s.writeNew(fsess.rel, data, nil, true)
	if err != nil {
		return fmt.Errorf("session: append to %s: %w", s.path(fsess.rel), err)
	}
	fsess.ownIno = ino
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
	s.start(fsess, false) // written here: waiting on another goroutine costs more than the write
	return s.land(fsess)
}

// flight is one write of pending lines.
type flight struct {
	done chan struct{} // closed when a background write ends; nil for one written in place
	buf  []byte
	err  error
}

// launch starts writing the pending lines in the background. There must
// be no flight under way.
func (s *FileStore) launch(fsess *fileSession) { s.start(fsess, true) }

// start writes the pending lines as a flight: on a goroutine of its own
// (background), or before it returns; land takes the result either way.
func (s *FileStore) start(fsess *fileSession, background bool) {
	fl := &flight{buf: fsess.pending}
	fsess.pending, fsess.spare = fsess.spare[:0], nil
	fsess.flight = fl
	f, off, cut := fsess.f, fsess.size, fsess.cut
	fsess.cut = false
	if !background {
		fl.write(f, off, cut)
		return
	}
	fl.done = make(chan struct{})
	go func() {
		defer close(fl.done)
		fl.write(f, off, cut)
	}()
}

// write writes the flight's lines at off in f, the torn line there cut
// off first (cut), and keeps the error.
func (fl *flight) write(f *os.File, off int64, cut bool) {
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
}

// land waits for the write under way, if any, and takes its outcome: the
// file grows, or on an error it is cut back and the error latched (with
// what was pending after it, lost too).
func (s *FileStore) land(fsess *fileSession) error {
	fl := fsess.flight
	if fl == nil {
		return nil
	}
	if fl.done != nil {
		<-fl.done
	}
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
		if err := s.ensureOpen(fsess); err != nil {
			return err // ErrNotFound for a deleted session
		}
		s.closeFile(fsess) // nothing of this store's to write or sync
		return nil
	}
	// The turn is over: write it, make it durable, let other writers in.
	if err := s.syncAndRelease(ctx, fsess); err != nil {
		return err
	}
	return s.checkNotDeleted(fsess)
}

// checkNotDeleted returns ErrNotFound when the file the session's handle
// holds open is no longer at any name of the store: another process
// deleted the session. Callers hold fsess.mu and have the file open.
func (s *FileStore) checkNotDeleted(fsess *fileSession) error {
	_, _, nlink, err := fileState(fsess.f)
	if err != nil || nlink > 0 {
		return nil
	}
	s.closeFile(fsess) // replaced by a rewrite, or deleted: look again
	return s.ensureOpen(fsess)
}

// syncAndRelease writes what is pending, syncs what this store wrote
// when the policy says so at Flush (SyncOnFlush), under the exclusive
// lock, and lets the lock go. Callers hold fsess.mu and have the file
// open.
func (s *FileStore) syncAndRelease(ctx context.Context, fsess *fileSession) error {
	if !s.opts.Sync.syncsAtFlush() || (fsess.dirtyFrom < 0 && !fsess.syncWanted && fsess.unwritten() == 0) {
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
	if fsess.dirtyFrom < 0 && !fsess.syncWanted {
		return nil
	}
	err := datasync(fsess.f)
	if err == nil {
		fsess.dirtyFrom, fsess.othersAfter, fsess.syncWanted = -1, false, false
		if err := s.makeNameDurable(fsess); err != nil {
			return s.latch(fsess, "sync the directory of", err)
		}
		return nil
	}
	fsess.syncWanted = false
	if fsess.dirtyFrom < 0 {
		return s.latch(fsess, "sync", err) // none of the lines are this store's to take back
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

// makeNameDurable makes the file's name durable, and its directory's, if
// this store does not know it to be: the file may have been linked or
// renamed into place by a call a crash stopped before it synced the
// directory. Once per file a store opens.
func (s *FileStore) makeNameDurable(fsess *fileSession) error {
	if fsess.nameDurable && mutant != "name-nosync" {
		return nil
	}
	dir := filepath.Dir(s.path(fsess.rel))
	if mutant != "name-nosync" {
		if err := syncFoundDir(dir); err != nil {
			return err
		}
	}
	top := s.root
	if filepath.IsAbs(fsess.rel) {
		top = dir // a file outside the tree: its directory is all the store knows
	}
	if err := entryDurable(dir, top); err != nil {
		return err
	}
	fsess.nameDurable = true
	return nil
}

// latch records a persistence error on the session and returns it.
func (s *FileStore) latch(fsess *fileSession, op string, err error) error {
	fsess.err = fmt.Errorf("%w: %w", ErrWriteFailed, s.ioErr(fsess, op, err))
	return fsess.err
}
