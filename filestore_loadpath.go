package session

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/agentsession/session/internal/jsonx"
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
		s.savePathIndex(id, x)
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

// readPath reads, from the log in f that x describes, the header and the
// entries an open by path holds, each checked against x.
func (x *pathIndex) readPath(f io.ReaderAt, id string, lim Limits) (*PathLog, error) {
	n := int32(int(x.count()))
	if n == 0 {
		return nil, errNoIndex
	}
	hdr := make([]byte, x.hdrEnd)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return nil, err
	}
	p := (&ReadOptions{Limits: lim}).parser()
	if err := p.headerLine(hdr[:len(hdr)-1]); err != nil || p.mig != nil || p.header.ID != id {
		return nil, errNoIndex
	}
	// The records are checked as the walks reach them (get): a record
	// in range and consistent, each link to a shallower one, so that
	// every walk ends whatever the index holds.
	bad := false
	get := func(i int32) pathRec {
		r, ok := x.get(i)
		bad = bad || !ok
		return r
	}
	last := n - 1
	leaf := last
	if r := get(last); r.flags&prMarker != 0 {
		leaf = r.parent
	}
	if bad {
		return nil, errNoIndex
	}
	if leaf < 0 {
		return nil, errNoPath // a reset: nothing to save by reading a path
	}
	// Up from the leaf to the latest compaction.
	var path []int32 // leaf first
	comp := int32(-1)
	for i, r := leaf, get(leaf); !bad; {
		path = append(path, i)
		if r.kind == kindCompaction {
			comp = i
			break
		}
		if r.parent < 0 {
			break
		}
		pr := get(r.parent)
		bad = bad || pr.depth != r.depth-1
		i, r = r.parent, pr
	}
	if bad {
		return nil, errNoIndex
	}
	if comp < 0 {
		return nil, errNoPath
	}
	ce, err := x.readEntry(f, comp, &p)
	if err != nil {
		return nil, err
	}
	var cp Compaction
	ce.payload(&cp)
	start := comp
	if cp.FirstKeptEntryID != "" {
		want := stableIDHash(cp.FirstKeptEntryID)
		cr := get(comp)
		if k, ok := x.lookup(want); ok {
			if kr := get(k); !bad && kr.idh == want && kr.depth >= 0 && kr.depth < cr.depth {
				// The kept entries, if k is on the path (else none are).
				var kept []int32
				i := cr.parent
				for d := cr.depth - 1; i >= 0 && d > kr.depth && !bad; d-- {
					r := get(i)
					bad = bad || r.depth != d
					kept = append(kept, i)
					i = r.parent
				}
				if i == k {
					start = k
					path = append(append(path, kept...), k)
				}
			}
		}
	}
	slices.Reverse(path) // root side first: path[0] is start
	// Before the start: its settings and latest named assistant message.
	var before []int32
	sr := get(start)
	for i, d := sr.set, sr.depth; i >= 0 && !bad; {
		r := get(i)
		bad = bad || r.depth < 0 || r.depth >= d
		before = append(before, i)
		i, d = r.set, r.depth
	}
	asst := sr.asst
	if asst >= 0 {
		r := get(asst)
		bad = bad || r.depth < 0 || r.depth >= sr.depth
		before = append(before, asst)
	}
	if bad || !x.ancestorsAgree(sr, before, asst) {
		return nil, errNoIndex
	}
	slices.SortFunc(before, func(a, b int32) int { return int(x.rec(a).depth - x.rec(b).depth) })
	chain := append(before, path...)
	entries, err := x.readEntries(f, chain, &p)
	if err != nil {
		return nil, err
	}
	// The chain's links as the index says: each path entry the child of
	// the one before it, each entry before the start an ancestor; and
	// the assistant message before it names its model.
	for k, i := range chain {
		if i == asst && entryFlags(entries[k])&prAssistant == 0 {
			return nil, errNoIndex
		}
		r := x.rec(i)
		e := entries[k]
		if r.parent >= 0 {
			if pr, ok := x.get(r.parent); !ok || stableIDHash(e.parent) != pr.idh {
				return nil, errNoIndex
			}
		} else if e.parent != "" {
			if _, ok := x.lookup(stableIDHash(e.parent)); ok {
				return nil, errNoIndex
			}
		}
	}
	lastID := entries[len(entries)-1].id
	if chain[len(chain)-1] != last {
		// The last line (a leaf marker, or the end of another branch):
		// its parent is the one its record names.
		le, err := x.readEntry(f, last, &p)
		if err != nil {
			return nil, err
		}
		lr := x.rec(last)
		if lr.parent >= 0 && stableIDHash(le.parent) != x.rec(lr.parent).idh || lr.parent < 0 && le.parent != "" {
			return nil, errNoIndex
		}
		lastID = le.id
	}
	// The records account for every line: after the last one's line,
	// only blank ones up to what the index covers.
	if lr := x.rec(last); !blankAfter(f, lr.off+int64(lr.n), x.covered) {
		return nil, errNoIndex
	}
	pl := &PathLog{Log: &Log{Header: p.header}, Last: lastID, Complete: int(n) == len(chain)}
	pl.Log.Entries = entries
	return pl, nil
}

// ancestorsAgree checks the records before the start that the open
// takes from the start's links (its nearest setting, theirs, and the
// nearest assistant naming a model, asst) against a walk up from the
// start: they must be the records with those flags the walk meets. The
// walk reads records, no lines: cheap, though it goes to the root.
func (x *pathIndex) ancestorsAgree(start pathRec, before []int32, asst int32) bool {
	want := before
	if asst >= 0 {
		want = before[:len(before)-1]
	}
	n := x.count()
	nraw := int32(len(x.raw) / pathRecSize)
	le := binary.LittleEndian
	firstAsst := int32(-1)
	k := 0 // the next of want to meet
	for i, d := start.parent, start.depth-1; i >= 0; d-- {
		if i >= n {
			return false
		}
		// The fields the walk needs, straight from the stored bytes (a
		// walk to the root of a long history reads many records).
		var parent, depth int32
		var flags uint8
		if i < nraw {
			r := x.raw[int(i)*pathRecSize:]
			parent, depth, flags = int32(le.Uint32(r[12:])), int32(le.Uint32(r[28:])), r[25]
		} else {
			r := x.more[i-nraw]
			parent, depth, flags = r.parent, r.depth, r.flags
		}
		if depth != d || parent < -1 || parent >= n {
			return false
		}
		if flags&prSetting != 0 {
			if k >= len(want) || want[k] != i {
				return false
			}
			k++
		}
		if flags&prAssistant != 0 && firstAsst < 0 {
			firstAsst = i
		}
		i = parent
	}
	return firstAsst == asst && k == len(want)
}

// blankAfter reports whether the bytes of f between from and to are
// blank lines only (at most a few KiB of them).
func blankAfter(f io.ReaderAt, from, to int64) bool {
	if to-from > 64<<10 || from > to {
		return false
	}
	buf := make([]byte, to-from)
	if _, err := f.ReadAt(buf, from); err != nil && !(errors.Is(err, io.EOF) && len(buf) == 0) {
		return false
	}
	return len(bytes.TrimSpace(buf)) == 0
}

// readEntry reads and checks the entry of record i.
func (x *pathIndex) readEntry(f io.ReaderAt, i int32, p *logParser) (Entry, error) {
	es, err := x.readEntries(f, []int32{i}, p)
	if err != nil {
		return Entry{}, err
	}
	return es[0], nil
}

// readEntries reads the entries of records idx (in that order), the
// lines near each other in one read, each checked against its record.
// A long chain's lines are read and parsed on several cores (a resume's
// cost is mostly this), each worker through a buffer of its own that it
// reuses: what an entry keeps is copied to the worker's arena.
func (x *pathIndex) readEntries(f io.ReaderAt, idx []int32, p *logParser) ([]Entry, error) {
	// order: positions in idx, by offset in the file.
	order := make([]int32, len(idx))
	recs := make([]pathRec, len(idx))
	var total int64
	for k := range order {
		order[k] = int32(k)
		recs[k] = x.rec(idx[k])
		if int64(recs[k].n) > p.lim.MaxLineBytes {
			return nil, errNoIndex // a whole read says what it does with it
		}
		total += int64(recs[k].n)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(recs[a].off, recs[b].off) })
	out := make([]Entry, len(idx))
	block := int(min(max(total/16, 4<<10), 256<<10))
	// read parses the entries at order[from:to].
	read := func(p *logParser, from, to int) error {
		// As the whole reader does: a message entry is read in one pass,
		// its message decoded (compactLine), the others the general way.
		arena := jsonx.Arena{Block: block}
		var spans []jsonx.Span
		var buf []byte
		const gap, most = 64 << 10, 1 << 20
		for k := from; k < to; {
			r0 := &recs[order[k]]
			start, end := r0.off, r0.off+int64(r0.n)
			j := k + 1
			for ; j < to; j++ {
				r := &recs[order[j]]
				if r.off > end+gap || r.off+int64(r.n)-start > most {
					break
				}
				end = max(end, r.off+int64(r.n))
			}
			if int64(cap(buf)) < end-start {
				buf = make([]byte, end-start)
			}
			buf = buf[:end-start]
			if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			for _, pos := range order[k:j] {
				r := &recs[pos]
				// The buffer is this read's own: a line's marker is cut
				// in place (the index vouches that its append is whole).
				line := cutMarkInPlace(buf[r.off-start : r.off-start+int64(r.n)])
				e, ok := compactLine(line, &arena, &spans)
				if ok {
					p.line++
				} else {
					var err error
					if e, ok, err = p.entryLine(line, true); err != nil || !ok {
						return errNoIndex
					}
					e = compactEntry(e, &arena)
				}
				if stableIDHash(e.id) != r.idh || e.kind != r.kind || kindFlags(e) != r.flags&^prAssistant {
					return errNoIndex
				}
				// Whether a message names its model matters to the open
				// for the one before the path it reads (asst): that one
				// is decoded and checked there, the others are not.
				out[pos] = e
			}
			k = j
		}
		if len(p.malformed)+len(p.zeroed)+len(p.partial) > 0 || p.torn != nil {
			return errNoIndex
		}
		return nil
	}
	workers := min(runtime.GOMAXPROCS(0), 4, int(total/(1<<20))+1)
	if workers <= 1 {
		if err := read(p, 0, len(order)); err != nil {
			return nil, err
		}
		return out, nil
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	per := (len(order) + workers - 1) / workers
	for w := range workers {
		from, to := w*per, min(len(order), (w+1)*per)
		wg.Go(func() {
			wp := &logParser{strict: p.strict, lim: p.lim, gotHeader: true, header: p.header}
			errs[w] = read(wp, from, to)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, err := range errs {
			if err != nil && !errors.Is(err, errNoIndex) {
				return nil, err
			}
		}
		return nil, errNoIndex
	}
	return out, nil
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
			pi, ok := x.lookup(ph)
			if !ok {
				pi, ok = newIDs[ph]
			}
			if !ok || x.rec(pi).depth < 0 {
				return errIrregular // a missing parent may yet come: the tree decides
			}
			r.parent = pi
			r.depth = x.rec(pi).depth + 1
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
	key, sig := fmt.Sprintf("%p/%s", s, id), [2]int64{int64(ino), size}
	if v, ok := unindexable.Load(key); ok && v == sig {
		return // found to get none, and not changed since
	}
	x, err := buildPathIndex(f, size, ino, s.lim)
	if errors.Is(err, errIrregular) {
		unindexable.Store(key, sig)
	}
	if err != nil {
		return
	}
	unindexable.Delete(key)
	s.savePathIndex(id, x)
}

// unindexable holds, by store and session, the file (inode and size) a
// build found to get no index (errIrregular), so that every open of it
// does not read it again in the background.
var unindexable sync.Map

// savePathIndex writes x as the index of session id (best effort: an
// index is a cache).
func (s *FileStore) savePathIndex(id string, x *pathIndex) {
	data, err := x.encode()
	if err != nil {
		return
	}
	if err := mkdirIn(s.r, pathIndexDir); err != nil && !errors.Is(err, os.ErrExist) {
		return
	}
	_, _ = writeAtomic(s.r, s.pathIndexName(id), data, true, false, 0o600)
}
