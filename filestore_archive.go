package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Archiving: a FileStore moves an archived session's file under
// <root>/.archive, with the same layout, out of the seed agents' sight,
// and keeps when it did so beside it, in a small mark file:
//
//	<root>/.archive/--<cwd>--/.<timestamp>_<id>.jsonl.archived
//
// holding the time (RFC 3339). The mark is written (atomically, synced)
// before the file moves and removed after it moves back or is deleted,
// so that an archived file always has one, unless an older version of
// this package archived it (SessionInfo.ArchivedAt is then zero). A
// crash between the two steps leaves a mark with no file beside it,
// which nothing reads and the next archive of the session replaces. The
// mark's name starts with a dot and does not end in .jsonl: the layout
// scanners (this package's and the seed agents') pass over it. Neither
// the log nor its modification time changes: archiving is no update.

// The moves lock. A move between the live folders and the archive is
// one rename, and a reader that looks for a session reads the live
// folders and then the archive: a move between its two reads would hide
// the session from it (Load and Open said it was not found, a host that
// hears that starts a new session, and List left it out). So moves and
// looks are ordered by a lock on one file, <root>/.archive/.moves:
//
//   - a move holds it exclusively around its rename, and so does the
//     replacing of an archived file by its compressed log or back (a
//     rename over it);
//   - a reader holds it shared while it reads the folders (every scan),
//     and, having missed a session's file where it knew it, while it
//     looks again and opens the file where it finds it (openMoved),
//     after which the move cannot take the file from it.
//
// A reader so sees the session in its old place or in its new one,
// never in neither. The lock is the last taken: a move holds the
// session file's lock (a name changes only under it) when it takes this
// one, and nothing waits for another lock while holding it, so no two
// processes wait for each other. A reader that finds no such file
// (nothing was ever moved) looks without it, and looks again under it
// if one appeared meanwhile: a first move creates it before it renames.
// The file holds nothing; scanners pass over it (its name starts with
// a dot, and is no session's).

// movesRel is the moves lock's file.
var movesRel = filepath.Join(archiveDir, ".moves")

// testHookMoveWait, when set, runs when a move is about to wait for the
// readers that look for sessions, for tests.
var testHookMoveWait func()

// lockMoves takes the moves lock exclusively, for a move, creating its
// file if need be, and returns what lets it go. Callers hold the moving
// session's file lock.
func (s *FileStore) lockMoves() (unlock func(), err error) {
	f, err := openRegular(s.r, movesRel, os.O_RDWR)
	if errors.Is(err, fs.ErrNotExist) {
		if err = mkdirRoot(s.r, archiveDir); err == nil {
			if f, err = createIn(s.r, movesRel); errors.Is(err, fs.ErrExist) {
				f, err = openRegular(s.r, movesRel, os.O_RDWR) // made by another meanwhile
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("session: the moves lock: %w", err)
	}
	if !tryLockFile(f) {
		if testHookMoveWait != nil {
			testHookMoveWait()
		}
		if err := lockFile(context.Background(), f, true); err != nil {
			f.Close()
			return nil, fmt.Errorf("session: the moves lock: %w", err)
		}
	}
	return func() {
		_ = unlockFile(f)
		f.Close()
	}, nil
}

// whileNoMove runs look, a reader's look at where sessions are, under
// the moves lock held shared: no move is halfway while it runs. A store
// on a file alone, or that cannot open or lock the file, looks without
// it.
func (s *FileStore) whileNoMove(look func() error) error {
	if s.fileOnly {
		return look()
	}
	f, err := openRegular(s.r, movesRel, os.O_RDONLY)
	if err != nil {
		if lerr := look(); lerr != nil || !errors.Is(err, fs.ErrNotExist) {
			return lerr
		}
		// Nothing was moved when it looked; if a first move has begun
		// since, look again under the lock.
		if f, err = openRegular(s.r, movesRel, os.O_RDONLY); err != nil {
			return nil
		}
	}
	defer f.Close()
	if lockFile(context.Background(), f, false) != nil {
		return look()
	}
	defer unlockFile(f)
	return look()
}

// openMoved opens the file of fsess, which was not where the store knew
// it: moved by another store (archived, or brought back), or gone. It
// looks again, and opens what it finds, under the moves lock, so that a
// move cannot take the file between the look and the open: a session
// being moved is found in one place or the other. Callers hold
// fsess.mu.
func (s *FileStore) openMoved(fsess *fileSession) (f *os.File, err error) {
	if filepath.IsAbs(fsess.rel) || s.fileOnly {
		return nil, &fs.PathError{Op: "open", Path: s.path(fsess.rel), Err: fs.ErrNotExist}
	}
	err = s.whileNoMove(func() error {
		if err := s.scanFiles(false); err != nil {
			return err
		}
		s.mu.Lock()
		if rel, ok := s.paths[fsess.id]; ok {
			fsess.rel = rel
		}
		s.mu.Unlock()
		f, err = s.openRel(fsess.rel)
		return err
	})
	return f, err
}

// archiveMarkSuffix ends the name of an archive mark.
const archiveMarkSuffix = ".archived"

// archiveMark returns the path of the mark of the archived file rel.
func archiveMark(rel string) string {
	return filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+archiveMarkSuffix)
}

// isArchiveMark reports whether base is the name of an archive mark.
func isArchiveMark(base string) bool {
	return strings.HasPrefix(base, ".") && strings.HasSuffix(base, archiveMarkSuffix) &&
		isSessionFile(strings.TrimSuffix(base[1:], archiveMarkSuffix), true) // either layout's
}

// readArchiveMark returns the time in the mark of the archived file rel,
// zero when there is none or it cannot be read.
func readArchiveMark(r *os.Root, rel string) time.Time {
	f, err := openRegular(r, archiveMark(rel), os.O_RDONLY)
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	var buf [64]byte
	n, _ := f.Read(buf[:])
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(buf[:n])))
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// Archive implements Archiver: it moves the session under
// <root>/.archive, which hides it from listings unless
// ListOptions.Archived (or OnlyArchived) is set, and from the seed
// agents, and records the time (SessionInfo.ArchivedAt). It can still be
// opened and written. The log and its update time do not change.
// Archiving an archived session changes nothing. With
// FileStoreOptions.CompressArchive the archived log is then compressed
// (see CompressArchived).
func (s *FileStore) Archive(ctx context.Context, id string) error {
	return s.move(ctx, id, true)
}

// Unarchive implements Archiver: it moves the session back, writing a
// compressed log back plain first. Nothing changes for a session that is
// not archived.
func (s *FileStore) Unarchive(ctx context.Context, id string) error {
	return s.move(ctx, id, false)
}

// Restore is Unarchive.
//
// Deprecated: use Unarchive, the Archiver method every store has.
func (s *FileStore) Restore(ctx context.Context, id string) error {
	return s.Unarchive(ctx, id)
}

func (s *FileStore) move(ctx context.Context, id string, archive bool) error {
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
	if filepath.IsAbs(fsess.rel) || s.fileOnly {
		return fmt.Errorf("session: %s is outside the store's tree", s.path(fsess.rel))
	}
	if !archive {
		return s.expandLocked(ctx, fsess, false)
	}
	if err := s.lockCurrent(ctx, fsess); err != nil {
		return err
	}
	if err := s.ownFile(fsess); err != nil {
		return errors.Join(err, s.release(fsess))
	}
	if err := s.moveLocked(fsess, true); err != nil {
		return errors.Join(err, s.release(fsess))
	}
	if s.opts.CompressArchive {
		return s.compressLocked(ctx, fsess)
	}
	return s.release(fsess)
}

// moveLocked moves the file of fsess into the archive or out of it.
// Callers hold fsess.mu and the file's lock, taken at its name
// (lockCurrent): a session file's name changes only under its lock.
func (s *FileStore) moveLocked(fsess *fileSession, archive bool) error {
	id := fsess.id
	s.refreshIndex(fsess) // the entry moves with the file
	prefix := archiveDir + string(filepath.Separator)
	from := fsess.rel
	if strings.HasPrefix(from, prefix) == archive {
		return nil // already there
	}
	s.settle(from) // subscribers see what came before the move first
	op := "archive"
	to := prefix + from
	if !archive {
		op, to = "unarchive", strings.TrimPrefix(from, prefix)
	}
	if err := mkdirRoot(s.r, filepath.Dir(to)); err != nil {
		return fmt.Errorf("session: %s %s: %w", op, id, err)
	}
	var at time.Time
	kind := ChangeUnarchived
	if archive {
		kind = ChangeArchived
	}
	s.markOwn(id, kind, nil)
	if archive {
		at = time.Now().UTC()
		if _, err := writeAtomic(s.r, archiveMark(to), []byte(at.Format(time.RFC3339Nano)+"\n"), true, true, 0o600); err != nil {
			return fmt.Errorf("session: %s %s: the archive mark: %w", op, id, err)
		}
	}
	unlock, err := s.lockMoves()
	if err != nil {
		if archive {
			_ = removeIn(s.r, archiveMark(to))
		}
		return fmt.Errorf("session: %s %s: %w", op, id, err)
	}
	err = renameIn(s.r, from, to)
	unlock()
	if err != nil {
		if archive {
			_ = removeIn(s.r, archiveMark(to))
		}
		if errors.Is(err, fs.ErrNotExist) {
			s.forget(fsess)
			return fmt.Errorf("%w: session %s", ErrNotFound, id)
		}
		return fmt.Errorf("session: %s %s: %w", op, id, err)
	}
	// The move is durable before it returns, whatever the policy.
	if err := syncDir(s.r, filepath.Dir(to)); err != nil {
		return fmt.Errorf("session: %s %s: %w", op, id, err)
	}
	if err := syncDir(s.r, filepath.Dir(from)); err != nil {
		return fmt.Errorf("session: %s %s: %w", op, id, err)
	}
	if !archive {
		// Its mark goes once the file is back: a crash before leaves a
		// mark no file is beside, which nothing reads.
		_ = removeIn(s.r, archiveMark(from))
	}
	s.mu.Lock()
	s.paths[id] = to
	fsess.rel = to
	if ie := s.index[from]; ie != nil {
		delete(s.index, from)
		ne := *ie // List reads entries without the lock: a new one
		ne.archivedAt = at
		ne.finish(to)
		s.index[to] = &ne
		s.indexDirty = true
	}
	s.mu.Unlock()
	s.opDone(id, kind, from, to)
	return nil
}
