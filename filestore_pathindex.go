package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"slices"
	"sort"
)

// The path index: what a FileStore keeps beside a session's log so that
// an open reads the current path alone (pathload.go), not the history.
//
// It is a cache, never the truth: the log is. It lives in
// <root>/.pathindex/<id in hex>, is written atomically and never
// synced (lost or torn by a crash, it fails its checksum and is built
// again), and holds, for each entry of the log, where its line is, its
// parent (as the tree reads the log: duplicates, cycles and missing
// parents resolved), its kind, its id's hash (stableIDHash: the index is
// read by other processes), and the nearest ancestors
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
// parent, kind), or the open reads the whole file instead; and the
// records an open walks are checked as it reaches them (get), so that a
// forged index, its checksum made right, cannot make a walk loop or read
// outside the file; and the hash table must hold the records' hashes
// (readPathIndexAt), since "not there" is taken for "not in the log".
// What is believed without a check is the parent of each line the open
// does not read (the ancestors before the path it reads): an index
// forged consistently there gives another ancestry, as a forged log
// would. Logs an open by path would not read the same as a whole read
// (lines a reader skips or repairs, blob references, an older format)
// get no index.

// pathIndexDir is the directory of path indexes under a store's root.
const pathIndexDir = ".pathindex"

const (
	pathIndexMagic   = "ASPATHX4" // X1 held hashes seeded per process; X2 no longest line; X3 one checksum over every record
	pathIndexTail    = 4 << 10    // bytes of the log the tail sum covers
	pathRecSize      = 40
	pathWalkSize     = 13 // a record's parent, flags and id hash: the walk to the root, the hashes' check
	pathIndexHdrSize = 64
)

// pathRecBlock is the number of records in a block of an index file: a
// block is read, and its checksum checked, when an open first asks for
// one of its records. The file says its own (tests write small ones).
const pathRecBlock = 1024

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

// stableIDHash is the hash of an entry id that a path index holds. It
// is read by other processes than the one that wrote it, so it cannot be
// hashID (seeded per process); and an append is refused when its id's
// hash is in the index, so it must resist ids made to collide: the
// first 8 bytes of the id's SHA-256.
func stableIDHash(id string) uint64 {
	var b [64]byte
	var sum [sha256.Size]byte
	if len(id) <= len(b) {
		sum = sha256.Sum256(append(b[:0], id...))
	} else {
		sum = sha256.Sum256([]byte(id))
	}
	return binary.LittleEndian.Uint64(sum[:])
}

// hashRef is an id hash and its record, sorted by hash.
type hashRef struct {
	h uint64
	i int32
}

// pathIndex is a path index in memory. Of an index read from its file,
// what every open needs is read at once (the header, each record's
// parent, flags and id hash for the walk to the root and the check of
// the hash table, the hash table, the fold);
// the records themselves are read by blocks when an open asks for one
// (rec): an open reads the few blocks of the path it walks, so that
// neither its time nor its memory grows with the history.
type pathIndex struct {
	ino     uint64
	covered int64  // bytes of the log it describes (whole lines)
	tail    uint32 // CRC-32C of the pathIndexTail bytes before covered
	hdrEnd  int64  // where the first line after the header starts
	lines   int    // lines up to covered, the header's included
	longest int64  // the longest line up to covered (Limits.MaxLineBytes)
	fold    InfoFold
	ids     hashTable
	more    []pathRec // records built, or added since the file was read

	// The records stored in the file: nraw of them, per to a block.
	nraw   int32
	walk   []byte      // each one's parent, flags and id hash, pathWalkSize bytes
	sums   []byte      // each block's CRC-32C
	blocks [][]byte    // the blocks read so far
	src    io.ReaderAt // the file, from recOff on
	recOff int64
	per    int
	bad    bool // a block could not be read or failed its checksum
	closer io.Closer
}

// close closes the file x reads its blocks from.
func (x *pathIndex) close() {
	if x.closer != nil {
		x.closer.Close()
		x.closer, x.src = nil, nil
	}
}

// count is the number of records.
func (x *pathIndex) count() int32 { return x.nraw + int32(len(x.more)) }

// rec returns record i. A record of a block that cannot be read is one
// get refuses, and x.bad is set.
func (x *pathIndex) rec(i int32) pathRec {
	if i < x.nraw {
		b := x.block(int(i) / x.per)
		if b == nil {
			return pathRec{parent: -2, set: -2, asst: -2, depth: -2}
		}
		k := int(i) % x.per * pathRecSize
		return decodeRec(b[k : k+pathRecSize])
	}
	return x.more[i-x.nraw]
}

// block returns the stored records of block k, read and checked the
// first time; nil (and x.bad) if that fails.
func (x *pathIndex) block(k int) []byte {
	if b := x.blocks[k]; b != nil || x.bad {
		return b
	}
	from := k * x.per
	b := make([]byte, min(x.per, int(x.nraw)-from)*pathRecSize)
	if x.src == nil {
		x.bad = true
		return nil
	}
	if n, _ := x.src.ReadAt(b, x.recOff+int64(from)*pathRecSize); n < len(b) || crc32.Checksum(b, castagnoli) != binary.LittleEndian.Uint32(x.sums[4*k:]) {
		x.bad = true
		return nil
	}
	x.blocks[k] = b
	return b
}

// walkAt returns record i's parent and flags, as the walk to the root
// reads them.
func (x *pathIndex) walkAt(i int32) (int32, uint8) {
	if i < x.nraw {
		w := x.walk[int(i)*pathWalkSize:]
		return int32(binary.LittleEndian.Uint32(w)), w[4]
	}
	r := x.more[i-x.nraw]
	return r.parent, r.flags
}

// walkIDH returns the id hash of stored record i, as its walk fields
// hold it (the hash table is checked against these).
func (x *pathIndex) walkIDH(i int32) uint64 {
	return binary.LittleEndian.Uint64(x.walk[int(i)*pathWalkSize+5:])
}

// get returns record i, and whether it is one an index could hold: in
// range, its links naming records, a root or the child of a record one
// shallower (which the caller checks), its line inside what x covers.
func (x *pathIndex) get(i int32) (pathRec, bool) {
	n := x.count()
	if i < 0 || i >= n {
		return pathRec{}, false
	}
	r := x.rec(i)
	if p, fl := x.walkAt(i); p != r.parent || fl != r.flags || i < x.nraw && x.walkIDH(i) != r.idh {
		return r, false // the walk, or the hashes, would read another tree
	}
	for _, a := range [3]int32{r.parent, r.set, r.asst} {
		if a < -1 || a >= n {
			return r, false
		}
	}
	switch {
	case r.parent >= i: // a parent comes before its child (buildPathIndex)
		return r, false
	case r.depth < -1, r.depth == -1 && r.parent != -1, r.parent < 0 && r.depth > 0:
		return r, false
	case r.off < x.hdrEnd || r.off+int64(r.n) > x.covered:
		return r, false
	}
	return r, true
}

func decodeRec(r []byte) pathRec {
	le := binary.LittleEndian
	return pathRec{
		off: int64(le.Uint64(r[0:])), n: le.Uint32(r[8:]),
		parent: int32(le.Uint32(r[12:])), set: int32(le.Uint32(r[16:])), asst: int32(le.Uint32(r[20:])),
		depth: int32(le.Uint32(r[28:])), kind: entryKind(r[24]), flags: r[25], idh: le.Uint64(r[32:]),
	}
}

func appendRec(buf []byte, p pathRec) []byte {
	le := binary.LittleEndian
	buf = le.AppendUint64(buf, uint64(p.off))
	buf = le.AppendUint32(buf, p.n)
	buf = le.AppendUint32(buf, uint32(p.parent))
	buf = le.AppendUint32(buf, uint32(p.set))
	buf = le.AppendUint32(buf, uint32(p.asst))
	buf = append(buf, byte(p.kind), p.flags, 0, 0)
	buf = le.AppendUint32(buf, uint32(p.depth))
	return le.AppendUint64(buf, p.idh)
}

// hashTable is a set of id hashes with their records, sorted by hash:
// those read from an index file as they were stored (hashRefSize bytes
// each), and those added since. A session's appends check their ids
// against it (idSet).
type hashTable struct {
	raw  []byte
	refs []hashRef
}

const hashRefSize = 12

func (t hashTable) find(h uint64) (int32, bool) {
	le := binary.LittleEndian
	n := len(t.raw) / hashRefSize
	k := sort.Search(n, func(k int) bool { return le.Uint64(t.raw[k*hashRefSize:]) >= h })
	if k < n && le.Uint64(t.raw[k*hashRefSize:]) == h {
		return int32(le.Uint32(t.raw[k*hashRefSize+8:])), true
	}
	if k, ok := slices.BinarySearchFunc(t.refs, hashRef{h: h}, cmpHashRef); ok {
		return t.refs[k].i, true
	}
	return -1, false
}

// add adds refs, sorted, none of them in t.
func (t *hashTable) add(refs []hashRef) { t.refs = mergeHashRefs(t.refs, refs) }

// appendTo appends the table's refs, in order, as they are stored.
func (t hashTable) appendTo(buf []byte) []byte {
	le := binary.LittleEndian
	raw, refs := t.raw, t.refs
	for len(raw) > 0 || len(refs) > 0 {
		if len(raw) > 0 && (len(refs) == 0 || le.Uint64(raw) < refs[0].h) {
			buf, raw = append(buf, raw[:hashRefSize]...), raw[hashRefSize:]
			continue
		}
		buf = le.AppendUint64(buf, refs[0].h)
		buf = le.AppendUint32(buf, uint32(refs[0].i))
		refs = refs[1:]
	}
	return buf
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
func (x *pathIndex) lookup(h uint64) (int32, bool) { return x.ids.find(h) }

// The file of an index (all numbers little-endian):
//
//	header   pathIndexHdrSize bytes: magic, ino, covered, tail, hdrEnd,
//	         lines, n (records), nf (fold bytes), longest, per (records
//	         to a block)
//	walk     n × pathWalkSize: each record's parent (int32), flags and
//	         id hash (uint64)
//	sums     one CRC-32C per block of records
//	fold     nf bytes of JSON (InfoFold)
//	hashes   n × hashRefSize: id hash (uint64) and record (uint32), by hash
//	crc      CRC-32C of all the above
//	records  n × pathRecSize, in blocks of per
//
// An open reads all but the records at once, 25 bytes a record of the
// 65 (issue 40: an open that grows with the history as little as it
// can, in time and in memory; at 2 GB, 23 MB of a 59 MB index).

// encode returns the index's bytes.
func (x *pathIndex) encode() ([]byte, error) { return x.encodeBlocks(pathRecBlock) }

// encodeBlocks returns the index's bytes, per records to a block.
func (x *pathIndex) encodeBlocks(per int) ([]byte, error) {
	fold, err := json.Marshal(x.fold)
	if err != nil {
		return nil, err
	}
	n := int(x.count())
	recs := make([]byte, 0, n*pathRecSize)
	for k := range x.blocks {
		b := x.block(k)
		if b == nil {
			return nil, errors.New("session: path index: a block cannot be read")
		}
		recs = append(recs, b...)
	}
	for _, r := range x.more {
		recs = appendRec(recs, r)
	}
	nb := (n + per - 1) / per
	buf := make([]byte, pathIndexHdrSize, pathIndexHdrSize+n*(pathWalkSize+hashRefSize+pathRecSize)+4*nb+len(fold)+4)
	le := binary.LittleEndian
	copy(buf, pathIndexMagic)
	le.PutUint64(buf[8:], x.ino)
	le.PutUint64(buf[16:], uint64(x.covered))
	le.PutUint32(buf[24:], x.tail)
	le.PutUint64(buf[28:], uint64(x.hdrEnd))
	le.PutUint32(buf[36:], uint32(x.lines))
	le.PutUint32(buf[40:], uint32(n))
	le.PutUint32(buf[44:], uint32(len(fold)))
	le.PutUint64(buf[48:], uint64(x.longest))
	le.PutUint32(buf[56:], uint32(per))
	for i := range n {
		r := recs[i*pathRecSize:]
		buf = append(append(append(buf, r[12:16]...), r[25]), r[32:40]...) // parent, flags, id hash
	}
	for k := range nb {
		buf = le.AppendUint32(buf, crc32.Checksum(recs[k*per*pathRecSize:min(n, (k+1)*per)*pathRecSize], castagnoli))
	}
	buf = append(buf, fold...)
	buf = x.ids.appendTo(buf)
	buf = le.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
	return append(buf, recs...), nil
}

// decodePathIndex reads an index's bytes; any damage is an error.
func decodePathIndex(b []byte) (*pathIndex, error) {
	return readPathIndexAt(bytes.NewReader(b), int64(len(b)))
}

// readPathIndexAt reads the index in r (size bytes) but its records,
// which rec reads from r by blocks. Any damage is an error, or (in a
// block) makes the records of its block ones get refuses.
func readPathIndexAt(r io.ReaderAt, size int64) (*pathIndex, error) {
	bad := func(what string) (*pathIndex, error) {
		return nil, fmt.Errorf("session: path index: %s", what)
	}
	le := binary.LittleEndian
	hdr := make([]byte, pathIndexHdrSize)
	if size < pathIndexHdrSize+4 {
		return bad("not an index of this version")
	}
	if k, _ := r.ReadAt(hdr, 0); k < len(hdr) || string(hdr[:8]) != pathIndexMagic {
		return bad("not an index of this version")
	}
	x := &pathIndex{
		ino: le.Uint64(hdr[8:]), covered: int64(le.Uint64(hdr[16:])), tail: le.Uint32(hdr[24:]),
		hdrEnd: int64(le.Uint64(hdr[28:])), lines: int(le.Uint32(hdr[36:])), longest: int64(le.Uint64(hdr[48:])),
	}
	n, nf, per := uint64(le.Uint32(hdr[40:])), uint64(le.Uint32(hdr[44:])), uint64(le.Uint32(hdr[56:]))
	if n >= 1<<31 || per == 0 || per > 1<<20 {
		return bad("size")
	}
	nb := (n + per - 1) / per
	front := n*pathWalkSize + nb*4 + nf
	recOff := pathIndexHdrSize + front + n*hashRefSize + 4
	if uint64(size) != recOff+n*pathRecSize {
		return bad("size")
	}
	if x.covered < x.hdrEnd || x.hdrEnd <= 0 {
		return bad("bounds")
	}
	head := make([]byte, front)
	// The hashes in a buffer of their own: an open session keeps them
	// (idSet), and should not keep the rest with them.
	hashes := make([]byte, n*hashRefSize+4)
	if k, _ := r.ReadAt(head, pathIndexHdrSize); k < len(head) {
		return bad("size")
	}
	if k, _ := r.ReadAt(hashes, int64(pathIndexHdrSize+front)); k < len(hashes) {
		return bad("size")
	}
	sum := crc32.Update(crc32.Update(crc32.Checksum(hdr, castagnoli), castagnoli, head), castagnoli, hashes[:n*hashRefSize])
	if sum != le.Uint32(hashes[n*hashRefSize:]) {
		return bad("checksum")
	}
	x.walk, x.sums = head[:n*pathWalkSize], head[n*pathWalkSize:n*pathWalkSize+nb*4]
	x.ids.raw = hashes[: n*hashRefSize : n*hashRefSize]
	// The table must hold the records' hashes: an open takes "not there"
	// for an entry not in the log (the first kept entry of a compaction,
	// an appended id). Sorted without repeats, and the same sum and xor
	// as the records' hashes (in their walk fields, which get holds to
	// the records): one pass over each, where a look-up of each entry's
	// record (a random read) took 60 ms at 2 GB. The record an entry
	// names is checked where it is used (its hash, by get).
	var tsum, txor, wsum, wxor uint64
	for i := range int(n) {
		h, k := le.Uint64(hashes[i*hashRefSize:]), le.Uint32(hashes[i*hashRefSize+8:])
		if uint64(k) >= n || (i > 0 && le.Uint64(hashes[(i-1)*hashRefSize:]) >= h) {
			return bad("hashes")
		}
		tsum, txor = tsum+h, txor^h
		w := le.Uint64(head[i*pathWalkSize+5:])
		wsum, wxor = wsum+w, wxor^w
	}
	if tsum != wsum || txor != wxor {
		return bad("hashes")
	}
	if err := json.Unmarshal(head[n*pathWalkSize+nb*4:], &x.fold); err != nil {
		return bad("fold")
	}
	x.nraw, x.per, x.src, x.recOff = int32(n), int(per), r, int64(recOff)
	x.blocks = make([][]byte, nb)
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
		x.longest = max(x.longest, int64(len(line)))
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
		if t.nodes[i].parent >= int32(i) {
			return nil, errIrregular // an open walks parents down the file (get)
		}
		if t.nodes[i].flags&fMissingParent != 0 {
			// A root only until an entry of that id is appended: the
			// tree then links it, and an extended index could not say so
			// (extend refuses such an append for the same reason).
			return nil, errIrregular
		}
	}
	x.more = make([]pathRec, len(entries))
	for i := range t.nodes {
		x.more[i] = pathRec{off: places[i].off, n: places[i].n, parent: t.nodes[i].parent, set: -1, asst: -1,
			depth: t.nodes[i].depth, kind: entries[i].kind, flags: flags[i], idh: stableIDHash(entries[i].id)}
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
		r := &x.more[i]
		if r.parent >= 0 {
			x.inherit(r, r.parent)
		}
	}
	refs := make([]hashRef, 0, len(entries))
	for i, r := range x.more {
		refs = append(refs, hashRef{h: r.idh, i: int32(i)})
	}
	slices.SortFunc(refs, cmpHashRef)
	for i := 1; i < len(refs); i++ {
		if refs[i].h == refs[i-1].h {
			return nil, errIrregular // a duplicate id (or two ids of one hash)
		}
	}
	x.ids.refs = refs
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
// x yet).
func (x *pathIndex) inherit(r *pathRec, p int32) {
	pr := x.rec(p)
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

// readPathIndex reads the index of session id in the store's tree; nil
// when there is none or it is damaged. The caller closes it (the file
// stays open for the records, read when asked).
func (s *FileStore) readPathIndex(id string) *pathIndex {
	f, fi, err := openRegularStat(s.r, s.pathIndexName(id))
	if err != nil {
		return nil
	}
	if fi.Size() > maxPathIndexBytes {
		f.Close()
		return nil
	}
	x, err := readPathIndexAt(f, fi.Size())
	if err != nil {
		f.Close()
		return nil
	}
	x.closer = f
	return x
}

// maxPathIndexBytes bounds the size of a path index, 65 bytes an entry
// and 12 more for its hash: some 14 million entries. An open reads 25
// bytes an entry of it at once (the walk fields and the hashes), and the
// rest by blocks as the path needs them; a session too long for it is
// read whole at each open, and gets no index (buildIndex). A variable
// for tests.
var maxPathIndexBytes int64 = 1 << 30

// pathIndexName is the index's name under the root.
func (s *FileStore) pathIndexName(id string) string {
	return filepath.Join(pathIndexDir, idFileName(id))
}
