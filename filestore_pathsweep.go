package session

import (
	"path/filepath"
	"time"
)

// Path indexes whose session is gone. A session deleted through a store
// takes its index with it; one another program deleted (pi, or rm)
// leaves its index behind, a cache of a log no one has. Close removes
// those: files of <root>/.pathindex that no session of the tree is named
// by, an hour old or older, after a scan made then has not found their
// session. The age spares the index of a session another process has
// just made, which a scan may have missed; a wrong removal would cost
// only a rebuild, as for any index lost. That is the case of a session
// a store opened by path at a file of its tree outside the layout
// (<root>/notes/x.jsonl): no scan finds it, so its index is taken for an
// orphan once it has not changed for an hour, and built again at the
// session's next open.

// pathIndexOrphanAge is how old an index no session names must be to be
// removed.
const pathIndexOrphanAge = time.Hour

// sweepPathIndexes removes the indexes of sessions that are gone, and
// stale temporary files of interrupted index writes. Only a store that
// has read its tree does it (the scan is what tells a session gone), so
// a store opened to append to one session pays nothing at Close. Callers
// must not hold s.mu.
func (s *FileStore) sweepPathIndexes() {
	s.mu.Lock()
	scanned := s.scanned && !s.fileOnly
	s.mu.Unlock()
	if !scanned {
		return
	}
	names, err := readDirNames(s.r, pathIndexDir)
	if err != nil {
		return // none yet, mostly
	}
	// Old enough first (a stat each), so that a young orphan, or a
	// directory with an index's name, costs no second scan at each Close.
	var old []string
	for _, n := range s.unnamedIndexes(names) {
		if fi, err := s.r.Lstat(filepath.Join(pathIndexDir, n)); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) >= pathIndexOrphanAge {
			old = append(old, n)
		}
	}
	if len(old) == 0 {
		return
	}
	// Made since the last scan, or moved (archived) by another process:
	// looked for again before anything is removed.
	if s.scan(false) != nil {
		return
	}
	for _, n := range s.unnamedIndexes(old) {
		_ = removeIn(s.r, filepath.Join(pathIndexDir, n))
	}
}

// unnamedIndexes returns the names among names of index files that no
// session the store knows is named by; a stale temporary file of an
// index write is removed as the scan removes its own.
func (s *FileStore) unnamedIndexes(names []string) []string {
	s.mu.Lock()
	named := make(map[string]struct{}, len(s.paths))
	for id := range s.paths {
		named[idFileName(id)] = struct{}{}
	}
	s.mu.Unlock()
	var out []string
	for _, n := range names {
		if ownTemp(n, isIndexFileName) {
			removeStaleTemp(s.r, filepath.Join(pathIndexDir, n))
			continue
		}
		if _, ok := named[n]; !ok && isIndexFileName(n) {
			out = append(out, n)
		}
	}
	return out
}

// isIndexFileName reports whether n is a name idFileName gives: the hex
// of an id, or "~" and 32 hex digits.
func isIndexFileName(n string) bool {
	h := n
	if len(n) > 0 && n[0] == '~' {
		if h = n[1:]; len(h) != 32 {
			return false
		}
	}
	if h == "" || len(h)%2 != 0 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
