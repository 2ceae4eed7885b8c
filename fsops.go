package session

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The changes FileStore and BlobDir make to the file system, in one
// place: each does the change and, when a test records them
// (recordFS), reports it, so that the crash-state checker
// (crashstate_test.go) can rebuild every state a crash could leave. The
// mutants are the same checker's proof: each breaks one durability rule
// on purpose, for a test to show the checker catches it; none is set in
// normal use.

// fsOp is one change to the file system, with absolute paths.
type fsOp struct {
	Kind string // mkdir, create, write, truncate, fsync, fdatasync, rename, link, unlink, syncdir
	Path string
	To   string // rename and link
	Off  int64  // write
	Data []byte // write: a copy
	Size int64  // truncate
}

// recordFS, when set (by tests only), is told of every change.
var recordFS func(fsOp)

// mutant, when set (by tests only), names a durability rule to break.
var mutant string

func record(op fsOp) {
	if recordFS != nil {
		op.Path = filepath.Clean(op.Path)
		if op.To != "" {
			op.To = filepath.Clean(op.To)
		}
		recordFS(op)
	}
}

// mkdirOS makes the directory path (absolute), mode 0700, and syncs its
// parent, so that the new directory survives a crash of the machine.
func mkdirOS(path string) error {
	if err := os.Mkdir(path, 0o700); err != nil {
		return err
	}
	record(fsOp{Kind: "mkdir", Path: path})
	if err := os.Chmod(path, 0o700); err != nil { // whatever the umask
		return err
	}
	if mutant == "mkdir-nosync" {
		return nil
	}
	return syncDirOS(filepath.Dir(path))
}

// mkdirIn is mkdirOS for a path inside r.
func mkdirIn(r *os.Root, rel string) error {
	if err := r.Mkdir(rel, 0o700); err != nil {
		return err
	}
	record(fsOp{Kind: "mkdir", Path: filepath.Join(r.Name(), rel)})
	if err := r.Chmod(rel, 0o700); err != nil {
		return err
	}
	if mutant == "mkdir-nosync" {
		return nil
	}
	return syncDir(r, filepath.Dir(rel))
}

// createIn creates the new file rel in r (O_EXCL), mode 0600.
func createIn(r *os.Root, rel string) (*os.File, error) {
	f, err := r.OpenFile(rel, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	record(fsOp{Kind: "create", Path: f.Name()})
	return f, nil
}

// writeAt writes b at off in f.
func writeAt(f *os.File, b []byte, off int64) (int, error) {
	n, err := f.WriteAt(b, off)
	if n > 0 && recordFS != nil {
		record(fsOp{Kind: "write", Path: f.Name(), Off: off, Data: append([]byte(nil), b[:n]...)})
	}
	return n, err
}

// truncateFile cuts f to size.
func truncateFile(f *os.File, size int64) error {
	err := f.Truncate(size)
	if err == nil {
		record(fsOp{Kind: "truncate", Path: f.Name(), Size: size})
	}
	return err
}

// fsync makes f durable, data and metadata.
func fsync(f *os.File) error {
	if mutant == "fsync-skip" {
		return nil
	}
	err := f.Sync()
	if err == nil {
		record(fsOp{Kind: "fsync", Path: f.Name()})
	}
	return err
}

// datasync makes f's data durable (fdatasync where there is one).
func datasync(f *os.File) error {
	if mutant == "datasync-skip" {
		return nil
	}
	err := fdatasync(f)
	if err == nil {
		record(fsOp{Kind: "fdatasync", Path: f.Name()})
	}
	return err
}

// renameIn renames from to to in r, replacing to.
func renameIn(r *os.Root, from, to string) error {
	err := r.Rename(from, to)
	if err == nil {
		record(fsOp{Kind: "rename", Path: filepath.Join(r.Name(), from), To: filepath.Join(r.Name(), to)})
	}
	return err
}

// linkIn links the name to to the file from in r (fs.ErrExist if taken).
func linkIn(r *os.Root, from, to string) error {
	err := r.Link(from, to)
	if err == nil {
		record(fsOp{Kind: "link", Path: filepath.Join(r.Name(), from), To: filepath.Join(r.Name(), to)})
	}
	return err
}

// removeIn removes rel from r.
func removeIn(r *os.Root, rel string) error {
	err := r.Remove(rel)
	if err == nil {
		record(fsOp{Kind: "unlink", Path: filepath.Join(r.Name(), rel)})
	}
	return err
}

// removeOS removes path (absolute).
func removeOS(path string) error {
	err := os.Remove(path)
	if err == nil {
		record(fsOp{Kind: "unlink", Path: path})
	}
	return err
}

// touchIn sets the access and modification times of rel in r to t. The
// checker does not model times: nothing is recorded.
func touchIn(r *os.Root, rel string, t time.Time) error {
	return r.Chtimes(rel, t, t)
}

// syncDir makes the entries of the directory dir of r durable.
func syncDir(r *os.Root, dir string) error {
	return syncOpenDir(func() (*os.File, error) { return r.Open(dir) })
}

// syncDirOS is syncDir for an absolute path.
func syncDirOS(dir string) error {
	return syncOpenDir(func() (*os.File, error) { return os.Open(dir) })
}

// syncOpenDir syncs the directory that open opens.
func syncOpenDir(open func() (*os.File, error)) error {
	if mutant == "syncdir-skip" {
		return nil
	}
	d, err := open()
	if err != nil {
		return err
	}
	defer d.Close()
	err = syncDirFile(d)
	if err == nil {
		record(fsOp{Kind: "syncdir", Path: d.Name()})
	}
	return err
}

// durableDirs remembers, for this process, the directories whose entry
// in their parent is durable, and so are their parents' up to the top
// entryDurable was given (it made it so, in this process), by path
// with the directory's identity then: one deleted and made again is
// another (an inode reused at once is the one case this misses).
var durableDirs sync.Map // string -> dirID

// entryDurable makes the entry of the directory dir (absolute) in its
// parent durable, and so on up to top's entry in its own parent (top is
// dir or one of its parents: the store's root, the blob directory),
// syncing each parent once per process. A directory found in place may
// have been made by another process, or by one a crash stopped, without
// that sync: a promise that rests on it (a session file in it, a blob)
// would not survive a power loss. Above top are directories the store
// neither made nor owns; a mount point's entry belongs to the file
// system above, whose sync proves nothing here, and the climb stops at
// one too. Directory syncs go through syncFoundDir, which passes over
// what cannot be done.
func entryDurable(dir, top string) error {
	type level struct {
		path string
		id   dirID
	}
	var done []level
	id, err := dirIdentity(dir)
	if err != nil {
		return err
	}
	for {
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		if v, ok := durableDirs.Load(dir); ok && v.(dirID) == id && mutant != "name-nosync" {
			break // and everything up to its top
		}
		pid, err := dirIdentity(parent)
		if err != nil {
			return err
		}
		if pid.dev != id.dev {
			break // dir is the top of its file system
		}
		if mutant != "name-nosync" {
			if err := syncFoundDir(parent); err != nil {
				return err
			}
		}
		done = append(done, level{dir, id})
		if dir == top || !strings.HasPrefix(dir, top+string(filepath.Separator)) {
			break
		}
		dir, id = parent, pid
	}
	for i := len(done) - 1; i >= 0; i-- { // from the top: a path known implies its parents
		durableDirs.Store(done[i].path, done[i].id)
	}
	return nil
}

// madeDurable notes the directory dir that this process just made, its
// parent synced after it (mkdirOS, mkdirIn), once the entries above it
// are durable up to top's.
func madeDurable(dir, top string) error {
	if dir != top && strings.HasPrefix(dir, top+string(filepath.Separator)) {
		if err := entryDurable(filepath.Dir(dir), top); err != nil {
			return err
		}
	}
	id, err := dirIdentity(dir)
	if err != nil {
		return err
	}
	durableDirs.Store(dir, id)
	return nil
}

// syncFoundDir syncs the directory dir (absolute), one the store found
// in place rather than made, as best it can: a file system that cannot
// sync a directory (EINVAL: some network file systems), one mounted
// read-only (nothing there can be lost), or a directory this process may
// not open, is passed over, for nothing more can be done for it. Other
// errors are returned.
func syncFoundDir(dir string) error {
	err := syncDirOS(dir)
	if err == nil || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EINVAL) ||
		errors.Is(err, syscall.EROFS) || errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	return err
}
