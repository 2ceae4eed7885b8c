package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
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

// maxHexMark is the longest id a mark names in hexadecimal; a longer
// one's mark is named by a hash and holds the id on its second line.
const maxHexMark = 100

func compactingRel(id string) string { return filepath.Join(compactingDir, idFileName(id)) }

// idFileName names a file kept for session id (a compaction's mark, a
// path index): the id in hexadecimal, or for a long one "~" and a hash.
func idFileName(id string) string {
	if len(id) <= maxHexMark {
		return hex.EncodeToString([]byte(id))
	}
	sum := sha256.Sum256([]byte(id))
	return "~" + hex.EncodeToString(sum[:16])
}

// compactingID returns the session id of the mark named base, "" if it
// is none: from the name, or for a long id's, from the mark.
func (s *FileStore) compactingID(base string) string {
	if strings.HasPrefix(base, "~") {
		data, err := readFileRoot(s.r, filepath.Join(compactingDir, base))
		if err != nil {
			return ""
		}
		_, rest, _ := strings.Cut(string(data), "\n")
		id, err := strconv.Unquote(strings.TrimSpace(rest))
		if err != nil || ValidateID(id) != nil || filepath.Base(compactingRel(id)) != base {
			return ""
		}
		return id
	}
	b, err := hex.DecodeString(base)
	if err != nil || len(b) > maxHexMark || ValidateID(string(b)) != nil {
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
		mark := since.Format(time.RFC3339Nano) + "\n"
		if len(id) > maxHexMark {
			mark += strconv.Quote(id) + "\n"
		}
		// Whole (a new file renamed in), not synced: the mark is
		// advisory, seen by listings and watchers without a sync, and a
		// crash of the machine mid-compaction leaves the log whole with
		// or without it. Synced, it cost two syncs a compaction (the
		// file and its directory), most of a compaction's time on a disk
		// whose sync takes milliseconds.
		if _, err := writeAtomic(s.r, rel, []byte(mark), true, false, 0o600); err != nil {
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
	first, _, _ := strings.Cut(string(data), "\n")
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(first))
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
		if id := s.compactingID(n); id != "" {
			if t := s.readCompacting(id); !t.IsZero() {
				out[id] = t
			}
		}
	}
	return out
}
