package session

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The FileStore's ConditionalRemover, for Sweep.

var _ ConditionalRemover = (*FileStore)(nil)

// DeleteIfUnchanged implements ConditionalRemover: under the session's
// exclusive file lock, which every appender (in any process) takes, the
// store learns what other processes appended since it last looked and
// removes the file (one unlink, as Delete) only if its log still ends at
// seen.Last with seen.Entries entries; ErrConflict otherwise, with the
// file left as it is.
func (s *FileStore) DeleteIfUnchanged(ctx context.Context, id string, seen LogMark) error {
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
	if err := s.lockToDelete(ctx, fsess); err != nil {
		return err
	}
	if err := s.checkUnchanged(ctx, fsess, seen); err != nil {
		return errors.Join(err, s.release(fsess))
	}
	return s.deleteLocked(id, fsess)
}

// checkUnchanged takes the session's exclusive file lock (unless held),
// catches up with what other processes wrote, and compares the log with
// seen. Callers hold fsess.mu; the lock is held when it returns nil.
func (s *FileStore) checkUnchanged(ctx context.Context, fsess *fileSession, seen LogMark) error {
	if err := s.ensureOpen(fsess); err != nil {
		return err
	}
	if err := s.acquire(ctx, fsess); err != nil {
		return err
	}
	if !fsess.loaded {
		if _, err := s.load(ctx, fsess); err != nil {
			return err
		}
	} else if _, err := s.catchUp(ctx, fsess); err != nil {
		return err
	}
	if !fsess.locked {
		// The file was replaced (a rewrite) while it was read.
		return fmt.Errorf("%w: %s was rewritten by another writer", ErrConflict, s.path(fsess.rel))
	}
	return seen.Check(fsess.id, fsess.last, fsess.count)
}

// ArchiveIfUnchanged implements ConditionalRemover. The log is compared
// with seen under the file lock before the file moves to the archive and
// again after: a session appended to in between (in any process: the
// file keeps its inode, so the append is in the archived file) is moved
// back, and the call fails with ErrConflict. Archiving loses nothing,
// so the session is at worst archived for that moment.
func (s *FileStore) ArchiveIfUnchanged(ctx context.Context, id string, seen LogMark) error {
	check := func() error {
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
		err = s.checkUnchanged(ctx, fsess, seen)
		return errors.Join(err, s.release(fsess))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := check(); err != nil {
		return err
	}
	if err := s.Archive(ctx, id); err != nil {
		return err
	}
	if err := check(); err != nil {
		if errors.Is(err, ErrConflict) {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if uerr := s.Unarchive(uctx, id); uerr != nil {
				return fmt.Errorf("session: %w, and moving it back from the archive failed: %v", err, uerr)
			}
		}
		return err
	}
	return nil
}
