package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
