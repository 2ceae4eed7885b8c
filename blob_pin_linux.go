//go:build linux

package session

import (
	"errors"
	"os"
	"syscall"
)

// The kernel's side of pins on Linux (see blob_pin.go): open file
// description locks (fcntl F_OFD_*), which belong to an open
// description of the directory rather than to the process, so that the
// BlobDirs of one process see each other's pins as another process's,
// and closing any other descriptor of the directory (os.Root opens it
// again and again) lets none of them go.

// pinLocks tells that this system keeps pins.
const pinLocks = true

// The fcntl commands of open file description locks (linux/fcntl.h),
// which package syscall does not name.
const (
	fOFDGetlk = 36
	fOFDSetlk = 37
)

// pinByte takes (or with on false, lets go) a shared lock on byte off of
// the directory dir.
func pinByte(dir *os.File, off int64, on bool) error {
	lk := syscall.Flock_t{Type: syscall.F_RDLCK, Whence: 0, Start: off, Len: 1}
	if !on {
		lk.Type = syscall.F_UNLCK
	}
	for {
		err := syscall.FcntlFlock(dir.Fd(), fOFDSetlk, &lk)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// pinHeld reports whether another open description than dir holds a lock
// on byte off of the directory.
func pinHeld(dir *os.File, off int64) (bool, error) {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: off, Len: 1}
	for {
		err := syscall.FcntlFlock(dir.Fd(), fOFDGetlk, &lk)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return false, err
		}
		return lk.Type != syscall.F_UNLCK, nil
	}
}
