package s3store

import (
	"context"
	"time"

	session "github.com/agentsession/session"
)

// WithBlobs returns store with its blobs kept in blobs: session.BlobsOf,
// and so images, workspace snapshots, exports and blob collection, use
// the bucket; everything else is store's (its abilities are found
// through Unwrap). It is how a host keeps entries in PostgreSQL
// (pgstore) or files and images on object storage:
//
//	blobs, err := s3store.OpenBlobs(ctx, s3store.Options{Bucket: "agent-blobs"})
//	store := s3store.WithBlobs(pg, blobs)
//
// Blobs store already put in its own blob store stay there, unread
// through the result: move them with session.CopyBlobs before.
func WithBlobs(store session.Store, blobs *Blobs) session.Store {
	return &withBlobs{Store: store, blobs: blobs}
}

type withBlobs struct {
	session.Store
	blobs *Blobs
}

var (
	_ session.BlobStore     = (*withBlobs)(nil)
	_ session.BlobCollector = (*withBlobs)(nil)
	_ session.BlobSweeper   = (*withBlobs)(nil)
)

func (w *withBlobs) Unwrap() session.Store { return w.Store }

func (w *withBlobs) PutBlob(ctx context.Context, data []byte) (string, error) {
	return w.blobs.PutBlob(ctx, data)
}

func (w *withBlobs) GetBlob(ctx context.Context, ref string) ([]byte, error) {
	return w.blobs.GetBlob(ctx, ref)
}

func (w *withBlobs) ListBlobs(ctx context.Context, fn func(session.BlobInfo) error) error {
	return w.blobs.ListBlobs(ctx, fn)
}

func (w *withBlobs) DeleteBlob(ctx context.Context, ref string) error {
	return w.blobs.DeleteBlob(ctx, ref)
}

func (w *withBlobs) DeleteBlobIfOlder(ctx context.Context, ref string, cutoff time.Time) (bool, error) {
	return w.blobs.DeleteBlobIfOlder(ctx, ref, cutoff)
}
