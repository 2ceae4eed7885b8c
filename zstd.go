package session

// zstd for logs and blobs: the one frame format a compressed archived
// log (filestore_compress.go) and a compressed blob are kept in, and the
// readers every reader of a log goes through (Load, ReadLog and the
// Decoder, the watcher, MigrateFile), with the limits that keep a small
// hostile frame from expanding without bound.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/agentsession/session/internal/jsonx"
)

// frameBound is the most a zstd frame of n bytes takes.
func frameBound(n int64) int64 { return n + n>>7 + 1<<10 }

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

func hasZstdMagic(b []byte) bool { return bytes.HasPrefix(b, zstdMagic) }

// compressLevel is the zstd level of compressed logs. On W10k (67 MB)
// SpeedBetterCompression leaves 14.4% of the bytes (the default level
// 15.4%, the best 13.6% for 3.7 times the time) in 1.7 times the
// default's time, which an archive pays once, and decompresses faster
// than the default (49 ms against 69 ms), which every read pays.
const compressLevel = zstd.SpeedBetterCompression

var logEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderLevel(compressLevel), zstd.WithEncoderConcurrency(1))
})

// compressLog returns data as one zstd frame.
func compressLog(data []byte) ([]byte, error) {
	enc, err := logEncoder()
	if err != nil {
		return nil, err
	}
	return enc.EncodeAll(data, make([]byte, 0, len(data)/4+64)), nil
}

// isCompressedLog reports whether r, of size bytes, starts with the zstd
// magic number.
func isCompressedLog(r io.ReaderAt, size int64) bool {
	if size < int64(len(zstdMagic)) {
		return false
	}
	var head [4]byte
	n, _ := r.ReadAt(head[:], 0)
	return n == len(head) && hasZstdMagic(head[:])
}

// maxLogWindow is the largest decoder window a compressed log may ask
// for: what compressLog writes (the encoder's window at compressLevel,
// 8 MiB; a log no longer than that is one segment, whose window is its
// size). It bounds the memory of a decoder.
const maxLogWindow = 8 << 20

// newLogDecoder returns a decoder of the compressed log in r: one
// goroutine, its buffers allocated as needed, a window of at most
// maxLogWindow.
func newLogDecoder(r io.Reader) (*zstd.Decoder, error) {
	return zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(maxLogWindow), zstd.WithDecoderMaxMemory(maxLogWindow))
}

// checkFrame refuses, from head, the start of a compressed log, a first
// frame that says it holds more than maxBytes, or that asks for a window
// over maxLogWindow: a *LimitError. What it cannot read it leaves to the
// decoder.
func checkFrame(head []byte, maxBytes int64) error {
	var h zstd.Header
	if h.Decode(head) != nil || h.Skippable {
		return nil
	}
	if h.HasFCS && h.FrameContentSize > uint64(maxBytes) {
		return &LimitError{What: "log", Size: int64(min(h.FrameContentSize, math.MaxInt64)), Limit: maxBytes}
	}
	window := h.WindowSize
	if h.SingleSegment {
		window = h.FrameContentSize
	}
	if window > maxLogWindow {
		return &LimitError{What: "window", Size: int64(min(window, math.MaxInt64)), Limit: maxLogWindow}
	}
	return nil
}

// decompressLog returns the log compressed in data, refusing one that
// decompresses to more than maxBytes (a *LimitError, once it has
// decompressed maxBytes+1) and reporting a damaged stream as a
// *CorruptError. It holds the result in one buffer: the frame's content
// size, when it gives one, sizes it (up to the limit), and a frame
// that lied makes it grow.
func decompressLog(data []byte, maxBytes int64) ([]byte, error) {
	if err := checkFrame(data, maxBytes); err != nil {
		return nil, err
	}
	dec, err := newLogDecoder(bytes.NewReader(data))
	if err != nil {
		return nil, &CorruptError{Err: fmt.Errorf("compressed log: %w", err)}
	}
	defer dec.Close()
	hint := int64(-1)
	var h zstd.Header
	if h.Decode(data) == nil && h.HasFCS {
		hint = int64(min(h.FrameContentSize, math.MaxInt64-1))
	}
	return readLimited(&zstdStream{dec: dec}, hint, maxBytes)
}

// readLimited reads r to its end into one buffer, sized hint+1 when hint
// is known (so that a hint that holds needs no second one), failing with
// a *LimitError once more than maxBytes were read.
func readLimited(r io.Reader, hint, maxBytes int64) ([]byte, error) {
	over := maxBytes // maxBytes+1, the size that is refused
	if over < math.MaxInt64 {
		over++
	}
	size := int64(64 << 10)
	if hint >= 0 {
		size = hint + 1
	}
	buf := make([]byte, 0, min(size, over, 256<<20)) // a hint is no promise
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(int64(cap(buf)), over-int64(len(buf)))))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > maxBytes {
			return nil, &LimitError{What: "log", Size: int64(len(buf)), Limit: maxBytes}
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// readCompressedLog reads the whole compressed log in r (size bytes) and
// returns it decompressed (see decompressLog).
func readCompressedLog(r io.ReaderAt, size, maxBytes int64) ([]byte, error) {
	if size > maxBytes {
		return nil, &LimitError{What: "log", Size: size, Limit: maxBytes}
	}
	data := make([]byte, size)
	if n, err := r.ReadAt(data, 0); err != nil && !(errors.Is(err, io.EOF) && int64(n) == size) {
		return nil, err
	}
	return decompressLog(data, maxBytes)
}

// zstdReader returns a reader of the logs the bufio reader br holds,
// decompressing them when they start with the zstd magic number; nil
// when they do not. The caller counts what it reads against maxBytes;
// a frame that says it holds more, or asks for too large a window, is
// refused here.
func zstdReader(br interface {
	io.Reader
	Peek(int) ([]byte, error)
}, maxBytes int64) (io.Reader, error) {
	head, _ := br.Peek(len(zstdMagic))
	if !hasZstdMagic(head) {
		return nil, nil
	}
	head, _ = br.Peek(zstd.HeaderMaxSize) // a frame's header: what follows the magic number
	if err := checkFrame(head, maxBytes); err != nil {
		return nil, err
	}
	dec, err := newLogDecoder(br)
	if err != nil {
		return nil, &CorruptError{Err: fmt.Errorf("compressed log: %w", err)}
	}
	return &zstdStream{dec: dec}, nil
}

// zstdStream reads a zstd stream, reporting a damaged one as a
// *CorruptError, and a later frame that asks for too large a window as
// a *LimitError. With concurrency 1 the decoder runs no goroutine, so
// one never closed holds nothing but memory.
type zstdStream struct{ dec *zstd.Decoder }

func (z *zstdStream) Read(p []byte) (int, error) {
	n, err := z.dec.Read(p)
	switch {
	case err == nil || err == io.EOF:
	case errors.Is(err, zstd.ErrDecoderSizeExceeded):
		err = &LimitError{What: "window", Size: maxLogWindow + 1, Limit: maxLogWindow}
	default:
		err = &CorruptError{Err: fmt.Errorf("compressed log: %w", err)}
	}
	return n, err
}

// readCompressedFile reads and decodes the compressed log of size bytes
// in r, for readLogFile, as a stream (see above): line by line through
// the Decoder's line reader, each entry made compact as readLogFile
// makes those of a plain log (compactLine, compactEntry), so that what
// it holds besides the log it returns is the line at hand (at most
// MaxLineBytes, a line over it skipped as it streams past) and the
// decoder's window. A log of an older version is, with keepOld,
// decompressed whole (within MaxLogBytes) and read as a plain one, for
// the migration that rewrites it from its bytes, and else read on as a
// stream (ReadLog). The offsets of the fileEnd are those of
// the log's bytes.
func readCompressedFile(r io.ReaderAt, size int64, opts *ReadOptions, keepOld bool) (*Log, []byte, fileEnd, error) {
	d := NewDecoder(io.NewSectionReader(r, 0, size), opts)
	p := &d.p
	fail := func(err error) (*Log, []byte, fileEnd, error) { return nil, nil, fileEnd{}, err }
	end := fileEnd{compressed: true}
	line, complete, err := d.readLine()
	switch {
	case err == io.EOF:
		return fail(&CorruptError{Err: errEmpty})
	case err != nil:
		return fail(err)
	case d.long > 0:
		return fail(p.lim.lineError(1, d.long))
	}
	if err := p.headerLine(bytes.Clone(line)); err != nil {
		return fail(err)
	}
	if p.mig != nil && !keepOld {
		return streamRest(d)
	}
	if p.mig != nil {
		plain, err := readCompressedLog(r, size, p.lim.MaxLogBytes)
		if err != nil {
			return fail(err)
		}
		log, data, end, err := readLogFile(bytes.NewReader(plain), int64(len(plain)), opts)
		end.compressed = true
		return log, data, end, err
	}
	end.endsNL = complete
	arena := jsonx.Arena{Block: 256 << 10}
	var (
		spans   []jsonx.Span
		entries []Entry
		refs    = refsNone
	)
	for {
		start := d.read
		line, complete, err := d.readLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(err)
		}
		end.lastLine, end.endsNL = start, complete
		d.lines++
		if err := p.checkLines(d.lines); err != nil {
			return fail(err)
		}
		if d.long > 0 {
			if err := p.skipLong(d.long); err != nil {
				return fail(err)
			}
			continue
		}
		// As readLogFile: blob references are resolved in the entry's
		// bytes, and an append's marker is the envelope's to strip.
		ref := bytes.Contains(line, []byte(BlobPrefix))
		if ref {
			refs = refsSome
		} else if !marked(line) {
			if e, ok := compactLine(line, &arena, &spans); ok {
				p.line++
				p.nent++
				entries = append(entries, withHashes(e, entries))
				continue
			}
		}
		e, ok, err := p.entryLine(line, complete)
		if err != nil {
			return fail(err)
		}
		if ok {
			entries = append(entries, withHashes(compactEntry(e, &arena), entries))
		}
	}
	end.size = d.read
	l := p.finish(p.resolve(entries))
	l.refs = refs
	return l, nil, end, nil
}
