package session

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"slices"
)

// The path index: what a FileStore keeps beside a session's log so that
// an open reads the current path alone (pathload.go), not the history.
//
// It is a cache, never the truth: the log is. It lives in
// <root>/.pathindex/<id stem>.idx, is written atomically and never
// synced (lost or torn by a crash, it fails its checksum and is built
// again), and holds, for each entry of the log, where its line is, its
// parent (as the tree reads the log: duplicates, cycles and missing
// parents resolved), its kind, its id's hash, and the nearest ancestors
// an open needs before the path it reads (the latest setting, the latest
// assistant message naming a model); and the sorted id hashes, so an
// append can tell an id is taken without the ids; and what a listing
// folds (InfoFold), the header's end and the count of lines.
//
// An index describes a prefix of the file: the file of inode ino up to
// covered, whose last 4 KiB sum to tail. An open checks all three; a
// file that grew since is read from covered on and the index extended;
// anything else (another inode, a shorter file, another tail) and the
// index is not used. Nor is it trusted for what it says of the lines an
// open reads: each is parsed and must be the entry the index names (id,
// parent, kind), or the open reads the whole file instead. Logs an open
// by path would not read the same as a whole read (lines a reader skips
// or repairs, blob references, an older format) get no index.

// pathIndexDir is the directory of path indexes under a store's root.
const pathIndexDir = ".pathindex"

const (
	pathIndexMagic   = "ASPATHX1"
	pathIndexTail    = 4 << 10 // bytes of the log the tail sum covers
	pathRecSize      = 40
	pathIndexHdrSize = 64
)

// Record flags.
const (
	prSetting   uint8 = 1 << iota // a setting the context reads from anywhere on the path
	prAssistant                   // an assistant message naming its provider or model
	prMarker                      // a leaf marker
)

// pathRec is one entry of an index, in log order.
type pathRec struct {
	off    int64  // the line's offset
	n      uint32 // its length, without the newline
	parent int32  // the tree's parent, -1 for a root
	set    int32  // the nearest strict ancestor with prSetting, -1 if none
	asst   int32  // the nearest strict ancestor with prAssistant, -1 if none
	depth  int32  // on its path from the root; -1 when a later line has its id
	kind   entryKind
	flags  uint8
	idh    uint64
}

// hashRef is an id hash and its record, sorted by hash.
type hashRef struct {
	h uint64
	i int32
}

// pathIndex is a path index in memory.
type pathIndex struct {
	ino     uint64
	covered int64  // bytes of the log it describes (whole lines)
	tail    uint32 // CRC-32C of the pathIndexTail bytes before covered
	hdrEnd  int64  // where the first line after the header starts
	lines   int    // lines after the header, up to covered
	fold    InfoFold
	recs    []pathRec
	byHash  []hashRef
}

// errIrregular: the log holds something an open by path would read
// otherwise than a whole read; it gets no index.
var errIrregular = errors.New("session: the log cannot be opened by its path")

// tailSum is the CRC-32C of the pathIndexTail bytes of f before end.
func tailSum(f io.ReaderAt, from, end int64) (uint32, error) {
	start := max(from, end-pathIndexTail)
	buf := make([]byte, end-start)
	if _, err := f.ReadAt(buf, start); err != nil && !(errors.Is(err, io.EOF) && len(buf) == 0) {
		return 0, err
	}
	return crc32.Checksum(buf, castagnoli), nil
}

// lookup returns the record of id hash h.
func (x *pathIndex) lookup(h uint64) (int32, bool) {
	k, ok := slices.BinarySearchFunc(x.byHash, hashRef{h: h}, cmpHashRef)
	if !ok {
		return -1, false
	}
	return x.byHash[k].i, true
}

// encode returns the index's bytes.
func (x *pathIndex) encode() ([]byte, error) {
	fold, err := json.Marshal(x.fold)
	if err != nil {
		return nil, err
	}
	n := len(x.recs)
	buf := make([]byte, pathIndexHdrSize, pathIndexHdrSize+n*pathRecSize+n*12+len(fold)+4)
	le := binary.LittleEndian
	copy(buf, pathIndexMagic)
	le.PutUint64(buf[8:], x.ino)
	le.PutUint64(buf[16:], uint64(x.covered))
	le.PutUint32(buf[24:], x.tail)
	le.PutUint64(buf[28:], uint64(x.hdrEnd))
	le.PutUint32(buf[36:], uint32(x.lines))
	le.PutUint32(buf[40:], uint32(n))
	le.PutUint32(buf[44:], uint32(len(fold)))
	var r [pathRecSize]byte
	for _, p := range x.recs {
		le.PutUint64(r[0:], uint64(p.off))
		le.PutUint32(r[8:], p.n)
		le.PutUint32(r[12:], uint32(p.parent))
		le.PutUint32(r[16:], uint32(p.set))
		le.PutUint32(r[20:], uint32(p.asst))
		r[24], r[25] = byte(p.kind), p.flags
		le.PutUint32(r[28:], uint32(p.depth))
		le.PutUint64(r[32:], p.idh)
		buf = append(buf, r[:]...)
	}
	for _, h := range x.byHash {
		buf = le.AppendUint64(buf, h.h)
		buf = le.AppendUint32(buf, uint32(h.i))
	}
	buf = append(buf, fold...)
	return le.AppendUint32(buf, crc32.Checksum(buf, castagnoli)), nil
}

// decodePathIndex reads an index's bytes; any damage is an error.
func decodePathIndex(b []byte) (*pathIndex, error) {
	bad := func(what string) (*pathIndex, error) {
		return nil, fmt.Errorf("session: path index: %s", what)
	}
	le := binary.LittleEndian
	if len(b) < pathIndexHdrSize+4 || string(b[:8]) != pathIndexMagic {
		return bad("not an index of this version")
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != le.Uint32(b[len(b)-4:]) {
		return bad("checksum")
	}
	x := &pathIndex{
		ino: le.Uint64(b[8:]), covered: int64(le.Uint64(b[16:])), tail: le.Uint32(b[24:]),
		hdrEnd: int64(le.Uint64(b[28:])), lines: int(le.Uint32(b[36:])),
	}
	n, nf := uint64(le.Uint32(b[40:])), uint64(le.Uint32(b[44:]))
	if uint64(len(body)) != pathIndexHdrSize+n*(pathRecSize+12)+nf {
		return bad("size")
	}
	if x.covered < x.hdrEnd || x.hdrEnd <= 0 {
		return bad("bounds")
	}
	p := body[pathIndexHdrSize:]
	x.recs = make([]pathRec, n)
	for i := range x.recs {
		r := p[i*pathRecSize:]
		x.recs[i] = pathRec{
			off: int64(le.Uint64(r[0:])), n: le.Uint32(r[8:]),
			parent: int32(le.Uint32(r[12:])), set: int32(le.Uint32(r[16:])), asst: int32(le.Uint32(r[20:])),
			depth: int32(le.Uint32(r[28:])), kind: entryKind(r[24]), flags: r[25], idh: le.Uint64(r[32:]),
		}
		rec := &x.recs[i]
		// A parent and the ancestors named come before in the path, and
		// the line lies inside what the index covers.
		for _, a := range []int32{rec.parent, rec.set, rec.asst} {
			if a < -1 || int64(a) >= int64(n) {
				return bad("record links")
			}
		}
		if rec.off < x.hdrEnd || rec.off+int64(rec.n) >= x.covered+1 {
			return bad("record bounds")
		}
	}
	// Links go to shallower records, so that every walk ends.
	for i := range x.recs {
		r := &x.recs[i]
		if r.depth < -1 || (r.depth == -1 && r.parent != -1) {
			return bad("record depth")
		}
		if r.parent >= 0 && x.recs[r.parent].depth != r.depth-1 {
			return bad("record parent depth")
		}
		if r.parent < 0 && r.depth > 0 {
			return bad("record root depth")
		}
		for _, a := range []int32{r.set, r.asst} {
			if a >= 0 && (x.recs[a].depth < 0 || x.recs[a].depth >= r.depth) {
				return bad("record ancestor depth")
			}
		}
	}
	p = p[n*pathRecSize:]
	x.byHash = make([]hashRef, n)
	for i := range x.byHash {
		x.byHash[i] = hashRef{h: le.Uint64(p[i*12:]), i: int32(le.Uint32(p[i*12+8:]))}
		if x.byHash[i].i < 0 || uint64(x.byHash[i].i) >= n || (i > 0 && x.byHash[i-1].h >= x.byHash[i].h) {
			return bad("hashes")
		}
	}
	if err := json.Unmarshal(p[n*12:], &x.fold); err != nil {
		return bad("fold")
	}
	return x, nil
}

// indexLine is what the builder keeps of one entry.
type indexLine struct {
	off int64
	n   uint32
}

// buildPathIndex reads the log in f (size bytes, inode ino) and returns
// its index, or errIrregular for a log that gets none.
func buildPathIndex(f io.ReaderAt, size int64, ino uint64, lim Limits) (*pathIndex, error) {
	p := (&ReadOptions{Limits: lim}).parser()
	x := &pathIndex{ino: ino}
	var (
		entries []Entry
		places  []indexLine
		flags   []uint8
	)
	err := eachLine(f, 0, size, p.lim.MaxLineBytes, func(off int64, line []byte, nl bool) error {
		if !nl {
			return errIrregular // torn, or lacking its newline
		}
		if !p.gotHeader {
			if err := p.headerLine(line); err != nil || p.mig != nil {
				return errIrregular
			}
			x.hdrEnd = off + int64(len(line)) + 1
			return nil
		}
		if refsIn(line) != refsNone {
			return errIrregular // blob references are resolved by a whole read
		}
		e, ok, err := p.entryLine(line, true)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		fl := entryFlags(e)
		x.fold.Add(e)
		entries = append(entries, strippedEntry(e))
		places = append(places, indexLine{off: off, n: uint32(len(line))})
		flags = append(flags, fl)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !p.gotHeader || len(p.malformed)+len(p.partial)+len(p.zeroed) > 0 || p.torn != nil || cutAppends(entries, p.marked) {
		return nil, errIrregular
	}
	x.covered, x.lines = size, p.line
	if x.tail, err = tailSum(f, x.hdrEnd, size); err != nil {
		return nil, err
	}
	t := newTree(entries)
	for i := range t.nodes {
		if t.nodes[i].flags&fMissingParent != 0 {
			// A root only until an entry of that id is appended: the
			// tree then links it, and an extended index could not say so
			// (extend refuses such an append for the same reason).
			return nil, errIrregular
		}
	}
	x.recs = make([]pathRec, len(entries))
	for i := range t.nodes {
		x.recs[i] = pathRec{off: places[i].off, n: places[i].n, parent: t.nodes[i].parent, set: -1, asst: -1,
			depth: t.nodes[i].depth, kind: entries[i].kind, flags: flags[i], idh: entries[i].idHash()}
	}
	// The ancestors, parents first: by depth.
	order := make([]int32, 0, len(t.nodes))
	for i := range t.nodes {
		if t.nodes[i].depth >= 0 {
			order = append(order, int32(i))
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int { return int(t.nodes[a].depth - t.nodes[b].depth) })
	for _, i := range order {
		r := &x.recs[i]
		if r.parent >= 0 {
			x.inherit(r, r.parent)
		}
	}
	x.byHash = make([]hashRef, 0, len(entries))
	for i, r := range x.recs {
		x.byHash = append(x.byHash, hashRef{h: r.idh, i: int32(i)})
	}
	slices.SortFunc(x.byHash, cmpHashRef)
	for i := 1; i < len(x.byHash); i++ {
		if x.byHash[i].h == x.byHash[i-1].h {
			return nil, errIrregular // a duplicate id (or two ids of one hash)
		}
	}
	return x, nil
}

// cutAppends reports whether the marked lines among entries hold an
// append a crash cut short (its lines are then no entries: a whole read
// reports them in Log.Partial).
func cutAppends(entries []Entry, marked []markAt) bool {
	if len(marked) == 0 {
		return false
	}
	_, cut := groups(entries, marksOf(len(entries), marked))
	return len(cut) > 0
}

// inherit sets r's nearest ancestors from its parent p (r need not be in
// x.recs yet).
func (x *pathIndex) inherit(r *pathRec, p int32) {
	pr := &x.recs[p]
	r.set, r.asst = pr.set, pr.asst
	if pr.flags&prSetting != 0 {
		r.set = p
	}
	if pr.flags&prAssistant != 0 {
		r.asst = p
	}
}

// entryFlags returns the record flags of e.
func entryFlags(e Entry) uint8 {
	fl := kindFlags(e)
	if e.kind == kindMessage && messageRole(e) == RoleAssistant {
		// As assistantModel reads it: the decoded message.
		if m, err := e.Message(); err == nil && m.Role == RoleAssistant && (m.Provider != "" || m.Model != "") {
			fl |= prAssistant
		}
	}
	return fl
}

// kindFlags returns the record flags of e but prAssistant, which take
// no decoding.
func kindFlags(e Entry) uint8 {
	var fl uint8
	if carriedSetting(e.kind) {
		fl |= prSetting
	}
	if e.kind == kindCustom && isLeafMarker(e) {
		fl |= prMarker
	}
	return fl
}

// strippedEntry is what the tree needs of e to link it: its envelope,
// and the bytes of an entry whose payload the tree reads (a label, a
// custom entry), copied from the reader's buffer.
func strippedEntry(e Entry) Entry {
	s := Entry{typ: cloneStr(e.typ), id: cloneStr(e.id), parent: cloneStr(e.parent), kind: e.kind}
	if e.kind == kindLabel || e.kind == kindCustom {
		s.raw = bytes.Clone(e.bytes())
	}
	return s
}

func cloneStr(s string) string { return string([]byte(s)) }

// eachLine calls fn with each line of f between from and end (without
// its newline; nl says it had one), reading in blocks. A line longer
// than maxLine is an error.
func eachLine(f io.ReaderAt, from, end, maxLine int64, fn func(off int64, line []byte, nl bool) error) error {
	const block = 1 << 20
	buf := make([]byte, 0, block)
	off := from // file offset of buf[0]
	pos := from // next byte to read
	for {
		if pos < end {
			if cap(buf)-len(buf) < block/2 {
				buf = slices.Grow(buf, block)
			}
			m := min(int64(cap(buf)-len(buf)), end-pos)
			k, err := f.ReadAt(buf[len(buf):len(buf)+int(m)], pos)
			if k < int(m) {
				if err == nil {
					err = io.ErrUnexpectedEOF
				}
				return err
			}
			buf = buf[:len(buf)+k]
			pos += int64(k)
		}
		start := 0
		for {
			i := bytes.IndexByte(buf[start:], '\n')
			if i < 0 {
				break
			}
			if err := fn(off+int64(start), buf[start:start+i], true); err != nil {
				return err
			}
			start += i + 1
		}
		if pos >= end {
			if start < len(buf) {
				return fn(off+int64(start), buf[start:], false)
			}
			return nil
		}
		if int64(len(buf)-start) > maxLine {
			return errIrregular // a line over the limit: a whole read reports it
		}
		// Keep the unfinished line at the start of the buffer.
		n := copy(buf, buf[start:])
		buf = buf[:n]
		off += int64(start)
	}
}

// readPathIndex reads the index of the session file at rel in the
// store's tree; nil when there is none or it is damaged.
func (s *FileStore) readPathIndex(id string) *pathIndex {
	f, fi, err := openRegularStat(s.r, s.pathIndexName(id))
	if err != nil {
		return nil
	}
	defer f.Close()
	// One read of the size the stat gives (io.ReadAll would grow its
	// buffer by doubling: twice the index in garbage on every open).
	if fi.Size() > maxIndexBytes {
		return nil
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil
	}
	x, err := decodePathIndex(data)
	if err != nil {
		return nil
	}
	return x
}

// pathIndexName is the index's name under the root.
func (s *FileStore) pathIndexName(id string) string {
	return filepath.Join(pathIndexDir, idFileName(id))
}
