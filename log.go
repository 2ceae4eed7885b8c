package session

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentsession/session/internal/jsonx"
)

// CurrentVersion is the format version this package writes, and the newest
// it reads. Older versions are migrated when read (see Log.MigratedFrom).
const CurrentVersion = 3

// Header is the first line of a session log.
//
// A Header read from a log remembers that line; as long as its fields are
// not changed it is written back byte for byte.
type Header struct {
	Version       int
	ID            string
	Timestamp     time.Time // creation time
	Cwd           string    // working directory the session belongs to
	Title         string    // oh-my-pi's header title; see Session.Title
	ParentSession string    // the session this one was forked from, if any
	Extra         Fields    // other members, verbatim

	raw  []byte      // the line this header was read from
	orig *headerCore // its decoded fields, to tell whether raw still holds
}

type headerCore struct {
	version                int
	id, cwd, title, parent string
	ts                     time.Time
	extra                  Fields
}

func (h *Header) core() headerCore {
	return headerCore{version: h.Version, id: h.ID, cwd: h.Cwd, title: h.Title, parent: h.ParentSession, ts: h.Timestamp}
}

// unchanged reports whether h still holds exactly what was read into it.
func (h *Header) unchanged() bool {
	if h.raw == nil || h.orig == nil {
		return false
	}
	c := h.core()
	o := h.orig
	return c.version == o.version && c.id == o.id && c.cwd == o.cwd && c.title == o.title &&
		c.parent == o.parent && c.ts.Equal(o.ts) && h.Extra.equal(o.extra)
}

// Clone returns a deep copy of h.
func (h Header) Clone() Header {
	h.Extra = h.Extra.Clone()
	return h
}

// MarshalJSON encodes the header line (without newline).
func (h Header) MarshalJSON() ([]byte, error) { return h.appendJSON(nil) }

func (h *Header) appendJSON(dst []byte) ([]byte, error) {
	if h.unchanged() {
		return append(dst, h.raw...), nil
	}
	dst = append(dst, `{"type":"session","version":`...)
	v := h.Version
	if v == 0 {
		v = CurrentVersion
	}
	dst = appendInt(dst, int64(v))
	dst = append(dst, `,"id":`...)
	dst = jsonx.AppendString(dst, h.ID)
	if !h.Timestamp.IsZero() {
		dst = append(dst, `,"timestamp":`...)
		dst = jsonx.AppendString(dst, formatTime(h.Timestamp))
	}
	dst = append(dst, `,"cwd":`...)
	dst = jsonx.AppendString(dst, h.Cwd)
	if h.Title != "" {
		dst = append(dst, `,"title":`...)
		dst = jsonx.AppendString(dst, h.Title)
	}
	if h.ParentSession != "" {
		dst = append(dst, `,"parentSession":`...)
		dst = jsonx.AppendString(dst, h.ParentSession)
	}
	dst, _, err := h.Extra.appendTo(dst, false, func(k string) bool {
		switch k {
		case "type", "version", "id", "cwd":
			return true
		case "timestamp":
			return !h.Timestamp.IsZero()
		case "title":
			return h.Title != ""
		case "parentSession":
			return h.ParentSession != ""
		}
		return false
	})
	if err != nil {
		return nil, fmt.Errorf("session header: %w", err)
	}
	return append(dst, '}'), nil
}

// UnmarshalJSON parses a header line.
func (h *Header) UnmarshalJSON(b []byte) error {
	v, err := jsonx.Trim(b)
	if err != nil {
		return err
	}
	x, err := parseHeader(bytes.Clone(v))
	if err != nil {
		return err
	}
	*h = x
	return nil
}

var errNoHeader = errors.New("no session header")

// parseHeader reads a header line, keeping v. Version is 1 when absent.
func parseHeader(v []byte) (Header, error) {
	if jsonx.KindOf(v) != jsonx.KindObject {
		return Header{}, errNoHeader
	}
	it, _ := jsonx.Object(v)
	h := Header{Version: 1}
	isSession, hasID := false, false
	for it.Next() {
		k, val := it.Key(), it.Value()
		ok := false
		switch k {
		case "type":
			var t string
			t, ok = jsonx.String(val)
			isSession = ok && t == "session"
			ok = true // written back as "session" either way, or rejected
		case "version":
			var n int64
			if n, ok = jsonx.ParseInt(val); ok && n >= 1 && n <= 1<<30 {
				h.Version = int(n)
			} else {
				return Header{}, fmt.Errorf("session header: invalid version %s", val)
			}
		case "id":
			h.ID, ok = jsonx.String(val)
			hasID = ok
		case "timestamp":
			var s string
			if s, ok = jsonx.String(val); ok {
				var err error
				h.Timestamp, err = time.Parse(time.RFC3339Nano, s)
				ok = err == nil
			}
		case "cwd":
			h.Cwd, ok = jsonx.String(val)
		case "title":
			h.Title, ok = jsonx.String(val)
		case "parentSession":
			h.ParentSession, ok = jsonx.String(val)
		}
		if !ok {
			h.Extra.Set(k, cloneRaw(val))
		}
	}
	if it.Err() != nil || it.End() != len(v) {
		return Header{}, errNoHeader
	}
	if !isSession {
		return Header{}, fmt.Errorf("%w (its type is not \"session\")", errNoHeader)
	}
	if !hasID {
		return Header{}, fmt.Errorf("%w (it has no id)", errNoHeader)
	}
	core := h.core()
	core.extra = h.Extra.Clone()
	h.raw, h.orig = v, &core
	return h, nil
}

// Log is a whole session as stored: the header and every entry in order.
type Log struct {
	Header  Header
	Entries []Entry

	// What a lenient read skipped (see ReadOptions). Empty for logs that
	// come from a Store that validated them on the way in.
	Malformed []LineError
	// Torn is set when the last line was cut short (no newline and not
	// valid JSON), as after a crash in the middle of a write. It is not in
	// Malformed.
	Torn *LineError
	// Zeroed lists the lines that began with zero bytes, or held them: a
	// crash left them where a write it lost had been, before a later
	// write it kept (file systems fill such holes with zeros). What
	// follows the zeros is read as the line; what the lost write held is
	// gone, and was never acknowledged as durable (see SyncPolicy). Each
	// Err wraps ErrZeroed.
	Zeroed []LineError
	// Partial lists the whole lines of appends of several entries that a
	// crash cut short (their last entry never reached the file): they are
	// not entries, since an append is all or nothing, and are kept in the
	// file (see group.go). Not in Malformed; each Err is ErrPartialAppend.
	Partial []LineError
	// Unresolved lists the images whose blob references the store could
	// not resolve when it read the log (a blob missing or corrupt): each
	// keeps its reference as data, and is sent to no model (see
	// Block.Unresolved and Context.Unresolved). Verify lists them too.
	Unresolved []*BlobError
	// MigratedFrom is the format version the log had before it was
	// upgraded to CurrentVersion while reading, or 0.
	MigratedFrom int

	// refs says whether the log's bytes hold blob references, when the
	// reader found out on its way (refsUnknown otherwise).
	refs refState
	// lines is the number of lines read, the header and a torn last line
	// included, when a reader of this package made the log.
	lines int
}

type refState uint8

const (
	refsUnknown refState = iota
	refsNone
	refsSome
)

// refsIn looks for blob references in a log's bytes.
func refsIn(data []byte) refState {
	if bytes.Contains(data, []byte(BlobPrefix)) {
		return refsSome
	}
	return refsNone
}

// LineError is a line that could not be read as an entry.
type LineError struct {
	Line int // 1-based; the header is line 1
	Err  error
}

func (e LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// ReadOptions controls how a log is read.
//
// A line is malformed when it is not a JSON object with a "type" and an
// "id", or its JSON is broken. To read long logs fast, a lenient read
// checks the structure of every line but leaves the escapes inside the
// strings of an entry's payload (a backslash before a letter JSON does not
// allow, say) to be checked when the entry is decoded: such an entry is
// kept as it is, its message is left out of the context, and Verify
// reports it. A strict read checks everything.
type ReadOptions struct {
	// Strict makes a malformed line an error (*CorruptError, ErrCorrupt)
	// instead of being skipped and counted, and checks every byte of every
	// line. A torn last line is never an error: it is what a crash leaves,
	// and is reported in Log.Torn.
	Strict bool
	// Limits bound the lines and the log read (see Limits); the zero
	// value is the defaults.
	Limits Limits
}

// parser returns the logParser these options describe.
func (o *ReadOptions) parser() logParser {
	if o == nil {
		return logParser{lim: Limits{}.withDefaults()}
	}
	return logParser{strict: o.Strict, lim: o.Limits.withDefaults()}
}

// logParser turns lines into a header and entries; shared by DecodeLog
// and Decoder.
type logParser struct {
	strict    bool
	lim       Limits // with defaults
	line      int
	header    Header
	gotHeader bool
	mig       *migrator
	malformed []LineError
	partial   []LineError
	zeroed    []LineError
	torn      *LineError
	// The entries it returned (nent), and those among them that carried
	// an append's marker (see group.go), by their index in that count.
	nent   int
	marked []markAt
}

// markAt is an entry that carried an append's marker.
type markAt struct {
	i    int // its index among the parser's entries
	mark appendMark
	line int
}

// headerLine handles line 1.
func (p *logParser) headerLine(line []byte) error {
	p.line = 1
	if int64(len(line)) > p.lim.MaxLineBytes {
		return p.lim.lineError(1, int64(len(line)))
	}
	v := bytes.TrimSpace(line)
	if len(v) == 0 {
		return &CorruptError{Line: 1, Err: errNoHeader}
	}
	if !jsonx.Valid(v) {
		return &CorruptError{Line: 1, Err: fmt.Errorf("%w (it is not valid JSON)", errNoHeader)}
	}
	h, err := parseHeader(v)
	if err != nil {
		return &CorruptError{Line: 1, Err: err}
	}
	if h.Version > CurrentVersion {
		return &UnsupportedVersionError{Version: h.Version}
	}
	if h.Version < CurrentVersion {
		p.mig = newMigrator(h.Version)
		if v, err = p.mig.header(v); err != nil {
			return &CorruptError{Line: 1, Err: err}
		}
		if h, err = parseHeader(v); err != nil {
			return &CorruptError{Line: 1, Err: err}
		}
	}
	if p.mig == nil {
		h.raw = line // written back byte for byte, whitespace and all
	}
	p.header, p.gotHeader = h, true
	return nil
}

// entryLine handles one line after the header. owned says whether line may
// be kept by the entry. It returns ok=false for lines that yield no entry.
func (p *logParser) entryLine(line []byte, complete bool) (Entry, bool, error) {
	p.line++
	if int64(len(line)) > p.lim.MaxLineBytes {
		return Entry{}, false, p.tooLong(int64(len(line)))
	}
	if i := bytes.LastIndexByte(line, 0); i >= 0 {
		// Zero bytes are never in JSON: a crash left them, where a write
		// it lost had been before a later one it kept (file systems fill
		// such a hole with zeros), perhaps after the start of a line it
		// cut. The line that follows the zeros is read; what was lost
		// before it is reported.
		p.zeroed = append(p.zeroed, LineError{Line: p.line, Err: fmt.Errorf("%w (%d bytes before the line that follows)", ErrZeroed, i+1)})
		line = line[i+1:]
	}
	v := bytes.TrimSpace(line)
	if len(v) == 0 {
		return Entry{}, false, nil
	}
	var err error
	var mark appendMark
	isMarked := false
	if p.mig != nil {
		// No file of an older version holds a real marker (they are
		// written in the current one): one there is only dropped.
		if v, err = p.mig.entry(v); err == nil {
			v, _, _ = cutMark(v)
		}
	} else {
		// The entry keeps its whole line, so that writing it back keeps
		// every byte (a CRLF file's carriage returns, say); a marked line
		// keeps it without its marker.
		v, mark, isMarked = cutMark(line)
	}
	var e Entry
	if err == nil {
		e, err = parseEntryMode(v, !p.strict)
	}
	if err == nil {
		if isMarked {
			p.marked = append(p.marked, markAt{i: p.nent, mark: mark, line: p.line})
		}
		p.nent++
		return e, true, nil
	}
	le := LineError{Line: p.line, Err: err}
	if !complete && !jsonx.Valid(bytes.TrimSpace(line)) {
		// Cut short by a crash. A last line that is whole JSON but no
		// entry was written that way: it is malformed like any other.
		p.torn = &le
		return Entry{}, false, nil
	}
	if p.strict {
		return Entry{}, false, &CorruptError{Line: p.line, Err: err}
	}
	p.malformed = append(p.malformed, le)
	return Entry{}, false, nil
}

// tooLong handles the line p.line, of n bytes (or more: it was not read
// to its end), over the limit: a malformed line, or in a strict read an
// error.
func (p *logParser) tooLong(n int64) error {
	err := p.lim.lineError(p.line, n)
	if p.strict {
		return err
	}
	p.malformed = append(p.malformed, LineError{Line: p.line, Err: err})
	return nil
}

// skipLong handles a line over the limit that the caller skipped
// without reading it whole.
func (p *logParser) skipLong(n int64) error {
	p.line++
	return p.tooLong(n)
}

// checkLines refuses a log of more lines after its header than the
// limit allows.
func (p *logParser) checkLines(n int) error {
	if n > p.lim.MaxEntries {
		return &LimitError{What: "entries", Size: int64(n), Limit: int64(p.lim.MaxEntries)}
	}
	return nil
}

// lineCount counts the lines of data (a last one without newline too).
func lineCount(data []byte) int {
	n := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

// resolve applies the all-or-nothing rule of multi-entry appends to the
// entries p returned (see group.go): it returns those that count, and
// notes the lines of cut appends in p.partial.
func (p *logParser) resolve(entries []Entry) []Entry {
	if len(p.marked) == 0 {
		return entries
	}
	kept, cut := groups(entries, marksOf(len(entries), p.marked))
	lines := make(map[int]int, len(p.marked))
	for _, m := range p.marked {
		lines[m.i] = m.line
	}
	for _, i := range cut {
		p.partial = append(p.partial, LineError{Line: lines[i], Err: ErrPartialAppend})
	}
	return kept
}

func (p *logParser) finish(entries []Entry) *Log {
	l := &Log{Header: p.header, Entries: entries, Malformed: p.malformed, Partial: p.partial, Zeroed: p.zeroed, Torn: p.torn, lines: p.line}
	if p.mig != nil {
		l.MigratedFrom = p.mig.from
	}
	return l
}

var errEmpty = errors.New("empty file")

// DecodeLog reads a whole session log from data. The entries keep
// sub-slices of data, which must not be modified afterwards; this is the
// fastest way to read a log that is already in memory.
//
// A log whose first line is not a session header, an empty one, or one
// newer than CurrentVersion gives an error and nothing else; older
// versions are migrated in memory.
func DecodeLog(data []byte, opts *ReadOptions) (*Log, error) {
	p := opts.parser()
	if len(data) == 0 {
		return nil, &CorruptError{Err: errEmpty}
	}
	if int64(len(data)) > p.lim.MaxLogBytes {
		return nil, &LimitError{What: "log", Size: int64(len(data)), Limit: p.lim.MaxLogBytes}
	}
	nl := bytes.IndexByte(data, '\n')
	first := data
	rest := []byte(nil)
	if nl >= 0 {
		first, rest = data[:nl], data[nl+1:]
	}
	if err := p.headerLine(first); err != nil {
		return nil, err
	}
	if err := p.checkLines(lineCount(rest)); err != nil {
		return nil, err
	}
	if p.mig == nil && len(rest) >= parallelDecodeMin {
		if workers := min(runtime.GOMAXPROCS(0), 8, len(rest)/(parallelDecodeMin/2)); workers > 1 {
			return p.decodeParallel(rest, workers)
		}
	}
	refs := refsIn(rest)
	entries := make([]Entry, 0, linesIn(rest))
	for len(rest) > 0 {
		var line []byte
		complete := true
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			line, rest, complete = rest, nil, false
		}
		e, ok, err := p.entryLine(line, complete)
		if err != nil {
			return nil, err
		}
		if ok {
			entries = append(entries, e)
		}
	}
	l := p.finish(p.resolve(entries))
	l.refs = refs
	return l, nil
}

// parallelDecodeMin is the size of log from which DecodeLog reads its
// lines on several processors.
const parallelDecodeMin = 4 << 20

// decodeParallel reads the entry lines of a current-version log (whose
// lines do not depend on each other) in chunks on several goroutines, and
// joins what they found in line order.
func (p *logParser) decodeParallel(rest []byte, workers int) (*Log, error) {
	type chunk struct {
		data []byte
		lineChunk
	}
	chunks := make([]chunk, 0, workers)
	for len(rest) > 0 {
		n := len(rest)
		if left := workers - len(chunks); left > 1 {
			n = len(rest) / left
			if i := bytes.IndexByte(rest[n:], '\n'); i >= 0 {
				n += i + 1
			} else {
				n = len(rest)
			}
		}
		chunks = append(chunks, chunk{data: rest[:n], lineChunk: lineChunk{p: logParser{strict: p.strict, lim: p.lim}}})
		rest = rest[n:]
	}
	var wg sync.WaitGroup
	for k := range chunks {
		wg.Add(1)
		go func(c *chunk) {
			defer wg.Done()
			data := c.data
			c.entries = make([]Entry, 0, linesIn(data))
			for len(data) > 0 {
				var line []byte
				complete := true
				if i := bytes.IndexByte(data, '\n'); i >= 0 {
					line, data = data[:i], data[i+1:]
				} else {
					line, data, complete = data, nil, false
				}
				if !c.entryLine(line, complete) {
					return
				}
			}
			c.lines = c.p.line
			c.refs = refsIn(c.data) // while the chunk is in cache
		}(&chunks[k])
	}
	wg.Wait()
	parts := make([]*lineChunk, len(chunks))
	for k := range chunks {
		parts[k] = &chunks[k].lineChunk
	}
	return p.join(parts)
}

// lineChunk is what one goroutine decoded of a run of a log's lines, with
// its own parser (whose line numbers count from the run's start).
type lineChunk struct {
	p       logParser
	entries []Entry
	lines   int // lines in the run
	refs    refState
	err     error
}

// entryLine decodes an entry line into the chunk; false if it failed
// (c.err says why).
func (c *lineChunk) entryLine(line []byte, complete bool) bool {
	e, ok, err := c.p.entryLine(line, complete)
	if err != nil {
		c.err = err
		return false
	}
	if ok {
		c.entries = append(c.entries, e)
	}
	return true
}

// join makes the log of chunks decoded in parallel, in line order after
// the lines p has read: their entries, what they skipped and their errors
// with line numbers made the log's.
// linesIn bounds the number of entries in data from above. Counting is
// a vectorised scan, a few percent of the decode, and sizes the slice
// exactly: a guess from the length over-allocated 10 MB for W10k, where
// lines are long, and grew by copying where they are short.
func linesIn(data []byte) int { return bytes.Count(data, []byte{'\n'}) + 1 }

func (p *logParser) join(chunks []*lineChunk) (*Log, error) {
	total := 0
	for _, c := range chunks {
		total += len(c.entries)
	}
	entries := make([]Entry, 0, total)
	refs := refsNone
	base := p.line
	for _, c := range chunks {
		if c.err != nil {
			var ce *CorruptError
			if errors.As(c.err, &ce) && ce.Line > 0 {
				ce.Line += base
			}
			var le *LimitError
			if errors.As(c.err, &le) && le.Line > 0 {
				le.Line += base
			}
			return nil, c.err
		}
		for _, m := range c.p.marked {
			m.i += len(entries)
			m.line += base
			p.marked = append(p.marked, m)
		}
		entries = append(entries, c.entries...)
		refs = max(refs, c.refs)
		for _, m := range c.p.malformed {
			m.Line += base
			var le *LimitError
			if errors.As(m.Err, &le) && le.Line > 0 {
				le.Line = m.Line
			}
			p.malformed = append(p.malformed, m)
		}
		for _, z := range c.p.zeroed {
			z.Line += base
			p.zeroed = append(p.zeroed, z)
		}
		if c.p.torn != nil {
			t := *c.p.torn
			t.Line += base
			p.torn = &t
		}
		base += c.lines
	}
	p.line = base
	l := p.finish(p.resolve(entries))
	l.refs = refs
	return l, nil
}

// ReadLog reads a whole session log from r; see DecodeLog.
func ReadLog(r io.Reader, opts *ReadOptions) (*Log, error) {
	d := NewDecoder(r, opts)
	var entries []Entry
	for {
		e, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return d.p.finish(entries), nil
}

// Decoder reads a session log line by line from a stream, holding only
// the line at hand: a line over Limits.MaxLineBytes is skipped as it is
// read, never held.
type Decoder struct {
	r     *bufio.Reader
	p     logParser
	err   error
	buf   []byte
	read  int64 // bytes read
	lines int   // lines read after the header
	long  int64 // the size of the line just skipped for its length, or 0
	// The entries of a multi-entry append read so far, held until its
	// last one comes (heldEnd), with their lines; out, those to return.
	held      []Entry
	heldMark  appendMark // the marker of the last entry held
	heldLines []int
	out       []Entry
}

// NewDecoder returns a decoder reading from r.
func NewDecoder(r io.Reader, opts *ReadOptions) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, 64<<10), p: opts.parser()}
}

// readLine returns the next line and whether it ended with a newline.
// A line longer than the limit is read to its end and dropped: it comes
// back empty, with d.long set to its size.
func (d *Decoder) readLine() ([]byte, bool, error) {
	d.buf = d.buf[:0]
	d.long = 0
	for {
		chunk, err := d.r.ReadSlice('\n')
		d.read += int64(len(chunk))
		if d.read > d.p.lim.MaxLogBytes {
			return nil, false, &LimitError{What: "log", Size: d.read, Limit: d.p.lim.MaxLogBytes}
		}
		switch {
		case d.long > 0:
			d.long += int64(len(chunk))
		case int64(len(d.buf)+len(chunk)) > d.p.lim.MaxLineBytes+1:
			d.long = int64(len(d.buf) + len(chunk))
			d.buf = d.buf[:0]
		default:
			d.buf = append(d.buf, chunk...)
		}
		switch err {
		case nil:
			if d.long > 0 {
				d.long--
				return nil, true, nil
			}
			return d.buf[:len(d.buf)-1], true, nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(d.buf) == 0 && d.long == 0 {
				return nil, false, io.EOF
			}
			return d.buf, false, nil
		default:
			return nil, false, err
		}
	}
}

// Header reads the header if it has not been read yet and returns it.
func (d *Decoder) Header() (Header, error) {
	if d.err != nil {
		return Header{}, d.err
	}
	if !d.p.gotHeader {
		line, _, err := d.readLine()
		if err == io.EOF {
			d.err = &CorruptError{Err: errEmpty}
			return Header{}, d.err
		}
		if err != nil {
			d.err = err
			return Header{}, err
		}
		if d.long > 0 {
			d.err = d.p.lim.lineError(1, d.long)
			return Header{}, d.err
		}
		if err := d.p.headerLine(bytes.Clone(line)); err != nil {
			d.err = err
			return Header{}, err
		}
	}
	return d.p.header, nil
}

// Next returns the next entry, or io.EOF after the last one. Malformed
// lines are skipped (or, in strict mode, end decoding with an error), and
// so are the lines of an append a crash cut short (see Partial): the
// lines of an append of several entries are returned once its last one
// has been read.
func (d *Decoder) Next() (Entry, error) {
	if _, err := d.Header(); err != nil {
		return Entry{}, err
	}
	for {
		if len(d.out) > 0 {
			e := d.out[0]
			d.out = d.out[1:]
			return e, nil
		}
		e, m, err := d.nextMarked()
		if err == io.EOF && len(d.held) > 0 {
			d.cutHeld()
			continue
		}
		if err != nil {
			return Entry{}, err
		}
		switch {
		case m.n > 0 && len(d.held) > 0 && m.n == d.heldMark.n && m.end == d.heldMark.end && m.k == d.heldMark.k+1:
			d.held, d.heldMark = append(d.held, e), m
			d.heldLines = append(d.heldLines, d.p.line)
		case m.n > 0:
			d.cutHeld()
			d.held, d.heldMark, d.heldLines = append(d.held, e), m, append(d.heldLines, d.p.line)
		case len(d.held) > 0 && d.heldMark.names(e.id) && d.heldMark.k == d.heldMark.n-2 && len(d.held) == d.heldMark.n-1:
			d.out = append(append(d.out, d.held...), e)
			d.held, d.heldLines = d.held[:0], d.heldLines[:0]
		default:
			d.cutHeld()
			return e, nil
		}
	}
}

// nextMarked returns the next entry and its append's marker (n 0: none),
// holding nothing back.
func (d *Decoder) nextMarked() (Entry, appendMark, error) {
	e, err := d.next()
	if err != nil {
		return Entry{}, appendMark{}, err
	}
	var m appendMark
	if n := len(d.p.marked); n > 0 && d.p.marked[n-1].i == d.p.nent-1 {
		m = d.p.marked[n-1].mark
	}
	d.p.marked = d.p.marked[:0] // read: kept no longer
	return e, m, nil
}

// cutHeld reports the lines held for an append whose last entry did not
// come, as Partial.
func (d *Decoder) cutHeld() {
	for _, l := range d.heldLines {
		d.p.partial = append(d.p.partial, LineError{Line: l, Err: ErrPartialAppend})
	}
	d.held, d.heldLines = d.held[:0], d.heldLines[:0]
}

// Partial returns the lines of appends a crash cut short found so far
// (see Log.Partial).
func (d *Decoder) Partial() []LineError { return d.p.partial }

// Zeroed returns the lines with zero bytes a crash left found so far (see
// Log.Zeroed).
func (d *Decoder) Zeroed() []LineError { return d.p.zeroed }

// next reads the next line that is an entry.
func (d *Decoder) next() (Entry, error) {
	for {
		line, complete, err := d.readLine()
		if err != nil {
			if err != io.EOF {
				d.err = err
			}
			return Entry{}, err
		}
		d.lines++
		if err := d.p.checkLines(d.lines); err != nil {
			d.err = err
			return Entry{}, err
		}
		if d.long > 0 {
			if err := d.p.skipLong(d.long); err != nil {
				d.err = err
				return Entry{}, err
			}
			continue
		}
		e, ok, err := d.p.entryLine(bytes.Clone(line), complete)
		if err != nil {
			d.err = err
			return Entry{}, err
		}
		if ok {
			return e, nil
		}
	}
}

// Malformed returns the lines skipped so far.
func (d *Decoder) Malformed() []LineError { return d.p.malformed }

// Torn returns the torn last line, once the end has been reached.
func (d *Decoder) Torn() *LineError { return d.p.torn }

// MigratedFrom returns the version the stream was migrated from, or 0.
func (d *Decoder) MigratedFrom() int {
	if d.p.mig == nil {
		return 0
	}
	return d.p.mig.from
}

// Encoder writes a session log line by line.
type Encoder struct {
	w   io.Writer
	buf []byte
}

// NewEncoder returns an encoder writing to w. Each line is one Write call.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: w} }

// WriteHeader writes the header line.
func (enc *Encoder) WriteHeader(h Header) error {
	var err error
	if enc.buf, err = h.appendJSON(enc.buf[:0]); err != nil {
		return err
	}
	enc.buf = append(enc.buf, '\n')
	_, err = enc.w.Write(enc.buf)
	return err
}

// WriteEntry writes one entry line.
func (enc *Encoder) WriteEntry(e Entry) error {
	if e.IsZero() {
		return errors.New("session: write of zero Entry")
	}
	enc.buf = append(e.appendBytes(enc.buf[:0]), '\n')
	_, err := enc.w.Write(enc.buf)
	return err
}

// WriteLog writes a whole log: the header, then every entry.
func WriteLog(w io.Writer, l *Log) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := NewEncoder(bw)
	if err := enc.WriteHeader(l.Header); err != nil {
		return err
	}
	for _, e := range l.Entries {
		if err := enc.WriteEntry(e); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// fileEnd describes the end of a log file, for appending after it.
type fileEnd struct {
	size     int64 // bytes read
	lastLine int64 // offset at which the last line starts
	endsNL   bool  // the last byte is a newline
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
	whole := func() (*Log, []byte, fileEnd, error) {
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
	// An older version (or no header) goes the whole way at once; a look
	// at the header first saves decoding a file that will be read again.
	var peek [4 << 10]byte
	if m, _ := r.ReadAt(peek[:min(size, int64(len(peek)))], 0); m > 0 {
		if i := bytes.IndexByte(peek[:m], '\n'); i >= 0 {
			hp := proto
			if hp.headerLine(peek[:i]) != nil || hp.mig != nil {
				return whole()
			}
		}
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
	// limit is read to its end but not kept: long is then its size.
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
			if eager && !marked(line) {
				if e, ok := compactLine(line, &w.arena, &w.spans); ok {
					c.p.line++
					c.p.nent++
					c.entries = append(c.entries, e)
					continue
				}
			}
			e, ok, err := c.p.entryLine(line, complete)
			if err != nil {
				c.err = err
				return
			}
			if ok {
				c.entries = append(c.entries, compactEntry(e, &w.arena))
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
