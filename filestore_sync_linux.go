package session

import (
	"os"
	"syscall"
)

// fdatasync on Linux: the data of a file made durable, and only the
// metadata needed to read it back (its size), not its times.

func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// syncDirFile makes the entries of the open directory d durable.
func syncDirFile(d *os.File) error { return d.Sync() }
