//go:build !(linux || darwin || freebsd)

package workspace

import (
	"os"
	"path/filepath"
)

// The walk elsewhere (Windows): by path, with the stat data Go gives
// (size, modification time, mode; no change time or inode).

type dirH struct {
	path string
}

func openDir(path string, want *statKey) (*dirH, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &os.PathError{Op: "open", Path: path, Err: errChanged}
	}
	return &dirH{path: path}, nil
}

func (d *dirH) close() {}

func (d *dirH) names() ([]string, error) {
	f, err := os.Open(d.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

func (d *dirH) lstat(name string) (statKey, error) {
	fi, err := os.Lstat(filepath.Join(d.path, name))
	if err != nil {
		return statKey{}, err
	}
	return keyOfInfo(fi), nil
}

func (d *dirH) readlink(name string) (string, error) {
	return os.Readlink(filepath.Join(d.path, name))
}

func openNoFollow(path string) (*os.File, error) { return os.Open(path) }

func keyOfInfo(fi os.FileInfo) statKey {
	k := statKey{size: fi.Size(), mtime: fi.ModTime().UnixNano(), perm: fi.Mode().Perm()}
	switch {
	case fi.Mode().IsRegular():
		k.typ = typeFile
	case fi.IsDir():
		k.typ = typeDir
	case fi.Mode()&os.ModeSymlink != 0:
		k.typ = typeSymlink
	default:
		k.typ = typeOther
	}
	return k
}

func statFile(f *os.File) (statKey, error) {
	fi, err := f.Stat()
	if err != nil {
		return statKey{}, err
	}
	return keyOfInfo(fi), nil
}

func lstatPath(path string) (statKey, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return statKey{}, err
	}
	return keyOfInfo(fi), nil
}

const oNoFollow = 0
