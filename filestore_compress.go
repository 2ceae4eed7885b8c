package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/agentsession/session/internal/jsonx"
)

// Compressed archived sessions.
//
// A FileStore may keep an archived session's log zstd-compressed (one
// zstd frame, RFC 8878, of the log's exact bytes): with
// FileStoreOptions.CompressArchive at every archive, or for one session
// with CompressArchived. The file keeps its name under <root>/.archive:
// the compressed log replaces the plain one by one rename (written
// beside it and synced first), and going back is one rename the other
// way, so that after a crash at any point the session is in exactly one
// file, plain or compressed, never both and never neither. Keeping the
// name also means an older version of this package that meets the file
// reports it as corrupt instead of missing it and creating the session
// again, and every path-keyed record (listing index, archive mark) is
// unchanged.
//
// Readers tell a compressed log by the zstd magic number at its start
// (a plain log starts with '{'): Load, LoadTail, List, the Decoder (and
// so ReadLog, VerifyReader and the CLI) and the watcher read either.
// Nothing writes to a compressed file in place: an append or Unarchive
// first writes the plain log back (expand) and then moves it out of the
// archive (a session written to again is no longer cold); a rewrite
// writes its new log plain, in place. Every step runs under the file's
// exclusive lock, taken at the session's name (lockAtName: a file's name
// changes only under its lock), and a writer in another process that
// held the old file notices it was replaced (its link count is 0) or
// moved, and reads the new one, as after a Rewrite.

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

// Reading a compressed log cannot take more memory than the limits
// allow, whatever it decompresses to (a compression bomb: a few KiB of
// zstd make a GiB). It is always read as a stream, a line at a time as a
// plain log is: a listing holds a line, an open holds what the log
// keeps, a line over MaxLineBytes is skipped as it streams past, and the
// read stops with a *LimitError as soon as the log passes MaxLogBytes or
// MaxEntries. The decoder itself keeps at most a window of what it
// decoded: a frame that asks for a window larger than any compressLog
// writes (maxLogWindow) is refused (a *LimitError, What "window")
// before anything is decoded, and a frame's content size is only ever
// a hint. Only what must be whole in memory (DecodeLog's input, the
// plain log written back by an unarchive, a migration) is decompressed
// whole, and then into one buffer no larger than the limit allows.

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

// CompressArchived stores the archived session id zstd-compressed (see
// the package's notes on compressed archived sessions, and
// FileStoreOptions.CompressArchive). A session already compressed is
// left as it is. It fails with ErrConflict for a session that is not
// archived, and with ErrNotFound for one that does not exist.
func (s *FileStore) CompressArchived(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fsess, err := s.file(id)
	if err != nil {
		return err
	}
	if err := lockCtx(ctx, &fsess.mu); err != nil {
		return err
	}
	defer fsess.mu.Unlock()
	if fsess.err != nil {
		return fsess.err
	}
	if err := s.ensureOpen(fsess); err != nil {
		return err
	}
	if !isArchived(fsess.rel) {
		return fmt.Errorf("%w: session %s is not archived", ErrConflict, id)
	}
	return s.compressLocked(ctx, fsess)
}

// compressLocked replaces the archived file of fsess with its log
// compressed. A log in an older format version is migrated first (by a
// load), so that what is compressed reads as it is. Callers hold
// fsess.mu.
func (s *FileStore) compressLocked(ctx context.Context, fsess *fileSession) error {
	if filepath.IsAbs(fsess.rel) || s.fileOnly {
		return fmt.Errorf("session: %s is outside the store's tree", s.path(fsess.rel))
	}
	for attempt := 0; ; attempt++ {
		if err := s.lockCurrent(ctx, fsess); err != nil {
			return err
		}
		if !isArchived(fsess.rel) {
			// Unarchived by another store meanwhile (the name was stale).
			_ = s.release(fsess)
			return fmt.Errorf("%w: session %s is not archived", ErrConflict, fsess.id)
		}
		data, _, err := readAll(fsess.f, s.lim.MaxLogBytes)
		if err != nil {
			return errors.Join(s.ioErr(fsess, "read", err), s.release(fsess))
		}
		if hasZstdMagic(data) {
			return s.release(fsess) // compressed already
		}
		if needsMigration(data) {
			_ = s.release(fsess)
			if attempt > 0 {
				return fmt.Errorf("%w: %s is in an older format version and could not be migrated", ErrConflict, s.path(fsess.rel))
			}
			if _, err := s.load(ctx, fsess); err != nil { // migrates it
				return err
			}
			continue
		}
		comp, err := compressLog(data)
		if err != nil {
			_ = s.release(fsess)
			return fmt.Errorf("session: compress %s: %w", fsess.id, err)
		}
		s.markOwn(fsess.id, ChangeRewritten, nil)
		unlock, err := s.lockMoves() // the name is replaced: no scan reads it meanwhile
		if err != nil {
			_ = s.release(fsess)
			return s.ioErr(fsess, "compress", err)
		}
		_, err = s.writeNew(fsess.rel, comp, nil, true)
		unlock()
		if err != nil {
			_ = s.release(fsess)
			return s.ioErr(fsess, "compress", err)
		}
		s.replaced(fsess)
		return nil
	}
}

// needsMigration reports whether the log in data is in an older format
// version (its header says so), which a load migrates.
func needsMigration(data []byte) bool {
	line := data
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		line = data[:i]
	}
	p := (*ReadOptions)(nil).parser()
	return p.headerLine(line) == nil && p.mig != nil
}

// lockCurrent takes the exclusive lock on the file the session's name
// leads to (lockAtName) and writes what this store gathered. The lock is
// held when it returns nil. Callers hold fsess.mu.
func (s *FileStore) lockCurrent(ctx context.Context, fsess *fileSession) error {
	if err := s.lockAtName(ctx, fsess); err != nil {
		return err
	}
	if err := s.writePending(fsess); err != nil {
		return errors.Join(err, s.release(fsess))
	}
	return nil
}

// replaced forgets the file of fsess, which this store just replaced
// under its lock: what it knows is read again from the new file when
// next needed, and a listing reads it again.
func (s *FileStore) replaced(fsess *fileSession) {
	s.closeFile(fsess)
	fsess.loaded = false
	s.mu.Lock()
	delete(s.index, fsess.rel)
	s.indexDirty = true
	s.mu.Unlock()
	s.nudge(fsess.rel)
}

// expandLocked writes the compressed log of fsess back plain, in place
// (a plain one is left as it is), moves it out of the archive, and, with
// reload, reads it again (without keeping the lock). The plain file is
// locked before it takes the name and until it has moved, so that no
// other store takes it in between. Callers hold fsess.mu.
func (s *FileStore) expandLocked(ctx context.Context, fsess *fileSession, reload bool) error {
	if err := s.lockCurrent(ctx, fsess); err != nil {
		return err
	}
	var err error
	if fsess.fileCompressed() {
		err = s.expandFile(fsess)
	} else {
		if isArchived(fsess.rel) {
			err = s.moveLocked(fsess, false)
		}
		err = errors.Join(err, s.release(fsess))
	}
	if err != nil || !reload {
		return err
	}
	_, err = s.load(ctx, fsess)
	return err
}

// expandFile replaces the compressed file of fsess, which it holds the
// lock on, with the plain log, and moves that out of the archive.
func (s *FileStore) expandFile(fsess *fileSession) error {
	data, _, err := readAll(fsess.f, s.lim.MaxLogBytes)
	if err != nil {
		return errors.Join(s.ioErr(fsess, "read", err), s.release(fsess))
	}
	plain, err := decompressLog(data, s.lim.MaxLogBytes)
	if err != nil {
		_ = s.release(fsess)
		return WithPath(err, s.path(fsess.rel))
	}
	s.markOwn(fsess.id, ChangeRewritten, nil)
	r, name := s.r, fsess.rel
	if filepath.IsAbs(name) {
		// A file opened by path (OpenPath): written back where it is.
		if r, err = os.OpenRoot(filepath.Dir(name)); err != nil {
			_ = s.release(fsess)
			return s.ioErr(fsess, "expand", err)
		}
		defer r.Close()
		name = filepath.Base(name)
	}
	unlock := func() {}
	if r == s.r {
		// The name is replaced: no scan reads it meanwhile.
		if unlock, err = s.lockMoves(); err != nil {
			_ = s.release(fsess)
			return s.ioErr(fsess, "expand", err)
		}
	}
	held, err := writeAtomicLocked(r, name, plain, filePerm(fsess.f))
	unlock()
	if err != nil {
		_ = s.release(fsess)
		return s.ioErr(fsess, "expand", err)
	}
	defer held.Close() // lets its lock go once moved
	s.replaced(fsess)
	if isArchived(fsess.rel) {
		return s.moveLocked(fsess, false)
	}
	return nil
}

// fileCompressed reports whether the open file of fsess holds a
// compressed log.
func (fsess *fileSession) fileCompressed() bool {
	size, _, _, err := fileState(fsess.f)
	return err == nil && isCompressedLog(fsess.f, size)
}

// isCompressed reports whether the session's file, as last read, is
// compressed. Callers hold fsess.mu.
func (fsess *fileSession) isCompressed() bool { return fsess.loaded && fsess.compressed }
