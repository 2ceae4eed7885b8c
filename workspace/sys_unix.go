//go:build linux || darwin || freebsd

package workspace

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// The walk on Unix: each directory opened with O_NOFOLLOW (and checked to
// be the one its parent listed), its entries stat'ed relative to it
// (fstatat, no path resolution from the root, no symlink followed).

type dirH struct {
	fd   int
	path string
}

func openDir(path string, want *statKey) (*dirH, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if want != nil {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || uint64(st.Ino) != want.ino || uint64(st.Dev) != want.dev {
			unix.Close(fd)
			return nil, &os.PathError{Op: "open", Path: path, Err: errChanged}
		}
	}
	return &dirH{fd: fd, path: path}, nil
}

func (d *dirH) close() { unix.Close(d.fd) }

// names lists the directory. The descriptor is duplicated, so that
// closing the *os.File leaves d's open.
func (d *dirH) names() ([]string, error) {
	fd, err := unix.Dup(d.fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	return f.Readdirnames(-1)
}

func (d *dirH) lstat(name string) (statKey, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return statKey{}, &os.PathError{Op: "lstat", Path: d.path + "/" + name, Err: err}
		}
		return keyOf(&st), nil
	}
}

func (d *dirH) readlink(name string) (string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(d.fd, name, buf)
		if err != nil {
			return "", &os.PathError{Op: "readlink", Path: d.path + "/" + name, Err: err}
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		if len(buf) > MaxPathBytes {
			return "", &os.PathError{Op: "readlink", Path: d.path + "/" + name, Err: errors.New("target too long")}
		}
		buf = make([]byte, 2*len(buf))
	}
}

// openNoFollow opens a regular file for reading without following a
// symlink in its last component, and without blocking on a FIFO put in
// its place.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
}

func keyOf(st *unix.Stat_t) statKey {
	k := statKey{
		size:  st.Size,
		mtime: st.Mtim.Sec*1e9 + int64(st.Mtim.Nsec),
		ctime: st.Ctim.Sec*1e9 + int64(st.Ctim.Nsec),
		ino:   uint64(st.Ino),
		dev:   uint64(st.Dev),
		perm:  fs.FileMode(st.Mode & 0o777),
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		k.typ = typeFile
	case unix.S_IFDIR:
		k.typ = typeDir
	case unix.S_IFLNK:
		k.typ = typeSymlink
	default:
		k.typ = typeOther
	}
	return k
}

// statFile returns the stat data of an open file.
func statFile(f *os.File) (statKey, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return statKey{}, err
	}
	return keyOf(&st), nil
}

// lstatPath returns the stat data of a path, not following a symlink.
func lstatPath(path string) (statKey, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return statKey{}, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	return keyOf(&st), nil
}

const oNoFollow = unix.O_NOFOLLOW
