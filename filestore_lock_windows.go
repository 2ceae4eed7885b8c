//go:build windows

package session

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// The OS side of a FileStore's locking on Windows: LockFileEx on one
// byte far past any file's end (so that the lock, which Windows enforces
// on the bytes it covers, never stands in the way of reading or writing
// the file itself), shared for readers and exclusive for writers, as
// flock is on unix; and GetFileInformationByHandle for a file's identity
// and link count (0 once a rename replaced it: os.Root opens files with
// FILE_SHARE_DELETE and renames with POSIX semantics, so a file open
// elsewhere can be replaced, as on unix).

var (
	kernel32         = syscall.NewLazyDLL("kernel32.dll")
	procLockFileEx   = kernel32.NewProc("LockFileEx")
	procUnlockFileEx = kernel32.NewProc("UnlockFileEx")
)

const (
	lockfileFailImmediately = 0x1
	lockfileExclusiveLock   = 0x2
	errorLockViolation      = syscall.Errno(33)
	// The byte locked: the last of a 63-bit file offset, as two halves.
	lockOffsetLow  = 0xFFFFFFFE
	lockOffsetHigh = 0x7FFFFFFF
)

func lockFileEx(f *os.File, flags uint32) error {
	ol := syscall.Overlapped{Offset: lockOffsetLow, OffsetHigh: lockOffsetHigh}
	r, _, err := procLockFileEx.Call(f.Fd(), uintptr(flags), 0, 1, 0, uintptr(unsafe.Pointer(&ol)))
	if r == 0 {
		return err
	}
	return nil
}

// lockFile takes the lock: exclusive for writers, shared for readers.
// While another process holds it, it waits until ctx is done
// (ctx.Err()); a ctx that is never done waits in the kernel.
func lockFile(ctx context.Context, f *os.File, exclusive bool) error {
	var flags uint32
	if exclusive {
		flags = lockfileExclusiveLock
	}
	if ctx.Done() == nil {
		return lockFileEx(f, flags)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	wait := 50 * time.Microsecond
	var t *time.Timer
	for {
		err := lockFileEx(f, flags|lockfileFailImmediately)
		if !errors.Is(err, errorLockViolation) {
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
// process holds, when the wait has a deadline.
const maxLockPoll = 5 * time.Millisecond

// tryLockFile takes an exclusive lock if no one holds one.
func tryLockFile(f *os.File) bool {
	return lockFileEx(f, lockfileExclusiveLock|lockfileFailImmediately) == nil
}

func unlockFile(f *os.File) error {
	ol := syscall.Overlapped{Offset: lockOffsetLow, OffsetHigh: lockOffsetHigh}
	r, _, err := procUnlockFileEx.Call(f.Fd(), 0, 1, 0, uintptr(unsafe.Pointer(&ol)))
	if r == 0 {
		return err
	}
	return nil
}

// fileState returns a file's size, identity and link count.
func fileState(f *os.File) (size int64, ino, nlink uint64, err error) {
	var d syscall.ByHandleFileInformation
	if err := syscall.GetFileInformationByHandle(syscall.Handle(f.Fd()), &d); err != nil {
		return 0, 0, 0, &os.PathError{Op: "GetFileInformationByHandle", Path: f.Name(), Err: err}
	}
	return int64(d.FileSizeHigh)<<32 | int64(d.FileSizeLow), uint64(d.FileIndexHigh)<<32 | uint64(d.FileIndexLow), uint64(d.NumberOfLinks), nil
}

// identity returns what tells a file apart from the one that replaced
// it: on Windows nothing (0), as a FileInfo from Stat does not carry the
// file index. Callers that must tell two names' files apart use
// os.SameFile, and fileState gives an open file's index.
func identity(fi os.FileInfo) (ino uint64, nlink uint64) {
	return 0, 1
}

// dirID tells a directory apart from another; on Windows only that it
// exists: the durability of directory entries is the file system's (see
// syncOpenDir).
type dirID struct{ dev, ino uint64 }

func dirIdentity(path string) (dirID, error) {
	_, err := os.Stat(path)
	return dirID{}, err
}

// oNonblock is 0 where an open does not wait on a FIFO.
const oNonblock = 0
