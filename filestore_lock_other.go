//go:build !unix && !windows

package session

import (
	"context"
	"os"
)

// The OS side of a FileStore's locking where there is no flock: the
// file locks are no-ops, and a file has no identity to tell it from the
// one that replaced it.

// Without flock, a FileStore on these systems is safe for one process
// only; the locks below are no-ops.
func lockFile(ctx context.Context, f *os.File, exclusive bool) error { return ctx.Err() }
func tryLockFile(f *os.File) bool                                    { return true }
func unlockFile(f *os.File) error                                    { return nil }

func identity(fi os.FileInfo) (ino uint64, nlink uint64) { return 0, 1 }

func fileState(f *os.File) (size int64, ino, nlink uint64, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, 0, err
	}
	return fi.Size(), 0, 1, nil
}

// dirID tells a directory apart from another; here, where there is no
// inode, only that it exists.
type dirID struct{ dev, ino uint64 }

func dirIdentity(path string) (dirID, error) {
	_, err := os.Stat(path)
	return dirID{}, err
}

// oNonblock is 0 where an open does not wait on a FIFO.
const oNonblock = 0
