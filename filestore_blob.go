package session

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"time"
)

// The FileStore's blobs: its BlobDir, BlobStore and BlobCollector on it,
// and the blob references of what it reads resolved.

var (
	_ BlobStore     = (*FileStore)(nil)
	_ BlobCollector = (*FileStore)(nil)
	_ BlobSweeper   = (*FileStore)(nil)
)

// Blobs returns the store's blob directory (FileStoreOptions.BlobDir).
func (s *FileStore) Blobs() *BlobDir { return s.blobs }

// defaultBlobDirs returns where a FileStore at root keeps its blobs by
// default, under its root so that it writes nowhere else, and where it
// also reads them: beside the root, the earlier default and where
// oh-my-pi keeps them.
func defaultBlobDirs(root string) (dir, fallback string) {
	return filepath.Join(root, blobDirName), filepath.Join(filepath.Dir(root), "blobs")
}

// DefaultBlobDir returns the blob store a FileStore at root uses with
// default options (FileStoreOptions.BlobDir), for tools that read its
// files without opening the store.
func DefaultBlobDir(root string) *BlobDir {
	dir, fallback := defaultBlobDirs(root)
	return OpenBlobDir(dir, &BlobDirOptions{Fallback: fallback})
}

// PutBlob implements BlobStore with the store's blob directory.
func (s *FileStore) PutBlob(ctx context.Context, data []byte) (string, error) {
	return s.blobs.PutBlob(ctx, data)
}

// PinBlobs implements BlobPinner with the store's blob directory (see
// BlobDir.PinBlobs).
func (s *FileStore) PinBlobs(ctx context.Context, refs ...string) error {
	return s.blobs.PinBlobs(ctx, refs...)
}

// ReleaseBlobs implements BlobPinner with the store's blob directory.
func (s *FileStore) ReleaseBlobs(ctx context.Context, refs ...string) error {
	return s.blobs.ReleaseBlobs(ctx, refs...)
}

// releaseWritten releases the pins of the blobs that lines refer to,
// once they are written (an append, a create, a rewrite): from then on
// the session refers to them. Its errors are not the write's, which
// happened: a pin left behind keeps its blob until the store is closed.
func (s *FileStore) releaseWritten(lines ...[]byte) {
	_ = s.blobs.releaseIn(lines...)
}

// releaseCreated is releaseWritten for the entries of a create, whose
// lines are stored[i] where the store changed them (blobs, cuts).
func (s *FileStore) releaseCreated(entries []Entry, stored map[int][]byte) {
	if s.blobs.pinned.n.Load() == 0 {
		return
	}
	lines := make([][]byte, len(entries))
	for i, e := range entries {
		if l, ok := stored[i]; ok {
			lines[i] = l
		} else {
			lines[i] = e.bytes()
		}
	}
	s.releaseWritten(lines...)
}

// GetBlob implements BlobStore with the store's blob directory.
func (s *FileStore) GetBlob(ctx context.Context, ref string) ([]byte, error) {
	return s.blobs.GetBlob(ctx, ref)
}

// errNotOwnBlobs refuses a collection on the store OpenFile makes for a
// file outside any store: the blob directory it reads is someone else's.
var errNotOwnBlobs = errors.New("session: a store of one file outside any store's layout does not own its blob directory: collect on the store of its root")

// ListBlobs implements BlobCollector with the store's blob directory
// (see BlobDir.ListBlobs).
func (s *FileStore) ListBlobs(ctx context.Context, fn func(BlobInfo) error) error {
	if s.fileOnly {
		return errNotOwnBlobs
	}
	return s.blobs.ListBlobs(ctx, fn)
}

// DeleteBlob implements BlobCollector with the store's blob directory.
func (s *FileStore) DeleteBlob(ctx context.Context, ref string) error {
	if s.fileOnly {
		return errNotOwnBlobs
	}
	return s.blobs.DeleteBlob(ctx, ref)
}

// DeleteBlobIfOlder implements BlobSweeper with the store's blob
// directory (see BlobDir.DeleteBlobIfOlder).
func (s *FileStore) DeleteBlobIfOlder(ctx context.Context, ref string, cutoff time.Time) (bool, error) {
	if s.fileOnly {
		return false, errNotOwnBlobs
	}
	return s.blobs.DeleteBlobIfOlder(ctx, ref, cutoff)
}

// unlistedSessions returns what a collection must know beyond the
// listing: the session files of the store's tree that its listing leaves
// out (no readable header, or over the store's limits), by path, which
// make CollectBlobs refuse to delete; and the sessions this store opened
// by path outside its tree (OpenPath), by id, which it reads too.
func (s *FileStore) unlistedSessions(ctx context.Context) (unreadable, outside []string, err error) {
	if s.fileOnly {
		return nil, nil, nil
	}
	if err := s.scan(false); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	rels := make([]string, 0, len(s.paths))
	for id, rel := range s.paths {
		if filepath.IsAbs(rel) {
			outside = append(outside, id)
		} else {
			rels = append(rels, rel)
		}
	}
	s.mu.Unlock()
	for _, rel := range rels {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if _, ok := s.infoOf(rel); !ok {
			if _, err := s.r.Stat(rel); err == nil { // not deleted since
				unreadable = append(unreadable, s.path(rel))
			}
		}
	}
	slices.Sort(unreadable)
	slices.Sort(outside)
	return unreadable, outside, nil
}

// resolveBlobs puts the content of blob references back into the
// entries of log, which was read from data.
func (s *FileStore) resolveBlobs(ctx context.Context, log *Log, data []byte) error {
	if log.refs == refsUnknown {
		log.refs = refsIn(data)
	}
	if log.refs == refsNone {
		return nil // the usual case, found out while reading
	}
	return resolveBlobs(ctx, log, s.blobs, s.lim)
}
