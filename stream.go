package session

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
)

// Logs as streams: Decoder reads one line at a time (holding only the
// line at hand), Encoder and WriteLog write them; ReadLog reads a whole
// stream.

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
	r       *bufio.Reader
	pooled  *scanBufs // the buffers to give back (newPooledDecoder), or nil
	sniffed bool      // whether the start was looked at for compression
	// compressed: the log is zstd-compressed (known once sniffed)
	compressed bool
	p          logParser
	err        error
	buf        []byte
	read       int64 // bytes read
	lines      int   // lines read after the header
	long       int64 // the size of the line just skipped for its length, or 0
	// The entries of a multi-entry append read so far, held until its
	// last one comes (heldEnd), with their lines; out, those to return.
	held      []Entry
	heldMark  appendMark // the marker of the last entry held
	heldLines []int
	out       []Entry
}

// NewDecoder returns a decoder reading from r.
// A log compressed with zstd (an archived session a FileStore
// compressed) is decompressed as it is read.
func NewDecoder(r io.Reader, opts *ReadOptions) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, 64<<10), p: opts.parser()}
}

// scanBufs are the buffers of a decoder a listing or a watcher makes
// and gives back when done (newPooledDecoder, release): listing a
// thousand files no index describes allocated and cleared 128 KiB a file
// for them.
type scanBufs struct {
	r   *bufio.Reader
	buf []byte
}

var scanBufPool = sync.Pool{New: func() any { return &scanBufs{r: bufio.NewReaderSize(nil, 64<<10)} }}

// maxPooledLine bounds the line buffer kept for the next decoder: a
// rare long line's buffer is left to the collector.
const maxPooledLine = 1 << 20

// newPooledDecoder is NewDecoder with buffers taken from a pool; the
// caller calls release when done, after which nothing the decoder
// returned may refer to its buffers (entries and lines the caller keeps
// must be its own copies; the header always is).
func newPooledDecoder(r io.Reader, opts *ReadOptions) *Decoder {
	b := scanBufPool.Get().(*scanBufs)
	b.r.Reset(r)
	return &Decoder{r: b.r, pooled: b, buf: b.buf[:0], p: opts.parser()}
}

// release gives the buffers of a decoder newPooledDecoder made back; the
// decoder is not used again.
func (d *Decoder) release() {
	b := d.pooled
	if b == nil {
		return
	}
	b.buf = d.buf[:0] // grown, perhaps, since it was taken
	d.pooled, d.r, d.buf = nil, nil, nil
	b.r.Reset(nil)
	if cap(b.buf) > maxPooledLine {
		b.buf = nil
	}
	scanBufPool.Put(b)
}

// sniff looks, before the first line is read (not before: a reader on
// a pipe would block in NewDecoder), for a compressed log.
func (d *Decoder) sniff() error {
	d.sniffed = true
	zr, err := zstdReader(d.r, d.p.lim.MaxLogBytes)
	if err != nil {
		return &CorruptError{Err: fmt.Errorf("compressed log: %w", err)}
	}
	if zr != nil {
		d.r = bufio.NewReaderSize(zr, 64<<10)
		d.compressed = true
	}
	return nil
}

// readLine returns the next line and whether it ended with a newline.
// A line longer than the limit is read to its end and dropped: it comes
// back empty, with d.long set to its size.
func (d *Decoder) readLine() ([]byte, bool, error) {
	if !d.sniffed {
		if err := d.sniff(); err != nil {
			return nil, false, err
		}
	}
	d.buf = d.buf[:0]
	d.long = 0
	most := d.p.lim.MaxLineBytes // a line and its newline, at most
	if most < math.MaxInt64 {
		most++
	}
	for {
		chunk, err := d.r.ReadSlice('\n')
		d.read += int64(len(chunk))
		if d.read > d.p.lim.MaxLogBytes {
			return nil, false, &LimitError{What: "log", Size: d.read, Limit: d.p.lim.MaxLogBytes}
		}
		switch {
		case d.long > 0:
			d.long += int64(len(chunk))
		case int64(len(d.buf)+len(chunk)) > most:
			d.long = int64(len(d.buf) + len(chunk))
			d.buf = d.buf[:0]
		default:
			if len(d.buf)+len(chunk) > cap(d.buf) {
				// Doubled, up to the limit: append grows a large slice by
				// a quarter, which allocates some five times a long line
				// before it is known to be over the limit.
				n := int(min(max(2*int64(cap(d.buf)), int64(len(d.buf)+len(chunk))), most))
				d.buf = append(make([]byte, 0, n), d.buf...)
			}
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
