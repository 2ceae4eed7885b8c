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
	f, err := r.Open(archiveMark(rel))
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
	if err := renameIn(s.r, from, to); err != nil {
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
