package session

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
)

// Blobs put many at a time (a workspace snapshot puts thousands): each
// written as PutBlob writes it but not synced, and all made durable at
// once by SyncBlobs, so that a snapshot pays for durability once rather
// than a file sync and a directory sync per file.

var (
	_ BlobBatcher = (*BlobDir)(nil)
	_ BlobBatcher = (*FileStore)(nil)
)

// deferred is the BlobDir's list of blobs written without a sync.
type deferred struct {
	mu    sync.Mutex
	names map[string]struct{}
}

// PutBlobDeferred implements BlobBatcher.
func (d *BlobDir) PutBlobDeferred(ctx context.Context, data []byte) (string, error) {
	return d.put(ctx, data, true)
}

// SyncBlobs implements BlobBatcher: the files of the blobs put with
// PutBlobDeferred are synced, several at a time (file systems that
// journal group their commits), then their directory once. Without
// BlobDirOptions.Sync it does nothing, as PutBlob would not have synced.
func (d *BlobDir) SyncBlobs(ctx context.Context) error {
	d.later.mu.Lock()
	names := make([]string, 0, len(d.later.names))
	for n := range d.later.names {
		names = append(names, n)
	}
	d.later.names = nil
	d.later.mu.Unlock()
	if !d.opts.Sync || len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	r, err := d.openRoot(true)
	if err != nil {
		return err
	}
	defer r.Close()
	const workers = 16
	errs := make(chan error, len(names))
	next := make(chan int)
	inos := make([]uint64, len(names)) // the files synced: another put there since is another
	var wg sync.WaitGroup
	for range min(workers, len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				n := names[i]
				f, err := openRegular(r, n, os.O_RDONLY)
				if err == nil {
					_, inos[i], _, err = fileState(f)
					if err == nil {
						err = fsync(f)
					}
					f.Close()
				}
				if err != nil {
					errs <- fmt.Errorf("session: sync blob %s: %w", n, err)
				}
			}
		}()
	}
	for i := range names {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		d.requeue(names) // not known durable: a later SyncBlobs tries again
		return err
	}
	if err := ctx.Err(); err != nil {
		d.requeue(names)
		return err
	}
	if err := syncDir(r, "."); err != nil {
		d.requeue(names)
		return fmt.Errorf("session: sync blob directory %s: %w", d.dir, err)
	}
	for i, n := range names {
		d.noteDurable(n, inos[i])
	}
	return nil
}

// requeue puts names back on the list of blobs not yet durable.
func (d *BlobDir) requeue(names []string) {
	d.later.mu.Lock()
	defer d.later.mu.Unlock()
	if d.later.names == nil {
		d.later.names = map[string]struct{}{}
	}
	for _, n := range names {
		d.later.names[n] = struct{}{}
	}
}

// deferSync notes a blob written (or found) without a sync, the file
// with inode ino.
func (d *BlobDir) deferSync(name string, ino uint64) {
	d.durMu.Lock()
	had, done := d.durable[name]
	d.durMu.Unlock()
	if done && had == ino {
		return // made durable by this BlobDir already
	}
	d.later.mu.Lock()
	if d.later.names == nil {
		d.later.names = map[string]struct{}{}
	}
	d.later.names[name] = struct{}{}
	d.later.mu.Unlock()
}

// PutBlobDeferred implements BlobBatcher with the store's blob directory.
func (s *FileStore) PutBlobDeferred(ctx context.Context, data []byte) (string, error) {
	return s.blobs.PutBlobDeferred(ctx, data)
}

// SyncBlobs implements BlobBatcher with the store's blob directory.
func (s *FileStore) SyncBlobs(ctx context.Context) error { return s.blobs.SyncBlobs(ctx) }
