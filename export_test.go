package session

import (
	"context"
	"os"
)

// Fdatasync exposes the store's sync call to the benchmarks, for the raw
// floor that per-turn syncing is compared with.
var Fdatasync = datasync

// CopyFromFiles turns on or off the copying of a fork's lines from the
// source's file (on by default); CopiedBytes reports how many bytes it
// has copied so far.
func CopyFromFiles(on bool) { noCopy.Store(!on) }
func CopiedBytes() int64    { return copiedBytes.Load() }

// ListReadBytes reports how many bytes of session files listings have
// read so far.
func ListReadBytes() int64 { return listReadBytes.Load() }

// TreeScans reports how many times stores have read their whole tree.
func TreeScans() int64 { return treeScans.Load() }

// CountDecodes turns the count of DecodedMessages on or off (off by
// default, so that the other benchmarks do not pay for it).
func CountDecodes(on bool) { countDecodes = on }

// DecodedMessages reports how many entries have been decoded for
// contexts while the count was on.
func DecodedMessages() int64 { return decodedMessages.Load() }

// WholeReads reports how many times s has read a whole session file.
func WholeReads(s *FileStore) int64 { return s.wholeReads.Load() }

// OpenFiles reports how many session files s holds open.
func OpenFiles(s *FileStore) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.openFiles
}

// LockFile takes the store's exclusive lock on f, as another process
// would hold it (another open of the file, in this process, conflicts as
// another process's would); UnlockFile lets it go.
func LockFile(f *os.File) error   { return lockFile(context.Background(), f, true) }
func UnlockFile(f *os.File) error { return unlockFile(f) }

// PrepMessage is what an append does to a message before encoding it
// (streaming leftovers out), for its benchmark.
var PrepMessage = prepMessage
