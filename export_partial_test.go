package session

import (
	"path/filepath"
	"time"
)

// IsPartial reports whether s holds its current path alone (pathload.go).
func IsPartial(s *Session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.part != nil
}

// SetPathIndexMin sets the size of log from which a FileStore keeps a
// path index, and returns the previous one.
func SetPathIndexMin(n int64) int64 {
	old := pathIndexMin
	pathIndexMin = n
	return old
}

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
