package session

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// IsPartial reports whether s holds its current path alone (pathload.go).
func IsPartial(s *Session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pathOnly
}

// SetPathIndexMin sets the size of log from which a FileStore keeps a
// path index, and returns the previous one.
func SetPathIndexMin(n int64) int64 {
	old := pathIndexMin
	pathIndexMin = n
	return old
}

// SetMaxPathIndexBytes sets the bound on a path index's size, and
// returns the previous one.
func SetMaxPathIndexBytes(n int64) int64 {
	old := maxPathIndexBytes
	maxPathIndexBytes = n
	return old
}

// PathIndexBuilds reports how many path indexes stores have built (read
// their log for) so far.
func PathIndexBuilds() int64 { return pathIndexBuilds.Load() }

func init() { pathIndexDelay = 0 }

// SetPathIndexDelay sets how long after a whole read a path index build
// starts, and returns the previous delay.
func SetPathIndexDelay(d time.Duration) time.Duration {
	old := pathIndexDelay
	pathIndexDelay = d
	return old
}

// WaitPathIndexes waits for the path indexes s is building.
func WaitPathIndexes(s *FileStore) { s.bg.Wait() }

// PathIndexFile is the path of session id's index in s.
func PathIndexFile(s *FileStore, id string) string {
	return filepath.Join(s.Root(), s.pathIndexName(id))
}

// IndexRec is one record of a path index, for tests that forge one.
type IndexRec struct {
	Off                      int64
	N                        uint32
	Parent, Set, Asst, Depth int32
	Kind, Flags              uint8
	IDH                      uint64
}

// ForgePathIndex rewrites the path index file at path: edit gets its
// records and returns new ones, and the rest of the file (each record's
// walk fields, the hash table, the checksums) is made again to match, so
// that a reader cannot tell the index from one a store wrote.
func ForgePathIndex(path string, edit func([]IndexRec) []IndexRec) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	x, err := decodePathIndex(data)
	if err != nil {
		return err
	}
	recs := make([]IndexRec, x.count())
	for i := range recs {
		r := x.rec(int32(i))
		recs[i] = IndexRec{r.off, r.n, r.parent, r.set, r.asst, r.depth, uint8(r.kind), r.flags, r.idh}
	}
	if x.bad {
		return errors.New("a block of records is damaged")
	}
	recs = edit(recs)
	x.nraw, x.blocks, x.more, x.ids = 0, nil, nil, hashTable{}
	for i, r := range recs {
		x.more = append(x.more, pathRec{r.Off, r.N, r.Parent, r.Set, r.Asst, r.Depth, entryKind(r.Kind), r.Flags, r.IDH})
		x.ids.refs = append(x.ids.refs, hashRef{h: r.IDH, i: int32(i)})
	}
	slices.SortStableFunc(x.ids.refs, cmpHashRef)
	out, err := x.encode()
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}
