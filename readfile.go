package session

import (
	"bufio"
	"bytes"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/agentsession/session/internal/jsonx"
)

// The read pipeline of a session file, in one place.
//
// FileStore reads a log with readLogFile, and this file holds all of
// that path; DecodeLog and ReadLog (log.go, stream.go) read logs already
// in memory or in a stream the simple way, and share its line rules
// (logParser.entryLine) and its join of runs of lines (logParser.join).
//
//	file ──ReadAt──▶ chunk ──lines──▶ envelope ──▶ compact entry ──▶ lazy message
//	(2 MiB, one     (a worker's      (parseEntryMode,  (compactLine,      (Entry.message,
//	 per worker,     reused buffer)   or compactLine    or compactEntry)   on demand)
//	 from the end)                    in one pass)
//
//  1. Chunks. The file is cut into fileChunk-sized chunks; workers (one
//     per processor, up to 8) take them from the end backwards. Each
//     reads its chunk into one buffer it reuses for every chunk it
//     takes, and decodes the lines that start in it; a line that runs
//     past the chunk's end is read whole into a buffer of its own
//     (rest). A line over Limits.MaxLineBytes is skipped as it is read,
//     never held.
//  2. Envelope. Each line is a JSON object with type, id, parentId and
//     timestamp (logParser.entryLine: size limit, zero bytes a crash
//     left, an append's marker cut off, the structure checked).
//  3. Compact entry. What an Entry keeps must not point into the chunk,
//     which the next chunk overwrites. A message line, when it is what
//     a context will read (below), is parsed in one pass, envelope and
//     message together (compactLine): its strings unescaped into the
//     worker's arena, its long strings cut out of a template of the
//     line that the arena holds (holes), so that the log holds each
//     text once, decoded, rather than the file's bytes and the decoded
//     text both. Every other line is copied into the arena whole and
//     its envelope strings moved onto the copy (compactEntry, rebase).
//     A message line read from a file also keeps its place there and
//     its CRC-32C (holes.src, off, sum), so that a fork copies it from
//     the file rather than escaping its strings again
//     (filestore_lines.go); the sum is what tells that the file still
//     holds it.
//  4. Lazy message. A line before the last compaction of the file (in
//     its chunk or a later one: chunks are taken from the end so that
//     a chunk knows) is not decoded: the contexts a compaction starts
//     rarely need it, and Entry.message decodes it when one does. So
//     are lines holding blob references (FileStore resolves them in the
//     entry's bytes) and marked lines (an append's marker is stripped
//     by the envelope step).
//
// Invariants:
//   - Nothing an Entry keeps points into a chunk buffer or a rest
//     buffer: its bytes, template and strings live in an arena block
//     (or in memory of their own), and a chunk's buffer is reused as
//     soon as its lines are done.
//   - Arena blocks (jsonx.Arena) are never freed by hand: an entry, or
//     a string a caller took from its message, keeps its block alive,
//     and the collector frees a block no one points into.
//   - An entry's bytes are byte for byte the line it was read from (a
//     marker excepted): a template gives them back with its holes
//     filled by jsonx.AppendString, and compactLine cuts a string out
//     only when that rebuilds its token exactly.
//   - A log of an older version is read again whole and migrated
//     (DecodeLog); only then are the file's bytes returned, for the
//     rewrite that upgrades the file.

// fileEnd describes the end of a log file, for appending after it.
type fileEnd struct {
	size     int64 // bytes read
	lastLine int64 // offset at which the last line starts
	endsNL   bool  // the last byte is a newline
	// compressed: the file is a compressed log (see
	// filestore_compress.go); the offsets are those of the log's bytes.
	compressed bool
}

func endOf(data []byte) fileEnd {
	return fileEnd{
		size:     int64(len(data)),
		lastLine: int64(bytes.LastIndexByte(bytes.TrimSuffix(data, []byte{'\n'}), '\n') + 1),
		endsNL:   len(data) > 0 && data[len(data)-1] == '\n',
	}
}

// readChunk overrides the chunk size of readLogFile, for tests.
var readChunk int64

// fileChunk is how much of a log file readLogFile reads at a time: small
// enough that the chunks in flight are a small part of the heap, large
// enough that a chunk costs little beyond its bytes.
const fileChunk = 2 << 20

// lastCompaction returns the offset in buf of the last line that starts
// as the seed agents and this package write compaction entries, -1 if
// none. Lines are long and newlines few, so this costs little; a
// compaction written another way is missed, which costs only time.
func lastCompaction(buf []byte) int {
	const prefix = `{"type":"compaction"`
	last := -1
	for i := 0; i < len(buf); {
		j := bytes.IndexByte(buf[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		if bytes.HasPrefix(buf[i:], []byte(prefix)) {
			last = i
		}
	}
	return last
}

// readLogFile reads and decodes the log of size bytes in r. It reads in
// chunks, on several goroutines for a large log, each decoding the lines
// that start in its chunk, and keeps nothing of a chunk once it is done
// with it: every entry is made compact (compactEntry), so the log holds
// its message texts once, decoded, rather than the file's bytes and the
// decoded texts both. It returns the file's bytes only for a log of an
// older version, which it reads again in one piece, to migrate and
// rewrite from them.
func readLogFile(r io.ReaderAt, size int64, opts *ReadOptions) (*Log, []byte, fileEnd, error) {
	return readLogFileFor(r, size, opts, true)
}

// readLogFileFor is readLogFile; without keepOld a log of an older
// version is read as a stream (migrated line by line, as ReadLog does),
// never held whole, and no bytes are returned, nor a fileEnd.
func readLogFileFor(r io.ReaderAt, size int64, opts *ReadOptions, keepOld bool) (*Log, []byte, fileEnd, error) {
	whole := func() (*Log, []byte, fileEnd, error) {
		if size > 0 {
			// The header first, streamed: a file that has none is
			// refused without being read further.
			d := NewDecoder(io.NewSectionReader(r, 0, size), opts)
			if _, err := d.Header(); err != nil {
				return nil, nil, fileEnd{}, err
			}
			if !keepOld {
				return streamRest(d)
			}
		}
		data := make([]byte, size)
		if n, err := r.ReadAt(data, 0); err != nil && !(errors.Is(err, io.EOF) && int64(n) == size) {
			return nil, nil, fileEnd{}, err
		}
		log, err := DecodeLog(data, opts)
		return log, data, endOf(data), err
	}
	if size == 0 {
		return whole()
	}
	proto := opts.parser()
	if size > proto.lim.MaxLogBytes {
		return nil, nil, fileEnd{}, &LimitError{What: "log", Size: size, Limit: proto.lim.MaxLogBytes}
	}
	// A look at the start: a compressed log (filestore_compress.go) is
	// read as a stream, never whole; an older version (or no header)
	// goes the whole way at once, which saves decoding a file that will
	// be read again.
	var peek [4 << 10]byte
	if m, _ := r.ReadAt(peek[:min(size, int64(len(peek)))], 0); m > 0 {
		if hasZstdMagic(peek[:m]) {
			return readCompressedFile(r, size, opts, keepOld)
		}
		if i := bytes.IndexByte(peek[:m], '\n'); i >= 0 {
			hp := proto
			if hp.headerLine(peek[:i]) != nil || hp.mig != nil {
				return whole()
			}
		}
	}
	var src *os.File // the lines' source, for forks (holes.src)
	if sumLines {
		src, _ = r.(*os.File)
	}
	cs := int64(fileChunk)
	if readChunk > 0 {
		cs = readChunk
	}
	type chunk struct {
		off int64 // file offset of the chunk's first byte read: one byte before the chunk, but for the first
		end int64 // file offset past the chunk
		lineChunk
		lastLine int64 // offset of the last line it decoded, -1 if none
		endsNL   bool  // the chunk's last byte is a newline

		// Compaction: the messages a compaction replaced are mostly never
		// decoded, so the lines before the last one are read lazily.
		comp    int           // offset in the chunk of its last compaction line, -1 if none
		later   bool          // a later chunk holds one
		scanned chan struct{} // closed once comp and later are known
	}
	n := int((size + cs - 1) / cs)
	chunks := make([]chunk, n)
	for k := range chunks {
		lo, hi := int64(k)*cs, min(int64(k+1)*cs, size)
		if k > 0 {
			lo-- // to see whether a line starts at the chunk's first byte
		}
		chunks[k] = chunk{off: lo, end: hi, lineChunk: lineChunk{p: proto}, lastLine: -1, comp: -1, scanned: make(chan struct{})}
	}
	// rest reads the end of a line that goes on past file offset from,
	// after head; complete says it ended with a newline. A line over the
	// limit is neither kept nor read further than the limit (the chunks
	// it runs through find where the next line starts): long is then its
	// size, as far as it was read (more than the limit).
	rest := func(head []byte, from int64) (line []byte, complete bool, long int64, err error) {
		// Find the end first, then read the line in one piece: nothing of
		// a line over the limit is kept, and no buffer grows.
		end := from
		var buf [32 << 10]byte
		for end < size {
			m, err := r.ReadAt(buf[:min(int64(len(buf)), size-end)], end)
			if m == 0 && err != nil {
				return nil, false, 0, err
			}
			if i := bytes.IndexByte(buf[:m], '\n'); i >= 0 {
				end += int64(i)
				complete = true
				break
			}
			end += int64(m)
			if n := int64(len(head)) + end - from; n > proto.lim.MaxLineBytes {
				return nil, false, n, nil
			}
		}
		n := int64(len(head)) + end - from
		if n > proto.lim.MaxLineBytes {
			return nil, complete, n, nil
		}
		line = make([]byte, n)
		copy(line, head)
		if m, err := r.ReadAt(line[len(head):], from); err != nil && !(errors.Is(err, io.EOF) && int64(m) == end-from) {
			return nil, false, 0, err
		}
		return line, complete, 0, nil
	}
	var lines atomic.Int64 // lines counted by the chunks so far, for MaxEntries
	var next atomic.Int64  // chunks taken, from the end
	// Each worker reads its chunks into one buffer, and keeps what it
	// decodes in an arena: few allocations, and no garbage of the size
	// of the file for the collector to catch up with.
	type worker struct {
		buf   []byte
		arena jsonx.Arena
		spans []jsonx.Span
	}
	block := int(min(max(size/16, 4<<10), 256<<10))
	decode := func(k int, w *worker) {
		c, first := &chunks[k], k == 0
		if int64(cap(w.buf)) < c.end-c.off {
			w.buf = make([]byte, c.end-c.off)
		}
		buf := w.buf[:c.end-c.off]
		m, err := r.ReadAt(buf, c.off)
		if err != nil && !(errors.Is(err, io.EOF) && m == len(buf)) {
			c.err = err
		}
		c.comp = lastCompaction(buf)
		if k+1 < n {
			// Chunks are taken from the end, so the next one is already
			// being read.
			nx := &chunks[k+1]
			<-nx.scanned
			c.later = nx.later || nx.comp >= 0
		}
		close(c.scanned)
		if c.err != nil {
			return
		}
		c.endsNL = buf[len(buf)-1] == '\n'
		c.refs = refsIn(buf)
		pos := 0
		if !first {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				return // the chunk is inside a line that started earlier
			}
			pos = i + 1
		}
		// The lines starting in the chunk count towards MaxEntries before
		// any is decoded: a file of millions of tiny lines is refused
		// before it takes their memory.
		n := lineCount(buf[pos:])
		if int(lines.Add(int64(n))) > proto.lim.MaxEntries+1 { // +1: the header
			c.err = &LimitError{What: "entries", Size: lines.Load() - 1, Limit: int64(proto.lim.MaxEntries)}
			return
		}
		c.entries = make([]Entry, 0, n+1)
		for pos < len(buf) {
			var line []byte
			complete, spanned := true, false
			start := pos
			if i := bytes.IndexByte(buf[pos:], '\n'); i >= 0 {
				line, pos = buf[pos:pos+i], pos+i+1
			} else {
				var long int64
				var err error
				if line, complete, long, err = rest(buf[pos:], c.end); err != nil {
					c.err = err
					return
				}
				if long > 0 {
					c.lastLine = c.off + int64(start)
					if first && start == 0 {
						c.err = proto.lim.lineError(1, long)
						return
					}
					if c.err = c.p.skipLong(long); c.err != nil {
						return
					}
					break
				}
				c.refs = max(c.refs, refsIn(line))
				pos, spanned = len(buf), true
			}
			c.lastLine = c.off + int64(start)
			if first && start == 0 {
				if c.err = c.p.headerLine(bytes.Clone(line)); c.err != nil {
					return
				}
				if c.p.mig != nil {
					return // a header longer than the peek; migrated below
				}
				continue
			}
			// Blob references are resolved in the entry's bytes: their
			// entries are not made compact.
			eager := !c.later && start >= c.comp && (!(c.refs == refsSome || spanned) || !bytes.Contains(line, []byte(BlobPrefix)))
			// A line over the limit is entryLine's to report.
			if eager && !marked(line) && int64(len(line)) <= c.p.lim.MaxLineBytes {
				if e, ok := compactLine(line, &w.arena, &w.spans); ok {
					if src != nil {
						e.h.src, e.h.off, e.h.sum = src, c.off+int64(start), crc32.Checksum(line, castagnoli)
					}
					c.p.line++
					c.p.nent++
					c.entries = append(c.entries, withHashes(e, c.entries))
					continue
				}
			}
			e, ok, err := c.p.entryLine(line, complete)
			if err != nil {
				c.err = err
				return
			}
			if ok {
				c.entries = append(c.entries, withHashes(compactEntry(e, &w.arena), c.entries))
			}
		}
		c.lines = c.p.line
	}
	workers := min(runtime.GOMAXPROCS(0), 8, n)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := worker{arena: jsonx.Arena{Block: block}}
			for {
				k := n - int(next.Add(1)) // from the end: see chunk.later
				if k < 0 {
					return
				}
				decode(k, &w)
			}
		}()
	}
	wg.Wait()
	first := &chunks[0]
	if first.err == nil && first.p.mig != nil {
		return whole() // an older version: read again in one piece and migrate
	}
	p := proto
	p.header, p.gotHeader = first.p.header, first.p.gotHeader
	parts := make([]*lineChunk, n)
	end := fileEnd{size: size, endsNL: chunks[n-1].endsNL}
	for k := range chunks {
		parts[k] = &chunks[k].lineChunk
		if chunks[k].lastLine >= 0 {
			end.lastLine = chunks[k].lastLine
		}
	}
	l, err := p.join(parts)
	if err != nil {
		return nil, nil, fileEnd{}, err
	}
	if !p.gotHeader {
		return nil, nil, fileEnd{}, &CorruptError{Err: errEmpty}
	}
	return l, nil, end, nil
}

// ReadLogAt reads the session log of size bytes in r (an *os.File, say)
// as a FileStore reads its files, and writes nothing: the size is checked
// against the limits before anything is read, the file is read in chunks
// (on several processors for a large log) and never held whole, a line
// over Limits.MaxLineBytes is skipped without being held, and a
// compressed log, or one of an older version, is read as a stream (see
// Limits for the memory a read takes). The entries keep nothing of r but, when r is an
// *os.File, where their lines are, which a fork copies them from while
// the file is open and still holds them. A log of an older version is
// migrated as it is read, as ReadLog does. Errors are DecodeLog's.
func ReadLogAt(r io.ReaderAt, size int64, opts *ReadOptions) (*Log, error) {
	if size < 0 {
		return nil, errors.New("session: ReadLogAt: negative size")
	}
	log, _, _, err := readLogFileFor(r, size, opts, false)
	return log, err
}

// streamRest reads the entries that follow the header d has read, as
// ReadLog does.
func streamRest(d *Decoder) (*Log, []byte, fileEnd, error) {
	var entries []Entry
	for {
		e, err := d.Next()
		if err == io.EOF {
			return d.p.finish(entries), nil, fileEnd{}, nil
		}
		if err != nil {
			return nil, nil, fileEnd{}, err
		}
		entries = append(entries, e)
	}
}

// migratable tells, before a migration reads the file f whole, what it
// would migrate: CurrentVersion for a file of the current version (read
// no further than its header), else the version it is in; or the error
// that refuses it, having read about as much as the limits allow: a
// file over lim.MaxLogBytes (read not at all), a header that cannot be
// read, a line over lim.MaxLineBytes (read up to where it passes the
// limit), which the migration refuses (migrateFile). A compressed file
// is read as a stream.
func migratable(f *os.File, lim Limits) (int, error) {
	size, _, _, err := fileState(f)
	if err != nil {
		return 0, err
	}
	if size > lim.MaxLogBytes {
		return 0, &LimitError{What: "log", Size: size, Limit: lim.MaxLogBytes}
	}
	d := NewDecoder(io.NewSectionReader(f, 0, size), &ReadOptions{Limits: lim})
	if _, err := d.Header(); err != nil {
		return 0, err
	}
	from := d.MigratedFrom()
	if from == 0 {
		return CurrentVersion, nil
	}
	// The lines after the header, read as the decoder's reader gives
	// them (decompressed), their length counted, none held.
	for line, n, total := 2, int64(0), d.read; ; {
		chunk, err := d.r.ReadSlice('\n')
		n += int64(len(chunk))
		if total += int64(len(chunk)); total > lim.MaxLogBytes {
			return 0, &LimitError{What: "log", Size: total, Limit: lim.MaxLogBytes} // a compressed log
		}
		if k := n - int64(bytes.Count(chunk, []byte{'\n'})); k > lim.MaxLineBytes {
			return 0, lim.lineError(line, k)
		}
		switch err {
		case nil:
			line, n = line+1, 0
		case bufio.ErrBufferFull:
		case io.EOF:
			return from, nil
		default:
			return 0, err
		}
	}
}

// withHashes returns e, read after before in a chunk, with the hashes
// of its id and parent taken (Entry.idh, parh) while its line is in the
// cache, for the tree and the store's id set, which would otherwise read
// every id again when the file is read. A parent that is the entry
// before (a conversation's usual shape) becomes that entry's id string
// itself: the tree's look-up then compares two strings with one
// pointer, which reads neither.
func withHashes(e Entry, before []Entry) Entry {
	e.idh = hashID(e.id)
	if n := len(before); n > 0 && e.parent != "" && e.parent == before[n-1].id {
		e.parent, e.parh = before[n-1].id, before[n-1].idh
	} else {
		e.parh = hashID(e.parent)
	}
	return e
}

// holes is what a compact entry needs to give back its bytes, and the
// message decoded from them.
type holes struct {
	n   int      // length of the entry's bytes
	cut []hole   // in template order
	msg *Message // the entry's message, read-only (shared by contexts); never nil
	// The line's place in the file it was read from, if it was read
	// from one (src): at off, n bytes whose CRC-32C is sum. A fork copies
	// runs of such lines from the file rather than escaping their
	// strings again, when the bytes there still sum to what was read
	// (see copyLines).
	src *os.File
	off int64
	sum uint32
}

// readMessage returns the message decoded when the entry was read (see
// compactLine), or nil if there is none.
func (e Entry) readMessage() *Message {
	if e.h == nil {
		return nil
	}
	return e.h.msg
}

// hole is a string token cut out of a template.
type hole struct {
	at int32  // offset in the template where the token goes
	s  string // the string, written back with jsonx.AppendString
}

// spanMin is the shortest string token a compact entry cuts out: below
// it, the offset and string header cost more than the bytes they save.
const spanMin = 64

// compactLine reads the message entry v in one pass, its strings into
// a, its message decoded, and returns it compact: its long strings cut
// out of a template held by a (see compactEntry). ok is false, and
// nothing is read, for anything else: another type, a message that does
// not decode strictly, escaped keys; the caller reads those the general
// way. spans is scratch space.
func compactLine(v []byte, a *jsonx.Arena, spans *[]jsonx.Span) (_ Entry, ok bool) {
	if len(v) > math.MaxInt32 {
		return Entry{}, false // offsets in a template are int32
	}
	*spans = (*spans)[:0]
	c := jsonx.Cursor{Arena: a, Spans: spans, SpanMin: spanMin}
	c.Reset(v)
	ms, ok := c.Object()
	if !ok {
		return Entry{}, false
	}
	var (
		e     Entry
		m     *Message
		env   envelope
		other bool // a member besides the envelope's and the message
	)
	for {
		kb, esc, more := ms.Next()
		if !more {
			break
		}
		if esc {
			return Entry{}, false
		}
		switch string(kb) {
		case "message":
			if m != nil {
				return Entry{}, false // twice: read the general way
			}
			if m = new(Message); !m.read(&c, true) {
				return Entry{}, false
			}
		case "timestamp":
			// Not a string: the envelope ignores it, but it is part of
			// what the line holds.
			var ok bool
			e.ts, ok = c.Str()
			other = other || !ok
		default:
			if !env.member(&c, kb, &e) {
				other = true
			}
		}
	}
	if c.Err() != nil || !c.AtEnd() || !env.hasType || e.typ != TypeMessage || !env.hasID || e.id == "" || env.badParent || m == nil {
		return Entry{}, false
	}
	e.typ, e.kind = TypeMessage, kindMessage
	if countDecodes {
		decodedMessages.Add(1)
	}
	sp := *spans
	// The message was just decoded, so telling now whether the entry can
	// hold an image costs little; a fork asks it of every entry it copies.
	e.noImage = !other && !m.mayHoldImage()
	h := &holes{n: len(v), msg: m}
	if len(sp) == 0 {
		e.raw, e.h = a.Bytes(v), h
		return e, true
	}
	cut := 0
	for _, s := range sp {
		cut += s.End - s.Start
	}
	tmpl := a.Room(len(v) - cut)
	h.cut = make([]hole, len(sp))
	prev := 0
	for k, s := range sp {
		tmpl = append(tmpl, v[prev:s.Start]...)
		h.cut[k] = hole{at: int32(len(tmpl)), s: s.S}
		prev = s.End
	}
	tmpl = append(tmpl, v[prev:]...)
	e.raw, e.h = a.Commit(tmpl), h
	return e, true
}

// compactEntry returns the entry e, just parsed from its line e.raw (e's
// strings may be views of it), with a copy of the line held by a, so
// that the line can be freed: how the reader keeps the entries that
// compactLine does not take.
func compactEntry(e Entry, a *jsonx.Arena) Entry {
	line := e.raw
	own := a.Bytes(line)
	e.typ = rebase(e.typ, line, own)
	e.id = rebase(e.id, line, own)
	e.parent = rebase(e.parent, line, own)
	e.ts = rebase(e.ts, line, own)
	e.raw = own
	return e
}

// rebase returns s, if it is a view of from, as the same view of to, a
// copy of from.
func rebase(s string, from, to []byte) string {
	if len(s) == 0 || len(from) == 0 {
		return s
	}
	off := int(uintptr(unsafe.Pointer(unsafe.StringData(s))) - uintptr(unsafe.Pointer(&from[0])))
	if off < 0 || off+len(s) > len(from) {
		return s // a string of its own (it had escapes)
	}
	return unsafe.String(&to[off], len(s))
}
