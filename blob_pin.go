package session

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Pins: what keeps a writer's blobs from a collection however slow the
// writer is (see BlobPinner and CollectBlobs).
//
// A writer puts its blobs before it appends the entry that refers to
// them; a collection that read the session before the entry came sees
// no reference to them. Without pins only their age tells them from
// garbage (CollectOptions.Grace). With pins, every BlobDir is a writer:
// a put pins the blob before it writes or refreshes it, the append that
// refers to it (through the FileStore of that BlobDir), ReleaseBlobs or
// the writer's end (Close, the exit or death of its process) releases
// it, and a collection spares a pinned blob whatever its age.
//
// A pin is a lock the kernel keeps, so that it ends with its writer
// whatever the way: a shared lock on one byte of the directory that
// holds the blob directory (the FileStore's root, for its default one),
// at an offset drawn from the blob directory's name and the blob's,
// taken on the BlobDir's own open description of that directory (an
// open file description lock, which Linux has: fcntl F_OFD_SETLK).
// Nothing is written: the blob directory holds the blobs alone, and a
// writer killed leaves no pin behind. The parent, not the blob
// directory itself: every close of a descriptor of a directory walks
// the locks on it, and the blob directory is opened for every put and
// read. A collection asks the kernel whether another open description
// holds a lock on that byte (F_OFD_GETLK on its own), which its own
// pins do not answer; two blobs that draw the same byte (one chance in
// 2^62) protect each other, which only spares a blob. Where there are
// no such locks (other systems than Linux) only PinBlobs pins, for the
// BlobDir's own collections, and the grace protects the others'
// writers.
//
// A collection takes a blob aside before it decides (DeleteBlobIfOlder),
// then asks for pins of it: a pin taken before the blob was taken aside
// is seen, and the blob put back; a put that pins after that finds no
// blob and writes it again. A release refreshes the blob's time before
// it lets the lock go: a collection that started before the entry was
// written, and may have read the session before it, then finds the
// blob younger than its start.
//
// Which pins a collection honours: those of every other BlobDir (in
// this process or another), the writers it cannot see; of its own
// BlobDir, only those taken with PinBlobs. A put through the store a
// collection runs on is the caller's own, and the collection cannot tell
// one whose entry is coming from garbage the caller put and dropped,
// which its own collection must free. Writers of this process are
// protected by running collections on a store of their own (another
// OpenFileStore of the root), or by PinBlobs.

var (
	_ BlobPinner = (*BlobDir)(nil)
	_ BlobPinner = (*FileStore)(nil)
	_ BlobPinner = (*MemoryStore)(nil)
)

// pinState is what a BlobDir knows of one blob it pins.
type pinState struct {
	held     bool     // pinned with PinBlobs: honoured by the BlobDir's own collections too
	children []string // the blob names its bytes refer to, released with it; nil: not known
}

// pinSet is a BlobDir's pins, by blob name.
type pinSet struct {
	mu     sync.Mutex
	dir    *os.File // the blob directory's parent, on which the locks are taken
	base   string   // the blob directory's name in it
	pins   map[string]*pinState
	bytes  map[int64]int // the pins on each locked byte (names may share one)
	n      atomic.Int64  // len(pins): appends look without the lock
	closed bool
}

// pinOffset is the byte that pins blob name of the blob directory whose
// base name is base.
func pinOffset(base, name string) int64 {
	var b [8]byte
	_, _ = hex.Decode(b[:], []byte(name[:16]))
	h := fnv.New64a()
	h.Write([]byte(base))
	return int64((binary.BigEndian.Uint64(b[:]) ^ h.Sum64()) >> 2)
}

// dirLocked returns the BlobDir's open description of the directory its
// pins are taken on, opening it if needed. Callers hold mu.
func (d *BlobDir) dirLocked() (*os.File, error) {
	p := &d.pinned
	if p.dir != nil {
		return p.dir, nil
	}
	abs, err := filepath.Abs(d.dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Dir(abs))
	if err != nil {
		return nil, err
	}
	p.dir, p.base = f, filepath.Base(abs)
	return f, nil
}

// pin pins the blob name for this BlobDir (held: with PinBlobs), and
// notes the blobs data refers to (nil: not known), released with it.
func (d *BlobDir) pin(name string, data []byte, held bool) error {
	p := &d.pinned
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil // a writer closed appends nothing more
	}
	if st, ok := p.pins[name]; ok {
		st.held = st.held || held
		if st.children == nil && data != nil {
			st.children = children(name, data)
		}
		return nil
	}
	st := &pinState{held: held}
	if data != nil {
		st.children = children(name, data)
	}
	f, err := d.dirLocked()
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil // a directory this process cannot open: no pins (the grace protects)
		}
		return fmt.Errorf("session: pin blob %s: %w", name, err)
	}
	off := pinOffset(p.base, name)
	if pinLocks && p.bytes[off] == 0 {
		if err := pinByte(f, off, true); err != nil {
			return fmt.Errorf("session: pin blob %s: %w", name, err)
		}
	}
	if p.pins == nil {
		p.pins, p.bytes = map[string]*pinState{}, map[int64]int{}
	}
	p.pins[name] = st
	p.bytes[off]++
	p.n.Store(int64(len(p.pins)))
	return nil
}

// children returns the names of the blobs that data, the bytes of blob
// name, refers to (a manifest's contents); never nil.
func children(name string, data []byte) []string {
	out := []string{}
	scanRefs(data, func(ref string) {
		if c := ref[len(BlobPrefix):]; c != name {
			out = append(out, c)
		}
	})
	return out
}

// release releases the pins of names, and of the blobs they refer to
// that this BlobDir pinned, each blob's time refreshed before its lock
// goes (see the comment at the top).
func (d *BlobDir) release(names []string) error {
	p := &d.pinned
	if p.n.Load() == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var todo []string
	for len(names) > 0 {
		n := names[len(names)-1]
		names = names[:len(names)-1]
		st, ok := p.pins[n]
		if !ok {
			continue
		}
		delete(p.pins, n)
		todo = append(todo, n)
		names = append(names, st.children...)
	}
	p.n.Store(int64(len(p.pins)))
	if len(todo) == 0 {
		return nil
	}
	r, err := d.openRoot(false)
	if err != nil {
		err = fmt.Errorf("session: release blobs: %w", err)
	} else {
		defer r.Close()
	}
	var errs []error
	now := time.Now()
	for _, n := range todo {
		if r != nil {
			if err := d.refresh(r, n, now); err != nil {
				errs = append(errs, fmt.Errorf("session: release blob %s: %w", n, err))
			}
		}
		off := pinOffset(p.base, n)
		if p.bytes[off]--; p.bytes[off] > 0 {
			continue // another pinned blob's byte too
		}
		delete(p.bytes, off)
		if pinLocks && p.dir != nil {
			if err := pinByte(p.dir, off, false); err != nil {
				errs = append(errs, fmt.Errorf("session: release blob %s: %w", n, err))
			}
		}
	}
	return errors.Join(append(errs, err)...)
}

// refresh sets the time of blob name to now. A blob a collection holds
// aside at this moment is put back first: the collection then finds it
// put back, or, still pinned, puts it back itself.
func (d *BlobDir) refresh(r *os.Root, name string, now time.Time) error {
	err := touchIn(r, name, now)
	if !errors.Is(err, fs.ErrNotExist) {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return nil // no collection by this user deletes it
		}
		return err
	}
	names, rerr := readDirNames(r, ".")
	if rerr != nil {
		return rerr
	}
	for _, n := range names {
		if blob, ok := asideOf(n); ok && blob == name {
			if err := d.putBack(r, n, name); err != nil {
				return err
			}
		}
	}
	if err := touchIn(r, name, now); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err // not there: deleted before the pin, or never put
	}
	return nil
}

// releaseIn releases the pins of the blobs that lines refer to: lines an
// append, a create or a rewrite wrote.
func (d *BlobDir) releaseIn(lines ...[]byte) error {
	if d.pinned.n.Load() == 0 {
		return nil
	}
	var names []string
	for _, l := range lines {
		scanRefs(l, func(ref string) { names = append(names, ref[len(BlobPrefix):]) })
	}
	if len(names) == 0 {
		return nil
	}
	return d.release(names)
}

// PinBlobs implements BlobPinner: the pins are honoured by every
// collection, this BlobDir's own included.
func (d *BlobDir) PinBlobs(ctx context.Context, refs ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	names, err := blobNames(refs)
	if err != nil {
		return err
	}
	r, err := d.openRoot(true)
	if err != nil {
		return err
	}
	defer r.Close()
	for _, n := range names {
		if err := d.pin(n, nil, true); err != nil {
			return err
		}
	}
	return nil
}

// ReleaseBlobs implements BlobPinner.
func (d *BlobDir) ReleaseBlobs(ctx context.Context, refs ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	names, err := blobNames(refs)
	if err != nil {
		return err
	}
	return d.release(names)
}

// blobNames returns the file names of refs (ErrInvalidID for one that
// is no reference).
func blobNames(refs []string) ([]string, error) {
	names := make([]string, len(refs))
	for i, ref := range refs {
		n, err := blobName(ref)
		if err != nil {
			return nil, err
		}
		names[i] = n
	}
	return names, nil
}

// Close ends the BlobDir as a writer: the pins it holds end (without a
// refresh: a writer closed appends nothing more), and it pins nothing
// more; PutBlob still puts. A BlobDir never closed holds its pins until
// its process ends.
func (d *BlobDir) Close() error {
	p := &d.pinned
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	p.pins, p.bytes = nil, nil
	p.n.Store(0)
	if p.dir == nil {
		return nil
	}
	err := p.dir.Close() // the locks go with it
	p.dir = nil
	return err
}

// pinnedElsewhere reports whether blob name is pinned so that this
// BlobDir's collection must spare it: with PinBlobs by this BlobDir, or
// by another BlobDir, in this process or another. Unsure (the directory
// cannot be asked), it says pinned.
func (d *BlobDir) pinnedElsewhere(name string) bool {
	p := &d.pinned
	p.mu.Lock()
	defer p.mu.Unlock()
	if st, ok := p.pins[name]; ok && st.held {
		return true
	}
	if !pinLocks {
		return false
	}
	f, err := d.dirLocked()
	if err != nil {
		return true
	}
	held, err := pinHeld(f, pinOffset(p.base, name))
	return held || err != nil
}
