package session

import "context"

// The FileStore's blobs: its BlobDir, BlobStore on it, and the blob
// references of what it reads resolved.

// Blobs returns the store's blob directory (FileStoreOptions.BlobDir).
func (s *FileStore) Blobs() *BlobDir { return s.blobs }

// PutBlob implements BlobStore with the store's blob directory.
func (s *FileStore) PutBlob(ctx context.Context, data []byte) (string, error) {
	return s.blobs.PutBlob(ctx, data)
}

// GetBlob implements BlobStore with the store's blob directory.
func (s *FileStore) GetBlob(ctx context.Context, ref string) ([]byte, error) {
	return s.blobs.GetBlob(ctx, ref)
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
