//go:build unix

package importer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// oNonblock opens a FIFO without waiting for a writer.
const oNonblock = unix.O_NONBLOCK

// openNoFollow opens rel below the root for reading, one element at a
// time from the root's descriptor, each with O_NOFOLLOW: a symbolic link
// anywhere on the way is refused by the kernel at the moment of the open,
// so a link swapped in after a check is never followed (os.Root alone
// follows links that stay inside the root). Without blocking on a FIFO.
func (rt *root) openNoFollow(rel string) (*os.File, error) {
	parts := strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/")
	dir := int(rt.fd.Fd())
	for i, p := range parts {
		last := i == len(parts)-1
		flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if last {
			flags |= unix.O_NONBLOCK
		} else {
			flags |= unix.O_DIRECTORY
		}
		fd, err := unix.Openat(dir, p, flags, 0)
		if i > 0 {
			unix.Close(dir)
		}
		if err != nil {
			at := rt.path(filepath.FromSlash(strings.Join(parts[:i+1], "/")))
			if err == unix.ELOOP || err == unix.ENOTDIR || err == unix.EMLINK {
				return nil, fmt.Errorf("%s: %w", at, ErrSymlink)
			}
			return nil, &os.PathError{Op: "open", Path: at, Err: err}
		}
		if last {
			return os.NewFile(uintptr(fd), rt.path(rel)), nil
		}
		dir = fd
	}
	return nil, fmt.Errorf("%w: %q", ErrOutsideRoot, rel)
}
