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

// identity returns what tells a file apart from the one that replaced it:
// its inode, and its link count (0 once a rename replaced it).
func identity(fi os.FileInfo) (ino uint64, nlink uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino), uint64(st.Nlink)
	}
	return 0, 1
}
