package session

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"
)

// Compaction marks on a FileStore (CompactionMarker): that a compaction
// runs on a session is kept beside the log, in
//
//	<root>/.compacting/<id in hexadecimal>
//
// holding the time it started (RFC 3339), removed when it ends. The log
// does not change. A listing reads the directory once (a mark is there
// only while a compaction runs, or after one crashed), so that a mark
// another process set or cleared shows at once.

var _ CompactionMarker = (*FileStore)(nil)

const compactingDir = ".compacting"

func compactingRel(id string) string {
	return filepath.Join(compactingDir, hex.EncodeToString([]byte(id)))
}

// compactingID returns the session id of a mark's name, "" if it is none.
func compactingID(base string) string {
	b, err := hex.DecodeString(base)
	if err != nil || ValidateID(string(b)) != nil {
		return ""
	}
	return string(b)
}

// MarkCompacting implements CompactionMarker (ErrNotFound for an unknown
// session).
func (s *FileStore) MarkCompacting(ctx context.Context, id string, since time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.fileOnly {
		return fmt.Errorf("session: mark compacting %s: a store of one file opened by path: %w", id, errors.ErrUnsupported)
	}
	fsess, err := s.file(id)
	if err != nil {
		return err
	}
	if err := lockCtx(ctx, &fsess.mu); err != nil {
		return err
	}
	defer fsess.mu.Unlock()
	if err := s.ensureOpen(fsess); err != nil {
		return err // ErrNotFound for a session deleted meanwhile
	}
	s.settle(fsess.rel) // subscribers see the entries before the mark first
	rel := compactingRel(id)
	s.markOwn(id, ChangeCompacting, nil)
	if since.IsZero() {
		if err := removeIn(s.r, rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("session: mark compacting %s: %w", id, err)
		}
	} else {
		since = since.UTC()
		if err := mkdirRoot(s.r, compactingDir); err != nil {
			return fmt.Errorf("session: mark compacting %s: %w", id, err)
		}
		if _, err := writeAtomic(s.r, rel, []byte(since.Format(time.RFC3339Nano)+"\n"), true, true, 0o600); err != nil {
			return fmt.Errorf("session: mark compacting %s: %w", id, err)
		}
	}
	s.opCompacting(id, since, rel)
	return nil
}

// readCompacting returns the time of session id's compaction mark, zero
// when it has none.
func (s *FileStore) readCompacting(id string) time.Time {
	data, err := readFileRoot(s.r, compactingRel(id))
	if err != nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(data)))
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// compactingMarks returns the compaction marks of the store, by session.
func (s *FileStore) compactingMarks() map[string]time.Time {
	names, err := readDirNames(s.r, compactingDir)
	if err != nil {
		return nil
	}
	out := make(map[string]time.Time, len(names))
	for _, n := range names {
		if id := compactingID(n); id != "" {
			if t := s.readCompacting(id); !t.IsZero() {
				out[id] = t
			}
		}
	}
	return out
}
