package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

// BlobDir's side of a collection (CollectBlobs, gc.go): listing blobs and
// deleting them safely beside writers.
//
// A collection (CollectBlobs) deletes the blobs no session refers to
// that were last put before its start minus a grace period. A put of a
// blob already in place refreshes its modification time (reuse), which
// is the Touched time ListBlobs reports. A delete must not take a blob
// that a put refreshed after the collection listed it: that put returns
// the reference, and the entry that refers to it comes next. Files offer
// no conditional delete, so DeleteBlobIfOlder first renames the blob
// aside (".<hex>.gc-<random>"), an atomic step after which a put finds
// nothing and writes the blob again; then it reads the time of the file
// it took: touched since the cutoff, the blob is put back; otherwise the
// file taken aside is removed. A put that refreshed the blob before the
// rename shows in the file's time; one after it fails to find the name
// (the touch is by name) and writes. A blob left aside by a collection
// that stopped half way (a crash) is put back the next time a store
// opens the directory or a collection lists it: what was aside is kept,
// never lost, and the next collection decides again. While a blob is
// aside (a rename and a stat), a read finds nothing; only a blob that no
// session referred to when the collection read them, and that a put
// refreshed meanwhile, can be read then, by the entry just appended.

var (
	_ BlobCollector = (*BlobDir)(nil)
	_ BlobSweeper   = (*BlobDir)(nil)
)

// asideHook, when set (by tests only), runs just before and just after
// DeleteBlobIfOlder takes the blob name aside, with "before" and
// "after", to put a concurrent put at either point.
var asideHook func(stage, name string)

// asideOf returns the blob name of a file a collection took aside,
// ".<hex>.gc-<random>".
func asideOf(n string) (blob string, ok bool) {
	i := strings.LastIndex(n, ".gc-")
	if i < 1 || n[0] != '.' {
		return "", false
	}
	suffix := n[i+len(".gc-"):]
	if len(suffix) < 1 || len(suffix) > 13 {
		return "", false
	}
	for j := 0; j < len(suffix); j++ {
		if c := suffix[j]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return "", false
		}
	}
	if blob = n[1:i]; !isBlobName(blob) {
		return "", false
	}
	return blob, true
}

// ListBlobs implements BlobCollector: the blob files of the directory
// (names of 64 lowercase hex digits; temporary files and anything else
// are passed over), each with its size on disk (compressed, for the
// blobs written compressed) and its modification time as Touched. A
// missing directory holds no blobs. Blobs a collection left aside are
// put back first (see DeleteBlobIfOlder).
func (d *BlobDir) ListBlobs(ctx context.Context, fn func(BlobInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := d.openRoot(false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("session: list blobs: %w", err)
	}
	defer r.Close()
	dir, err := r.Open(".")
	if err != nil {
		return fmt.Errorf("session: list blobs: %w", err)
	}
	defer dir.Close()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		des, rerr := dir.ReadDir(1024)
		for _, de := range des {
			n := de.Name()
			if blob, ok := asideOf(n); ok {
				if err := d.putBack(r, n, blob); err != nil {
					return fmt.Errorf("session: put back blob %s: %w", blob, err)
				}
				continue // listed under its name, or not, as the directory's reading goes
			}
			if !isBlobName(n) || !de.Type().IsRegular() {
				continue
			}
			fi, err := de.Info()
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue // deleted since the directory was read
				}
				return fmt.Errorf("session: list blobs: %w", err)
			}
			if err := fn(BlobInfo{Ref: BlobPrefix + n, Size: fi.Size(), Touched: fi.ModTime()}); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("session: list blobs: %w", rerr)
		}
	}
}

// DeleteBlob implements BlobCollector: it removes the blob file,
// whatever its time (ErrNotFound if there is none); the directory is
// synced after when the options ask for durable blobs. A collection
// uses DeleteBlobIfOlder, which is safe beside writers.
func (d *BlobDir) DeleteBlob(ctx context.Context, ref string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name, err := blobName(ref)
	if err != nil {
		return err
	}
	r, err := d.openRoot(false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: blob %s", ErrNotFound, name)
		}
		return fmt.Errorf("session: delete blob %s: %w", name, err)
	}
	defer r.Close()
	if err := removeIn(r, name); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: blob %s", ErrNotFound, name)
		}
		return fmt.Errorf("session: delete blob %s: %w", name, err)
	}
	d.forgetDurable(name)
	if d.opts.Sync {
		if err := syncDir(r, "."); err != nil {
			return fmt.Errorf("session: delete blob %s: %w", name, err)
		}
	}
	return nil
}

// DeleteBlobIfOlder implements BlobSweeper: it removes the blob if its
// modification time is before cutoff and no writer pins it (see
// BlobPinner: the pins of other BlobDirs that live, and this one's
// PinBlobs), atomically with respect to the puts and pins of this
// package, in this process or another (see the comment above
// ListBlobs). deleted is false, with no error, when the blob is younger
// or pinned (it stays) or not there. The directory is synced after a
// delete when the options ask for durable blobs, and always after a
// blob is put back.
func (d *BlobDir) DeleteBlobIfOlder(ctx context.Context, ref string, cutoff time.Time) (deleted bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	name, err := blobName(ref)
	if err != nil {
		return false, err
	}
	r, err := d.openRoot(false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("session: delete blob %s: %w", name, err)
	}
	defer r.Close()
	// Cheap first: most blobs a collection asks for are as old as it
	// listed them, but one put or pinned since need not be moved at all.
	if fi, err := r.Lstat(name); err != nil || !fi.ModTime().Before(cutoff) || d.pinnedElsewhere(name) {
		return false, nil
	}
	aside := "." + name + ".gc-" + strconv.FormatUint(rand.Uint64(), 36)
	if asideHook != nil {
		asideHook("before", name)
	}
	err = renameIn(r, name, aside)
	if asideHook != nil {
		asideHook("after", name)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // deleted meanwhile
		}
		return false, fmt.Errorf("session: delete blob %s: %w", name, err)
	}
	fi, err := r.Lstat(aside)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // put back by a store that opened the directory
		}
		return false, errors.Join(fmt.Errorf("session: delete blob %s: %w", name, err), d.putBack(r, aside, name))
	}
	if !fi.ModTime().Before(cutoff) || d.pinnedElsewhere(name) {
		// Put since the collection listed it, or pinned by a writer
		// (taken before the blob was aside, or it would have written
		// the blob again): it stays.
		if err := d.putBack(r, aside, name); err != nil {
			return false, fmt.Errorf("session: put back blob %s: %w", name, err)
		}
		return false, nil
	}
	if err := removeIn(r, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("session: delete blob %s: %w", name, err)
	}
	d.forgetDurable(name)
	if d.opts.Sync {
		if err := syncDir(r, "."); err != nil {
			return true, fmt.Errorf("session: delete blob %s: %w", name, err)
		}
	}
	return true, nil
}

// putBack returns the blob file aside to its name, unless a put wrote
// the blob again meanwhile: synced, linked back, the directory synced,
// then the name aside removed, so that a crash at any point leaves the
// blob under its name or aside, to be put back again.
func (d *BlobDir) putBack(r *os.Root, aside, name string) error {
	f, err := openRegular(r, aside, os.O_RDONLY)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // put back by another
		}
		return err
	}
	err = fsync(f)
	f.Close()
	if err != nil {
		return err
	}
	switch err := linkIn(r, aside, name); {
	case err == nil, errors.Is(err, fs.ErrExist):
	case errors.Is(err, fs.ErrNotExist):
		return nil // put back by another
	default:
		// A file system without hard links: the rename replaces what a
		// put may have written since, the same bytes.
		if err := renameIn(r, aside, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return syncDir(r, ".")
	}
	if mutant != "putback-nosync" {
		if err := syncDir(r, "."); err != nil {
			return err
		}
	}
	if err := removeIn(r, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
