package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// SetUpdated sets when session id of store was last updated to t, if its
// log is still the one seen (see UpdatedSetter), through the first store
// of the chain of wrappers (Unwrap) that implements UpdatedSetter. It
// fails with an error wrapping errors.ErrUnsupported when none does.
//
// Updated moving back in time is safe for the collection of blobs
// (CollectBlobs): the blobs of a session written while a collection
// runs were put after its start, and are kept for that.
func SetUpdated(ctx context.Context, store Store, id string, seen LogMark, t time.Time) error {
	if err := checkUpdatedTime(id, t); err != nil {
		return err
	}
	u, ok := findAbility[UpdatedSetter](store)
	if !ok {
		return fmt.Errorf("session: set the updated time of %s: %T: %w", id, store, errors.ErrUnsupported)
	}
	return u.SetUpdated(ctx, id, seen, t)
}

var (
	_ UpdatedSetter = (*FileStore)(nil)
	_ UpdatedSetter = (*MemoryStore)(nil)
	_ UpdatedSetter = (*WrappedStore)(nil)
	_ UpdatedSetter = (*UserStore)(nil)
)

// SetUpdated implements UpdatedSetter: the session's file gets t as its
// modification time, under the file's lock, after the lines this store
// holds back are written; the listing, and the listing index other
// processes read, show t.
func (s *FileStore) SetUpdated(ctx context.Context, id string, seen LogMark, t time.Time) error {
	if err := checkUpdatedTime(id, t); err != nil {
		return err
	}
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
	if err := s.checkUnchanged(ctx, fsess, seen); err != nil {
		return errors.Join(err, s.release(fsess))
	}
	if err := s.writePending(fsess); err != nil {
		return errors.Join(err, s.release(fsess))
	}
	err = s.setFileTime(fsess, t)
	return errors.Join(err, s.release(fsess))
}

// setFileTime sets the modification time of the session's file to t,
// and its listing entry's Updated. Callers hold fsess.mu and the lock,
// with nothing pending.
func (s *FileStore) setFileTime(fsess *fileSession, t time.Time) error {
	rel := fsess.rel
	touch := func() error { return touchIn(s.r, rel, t) }
	if filepath.IsAbs(rel) { // a file opened by its path
		touch = func() error { return os.Chtimes(rel, t, t) }
	}
	if err := touch(); err != nil {
		return fmt.Errorf("session: set the updated time of %s: %w", fsess.id, err)
	}
	fi, err := fsess.f.Stat()
	if err != nil {
		return fmt.Errorf("session: set the updated time of %s: %w", fsess.id, err)
	}
	s.loadIndex()         // the index file read first: its entry is replaced, not loaded over this one
	s.refreshIndex(fsess) // the listing entry made from what the store holds
	s.mu.Lock()
	defer s.mu.Unlock()
	fsess.updated = t
	s.indexDirty = true
	ie := s.index[rel]
	if ie == nil || ie.size != fi.Size() {
		// Not the file as it is: the next listing reads it, and takes
		// its modification time.
		delete(s.index, rel)
		return nil
	}
	ne := *ie // a new entry: List reads entries without the lock
	ne.updated, ne.mtime = t, fi.ModTime().UnixNano()
	s.index[rel] = &ne
	return nil
}

// SetUpdated implements UpdatedSetter.
func (s *MemoryStore) SetUpdated(ctx context.Context, id string, seen LogMark, t time.Time) error {
	if err := checkUpdatedTime(id, t); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ms, err := s.get(id)
	if err != nil {
		return err
	}
	if err := seen.Check(id, lastID(ms.entries), len(ms.entries)); err != nil {
		return err
	}
	ms.updated = t
	return nil
}

// checkUpdatedTime returns an error wrapping ErrBadTime when t cannot be
// session id's Updated: the zero time, or a time outside what a file's
// clock holds (nanoseconds since 1970 in 64 bits: 1678 to 2262), which a
// file would keep as a time of another century. An UpdatedSetter calls
// it first.
func checkUpdatedTime(id string, t time.Time) error {
	if t.IsZero() || !time.Unix(0, t.UnixNano()).Equal(t) {
		return fmt.Errorf("session: set the updated time of %s to %v: %w", id, t, ErrBadTime)
	}
	return nil
}
