package session

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"
)

// BlobPrefix starts every blob reference. A reference stands where the
// base64 data of an image block would be, as oh-my-pi writes it.
const BlobPrefix = "blob:sha256:"

// DefaultMaxBlobBytes bounds the decoded size of a blob, so that a
// hostile or corrupt blob file cannot exhaust memory.
const DefaultMaxBlobBytes = 64 << 20

// BlobDirOptions configures a BlobDir. The zero value (or nil) gives the
// defaults documented on each field.
type BlobDirOptions struct {
	// Plain writes blobs uncompressed, as oh-my-pi does, so that oh-my-pi
	// can read the blobs this package writes. Default: zstd-compressed.
	// Both forms are always read.
	Plain bool
	// Sync makes Put durable (file and directory synced) before it
	// returns.
	Sync bool
	// MaxBytes bounds the size of a blob, decoded; Get refuses larger ones
	// with ErrCorrupt and Put with an error. Default DefaultMaxBlobBytes.
	MaxBytes int64
	// Fallback is a directory Get also reads when a blob is not in the
	// BlobDir's own: never written, listed or collected.
	Fallback string
}

// BlobDir is a content-addressed blob store in a directory, the layout
// oh-my-pi uses: one file per blob, named by the SHA-256 (lowercase hex)
// of its bytes, holding the bytes zstd-compressed (or, as oh-my-pi writes
// them, plain). Identical content is stored once, whatever session it
// comes from. Every Get checks the content against its name.
//
// The directory is created (mode 0700) by the first Put. A BlobDir is
// safe for concurrent use, also by several processes.
type BlobDir struct {
	dir  string
	opts BlobDirOptions

	once   sync.Once
	dec    *zstd.Decoder
	enc    *zstd.Encoder
	encErr error

	// bad remembers the blob files found corrupt (a wrong hash, past the
	// size limit), by name, with the size and modification time they
	// had, so that a bad blob many sessions refer to is read and decoded
	// once, not at every load; a file changed since is read again.
	badMu sync.Mutex
	bad   map[string]badBlob

	// durable remembers blobs found in place and made durable by this
	// BlobDir, by name with their inode (0 where there is none), so that
	// a blob put again and again is synced once.
	durMu   sync.Mutex
	durable map[string]uint64
	// later lists the blobs put with PutBlobDeferred not yet synced.
	later deferred
	// pinned is what this BlobDir pins against collections (blob_pin.go).
	pinned pinSet
}

type badBlob struct {
	size, mtime int64
	err         error
}

// maxBadBlobs bounds what a BlobDir remembers of bad blobs.
const maxBadBlobs = 1024

var _ BlobStore = (*BlobDir)(nil)

// OpenBlobDir returns the blob store in dir. It touches nothing on disk
// until used.
func OpenBlobDir(dir string, opts *BlobDirOptions) *BlobDir {
	d := &BlobDir{dir: dir}
	if opts != nil {
		d.opts = *opts
	}
	if d.opts.MaxBytes <= 0 {
		d.opts.MaxBytes = DefaultMaxBlobBytes
	}
	return d
}

// Dir returns the directory the blobs are in.
func (d *BlobDir) Dir() string { return d.dir }

func (d *BlobDir) init() {
	d.once.Do(func() {
		// DecodeAll is capped at MaxBytes of output and its window, so a
		// small file cannot expand without bound.
		d.dec, _ = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(uint64(d.opts.MaxBytes)),
			zstd.WithDecoderMaxWindow(uint64(min(d.opts.MaxBytes, 1<<30))),
			zstd.WithDecodeAllCapLimit(true))
		// A 1 MiB window: the default 8 MiB makes the encoder keep a
		// 16 MiB history for every large blob, which was a quarter of the
		// peak memory of a workspace's first snapshot of the Go tree, for
		// no gain on files (the stored bytes are the same within 0.1%).
		d.enc, d.encErr = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithWindowSize(1<<20))
	})
}

// BlobRef returns the reference of data: "blob:sha256:" and the SHA-256
// of data in lowercase hex.
func BlobRef(data []byte) string {
	sum := sha256.Sum256(data)
	return BlobPrefix + hex.EncodeToString(sum[:])
}

// blobName returns the file name of a reference, or an error wrapping
// ErrInvalidID for anything that is not a well-formed reference.
func blobName(ref string) (string, error) {
	h, ok := bytesCutPrefix(ref, BlobPrefix)
	if !ok || len(h) != 64 {
		return "", fmt.Errorf("%w: blob reference %.100q", ErrInvalidID, ref)
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", fmt.Errorf("%w: blob reference %.100q", ErrInvalidID, ref)
		}
	}
	return h, nil
}

func bytesCutPrefix(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || s[:len(prefix)] != prefix {
		return "", false
	}
	return s[len(prefix):], true
}

// isBlobRef reports whether s looks like a blob reference. It is asked
// of every long string an append holds (an image's base64): it looks at
// the length first and allocates nothing.
func isBlobRef(s []byte) bool {
	if len(s) != len(BlobPrefix)+64 || string(s[:len(BlobPrefix)]) != BlobPrefix {
		return false
	}
	for _, c := range s[len(BlobPrefix):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// PutBlob implements BlobStore: it stores data unless a blob of the same
// content is there already, in which case it refreshes the blob's
// modification time (what ListBlobs reports as Touched), so that a
// collection running beside this put does not take the blob away from
// the entry about to refer to it (see DeleteBlobIfOlder). It pins the
// blob first, and what its bytes refer to with it (see BlobPinner): no
// collection through another BlobDir, in this process or another,
// deletes it until an append through this BlobDir's FileStore refers to
// it, ReleaseBlobs, Close or the end of the process.
func (d *BlobDir) PutBlob(ctx context.Context, data []byte) (string, error) {
	return d.put(ctx, data, false)
}

// put is PutBlob, and with later PutBlobDeferred (blob_batch.go): the
// blob written, or found in place, is left for SyncBlobs to make durable.
func (d *BlobDir) put(ctx context.Context, data []byte, later bool) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if int64(len(data)) > d.opts.MaxBytes {
		return "", fmt.Errorf("session: blob of %d bytes is larger than the limit of %d", len(data), d.opts.MaxBytes)
	}
	ref := BlobRef(data)
	name := ref[len(BlobPrefix):]
	r, err := d.openRoot(true)
	if err != nil {
		return "", err
	}
	defer r.Close()
	// Pinned before it is found or written: a collection that takes it
	// aside from now on sees the pin (see blob_pin.go).
	if err := d.pin(name, data, false); err != nil {
		return "", err
	}
	switch found, err := d.reuse(r, name, ref, later); {
	case err != nil:
		return "", err
	case found:
		return ref, nil
	}
	body := data
	if !d.opts.Plain {
		d.init()
		if d.encErr != nil {
			return "", d.encErr
		}
		body = d.enc.EncodeAll(data, make([]byte, 0, len(data)/2+64))
		if len(body) >= len(data) {
			body = data // incompressible: a frame would be larger than the bytes
		}
	}
	sync := d.opts.Sync && !later
	ino, err := writeAtomic(r, name, body, true, sync, 0o600)
	if err != nil {
		return "", fmt.Errorf("session: write blob %s: %w", name, err)
	}
	switch {
	case sync:
		d.noteDurable(name, ino)
	case later:
		d.deferSync(name, ino)
	}
	return ref, nil
}

// reuse takes the blob name of reference ref when it is in place and
// sound: it refreshes its modification time and, when the options ask
// for durable blobs, makes it durable, or with later leaves that to
// SyncBlobs. found is false when the blob is to be written: missing,
// damaged (a crash before it was synced, say: then it is replaced, so
// that the new reference does not point at garbage), or taken away by a
// collection while this put looked at it.
func (d *BlobDir) reuse(r *os.Root, name, ref string, later bool) (found bool, err error) {
	f, err := openRegular(r, name, os.O_RDONLY)
	if err != nil {
		return false, nil
	}
	_, ino, _, serr := fileState(f)
	_, gerr := d.getFile(f, name, ref)
	f.Close()
	if serr != nil || gerr != nil {
		return false, nil
	}
	// The touch is by name, and comes after the read: a collection
	// that takes the blob aside first (DeleteBlobIfOlder) makes it fail,
	// and the blob is written again; one that takes it aside after
	// finds it touched, and puts it back.
	switch err := touchIn(r, name, time.Now()); {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		// A blob directory this process may read but not change: the
		// blob is there, and no collection by this user removes it.
	default:
		return false, fmt.Errorf("session: touch blob %s: %w", name, err)
	}
	// Whoever wrote it may not have made it durable (a store that does
	// not sync, a process that crashed before it did): the reference
	// this put returns must not outlive it.
	if later {
		d.deferSync(name, ino)
		return true, nil
	}
	if err := d.makeDurable(r, name, ino); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // taken aside meanwhile: written again
		}
		return false, fmt.Errorf("session: sync blob %s: %w", name, err)
	}
	return true, nil
}

// makeDurable syncs the blob file name, found in place with the inode
// ino, and its directory, once per BlobDir and file, when the options
// ask for durable blobs. A file deleted by a collection and written
// again by another process is another inode, and is synced again.
func (d *BlobDir) makeDurable(r *os.Root, name string, ino uint64) error {
	if !d.opts.Sync {
		return nil
	}
	d.durMu.Lock()
	had, done := d.durable[name]
	d.durMu.Unlock()
	if done && had == ino {
		return nil
	}
	f, err := openRegular(r, name, os.O_RDONLY)
	if err != nil {
		return err
	}
	_, ino, _, err = fileState(f)
	if err == nil {
		err = fsync(f)
	}
	f.Close()
	if err == nil {
		err = syncFoundDir(d.dir)
	}
	if err != nil {
		return err
	}
	d.noteDurable(name, ino)
	return nil
}

// noteDurable remembers that the blob name, the file with inode ino, is
// durable.
func (d *BlobDir) noteDurable(name string, ino uint64) {
	d.durMu.Lock()
	if d.durable == nil || len(d.durable) >= maxDurableBlobs {
		d.durable = map[string]uint64{}
	}
	d.durable[name] = ino
	d.durMu.Unlock()
}

// forgetDurable forgets the blob name, deleted.
func (d *BlobDir) forgetDurable(name string) {
	d.durMu.Lock()
	delete(d.durable, name)
	d.durMu.Unlock()
}

// maxDurableBlobs bounds what a BlobDir remembers of the blobs it made
// durable.
const maxDurableBlobs = 4096

// GetBlob implements BlobStore. A blob whose content does not match its
// name, or that would decode to more than MaxBytes, is ErrCorrupt; a
// missing one ErrNotFound.
func (d *BlobDir) GetBlob(ctx context.Context, ref string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name, err := blobName(ref)
	if err != nil {
		return nil, err
	}
	r, err := d.openRoot(false)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return d.getFallback(name, ref)
	}
	defer r.Close()
	data, err := d.get(r, name, ref)
	if errors.Is(err, ErrNotFound) {
		return d.getFallback(name, ref)
	}
	return data, err
}

// getFallback reads blob name from the Fallback directory, if any.
func (d *BlobDir) getFallback(name, ref string) ([]byte, error) {
	if d.opts.Fallback == "" {
		return nil, fmt.Errorf("%w: blob %s", ErrNotFound, name)
	}
	r, err := os.OpenRoot(d.opts.Fallback)
	if err != nil {
		return nil, fmt.Errorf("%w: blob %s", ErrNotFound, name)
	}
	defer r.Close()
	return d.get(r, name, ref)
}

// get reads and checks the blob name of reference ref in r.
func (d *BlobDir) get(r *os.Root, name, ref string) ([]byte, error) {
	f, err := openRegular(r, name, os.O_RDONLY)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: blob %s", ErrNotFound, name)
		}
		return nil, fmt.Errorf("session: read blob %s: %w", name, err)
	}
	defer f.Close()
	return d.getFile(f, name, ref)
}

// getFile reads and checks f, the blob name of reference ref.
func (d *BlobDir) getFile(f *os.File, name, ref string) ([]byte, error) {
	var size, mtime int64
	if fi, err := f.Stat(); err == nil {
		size, mtime = fi.Size(), fi.ModTime().UnixNano()
		d.badMu.Lock()
		b, known := d.bad[name]
		d.badMu.Unlock()
		if known && b.size == size && b.mtime == mtime {
			return nil, b.err
		}
	}
	// Read at most the limit plus one byte: a plain blob may be as large
	// as MaxBytes; a frame is smaller, but for one of incompressible
	// bytes, which writers before this one stored a little larger than
	// the bytes (zstd's bound: 1/128 more and a header).
	body, err := io.ReadAll(io.LimitReader(f, frameBound(d.opts.MaxBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("session: read blob %s: %w", name, err)
	}
	corrupt := func(why string) error {
		err := &CorruptError{Path: d.path(name), Err: errors.New(why)}
		d.badMu.Lock()
		if d.bad == nil || len(d.bad) >= maxBadBlobs {
			d.bad = map[string]badBlob{}
		}
		d.bad[name] = badBlob{size: size, mtime: mtime, err: err}
		d.badMu.Unlock()
		return err
	}
	if int64(len(body)) > frameBound(d.opts.MaxBytes) || int64(len(body)) > d.opts.MaxBytes && !hasZstdMagic(body) {
		return nil, corrupt(fmt.Sprintf("blob is larger than the limit of %d bytes", d.opts.MaxBytes))
	}
	want := ref[len(BlobPrefix):]
	if hasZstdMagic(body) {
		if data, err := d.decode(body); err == nil && BlobRef(data)[len(BlobPrefix):] == want {
			return data, nil
		}
		// Not ours after all: maybe plain bytes that start like zstd.
	}
	if BlobRef(body)[len(BlobPrefix):] != want {
		return nil, corrupt("content does not match its SHA-256 name")
	}
	return body, nil
}

// decode decompresses one blob with the output capped at MaxBytes.
func (d *BlobDir) decode(body []byte) ([]byte, error) {
	d.init()
	var h zstd.Header
	if err := h.Decode(body); err != nil {
		return nil, err
	}
	if !h.HasFCS {
		// No size declared (another writer's stream): decode as a stream,
		// reading one byte past the limit to tell it was exceeded.
		zr, err := zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(d.opts.MaxBytes)), zstd.WithDecoderMaxWindow(uint64(min(d.opts.MaxBytes, 1<<30))))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		out, err := io.ReadAll(io.LimitReader(zr, d.opts.MaxBytes+1))
		if err == nil && int64(len(out)) > d.opts.MaxBytes {
			err = fmt.Errorf("blob decodes to more than the limit of %d bytes", d.opts.MaxBytes)
		}
		return out, err
	}
	if int64(h.FrameContentSize) > d.opts.MaxBytes {
		return nil, fmt.Errorf("blob declares %d bytes, more than the limit", h.FrameContentSize)
	}
	return d.dec.DecodeAll(body, make([]byte, 0, h.FrameContentSize))
}

// removeStaleTemps removes the temporary files of puts whose writers are
// gone (see FileStore's temporary files), and puts back the blobs that a
// collection took aside and did not finish with (see DeleteBlobIfOlder).
func (d *BlobDir) removeStaleTemps() {
	r, err := d.openRoot(false)
	if err != nil {
		return
	}
	defer r.Close()
	names, err := readDirNames(r, ".")
	if err != nil {
		return
	}
	for _, n := range names {
		if ownTemp(n, isBlobName) {
			removeStaleTemp(r, n)
		} else if blob, ok := asideOf(n); ok && mutant != "no-aside-recovery" {
			_ = d.putBack(r, n, blob)
		}
	}
}

// isBlobName reports whether name is the name of a blob file: 64
// lowercase hex digits.
func isBlobName(name string) bool {
	_, err := blobName(BlobPrefix + name)
	return err == nil
}

// ValidateBlobRef checks that ref is a well-formed blob reference,
// "blob:sha256:" and 64 lowercase hex digits; the error wraps
// ErrInvalidID. Stores check the references they are given with it.
func ValidateBlobRef(ref string) error {
	_, err := blobName(ref)
	return err
}

func (d *BlobDir) path(name string) string { return d.dir + string(os.PathSeparator) + name }

// openRoot opens the blob directory, creating it (0700) when create is
// set.
func (d *BlobDir) openRoot(create bool) (*os.Root, error) {
	if create {
		if err := mkdirAll(d.dir, d.opts.Sync); err != nil {
			return nil, fmt.Errorf("session: blob directory: %w", err)
		}
	}
	return os.OpenRoot(d.dir)
}

// ---- Size controls on entries ----
