package session

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agentsession/session/internal/jsonx"
)

// A session log in memory: Log, what reading it may report (LineError,
// ReadOptions), the rules every reader applies to a line (logParser),
// and DecodeLog, which reads a log already in memory, on several
// processors when it is large. readfile.go reads a file; stream.go a
// stream.

// CurrentVersion is the format version this package writes, and the newest
// it reads. Older versions are migrated when read (see Log.MigratedFrom).
const CurrentVersion = 3

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
	// BlobRefs lists the blob references ("blob:sha256:<hex>") the
	// entries held as the store read them, sorted, each once, when the
	// reader resolved references: FileStore's Load and LoadTail, and
	// ResolveBlobs, put the data of images in place of their
	// references, and the entries no longer show them. Every reference
	// found in the bytes of those entries is listed, resolved or not
	// (LoadTail: of the entries it read). A reader that resolves nothing
	// leaves it nil, the references then being in the entries' bytes
	// (Entry.JSON). What a log refers to is both (CollectBlobs keeps
	// them all).
	BlobRefs []string
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
	// DecodeMessages decodes each message entry's message as its line is
	// read, in the same pass, instead of when it is first asked for
	// (which reads the line again): for a log whose messages will all be
	// read, such as the path a PathLoader loads. The log is the same
	// either way; this one takes more memory until its messages are read.
	// DecodeLog honours it; the other readers decode messages when asked
	// (ReadLogAt, and so FileStore, decodes those after the latest
	// compaction as it reads).
	DecodeMessages bool
}

// parser returns the logParser these options describe.
func (o *ReadOptions) parser() logParser {
	if o == nil {
		return logParser{lim: Limits{}.withDefaults()}
	}
	return logParser{strict: o.Strict, lim: o.Limits.withDefaults(), eager: o.DecodeMessages}
}

// eagerBlock is the block of the arena a parser that decodes messages
// as it reads (eager) puts their strings in.
const eagerBlock = 256 << 10

// eagerLine reads a message entry's line in one pass, its message
// decoded (compactLine), when p decodes messages as it reads; false for
// a line to read the general way (entryLine): any other, and those
// compactLine leaves to it (as the whole read of a file does: a line
// with an append's marker, one over the limit, one naming a blob).
func (p *logParser) eagerLine(line []byte, a *jsonx.Arena, spans *[]jsonx.Span) (Entry, bool) {
	if !p.eager || p.mig != nil || marked(line) || int64(len(line)) > p.lim.MaxLineBytes || bytes.Contains(line, []byte(BlobPrefix)) {
		return Entry{}, false
	}
	e, ok := compactLine(line, a, spans)
	if ok {
		p.line++
		p.nent++
	}
	return e, ok
}

// logParser turns lines into a header and entries; shared by DecodeLog
// and Decoder.
type logParser struct {
	strict    bool
	eager     bool   // ReadOptions.DecodeMessages
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

// splitZeros splits line after its last zero byte. Zero bytes are never
// in JSON: a crash left them, where a write it lost had been before a
// later one it kept (file systems fill such a hole with zeros), perhaps
// after the start of a line it cut. body, what follows them, is the line
// that is read; zeros is nil when there are none.
func splitZeros(line []byte) (zeros, body []byte) {
	// Looked for forwards first: IndexByte is vectorised, LastIndexByte
	// reads a byte at a time (a tenth of a listing's time went there),
	// and lines without zeros are the rule.
	if bytes.IndexByte(line, 0) < 0 {
		return nil, line
	}
	if i := bytes.LastIndexByte(line, 0); i >= 0 {
		return line[:i+1], line[i+1:]
	}
	return nil, line
}

// entryLine handles one line after the header. owned says whether line may
// be kept by the entry. It returns ok=false for lines that yield no entry.
func (p *logParser) entryLine(line []byte, complete bool) (Entry, bool, error) {
	p.line++
	if int64(len(line)) > p.lim.MaxLineBytes {
		return Entry{}, false, p.tooLong(int64(len(line)))
	}
	if zeros, body := splitZeros(line); zeros != nil {
		// What was lost before the line that follows is reported.
		p.zeroed = append(p.zeroed, LineError{Line: p.line, Err: fmt.Errorf("%w (%d bytes before the line that follows)", ErrZeroed, len(zeros))})
		line = body
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
		v, err = p.mig.entry(v)
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
// versions are migrated in memory. A log compressed with zstd (an
// archived session a FileStore compressed) is decompressed first.
func DecodeLog(data []byte, opts *ReadOptions) (*Log, error) {
	p := opts.parser()
	if len(data) == 0 {
		return nil, &CorruptError{Err: errEmpty}
	}
	if int64(len(data)) > p.lim.MaxLogBytes {
		return nil, &LimitError{What: "log", Size: int64(len(data)), Limit: p.lim.MaxLogBytes}
	}
	if hasZstdMagic(data) {
		plain, err := decompressLog(data, p.lim.MaxLogBytes)
		if err != nil {
			return nil, err
		}
		return DecodeLog(plain, opts)
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
	arena, spans := jsonx.Arena{Block: eagerBlock}, []jsonx.Span(nil)
	for len(rest) > 0 {
		var line []byte
		complete := true
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			line, rest, complete = rest, nil, false
		}
		if e, ok := p.eagerLine(line, &arena, &spans); ok {
			entries = append(entries, e)
			continue
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
		chunks = append(chunks, chunk{data: rest[:n], lineChunk: lineChunk{p: logParser{strict: p.strict, lim: p.lim, eager: p.eager}}})
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
	arena   jsonx.Arena // for p.eager
	spans   []jsonx.Span
}

// entryLine decodes an entry line into the chunk; false if it failed
// (c.err says why).
func (c *lineChunk) entryLine(line []byte, complete bool) bool {
	if c.arena.Block == 0 {
		c.arena.Block = eagerBlock
	}
	if e, ok := c.p.eagerLine(line, &c.arena, &c.spans); ok {
		c.entries = append(c.entries, e)
		return true
	}
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

// unreadableError is the *CorruptError that refuses an operation (what)
// that would drop the lines of log that are not entries, or nil if it
// has none.
func unreadableError(path string, log *Log, what string) error {
	bad := append(slices.Clone(log.Malformed), log.Partial...)
	if len(bad) == 0 {
		return nil
	}
	slices.SortFunc(bad, func(a, b LineError) int { return cmp.Compare(a.Line, b.Line) })
	lines := make([]string, 0, min(len(bad), 10))
	for i, m := range bad {
		if i == 10 {
			lines = append(lines, "...")
			break
		}
		lines = append(lines, strconv.Itoa(m.Line))
	}
	return &CorruptError{Path: path, Line: bad[0].Line, Err: fmt.Errorf(
		"%s would drop %d line(s) that are not entries (line %s: malformed, or of an append a crash cut short); run \"agentsession verify\" on it, and pass DropUnreadable to drop them",
		what, len(bad), strings.Join(lines, ", "))}
}
