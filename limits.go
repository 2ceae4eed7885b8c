package session

import (
	"bytes"
	"fmt"
	"strconv"
)

// Limits bound what a reader accepts and a store writes, so that a
// damaged or hostile file cannot take unbounded memory or time to open,
// and nothing is written that a reader would then refuse. Every reader
// and store of this package applies the same defaults. A zero field
// means its default; a negative one, no limit.
//
// A line over MaxLineBytes is skipped without being held in memory: a
// lenient read reports it as a malformed line (its error wraps
// ErrTooLarge), a strict read fails. A log over MaxLogBytes or with more
// lines than MaxEntries is refused whole (*LimitError). Writes over a
// limit fail with a *LimitError before anything is written.
//
// # Memory
//
// What a read takes is bounded by the limits, whatever the file holds
// (a compressed log included, however far it decompresses: see
// FileStoreOptions.CompressArchive). Besides the log it returns, which
// holds each entry's bytes about once (at most about MaxLogBytes, plus a
// few dozen bytes an entry, so at most MaxEntries of them), a read
// holds:
//
//   - a plain file (FileStore, ReadLogAt): a 2 MiB chunk per worker
//     (one per processor, up to 8) and the lines that run past a chunk,
//     each at most MaxLineBytes; a line over it is never held;
//   - a stream (Decoder, ReadLog, VerifyReader) or a compressed file:
//     the line at hand, in a buffer of at most MaxLineBytes+1 (a line
//     over it is dropped as it streams past), and for a compressed one
//     the decoder's window, at most 8 MiB (a frame that asks for more is
//     refused, What "window"); it stops as soon as the log passes
//     MaxLogBytes or MaxEntries;
//   - a listing (FileStore.List): what a stream read holds, and the
//     entry a line makes, never the log.
//
// So an open of a current-version log holds at most about the log's
// bytes (MaxLogBytes at most) plus 2*MaxLineBytes + 32 MiB; with the
// defaults, some 1.2 GiB for the largest log allowed. A listing holds
// about 2*MaxLineBytes + 16 MiB (some 150 MiB), whatever the size of the
// log. A log of an older version is read whole to be migrated, its
// bytes held besides (MaxLogBytes more at most), and DecodeLog, given a
// compressed log in memory, holds it decompressed whole (at most
// MaxLogBytes) besides its input.
type Limits struct {
	// MaxLineBytes bounds one line of a log: the header or one entry.
	// Default DefaultMaxLineBytes.
	MaxLineBytes int64
	// MaxEntries bounds the lines after the header (entries, and the
	// blank or malformed lines among them). Default DefaultMaxEntries.
	MaxEntries int
	// MaxLogBytes bounds a whole log. Default DefaultMaxLogBytes.
	MaxLogBytes int64
	// MaxResolvedBytes bounds the bytes of the distinct blobs a store
	// reads back into one log's images (each blob counts once, however
	// many references it has). References past it stay unresolved and
	// are reported (ErrTooLarge). Default DefaultMaxResolvedBytes.
	MaxResolvedBytes int64
}

// The default Limits: far above what agents write (the 10,000-turn W10k
// workload is 30,000 entries and 67 MB; a line of pi's is at most a few
// MB of an inline image), low enough that opening the largest log
// allowed stays within a few GB of memory.
const (
	DefaultMaxLineBytes = 64 << 20
	DefaultMaxEntries   = 2_000_000
	DefaultMaxLogBytes  = 1 << 30
	// DefaultMaxResolvedBytes is eight blobs of the largest size a
	// BlobDir accepts by default.
	DefaultMaxResolvedBytes = 8 * DefaultMaxBlobBytes
)

// withDefaults fills in the zero fields; negative ones become "no
// limit" (the largest value).
func (l Limits) withDefaults() Limits {
	l.MaxLineBytes = orDefault(l.MaxLineBytes, DefaultMaxLineBytes, 1<<63-1)
	l.MaxEntries = orDefault(l.MaxEntries, DefaultMaxEntries, 1<<31-1)
	l.MaxLogBytes = orDefault(l.MaxLogBytes, DefaultMaxLogBytes, 1<<63-1)
	l.MaxResolvedBytes = orDefault(l.MaxResolvedBytes, DefaultMaxResolvedBytes, 1<<63-1)
	return l
}

// orDefault is v, or def when v is zero, or none (no limit) when v is
// negative.
func orDefault[T int | int64](v, def, none T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return none
	}
	return v
}

// LimitError is a line, a log or a write over one of the Limits.
type LimitError struct {
	Path  string // the file, when known
	Line  int    // the line, for a line over MaxLineBytes (0 when unknown)
	What  string // "line", "log", "entries", "blobs" or "window" (a compressed log's decoder window)
	Size  int64  // its size in bytes (lines for "entries"); at least Limit+1 when not read to its end
	Limit int64
}

func (e *LimitError) Error() string {
	where := ""
	if e.Path != "" {
		where = e.Path + ": "
	}
	switch e.What {
	case "line":
		line := "a line"
		if e.Line > 0 {
			line = "line " + strconv.Itoa(e.Line)
		}
		return fmt.Sprintf("session: %s%s is over the limit of %d bytes (Limits.MaxLineBytes)", where, line, e.Limit)
	case "entries":
		return fmt.Sprintf("session: %sthe log holds more than %d lines (Limits.MaxEntries)", where, e.Limit)
	case "blobs":
		return fmt.Sprintf("session: %sthe blobs the log refers to add up to %d bytes, over the limit of %d (Limits.MaxResolvedBytes)", where, e.Size, e.Limit)
	case "window":
		return fmt.Sprintf("session: %sthe compressed log asks for a decoder window of %d bytes, over the %d bytes any this package writes asks for", where, e.Size, e.Limit)
	}
	return fmt.Sprintf("session: %sthe log is %d bytes, over the limit of %d (Limits.MaxLogBytes)", where, e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *LimitError) Is(target error) bool { return target == ErrTooLarge }

// lineError reports a line over the limit; n is its size so far.
func (l Limits) lineError(line int, n int64) *LimitError {
	return &LimitError{Line: line, What: "line", Size: n, Limit: l.MaxLineBytes}
}

// checkWrite applies the limits to a write to a log that holds size
// bytes and n lines after its header, adding k lines of the lengths
// lineLen gives: nil, or the *LimitError of the first limit it breaks.
func (l Limits) checkWrite(size int64, n, k int, lineLen func(i int) int) error {
	add := int64(0)
	for i := range k {
		m := int64(lineLen(i))
		if m > l.MaxLineBytes {
			return &LimitError{What: "line", Size: m, Limit: l.MaxLineBytes}
		}
		add += m + 1
	}
	if n+k > l.MaxEntries {
		return &LimitError{What: "entries", Size: int64(n + k), Limit: int64(l.MaxEntries)}
	}
	if size+add > l.MaxLogBytes {
		return &LimitError{What: "log", Size: size + add, Limit: l.MaxLogBytes}
	}
	return nil
}

// WithDefaults returns l with its zero fields set to the defaults and its
// negative ones to "no limit" (the largest value), for stores that apply
// the limits themselves.
func (l Limits) WithDefaults() Limits { return l.withDefaults() }

// CheckAppend reports whether appending entries to a log of size bytes
// (the header and a newline per line included) and n entries keeps it
// within l (taken with its defaults): nil, or a *LimitError. Stores call
// it before they write, so that nothing is written that a reader would
// refuse.
func (l Limits) CheckAppend(size int64, n int, entries []Entry) error {
	return l.withDefaults().checkWrite(size, n, len(entries), func(i int) int { return entries[i].Len() })
}

// CheckLog reports whether the log of h and entries is within l (taken
// with its defaults): nil, or a *LimitError.
func (l Limits) CheckLog(h Header, entries []Entry) error {
	lim := l.withDefaults()
	hb, err := h.appendJSON(nil)
	if err != nil {
		return err
	}
	if err := lim.checkWrite(0, 0, 1, func(int) int { return len(hb) }); err != nil {
		return err
	}
	return lim.checkWrite(int64(len(hb)+1), 0, len(entries), func(i int) int { return entries[i].Len() })
}

// checkLog applies the limits to a whole log about to be written.
func (l Limits) checkLog(data []byte) error {
	if int64(len(data)) > l.MaxLogBytes {
		return &LimitError{What: "log", Size: int64(len(data)), Limit: l.MaxLogBytes}
	}
	n := 0
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		n++
		if int64(len(line)) > l.MaxLineBytes {
			return &LimitError{Line: n, What: "line", Size: int64(len(line)), Limit: l.MaxLineBytes}
		}
	}
	if n-1 > l.MaxEntries {
		return &LimitError{What: "entries", Size: int64(n - 1), Limit: int64(l.MaxEntries)}
	}
	return nil
}
