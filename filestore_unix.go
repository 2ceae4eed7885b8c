//go:build unix

package session

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an advisory lock on the whole file: exclusive for
// writers, shared for readers. Every process using a FileStore on the
// same files takes it around each append, read and rewrite.
func lockFile(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
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

// datasync makes the file's data durable (fdatasync where there is one).
func datasync(f *os.File) error {
	return fdatasync(f)
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
