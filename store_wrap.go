package session

import (
	"context"
	"fmt"
	"time"
)

// Store middleware: a Store that changes what passes between its caller
// and the store beneath it (Redact, package encrypt), entry by entry.

// StoreCodec is what a Store middleware built with WrapStore changes on
// the way to the store beneath it (Encode) and on the way back (Decode).
//
// An encoded entry keeps the id, parent id and timestamp of the entry
// it encodes: the store beneath indexes them, and conditional appends
// and rewrites (AppendOptions, RewriteOptions) name entries by id. An
// encoding must be deterministic (the same entry encodes to the same
// bytes), so that a retried append, which a store recognises by its
// bytes, stays a retry. Decoding an entry that was encoded gives back its
// bytes exactly.
type StoreCodec interface {
	// EncodeHeader returns the header as the store beneath keeps it; it
	// keeps the id.
	EncodeHeader(ctx context.Context, h Header) (Header, error)
	// DecodeHeader undoes EncodeHeader.
	DecodeHeader(ctx context.Context, h Header) (Header, error)
	// EncodeEntry returns an entry of session id as the store beneath
	// keeps it.
	EncodeEntry(ctx context.Context, id string, e Entry) (Entry, error)
	// DecodeEntry undoes EncodeEntry.
	DecodeEntry(ctx context.Context, id string, e Entry) (Entry, error)
	// DecodeInfo changes in place a listing of the store beneath into
	// the listing of the middleware.
	DecodeInfo(ctx context.Context, info *SessionInfo) error
}

// WrappedStore is a Store that passes every call to the store beneath
// it, through a StoreCodec: what WrapStore returns. Besides Store it has
// the abilities that need no knowledge of the content: TailLoader,
// Archiver, CompactionMarker, Flusher and SessionCloser, each passed on
// to the store beneath (Archive fails with errors.ErrUnsupported when
// that store cannot archive; the others do nothing there).
//
// It has no Unwrap method on purpose: the package's helpers look through
// Unwrap for abilities (BlobsOf, Subscribe ...), and would reach the
// store beneath around the codec. Blobs, events and shared state carry
// content, so each middleware decides whether and how to pass them on
// (a type that embeds *WrappedStore and adds them). Inner returns the
// store beneath for the host that means to bypass the codec.
type WrappedStore struct {
	inner Store
	codec StoreCodec
}

var (
	_ Store            = (*WrappedStore)(nil)
	_ TailLoader       = (*WrappedStore)(nil)
	_ EntryCreator     = (*WrappedStore)(nil)
	_ Archiver         = (*WrappedStore)(nil)
	_ CompactionMarker = (*WrappedStore)(nil)
	_ Flusher          = (*WrappedStore)(nil)
	_ SessionCloser    = (*WrappedStore)(nil)
)

// WrapStore returns store seen through codec.
func WrapStore(store Store, codec StoreCodec) *WrappedStore {
	return &WrappedStore{inner: store, codec: codec}
}

// Inner returns the store beneath.
func (w *WrappedStore) Inner() Store { return w.inner }

// EncodeEntries encodes entries of session id with the store's codec,
// into a new slice.
func (w *WrappedStore) EncodeEntries(ctx context.Context, id string, entries []Entry) ([]Entry, error) {
	out := make([]Entry, len(entries))
	for i, e := range entries {
		if e.IsZero() {
			return nil, fmt.Errorf("session: zero Entry at %d", i)
		}
		x, err := w.codec.EncodeEntry(ctx, id, e)
		if err != nil {
			return nil, err
		}
		if x.id != e.id || x.parent != e.parent || x.ts != e.ts {
			return nil, fmt.Errorf("session: codec %T changed the envelope of entry %s", w.codec, e.id)
		}
		out[i] = x
	}
	return out, nil
}

// decodeLog decodes in place a log of session id read from the store
// beneath.
func (w *WrappedStore) decodeLog(ctx context.Context, id string, l *Log) (*Log, error) {
	h, err := w.codec.DecodeHeader(ctx, l.Header)
	if err != nil {
		return nil, err
	}
	l.Header = h
	for i, e := range l.Entries {
		if l.Entries[i], err = w.codec.DecodeEntry(ctx, id, e); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Create implements Store.
func (w *WrappedStore) Create(ctx context.Context, h Header) error {
	in, err := w.codec.EncodeHeader(ctx, h.Clone())
	if err != nil {
		return err
	}
	return w.inner.Create(ctx, in)
}

// CreateWithEntries implements EntryCreator: the header and the entries
// encoded, and created in one step when the store beneath can.
func (w *WrappedStore) CreateWithEntries(ctx context.Context, h Header, entries []Entry) error {
	hin, err := w.codec.EncodeHeader(ctx, h.Clone())
	if err != nil {
		return err
	}
	in, err := w.EncodeEntries(ctx, h.ID, entries)
	if err != nil {
		return err
	}
	return createWithEntries(ctx, w.inner, hin, in)
}

// Append implements Store.
func (w *WrappedStore) Append(ctx context.Context, id string, opts AppendOptions, entries ...Entry) error {
	in, err := w.EncodeEntries(ctx, id, entries)
	if err != nil {
		return err
	}
	return w.inner.Append(ctx, id, opts, in...)
}

// Load implements Store.
func (w *WrappedStore) Load(ctx context.Context, id string) (*Log, error) {
	l, err := w.inner.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	return w.decodeLog(ctx, id, l)
}

// LoadTail implements TailLoader with the store's (or its Load).
func (w *WrappedStore) LoadTail(ctx context.Context, id string, n int, last string) (*Log, error) {
	l, err := loadTail(ctx, w.inner, id, n, last)
	if err != nil {
		return nil, err
	}
	return w.decodeLog(ctx, id, l)
}

// Rewrite implements Store.
func (w *WrappedStore) Rewrite(ctx context.Context, id string, opts RewriteOptions, h Header, entries []Entry) error {
	if err := checkRewrite(id, h, entries); err != nil {
		return err
	}
	hin, err := w.codec.EncodeHeader(ctx, h.Clone())
	if err != nil {
		return err
	}
	in, err := w.EncodeEntries(ctx, id, entries)
	if err != nil {
		return err
	}
	return w.inner.Rewrite(ctx, id, opts, hin, in)
}

// List implements Store.
func (w *WrappedStore) List(ctx context.Context, opts ListOptions) (*ListPage, error) {
	p, err := w.inner.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for i := range p.Sessions {
		if err := w.codec.DecodeInfo(ctx, &p.Sessions[i]); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Delete implements Store.
func (w *WrappedStore) Delete(ctx context.Context, id string) error { return w.inner.Delete(ctx, id) }

// Archive implements Archiver with the store's (errors.ErrUnsupported
// when it has none).
func (w *WrappedStore) Archive(ctx context.Context, id string) error {
	return Archive(ctx, w.inner, id)
}

// Unarchive implements Archiver like Archive.
func (w *WrappedStore) Unarchive(ctx context.Context, id string) error {
	return Unarchive(ctx, w.inner, id)
}

// CompressArchived implements ArchiveCompressor with the store's (an
// error wrapping errors.ErrUnsupported when it has none): the sealed or
// redacted log is compressed as it is stored.
func (w *WrappedStore) CompressArchived(ctx context.Context, id string) error {
	return compressArchived(ctx, w.inner, id)
}

// DeleteIfUnchanged implements ConditionalRemover with the store's (an
// error wrapping errors.ErrUnsupported when it has none). A codec keeps
// entry ids, so a LogMark reads the same on both sides.
func (w *WrappedStore) DeleteIfUnchanged(ctx context.Context, id string, seen LogMark) error {
	cr, err := conditionalRemover(w.inner)
	if err != nil {
		return err
	}
	return cr.DeleteIfUnchanged(ctx, id, seen)
}

// SetUpdated implements UpdatedSetter by passing on to the store
// beneath (a time carries no content).
func (w *WrappedStore) SetUpdated(ctx context.Context, id string, seen LogMark, t time.Time) error {
	return SetUpdated(ctx, w.inner, id, seen, t)
}

// ArchiveIfUnchanged implements ConditionalRemover like
// DeleteIfUnchanged.
func (w *WrappedStore) ArchiveIfUnchanged(ctx context.Context, id string, seen LogMark) error {
	cr, err := conditionalRemover(w.inner)
	if err != nil {
		return err
	}
	return cr.ArchiveIfUnchanged(ctx, id, seen)
}

// MarkCompacting implements CompactionMarker with the store's (nothing
// is recorded on a store without one).
func (w *WrappedStore) MarkCompacting(ctx context.Context, id string, since time.Time) error {
	return markCompacting(ctx, w.inner, id, since)
}

// Flush implements Flusher with the store's (nothing to do without one).
func (w *WrappedStore) Flush(ctx context.Context, id string) error {
	return flushStore(ctx, w.inner, id)
}

// CloseSession implements SessionCloser with the store's.
func (w *WrappedStore) CloseSession(id string) error { return closeStoreSession(w.inner, id) }
