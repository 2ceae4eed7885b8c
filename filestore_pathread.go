package session

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/agentsession/session/internal/jsonx"
)

// Reading a session's path through its path index (filestore_loadpath.go
// decides when): the walk from the leaf to the start of the context, the
// records it reaches checked as it goes, the path's lines read and parsed
// on every core, each checked against its record, and the checks that
// the index accounts for the file (the last line, the ancestors before
// the start).

// readPath reads, from the log in f that x describes, the header and the
// entries an open by path holds, each checked against x.
func (x *pathIndex) readPath(f io.ReaderAt, id string, lim Limits) (*PathLog, error) {
	n := x.count()
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
			kr := get(k)
			bad = bad || kr.idh != want // the table names another record
			if !bad && kr.depth >= 0 && kr.depth < cr.depth {
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
	if x.bad {
		return nil, errNoIndex // a block of records failed its checksum
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
	firstAsst := int32(-1)
	k := 0 // the next of want to meet
	// Parents come before their children (get), so the walk ends; it
	// must take as many steps as the start's depth says, and the records
	// it takes from it (settings, the assistant message) have the depth
	// of where it meets them.
	for i, d := start.parent, start.depth-1; i >= 0; d-- {
		if i >= n || d < 0 {
			return false
		}
		parent, flags := x.walkAt(i)
		if parent >= i || parent < -1 || parent == -1 && d != 0 {
			return false
		}
		if flags&prSetting != 0 {
			if k >= len(want) || want[k] != i || x.rec(i).depth != d {
				return false
			}
			k++
		}
		if flags&prAssistant != 0 && firstAsst < 0 {
			if x.rec(i).depth != d {
				return false
			}
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
