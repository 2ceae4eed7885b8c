package session

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// The watcher behind FileStore.Subscribe: its goroutine, the tail
// cursors of the session files and what they publish (see the comment at
// the top of filestore_watch.go).

// watcher follows the files of a store's root; see the comment at the
// top of filestore_watch.go.
type watcher struct {
	s    *FileStore
	fsw  *fsnotify.Watcher // nil: polling
	poll time.Duration
	stop chan struct{}
	done chan struct{}
	kick chan struct{} // a nudge: look at dirty now

	mu      sync.Mutex
	dirty   map[string]struct{} // paths (relative to the root) to look at
	all     bool                // look at every file (polling, or a lost notice)
	own     map[ownKey]struct{}
	ops     []ownOp         // this store's moves and deletes, in order
	waiters []chan struct{} // settle calls waiting for the next look

	// The loop's own.
	cursors    map[string]*cursor   // by session id
	compacting map[string]time.Time // the compaction marks, by session id
}

// cursor is where the watcher is in one session file.
type cursor struct {
	rel   string
	ino   uint64
	size  int64 // the size when last looked at
	off   int64 // where the next line starts
	lines int   // lines counted after the header, up to off
	count int   // entries counted; -1 when not known
	// header is the header line while the file has no entry: a file
	// replaced by one that starts with it is the first append.
	header []byte
}

// newWatcher makes the watcher of s, its cursors at the end of every
// file: what is in the files now is not reported.
func newWatcher(s *FileStore) *watcher {
	w := &watcher{s: s, poll: s.opts.PollInterval, stop: make(chan struct{}), done: make(chan struct{}),
		kick: make(chan struct{}, 1), dirty: map[string]struct{}{}, own: map[ownKey]struct{}{}, cursors: map[string]*cursor{},
		compacting: map[string]time.Time{}}
	for id, t := range s.compactingMarks() {
		w.compacting[id] = t
	}
	if w.poll <= 0 {
		w.poll = DefaultPollInterval
	}
	if !s.opts.PollOnly {
		if fsw, err := fsnotify.NewWatcher(); err == nil {
			w.fsw = fsw
		}
	}
	if w.fsw != nil {
		if err := w.fsw.Add(s.root); err != nil {
			w.fsw.Close()
			w.fsw = nil // polling, then
		}
	}
	for _, rel := range w.walk(true) {
		if id := s.idOfRel(rel); id != "" {
			if _, dup := w.cursors[id]; !dup || !isArchived(rel) {
				w.cursors[id] = w.atEnd(rel)
			}
		}
	}
	return w
}

// walk returns the session files of the tree (relative to the root), the
// directories watched on the way when add is set.
func (w *watcher) walk(add bool) []string {
	var files []string
	if add {
		w.watchDir(compactingDir)
	}
	for _, top := range []string{".", archiveDir} {
		dirs, err := readDirNames(w.s.r, top)
		if err != nil {
			continue
		}
		if top == archiveDir && add {
			w.watchDir(archiveDir)
		}
		for _, d := range dirs {
			if w.s.flat {
				if isSessionFile(d, true) {
					files = append(files, filepath.Join(top, d))
				}
				continue
			}
			if !layoutDir(d) {
				continue
			}
			dir := filepath.Join(top, d)
			if add {
				w.watchDir(dir)
			}
			names, err := readDirNames(w.s.r, dir)
			if err != nil {
				continue
			}
			for _, n := range names {
				if isSessionFile(n, false) {
					files = append(files, filepath.Join(dir, n))
				}
			}
		}
	}
	return files
}

// layoutDir reports whether a directory name is a --<cwd>-- one.
func layoutDir(name string) bool {
	return len(name) >= 4 && strings.HasPrefix(name, "--") && strings.HasSuffix(name, "--")
}

func (w *watcher) watchDir(rel string) {
	if w.fsw != nil {
		_ = w.fsw.Add(filepath.Join(w.s.root, rel)) // gone meanwhile: nothing to watch
	}
}

// poke marks rels to look at and wakes the loop.
func (w *watcher) poke(rels ...string) {
	w.mu.Lock()
	for _, rel := range rels {
		w.dirty[rel] = struct{}{}
	}
	w.mu.Unlock()
	w.wake()
}

func (w *watcher) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *watcher) run() {
	defer close(w.done)
	var (
		events <-chan fsnotify.Event
		errs   <-chan error
		tick   <-chan time.Time
	)
	if w.fsw != nil {
		events, errs = w.fsw.Events, w.fsw.Errors
	} else {
		t := time.NewTicker(w.poll)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-w.stop:
			return
		case <-w.kick:
		case ev, ok := <-events:
			if !ok {
				return
			}
			w.event(ev)
			// Take what else came, for one look at each file.
			for more := true; more; {
				select {
				case ev, ok := <-events:
					if !ok {
						return
					}
					w.event(ev)
				default:
					more = false
				}
			}
		case err, ok := <-errs:
			if !ok {
				return
			}
			w.s.hub.Publish(Change{Kind: ChangeError, Time: time.Now(), Err: fmt.Errorf("session: watching %s: %w", w.s.root, err), Remote: true})
			w.mu.Lock()
			w.all = true // notices may be lost: look at everything
			w.mu.Unlock()
		case <-tick:
			w.mu.Lock()
			w.all = true
			w.mu.Unlock()
		}
		w.process()
	}
}

// event takes one notice of fsnotify.
func (w *watcher) event(ev fsnotify.Event) {
	rel, err := filepath.Rel(w.s.root, ev.Name)
	if err != nil || !filepath.IsLocal(rel) {
		return
	}
	base := filepath.Base(rel)
	parts := strings.Split(rel, string(filepath.Separator))
	if len(parts) == 2 && parts[0] == compactingDir {
		w.poke(rel)
		return
	}
	inLayout := (len(parts) == 1 && (layoutDir(base) && !w.s.flat || base == archiveDir || base == compactingDir)) ||
		(len(parts) == 2 && parts[0] == archiveDir && layoutDir(base) && !w.s.flat)
	if inLayout {
		// A directory came or went: watch it, and look at its files
		// (some may have come before the watch did).
		if ev.Has(fsnotify.Create) {
			w.mu.Lock()
			w.all = true
			w.mu.Unlock()
			w.walk(true)
		} else if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			w.mu.Lock()
			w.all = true
			w.mu.Unlock()
		}
		return
	}
	if w.s.isOwnFile(base) {
		w.poke(rel)
	}
}

// process looks at the files marked dirty, or at every file.
func (w *watcher) process() {
	w.mu.Lock()
	dirty, all, ops, waiters := w.dirty, w.all, w.ops, w.waiters
	w.dirty, w.all, w.ops, w.waiters = map[string]struct{}{}, false, nil, nil
	w.mu.Unlock()
	defer func() {
		for _, c := range waiters {
			close(c)
		}
	}()
	for _, op := range ops {
		w.apply(op)
	}
	if all {
		for _, rel := range w.walk(w.fsw != nil) {
			dirty[rel] = struct{}{}
		}
		for _, c := range w.cursors {
			dirty[c.rel] = struct{}{} // gone, perhaps
		}
		names, _ := readDirNames(w.s.r, compactingDir)
		for _, n := range names {
			dirty[filepath.Join(compactingDir, n)] = struct{}{}
		}
		for id := range w.compacting {
			dirty[compactingRel(id)] = struct{}{} // cleared, perhaps
		}
	}
	for rel := range dirty {
		select {
		case <-w.stop:
			return
		default:
		}
		w.look(rel)
	}
}

// apply reports a move or a delete of this store's, unless the watcher
// saw it already.
func (w *watcher) apply(op ownOp) {
	c := w.cursors[op.id]
	if op.kind == ChangeCompacting {
		if w.compacting[op.id].Equal(op.at) {
			return // seen
		}
		w.setCompacting(op.id, op.at)
		w.publish(op.id, Change{Kind: ChangeCompacting, Session: op.id, Time: time.Now(), Compacting: op.at})
		return
	}
	if op.kind == ChangeDeleted {
		if c == nil {
			return // seen
		}
		delete(w.cursors, op.id)
	} else {
		if c != nil && c.rel == op.to {
			return // seen
		}
		if c == nil {
			c = w.atEnd(op.to)
			w.cursors[op.id] = c
		}
		c.rel = op.to
	}
	w.publish(op.id, Change{Kind: op.kind, Session: op.id, Time: time.Now()})
}

// look finds what became of the session file (or compaction mark) rel.
func (w *watcher) look(rel string) {
	if filepath.Dir(rel) == compactingDir {
		id := w.s.compactingID(filepath.Base(rel))
		for known := range w.compacting {
			if id == "" && compactingRel(known) == rel {
				id = known // a long id's mark, removed
			}
		}
		if id != "" {
			w.lookCompacting(id)
		}
		return
	}
	id := w.s.idOfRel(rel)
	for known, c := range w.cursors {
		if id == "" && c.rel == rel && w.s.isOwnFile(filepath.Base(rel)) {
			id = known // a long id's file, gone
		}
	}
	if id == "" {
		return
	}
	c := w.cursors[id]
	fi, err := w.s.r.Stat(rel)
	if err != nil {
		if c == nil || c.rel != rel {
			return // not the file the cursor follows
		}
		other := archiveDir + string(filepath.Separator) + rel
		if isArchived(rel) {
			other = strings.TrimPrefix(rel, archiveDir+string(filepath.Separator))
		}
		if _, err := w.s.r.Stat(other); err == nil {
			w.moved(id, c, other)
			return
		}
		delete(w.cursors, id)
		w.publish(id, Change{Kind: ChangeDeleted, Session: id, Time: time.Now()})
		return
	}
	if fi.IsDir() {
		return
	}
	switch {
	case c == nil:
		c = &cursor{rel: rel}
		w.cursors[id] = c
		w.publish(id, Change{Kind: ChangeCreated, Session: id, Time: time.Now()})
	case c.rel != rel:
		if _, err := w.s.r.Stat(c.rel); err == nil {
			return // a second file of the id: the store reads the other
		}
		w.moved(id, c, rel)
		return
	}
	w.tail(id, c)
}

// lookCompacting reports a change of session id's compaction mark.
func (w *watcher) lookCompacting(id string) {
	at := w.s.readCompacting(id)
	if w.compacting[id].Equal(at) {
		return
	}
	w.setCompacting(id, at)
	w.publish(id, Change{Kind: ChangeCompacting, Session: id, Time: time.Now(), Compacting: at})
}

func (w *watcher) setCompacting(id string, at time.Time) {
	if at.IsZero() {
		delete(w.compacting, id)
		return
	}
	w.compacting[id] = at
}

// moved reports the file of c moved to rel (into or out of the archive)
// and reads what came with it.
func (w *watcher) moved(id string, c *cursor, rel string) {
	c.rel = rel
	kind := ChangeUnarchived
	if isArchived(rel) {
		kind = ChangeArchived
	}
	w.publish(id, Change{Kind: kind, Session: id, Time: time.Now()})
	w.tail(id, c)
}

// tail reads what was appended to the file of c since the cursor.
func (w *watcher) tail(id string, c *cursor) {
	f, err := openRegular(w.s.r, c.rel, os.O_RDONLY)
	if err != nil {
		return // gone meanwhile: the next notice says where
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return
	}
	ino, _ := identity(fi)
	size := fi.Size()
	whole := false
	if c.ino != 0 && (ino != c.ino || size < c.off) {
		// Another file at the name, or a shorter one.
		if c.count == 0 && c.header != nil && ino != c.ino && bytes.Equal(headerLine(f, w.s.lim), c.header) {
			c.ino = ino // the first append of several entries, written whole
			whole = true
		} else {
			w.publish(id, Change{Kind: ChangeRewritten, Session: id, Time: time.Now()})
			*c = *w.atEnd(c.rel)
			return
		}
	}
	c.ino, c.size = ino, size
	if size == c.off {
		return
	}
	if c.off == 0 {
		c.header = headerLine(f, w.s.lim)
	}
	// The appends, each reported as ChangesOf does, Remote unless this
	// store marked its entries as its own. The lines of a first append
	// of several entries, written whole, carry no marks: what comes with
	// them is taken as that one append (another append that came before
	// the watcher looked joins it).
	var runs [][]Entry
	n := 0
	end, lines, _ := scanAppends(f, c.off, size, c.lines, w.s.lim, func(run []Entry) {
		if whole && len(runs) > 0 {
			runs[0] = append(runs[0], run...)
		} else {
			runs = append(runs, slices.Clone(run))
		}
		n += len(run)
	})
	c.off, c.lines = end, lines
	if n == 0 {
		return
	}
	if c.count >= 0 {
		c.count += n
	}
	c.header = nil
	now := time.Now()
	own := make([]bool, len(runs))
	w.mu.Lock()
	for i, run := range runs {
		for _, e := range run {
			k := ownKey{id, e.id}
			if _, ok := w.own[k]; ok {
				own[i] = true
				delete(w.own, k)
			}
		}
	}
	w.mu.Unlock()
	for i, run := range runs {
		cs := ChangesOf(id, run, now)
		for k := range cs {
			cs[k].Remote = !own[i]
		}
		w.s.hub.Publish(cs...)
	}
}

// publish publishes c, Remote unless this store marked it as its own.
func (w *watcher) publish(id string, c Change) {
	k := ownKey{id, string(c.Kind)}
	w.mu.Lock()
	_, own := w.own[k]
	delete(w.own, k)
	w.mu.Unlock()
	c.Remote = !own
	w.s.hub.Publish(c)
}

// atEnd returns a cursor at the end of the file rel: after its last
// whole line, the entries counted when the file is small enough to read.
func (w *watcher) atEnd(rel string) *cursor {
	c := &cursor{rel: rel, count: -1}
	f, err := openRegular(w.s.r, rel, os.O_RDONLY)
	if err != nil {
		return c
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return c
	}
	c.ino, _ = identity(fi)
	c.size = fi.Size()
	if isCompressedLog(f, c.size) {
		c.off = c.size // a compressed archived log: it never grows
		return c
	}
	if c.size <= smallFile {
		n := 0
		end, lines, ok := scanAppends(f, 0, c.size, 0, w.s.lim, func(run []Entry) { n += len(run) })
		if ok {
			c.off, c.lines, c.count = end, lines, n
			if n == 0 {
				c.header = headerLine(f, w.s.lim)
			}
			return c
		}
	}
	c.off = lastLineEnd(f, c.size)
	return c
}

// smallFile is the size up to which the watcher reads a file whole to
// start following it.
const smallFile = 64 << 10

// headerLine returns the first line of f, without its newline (nil when
// it has no whole one).
func headerLine(f io.ReaderAt, lim Limits) []byte {
	r := bufio.NewReader(io.NewSectionReader(f, 0, lim.MaxLineBytes+1))
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		var b []byte
		b = append(b, line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = r.ReadSlice('\n')
			b = append(b, line...)
		}
		line = b
	}
	if err != nil {
		return nil
	}
	return bytes.Clone(line[:len(line)-1])
}

// lastLineEnd returns where the line after the last whole one of f
// (size bytes) starts: reading backwards, a window at a time.
func lastLineEnd(f io.ReaderAt, size int64) int64 {
	end := size
	buf := make([]byte, 64<<10)
	for end > 0 {
		lo := max(end-int64(len(buf)), 0)
		b := buf[:end-lo]
		if n, err := f.ReadAt(b, lo); err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
			return size
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return lo + int64(i) + 1
		}
		end = lo
	}
	return 0
}
