package s3store

import (
	"context"
	"errors"
	"fmt"
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
// Images of session.DefaultMinBlobBytes or more go to the bucket as the
// entries are written, and come back from it as they are read (Load), as
// a FileStore does with its blob directory. Blobs that store put in a
// blob store of its own before stay there, unread through the result.
func WithBlobs(store session.Store, blobs *Blobs) session.Store {
	return &withBlobs{Store: store, blobs: blobs}
}

type withBlobs struct {
	session.Store
	blobs *Blobs
}

func (w *withBlobs) Append(ctx context.Context, id string, opts session.AppendOptions, entries ...session.Entry) error {
	entries, err := session.ExternalizeImages(ctx, entries, w.blobs, 0)
	if err != nil {
		return err
	}
	return w.Store.Append(ctx, id, opts, entries...)
}

func (w *withBlobs) Rewrite(ctx context.Context, id string, opts session.RewriteOptions, h session.Header, entries []session.Entry) error {
	entries, err := session.ExternalizeImages(ctx, entries, w.blobs, 0)
	if err != nil {
		return err
	}
	return w.Store.Rewrite(ctx, id, opts, h, entries)
}

func (w *withBlobs) Load(ctx context.Context, id string) (*session.Log, error) {
	log, err := w.Store.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	// What the store beneath could not resolve with blobs of its own is
	// resolved here.
	log.Unresolved = nil
	if _, err := session.ResolveBlobs(ctx, log, w.blobs); err != nil {
		return nil, err
	}
	return log, nil
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

// The abilities of the store beneath, passed on: callers that look for
// them on the store itself (Sweep's conditional deletes, storetest) find
// them here. Where the store beneath lacks one, the call fails with an
// error wrapping errors.ErrUnsupported, as a WrappedStore's do; every
// store of this module has them all.

var (
	_ session.EntryCreator       = (*withBlobs)(nil)
	_ session.TailLoader         = (*withBlobs)(nil)
	_ session.Archiver           = (*withBlobs)(nil)
	_ session.CompactionMarker   = (*withBlobs)(nil)
	_ session.ConditionalRemover = (*withBlobs)(nil)
	_ session.Subscriber         = (*withBlobs)(nil)
	_ session.SharedStateStore   = (*withBlobs)(nil)
	_ session.UpdatedSetter      = (*withBlobs)(nil)
	_ session.Flusher            = (*withBlobs)(nil)
	_ session.SessionCloser      = (*withBlobs)(nil)
)

// beneath returns the store beneath w as a T, looking through wrappers
// that have an Unwrap method.
func beneath[T any](w *withBlobs, what string) (T, error) {
	s := w.Store
	for {
		if x, ok := s.(T); ok {
			return x, nil
		}
		u, ok := s.(interface{ Unwrap() session.Store })
		if !ok {
			var zero T
			return zero, fmt.Errorf("s3store: %T has no %s: %w", w.Store, what, errors.ErrUnsupported)
		}
		s = u.Unwrap()
	}
}

func (w *withBlobs) CreateWithEntries(ctx context.Context, h session.Header, entries []session.Entry) error {
	entries, err := session.ExternalizeImages(ctx, entries, w.blobs, 0)
	if err != nil {
		return err
	}
	if ec, err := beneath[session.EntryCreator](w, "EntryCreator"); err == nil {
		return ec.CreateWithEntries(ctx, h, entries)
	}
	if err := w.Store.Create(ctx, h); err != nil {
		return err
	}
	return w.Store.Append(ctx, h.ID, session.AppendOptions{IfEmpty: true}, entries...)
}

func (w *withBlobs) LoadTail(ctx context.Context, id string, n int, last string) (*session.Log, error) {
	tl, err := beneath[session.TailLoader](w, "TailLoader")
	if err != nil {
		return nil, fmt.Errorf("%w: %v (load the whole log)", session.ErrConflict, err)
	}
	log, err := tl.LoadTail(ctx, id, n, last)
	if err != nil {
		return nil, err
	}
	log.Unresolved = nil
	if _, err := session.ResolveBlobs(ctx, log, w.blobs); err != nil {
		return nil, err
	}
	return log, nil
}

func (w *withBlobs) Archive(ctx context.Context, id string) error {
	a, err := beneath[session.Archiver](w, "Archiver")
	if err != nil {
		return err
	}
	return a.Archive(ctx, id)
}

func (w *withBlobs) Unarchive(ctx context.Context, id string) error {
	a, err := beneath[session.Archiver](w, "Archiver")
	if err != nil {
		return err
	}
	return a.Unarchive(ctx, id)
}

func (w *withBlobs) MarkCompacting(ctx context.Context, id string, since time.Time) error {
	m, err := beneath[session.CompactionMarker](w, "CompactionMarker")
	if err != nil {
		return err
	}
	return m.MarkCompacting(ctx, id, since)
}

func (w *withBlobs) DeleteIfUnchanged(ctx context.Context, id string, seen session.LogMark) error {
	c, err := beneath[session.ConditionalRemover](w, "ConditionalRemover")
	if err != nil {
		return err
	}
	return c.DeleteIfUnchanged(ctx, id, seen)
}

func (w *withBlobs) ArchiveIfUnchanged(ctx context.Context, id string, seen session.LogMark) error {
	c, err := beneath[session.ConditionalRemover](w, "ConditionalRemover")
	if err != nil {
		return err
	}
	return c.ArchiveIfUnchanged(ctx, id, seen)
}

func (w *withBlobs) Subscribe(ctx context.Context, opts session.SubscribeOptions) (*session.Subscription, error) {
	s, err := beneath[session.Subscriber](w, "Subscriber")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", session.ErrNoEvents, err)
	}
	return s.Subscribe(ctx, opts)
}

func (w *withBlobs) LoadState(ctx context.Context, scope session.StateScope, owner string) (session.State, error) {
	s, err := beneath[session.SharedStateStore](w, "SharedStateStore")
	if err != nil {
		return nil, err
	}
	return s.LoadState(ctx, scope, owner)
}

func (w *withBlobs) UpdateState(ctx context.Context, scope session.StateScope, owner string, delta session.State) error {
	s, err := beneath[session.SharedStateStore](w, "SharedStateStore")
	if err != nil {
		return err
	}
	return s.UpdateState(ctx, scope, owner, delta)
}

func (w *withBlobs) SetUpdated(ctx context.Context, id string, seen session.LogMark, t time.Time) error {
	s, err := beneath[session.UpdatedSetter](w, "UpdatedSetter")
	if err != nil {
		return err
	}
	return s.SetUpdated(ctx, id, seen, t)
}

func (w *withBlobs) Flush(ctx context.Context, id string) error {
	if f, err := beneath[session.Flusher](w, "Flusher"); err == nil {
		return f.Flush(ctx, id)
	}
	return nil // nothing buffered
}

func (w *withBlobs) CloseSession(id string) error {
	if c, err := beneath[session.SessionCloser](w, "SessionCloser"); err == nil {
		return c.CloseSession(id)
	}
	return nil // nothing held
}
