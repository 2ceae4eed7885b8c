//go:build linux

package workspace

import (
	"errors"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The watcher (Linux): an inotify watch on every directory walked, so
// that a snapshot lists again only the directories where something
// happened since the last walk. The kernel queues an event as each
// change is made, before the call that made it returns, so that the
// events read at the start of a walk cover every change made before it.
// An overflowing queue, a watch that cannot be added, or a directory seen
// at two paths (a bind mount) makes the next walk a full one; and every
// Options.RescanEvery a walk is full anyway, for the changes inotify does
// not report (writes through a shared mapping, through a hard link from
// outside the tree, by another machine on a network file system).

const watchMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW

type watcher struct {
	mu     sync.Mutex
	f      *os.File
	fd     int
	wdRel  map[int32]string
	relWd  map[string]int32
	broken bool
	buf    []byte
}

func newWatcher() *watcher {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	return &watcher{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, wdRel: map[int32]string{}, relWd: map[string]int32{}, buf: make([]byte, 64<<10)}
}

// add watches the directory rel (at abs); called before it is listed.
func (x *watcher) add(abs, rel string) {
	if x == nil {
		return
	}
	wd, err := unix.InotifyAddWatch(x.fd, abs, watchMask)
	x.mu.Lock()
	defer x.mu.Unlock()
	if err != nil {
		x.broken = true
		return
	}
	w := int32(wd)
	if old, ok := x.wdRel[w]; ok && old != rel {
		if _, still := x.relWd[old]; still && x.relWd[old] == w {
			delete(x.relWd, old) // moved, or seen twice: the walk checks
		}
	}
	x.wdRel[w] = rel
	x.relWd[rel] = w
}

// drain reads the events queued: the directories where something
// changed; full when the watcher cannot tell.
func (x *watcher) drain() (dirty map[string]bool, full bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	dirty = map[string]bool{}
	for {
		n, err := unix.Read(x.fd, x.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			break // EAGAIN: nothing more
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&x.buf[off]))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				x.broken = true
				continue
			}
			rel, ok := x.wdRel[ev.Wd]
			if !ok {
				continue
			}
			dirty[rel] = true
			if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0 && rel != "" {
				dirty[parentOf(rel)] = true
			}
			if ev.Mask&unix.IN_IGNORED != 0 {
				delete(x.wdRel, ev.Wd)
				if x.relWd[rel] == ev.Wd {
					delete(x.relWd, rel)
				}
			}
		}
	}
	full = x.broken
	x.broken = false
	return dirty, full
}

// forget stops watching rel, a directory no longer walked.
func (x *watcher) forget(rel string) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if wd, ok := x.relWd[rel]; ok {
		delete(x.relWd, rel)
		if x.wdRel[wd] == rel {
			delete(x.wdRel, wd)
			unix.InotifyRmWatch(x.fd, uint32(wd))
		}
	}
}

// watched reports whether rel has a watch of its own.
func (x *watcher) watched(rel string) bool {
	if x == nil {
		return false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	_, ok := x.relWd[rel]
	return ok
}

func (x *watcher) close() { x.f.Close() }
