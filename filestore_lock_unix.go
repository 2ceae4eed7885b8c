//go:build unix

package session

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// The OS side of a FileStore's locking on unix: the advisory file lock
// (flock) every process takes around its appends, reads and rewrites,
// and the fstat that tells, under that lock, how long the file is and
// whether a rewrite replaced it.

// lockFile takes an advisory lock on the whole file: exclusive for
// writers, shared for readers. Every process using a FileStore on the
// same files takes it around each append, read and rewrite. While another
// process holds it, it waits until ctx is done (ctx.Err()); a ctx that is
// never done waits in the kernel.
func lockFile(ctx context.Context, f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	fd := int(f.Fd())
	if ctx.Done() == nil {
		return flock(fd, how)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Try, then poll: a blocked flock cannot be interrupted for ctx.
	wait := 50 * time.Microsecond
	var t *time.Timer
	for {
		err := flock(fd, how|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if t == nil {
			t = time.NewTimer(wait)
			defer t.Stop()
		} else {
			t.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, maxLockPoll)
	}
}

// maxLockPoll is the longest pause between tries of a lock another
// process holds, when the wait has a deadline: about what a write lease
// lasts.
const maxLockPoll = 5 * time.Millisecond

func flock(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// tryLockFile takes an exclusive lock if no one holds one.
func tryLockFile(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

func unlockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// fileState returns a file's size, inode and link count with one fstat
// and no allocation (the append path calls it every time).
func fileState(f *os.File) (size int64, ino, nlink uint64, err error) {
	var st syscall.Stat_t
	for {
		err = syscall.Fstat(int(f.Fd()), &st)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return 0, 0, 0, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return st.Size, uint64(st.Ino), uint64(st.Nlink), nil
}

// identity returns what tells a file apart from the one that replaced it:
// its inode, and its link count (0 once a rename replaced it).
func identity(fi os.FileInfo) (ino uint64, nlink uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino), uint64(st.Nlink)
	}
	return 0, 1
}

// dirID tells a directory apart from another: its device and inode.
type dirID struct{ dev, ino uint64 }

// dirIdentity returns the identity of the directory at path.
func dirIdentity(path string) (dirID, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return dirID{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return dirID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil
}

// oNonblock opens a FIFO put where a session file was without waiting
// for a writer (openRegular then refuses it).
const oNonblock = syscall.O_NONBLOCK
