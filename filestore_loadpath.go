package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A FileStore opens a session by its path (pathload.go) through its path
// index (filestore_pathindex.go): it reads the index, checks it against
// the file, extends it over what was appended since, walks it from the
// last entry to the start of the context, and reads those lines only,
// each checked to be the entry the index says. Without a usable index it
// reads the whole file, as Load does, and builds the index in the
// background for the next open.

var _ PathLoader = (*FileStore)(nil)

// pathIndexMin is the size of log below which no index is kept: a
// short session reads whole as fast. Tests set it to 0.
var pathIndexMin int64 = 1 << 20

// pathIndexRewrite: an index extended by more than this share of its
// entries (or this many bytes of log) is written again.
const (
	pathIndexRewriteShare = 8 // one eighth
	pathIndexRewriteBytes = 8 << 20
)

// pathIndexAnyIno lets an index describe a copy of its file: the
// crash-state checker materializes each state in new files.
var pathIndexAnyIno = false

// errNoIndex: the open goes the whole way, and builds the index again
// (there is none, or it no longer describes the file). errNoPath: the
// open goes the whole way, the index is right (the leaf's path has no
// compaction to start from: the path is the history).
var (
	errNoIndex = errors.New("session: no usable path index")
	errNoPath  = errors.New("session: the path is the whole history")
)

// LoadPath implements PathLoader.
func (s *FileStore) LoadPath(ctx context.Context, id string) (*PathLog, error) {
	if !s.opts.Strict && !s.fileOnly {
		pl, err := s.loadByIndex(ctx, id)
		switch {
		case err == nil:
			return pl, nil
		case errors.Is(err, errNoPath):
			log, err := s.Load(ctx, id)
			if err != nil {
				return nil, err
			}
			return &PathLog{Log: log, Complete: true, Last: lastID(log.Entries)}, nil
		case !errors.Is(err, errNoIndex):
			return nil, err
		}
	}
	log, err := s.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	if hasKind(log.Entries, kindCompaction) {
		// Without a compaction every path starts at the root: an index
		// would save the next open nothing, and its build would cost
		// this one a second read of the file.
		s.indexLater(id)
	}
	return &PathLog{Log: log, Complete: true, Last: lastID(log.Entries)}, nil
}

// hasKind reports whether an entry of kind k is among entries.
func hasKind(entries []Entry, k entryKind) bool {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].kind == k {
			return true
		}
	}
	return false
}

// loadByIndex is LoadPath through the index; errNoIndex when there is
// none to use.
func (s *FileStore) loadByIndex(ctx context.Context, id string) (*PathLog, error) {
	x := s.readPathIndex(id)
	if x == nil {
		return nil, errNoIndex
	}
	defer x.close()
	fsess, err := s.file(id)
	if err != nil {
		return nil, errNoIndex // Load says what is wrong
	}
	if err := lockCtx(ctx, &fsess.mu); err != nil {
		return nil, err
	}
	defer fsess.mu.Unlock()
	if fsess.err != nil {
		return nil, fsess.err
	}
	if filepath.IsAbs(fsess.rel) || isArchived(fsess.rel) {
		return nil, errNoIndex
	}
	if err := s.ensureOpen(fsess); err != nil {
		return nil, err
	}
	held, err := s.lockToRead(ctx, fsess)
	if err != nil {
		return nil, err
	}
	if !held {
		defer unlockFile(fsess.f)
	}
	size, ino, nlink, err := fileState(fsess.f)
	if err != nil || nlink == 0 || (ino != x.ino && !pathIndexAnyIno) || size < x.covered {
		return nil, errNoIndex
	}
	if sum, err := tailSum(fsess.f, x.hdrEnd, x.covered); err != nil || sum != x.tail {
		return nil, errNoIndex
	}
	// This store's limits hold for an open by path as for a whole read
	// (which reports them): the index may come from a store with others.
	// A log over them is read whole (a line over MaxLineBytes anywhere
	// changes the tree a whole read builds: it skips the line).
	overLimits := func() bool {
		return size > s.lim.MaxLogBytes || x.lines-1 > s.lim.MaxEntries || x.longest > s.lim.MaxLineBytes
	}
	if overLimits() {
		return nil, errNoPath
	}
	grown := size - x.covered
	extended := int(x.count())
	if grown > 0 {
		if err := x.extend(fsess.f, size, s.lim); err != nil {
			return nil, errNoIndex
		}
		if overLimits() {
			return nil, errNoPath
		}
	}
	if grown > pathIndexRewriteBytes || int(x.count())-extended > max(extended/pathIndexRewriteShare, 64) {
		_ = s.savePathIndex(id, x) // over the bound, the older index is extended at each open
	}
	pl, err := x.readPath(fsess.f, id, s.lim)
	if errors.Is(err, errNoPath) {
		return nil, err
	}
	if err != nil {
		return nil, errNoIndex
	}
	fsess.resetFromIndex(x, pl)
	if held {
		fsess.lastUse = time.Now()
	}
	return pl, nil
}

// extend adds to x the entries of the log in f between x.covered and
// size (another writer's, or this store's since the index was written).
// What the tree would read otherwise than the index can say (a
// duplicate id, a parent not before its child, a line a reader skips)
// is an error: the index is then built again.
func (x *pathIndex) extend(f io.ReaderAt, size int64, lim Limits) error {
	p := (&ReadOptions{Limits: lim}).parser()
	p.line, p.gotHeader = x.lines, true
	base := int32(int(x.count()))
	var added []hashRef
	var stripped []Entry
	newIDs := map[uint64]int32{}
	err := eachLine(f, x.covered, size, p.lim.MaxLineBytes, func(off int64, line []byte, nl bool) error {
		if !nl || refsIn(line) != refsNone {
			return errIrregular
		}
		x.longest = max(x.longest, int64(len(line)))
		e, ok, err := p.entryLine(line, true)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		h := stableIDHash(e.id)
		if _, dup := x.lookup(h); dup {
			return errIrregular
		}
		if _, dup := newIDs[h]; dup {
			return errIrregular
		}
		i := base + int32(len(added))
		r := pathRec{off: off, n: uint32(len(line)), parent: -1, set: -1, asst: -1, kind: e.kind, flags: entryFlags(e), idh: h}
		if e.parent != "" {
			ph := stableIDHash(e.parent)
			// A record of the index is checked (get) before its depth and
			// links are taken; one this extend added is its own.
			var pr pathRec
			pi, ok := x.lookup(ph)
			if ok {
				pr, ok = x.get(pi)
				ok = ok && pr.idh == ph
			} else if pi, ok = newIDs[ph]; ok {
				pr = x.rec(pi)
			}
			if !ok || pr.depth < 0 {
				return errIrregular // a missing parent may yet come: the tree decides
			}
			r.parent = pi
			r.depth = pr.depth + 1
			x.inherit(&r, pi)
		}
		x.more = append(x.more, r)
		stripped = append(stripped, strippedEntry(e))
		x.fold.Add(e)
		newIDs[h] = i
		added = append(added, hashRef{h: h, i: i})
		return nil
	})
	if err != nil {
		return err
	}
	if x.bad {
		return errNoIndex
	}
	if len(p.malformed)+len(p.partial)+len(p.zeroed) > 0 || p.torn != nil || cutAppends(stripped, p.marked) {
		return errIrregular
	}
	x.lines = p.line
	x.covered = size
	if x.tail, err = tailSum(f, x.hdrEnd, size); err != nil {
		return err
	}
	slices.SortFunc(added, cmpHashRef)
	x.ids.add(added)
	return nil
}

func cmpHashRef(a, b hashRef) int {
	switch {
	case a.h < b.h:
		return -1
	case a.h > b.h:
		return 1
	}
	return 0
}

// mergeHashRefs merges two sorted lists.
func mergeHashRefs(a, b []hashRef) []hashRef {
	out := make([]hashRef, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].h < b[0].h {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// resetFromIndex makes fsess describe the file x describes, from which
// pl was read.
func (fsess *fileSession) resetFromIndex(x *pathIndex, pl *PathLog) {
	fsess.size, fsess.cut, fsess.needNL = x.covered, false, false
	fsess.compressed = false
	fsess.ids = idSet{m: map[uint64]struct{}{}, base: x.ids}
	fsess.fold = x.fold
	fsess.count = int(x.count())
	fsess.last = pl.Last
	fsess.header = pl.Log.Header.Clone()
	fsess.loaded = true
	fsess.lines = x.lines
	fsess.marks.reset()
	fsess.mark()
	fsess.dirtyFrom, fsess.othersAfter = -1, false
}

// indexing holds the ids whose index is being built.
var indexing sync.Map

// indexLater builds the index of session id in the background, if its
// file is long enough to want one and none is being built.
func (s *FileStore) indexLater(id string) {
	if s.opts.Strict || s.fileOnly {
		return
	}
	s.mu.Lock()
	rel, ok := s.paths[id]
	if fsess := s.sessions[id]; fsess != nil {
		rel, ok = fsess.rel, true
	}
	closed := s.closed
	s.mu.Unlock()
	if !ok || closed || filepath.IsAbs(rel) || isArchived(rel) {
		return
	}
	key := fmt.Sprintf("%p/%s", s, id)
	if _, busy := indexing.LoadOrStore(key, true); busy {
		return
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer indexing.Delete(key)
		// The build reads the file again: it waits for the open that
		// asked for it to be done with its own work (the context it
		// builds next, on every core), or for Close, which waits for it.
		select {
		case <-time.After(pathIndexDelay):
		case <-s.closing:
		}
		s.buildIndex(id, rel)
	}()
}

// pathIndexDelay is how long after a whole read its index build starts.
// Tests set it to 0.
var pathIndexDelay = time.Second

// buildIndex builds and saves the index of the session file at rel.
func (s *FileStore) buildIndex(id, rel string) {
	f, err := s.r.Open(rel)
	if err != nil {
		return
	}
	defer f.Close()
	size, ino, _, err := fileState(f)
	if err != nil || size < pathIndexMin {
		return
	}
	key, sig := fmt.Sprintf("%p/%s", s, id), noIndex{int64(ino), size, false}
	if v, ok := unindexable.Load(key); ok {
		if was := v.(noIndex); was == sig || was.tooLong && was.ino == sig.ino && size >= was.size {
			return // found to get none, and not changed since (or only grown, for a log too long)
		}
	}
	pathIndexBuilds.Add(1)
	x, err := buildPathIndex(f, size, ino, s.lim)
	if errors.Is(err, errIrregular) {
		unindexable.Store(key, sig)
	}
	if err != nil {
		return
	}
	unindexable.Delete(key)
	if !s.savePathIndex(id, x) {
		sig.tooLong = true
		unindexable.Store(key, sig)
	}
}

// unindexable holds, by store and session, the file a build found to
// get no index (errIrregular), so that every open of it does not read it
// again in the background; or whose index would be over
// maxPathIndexBytes, which stays so while the file only grows.
var unindexable sync.Map

// pathIndexBuilds counts builds, for tests.
var pathIndexBuilds atomic.Int64

// forgetUnindexable drops what unindexable holds for store s, when it
// closes (another store may later get its address).
func forgetUnindexable(s *FileStore) {
	prefix := fmt.Sprintf("%p/", s)
	unindexable.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), prefix) {
			unindexable.Delete(k)
		}
		return true
	})
}

// noIndex is the file an index was not made for: its inode and size.
type noIndex struct {
	ino, size int64
	tooLong   bool // the index would be over maxPathIndexBytes
}

// savePathIndex writes x as the index of session id (best effort: an
// index is a cache); false if the index is over maxPathIndexBytes and
// not written.
func (s *FileStore) savePathIndex(id string, x *pathIndex) bool {
	data, err := x.encode()
	if err != nil {
		return true
	}
	if int64(len(data)) > maxPathIndexBytes {
		return false
	}
	if err := mkdirIn(s.r, pathIndexDir); err != nil && !errors.Is(err, os.ErrExist) {
		return true
	}
	_, _ = writeAtomic(s.r, s.pathIndexName(id), data, true, false, 0o600)
	return true
}
