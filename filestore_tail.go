package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// LoadTail and the marks it reads from.
//
// A handle that lost a race to another writer needs only what that
// writer appended. The store remembers, for the latest entries it wrote
// or read, where the line after each ends up in the file (a mark), so a
// handle that knows the log up to one of them reads from there to the
// end: a retry costs what is new, whatever the size of the session. A
// handle further behind than the marks go back, or whose file was
// replaced, reads the whole file, as Load does.

var (
	_ TailLoader   = (*FileStore)(nil)
	_ EntryCreator = (*FileStore)(nil)
)

// mark says where the lines after the first n entries of a file start:
// at byte off, line number line+1.
type mark struct {
	n    int
	last string // the id of the n-th entry
	off  int64
	line int
}

// marksKept is how many marks a session keeps: enough for handles that
// take turns writing one session to find theirs.
const marksKept = 128

// marks is a ring of the latest marks.
type marks struct {
	ring [marksKept]mark
	next int // where the next mark goes
	full bool
}

func (m *marks) reset() { m.next, m.full = 0, false }

func (m *marks) push(x mark) {
	m.ring[m.next] = x
	m.next++
	if m.next == marksKept {
		m.next, m.full = 0, true
	}
}

// find returns the mark after the n-th entry, if it is still kept.
func (m *marks) find(n int, last string) (mark, bool) {
	k := m.next
	if m.full {
		k = marksKept
	}
	for i := range k {
		x := m.ring[(m.next-1-i+marksKept)%marksKept] // newest first
		if x.n == n && x.last == last {
			return x, true
		}
		if x.n < n {
			break // older marks have fewer entries
		}
	}
	return mark{}, false
}

// mark records where the line after the entries known so far goes.
func (fsess *fileSession) mark() {
	off := fsess.size + fsess.unwritten()
	if fsess.needNL {
		off++ // the newline the last line lacks goes first
	}
	fsess.marks.push(mark{n: fsess.count, last: fsess.last, off: off, line: fsess.lines})
}

// LoadTail implements TailLoader: it reads the file from where the n-th
// entry ends, if the store still knows where that is (it remembers the
// latest entries written or read, and forgets it all when another
// process replaces the file), and the whole file otherwise.
func (s *FileStore) LoadTail(ctx context.Context, id string, n int, last string) (*Log, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n == 0 {
		if last != "" {
			return nil, fmt.Errorf("%w: LoadTail of 0 entries after %s", ErrConflict, last)
		}
		return s.Load(ctx, id)
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
		return nil, fsess.err
	}
	if err := s.ensureOpen(fsess); err != nil {
		return nil, err
	}
	if fsess.loaded {
		log, ok, err := s.readTail(ctx, fsess, n, last)
		if err != nil || ok {
			return log, err
		}
	}
	log, err := s.load(ctx, fsess)
	if err != nil {
		return nil, err
	}
	return cutTail(log, n, last)
}

// findMark finds where the n-th entry of the file ends when the marks no
// longer go back that far: it reads the file backwards, a window at a
// time, until it has seen the entries after the n-th. Its cost grows
// with what came after that entry, not with the file. If the entry
// there is not last, the file does not start as the caller read it
// (ErrConflict). Callers hold the file lock, and have caught up.
func (s *FileStore) findMark(fsess *fileSession, n int, last string) (mark, error) {
	after := fsess.count - n // entries after the n-th
	if after < 0 || n <= 0 {
		return mark{}, fmt.Errorf("%w: the log holds %d entries, not the %d read", ErrConflict, fsess.count, n)
	}
	var found mark
	err := s.scanBack(fsess, func(ids []seenLine, lines int, whole bool) (bool, error) {
		k := len(ids) - after - 1
		if k < 0 {
			if whole {
				return true, fmt.Errorf("%w: the log holds %d entries, not the %d read", ErrConflict, len(ids), n)
			}
			return false, nil
		}
		if ids[k].e.id != last {
			return true, fmt.Errorf("%w: entry %d is no longer %s (the log was rewritten)", ErrConflict, n, last)
		}
		off := ids[k].end
		if after == 0 && fsess.needNL {
			off++ // past the newline the last line will get
		}
		found = mark{n: n, last: last, off: off, line: fsess.lines - (lines - ids[k].line)}
		return true, nil
	})
	return found, err
}

// scanBack reads the file backwards, a window at a time (doubling), and
// gives done the entries of the lines that start in the window, in
// order (those of appends a crash cut short left out), the number of
// lines there, and whether the window is the whole file, until done
// says it has seen enough. Callers hold the file lock.
func (s *FileStore) scanBack(fsess *fileSession, done func(ids []seenLine, lines int, whole bool) (bool, error)) error {
	end := fsess.size
	for w := int64(64 << 10); ; w *= 2 {
		lo := max(end-w, 0)
		buf := make([]byte, end-lo)
		if k, err := fsess.f.ReadAt(buf, lo); err != nil && !(errors.Is(err, io.EOF) && k == len(buf)) {
			return s.ioErr(fsess, "read", err)
		}
		// The entries of the lines that start in the window, from the
		// first of the file (the header) or the first after a newline.
		var got []seenLine
		pos := 0
		if lo > 0 {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				continue // one line longer than the window
			}
			pos = i + 1
		} else if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			pos = i + 1 // the header
		} else {
			pos = len(buf)
		}
		lines := 0
		p := s.parser(false)
		p.gotHeader = true
		for pos < len(buf) {
			line := buf[pos:]
			next := len(buf)
			if i := bytes.IndexByte(line, '\n'); i >= 0 {
				line, next = line[:i], pos+i+1
			}
			lines++
			if e, ok, _ := p.entryLine(line, true); ok {
				got = append(got, seenLine{e: e, end: lo + int64(next), line: lines})
			}
			pos = next
		}
		// The entries of appends a crash cut short do not count.
		keep := kept(got, p.marked)
		ids := got[:0]
		for k, g := range got {
			if keep[k] {
				ids = append(ids, g)
			}
		}
		if stop, err := done(ids, lines, lo == 0); stop || err != nil {
			return err
		}
		if lo == 0 {
			return nil
		}
	}
}

// storedAs reports whether the entries whose lines (as this store writes
// them) are lines are all in the file, each line the same bytes: an
// append of them is the retry of one that happened (retry.go). It reads
// the file backwards until it has found them, which for a retry is near
// the end. Callers hold the write lock and have caught up.
func (s *FileStore) storedAs(fsess *fileSession, lines [][]byte, entries []Entry) (bool, error) {
	if err := s.writePending(fsess); err != nil {
		return false, err
	}
	want := make(map[string][]byte, len(entries))
	for k, e := range entries {
		want[e.id] = lines[k]
	}
	same := false
	err := s.scanBack(fsess, func(ids []seenLine, _ int, whole bool) (bool, error) {
		seen := 0
		for _, g := range ids {
			if b, ok := want[g.e.id]; ok {
				if !bytes.Equal(g.e.bytes(), b) {
					return true, nil // stored, as other bytes
				}
				seen++
			}
		}
		same = seen >= len(want)
		return same || whole, nil
	})
	return same, err
}

// readTail reads the lines after the mark of the n-th entry, under the
// file lock; ok is false when there is no such mark (or the file was
// replaced), for the caller to read the whole file. Callers hold
// fsess.mu and have the file open.
func (s *FileStore) readTail(ctx context.Context, fsess *fileSession, n int, last string) (*Log, bool, error) {
	held, err := s.lockToRead(ctx, fsess)
	if err != nil {
		return nil, false, err
	}
	if held {
		fsess.lastUse = time.Now()
	} else {
		defer unlockFile(fsess.f)
	}
	if replaced, err := s.catchUp(ctx, fsess); err != nil || replaced || fsess.compressed {
		return nil, false, err // read whole, as Load does
	}
	// The limits of a Load hold for what a tail read learns too.
	if fsess.size > s.lim.MaxLogBytes {
		return nil, false, &LimitError{Path: s.path(fsess.rel), What: "log", Size: fsess.size, Limit: s.lim.MaxLogBytes}
	}
	if n := fsess.lines - 1; n > s.lim.MaxEntries {
		return nil, false, &LimitError{Path: s.path(fsess.rel), What: "entries", Size: int64(n), Limit: int64(s.lim.MaxEntries)}
	}
	m, ok := fsess.marks.find(n, last)
	if !ok {
		var err error
		if m, err = s.findMark(fsess, n, last); err != nil {
			return nil, false, err
		}
	}
	end := fsess.size
	var data []byte
	if end > m.off {
		data = make([]byte, end-m.off)
		if k, err := fsess.f.ReadAt(data, m.off); err != nil && !(errors.Is(err, io.EOF) && k == len(data)) {
			return nil, false, s.ioErr(fsess, "read", err)
		}
	}
	raw := data
	p := s.parser(true)
	p.line, p.gotHeader, p.header = m.line, true, fsess.header.Clone()
	var entries []Entry
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		e, ok, err := p.entryLine(line, true)
		if err != nil {
			return nil, false, WithPath(err, s.path(fsess.rel))
		}
		if ok {
			entries = append(entries, e)
		}
	}
	log := p.finish(p.resolve(entries))
	if fsess.cut {
		log.Torn = &LineError{Line: p.line + 1, Err: errors.New("torn line: cut short by a crash")}
	}
	if err := s.resolveBlobs(ctx, log, raw); err != nil {
		return nil, false, err
	}
	return log, true, nil
}
