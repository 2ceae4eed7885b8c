package session

// The optional abilities of a Store, in one place. A Store keeps bytes;
// what a store can do beyond Store it says by implementing one of these
// interfaces, and the package finds it with findAbility, which looks
// through wrappers:
//
//   - a wrapper with an Unwrap() Store method (ObservedStore, or a host's
//     own) lets the store beneath answer for every ability the wrapper
//     does not implement itself;
//   - a wrapper without one (WrappedStore and the middlewares built on it,
//     RedactStore; UserStore) answers only for what it implements, each
//     method passing on to the store beneath what the wrapper's job
//     allows (a codec's store passes on no blobs, events or shared state,
//     which carry content it would not see; a UserStore maps ids).
//
// So an ability never reaches the store beneath around the job of a
// wrapper: a wrapper that transforms content must have no Unwrap method
// (TestAbilitiesDoNotBypassWrappers checks the package's).
//
// An Unwrap method therefore means "I change nothing an ability reads or
// writes". Two abilities are asked of the store itself only, never
// beneath a wrapper: TailLoader and EntryCreator are other ways to do
// Store's own Load and Append, which a wrapper may watch or change; a
// wrapper without them gets the plain Load and Create-then-Append.
//
// A missing ability is answered the same way everywhere (the helpers
// below, one per ability that is passed on): an operation
// that cannot be done fails with an error wrapping errors.ErrUnsupported
// (or the ability's sentinel: ErrNoEvents, ErrNoSharedState,
// ErrNoBlobCollector); one that only helps (Flush, CloseSession,
// MarkCompacting) does nothing.

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// findAbility returns the first of store and the stores it wraps (through
// Unwrap() Store) that has the ability T. ok is false when none has.
func findAbility[T any](store Store) (T, bool) {
	for {
		if x, ok := store.(T); ok {
			return x, true
		}
		u, ok := store.(interface{ Unwrap() Store })
		if !ok {
			var zero T
			return zero, false
		}
		store = u.Unwrap()
	}
}

// innermost returns the store beneath every wrapper of store that has an
// Unwrap method: the store itself when it has none.
func innermost(store Store) Store {
	for {
		u, ok := store.(interface{ Unwrap() Store })
		if !ok {
			return store
		}
		store = u.Unwrap()
	}
}

// ---- One helper per ability, with its answer when the ability is
// missing. The package's wrappers and Session call these, never a type
// assertion of their own, so that every one looks through Unwrap alike.

// flushStore flushes session id in store's Flusher; nothing to do
// without one.
func flushStore(ctx context.Context, store Store, id string) error {
	if f, ok := findAbility[Flusher](store); ok {
		return f.Flush(ctx, id)
	}
	return nil
}

// closeStoreSession lets store's SessionCloser go of session id; nothing
// to do without one.
func closeStoreSession(store Store, id string) error {
	if c, ok := findAbility[SessionCloser](store); ok {
		return c.CloseSession(id)
	}
	return nil
}

// markCompacting records the compacting mark in store's
// CompactionMarker; nothing is recorded without one.
func markCompacting(ctx context.Context, store Store, id string, since time.Time) error {
	if m, ok := findAbility[CompactionMarker](store); ok {
		return m.MarkCompacting(ctx, id, since)
	}
	return nil
}

// compressArchived compresses archived session id with store's
// ArchiveCompressor, or fails with an error wrapping
// errors.ErrUnsupported.
func compressArchived(ctx context.Context, store Store, id string) error {
	c, ok := findAbility[ArchiveCompressor](store)
	if !ok {
		return fmt.Errorf("session: %T: compress: %w", store, errors.ErrUnsupported)
	}
	return c.CompressArchived(ctx, id)
}

// sharedStateOf returns store's SharedStateStore, or an error wrapping
// ErrNoSharedState.
func sharedStateOf(store Store) (SharedStateStore, error) {
	ss, ok := findAbility[SharedStateStore](store)
	if !ok {
		return nil, fmt.Errorf("%w: %T keeps none", ErrNoSharedState, store)
	}
	return ss, nil
}

// blobStoreOf returns store's BlobStore, or an error wrapping
// errors.ErrUnsupported.
func blobStoreOf(store Store) (BlobStore, error) {
	b, ok := BlobsOf(store)
	if !ok {
		return nil, fmt.Errorf("session: %T keeps no blobs: %w", store, errors.ErrUnsupported)
	}
	return b, nil
}

// ---- Keeping sessions ----

// TailLoader is an optional Store ability: loading only what was
// appended after a point the caller knows, so that a handle catching up
// with other writers (after ErrConflict, or in Reload) pays for what is
// new, not for the whole log. Session uses it when its store has it, and
// Load otherwise; an ObservedStore passes it on.
type TailLoader interface {
	// LoadTail returns the header and the entries after the first n
	// entries of the log (all of them for n = 0), provided the log still
	// starts the way the caller read it: its n-th entry has the id last.
	// When it does not (the log was rewritten, or holds fewer entries),
	// LoadTail fails with ErrConflict and the caller loads the whole log.
	// Log.Malformed and Log.Torn describe the tail only, with the lines
	// numbered as in the whole log where the store knows them.
	LoadTail(ctx context.Context, id string, n int, last string) (*Log, error)
}

// PathLoader is an optional Store ability: loading what the context at
// a session's default leaf reads, without the rest of a long history.
// Open uses it when the store itself has it (a wrapper that changes
// entries, such as a codec, does not pass it on); the handle it returns
// reads the rest through Load when a method needs it.
//
// The default leaf is the target of the log's last entry when that is a
// leaf marker, else the last entry. When the path from the root to it
// holds a compaction, the entries returned are, in path order:
//   - from the path before the start (below), each entry of kind
//     thinking_level_change, model_change, mode_change or ttsr_injection,
//     and the latest assistant message naming a provider or a model;
//   - the path from the start to the leaf, where the start is the latest
//     compaction's first kept entry if that lies on the path before it,
//     else the compaction.
//
// With no compaction on the path, or when that is every entry, the store
// returns the whole log with Complete set; it may do so whenever it
// cannot answer otherwise (FileStore does for a log it keeps no index
// of). Each entry is returned as Load would return it. storetest checks
// a store's answers against MemoryStore's, the reference.
type PathLoader interface {
	LoadPath(ctx context.Context, id string) (*PathLog, error)
}

// PathLog is what LoadPath returns.
type PathLog struct {
	// Log holds the header and either every entry in log order
	// (Complete) or the entries of the path described at PathLoader.
	// Malformed and Torn are those of a whole read (nil when not
	// Complete: the store reads them when the rest is read).
	Log      *Log
	Complete bool
	Last     string // the id of the log's last entry (AppendOptions.IfLast)
}

// EntryCreator is an optional Store ability: creating a session with its
// first entries in one step, all or none (ErrExists, ErrInvalidID and the
// append's errors as Create and Append give them). A deferred session
// (CreateOptions.Deferred) and a fork reach their store this way, so that
// a crash leaves the whole session or none of it. Without the ability
// they are created, then appended to (see createWithEntries); a crash
// between the two leaves a session with no entries, which a deferred
// session's next try fills. CreateWithEntries must not modify entries:
// the caller may read them meanwhile (a fork builds its tree from them
// while the store writes them).
type EntryCreator interface {
	CreateWithEntries(ctx context.Context, h Header, entries []Entry) error
}

// Flusher is implemented by stores that buffer appends (see SyncPolicy of
// a FileStore); Session.Flush calls it.
type Flusher interface {
	Flush(ctx context.Context, id string) error
}

// SessionCloser is an optional Store ability: a store that holds
// resources per session (a FileStore's open file and its place among
// MaxOpenFiles) lets them go when Session.Close calls CloseSession, after
// writing what it holds pending. What the store knows of the session
// stays, so other handles on it go on where they were; the session stays
// in the store. An ObservedStore passes it on.
type SessionCloser interface {
	CloseSession(id string) error
}

// ---- Lifecycle and retention ----

// Archiver is an optional Store ability: archiving sessions. An archived
// session is left out of listings unless ListOptions.Archived (or
// OnlyArchived) asks for it, and can still be opened and written. Every
// store of this module has it, and so has an ObservedStore on one.
//
// Archiving does not change the log, nor the session's update time: a
// store keeps when it archived the session beside it
// (SessionInfo.ArchivedAt) and reports ChangeArchived to subscribers. A
// FileStore moves the file under <root>/.archive, out of the seed
// agents' sight.
type Archiver interface {
	// Archive archives session id (ErrNotFound); archiving an archived
	// session changes nothing.
	Archive(ctx context.Context, id string) error
	// Unarchive brings it back (ErrNotFound); nothing changes for a
	// session that is not archived.
	Unarchive(ctx context.Context, id string) error
}

// CompactionMarker is an optional Store ability: keeping beside the log
// that a compaction is running on a session (SessionInfo.Compacting),
// as OpenCode's session info does. Session.Compact marks the session
// when it has planned, and clears the mark when it ends, whether it
// appended its entry or failed; a mark that stays is a compaction whose
// process crashed. The log is not changed. Every store of this module
// has it; a store reports ChangeCompacting to its subscribers.
type CompactionMarker interface {
	// MarkCompacting records that a compaction of session id started at
	// since, or, for a zero since, that none is running (ErrNotFound).
	MarkCompacting(ctx context.Context, id string, since time.Time) error
}

// ConditionalRemover is an optional Store ability: deleting or archiving
// a session only if it is still the log the caller read, in one step
// with respect to appends (compare and act), so that a session a writer
// appended to after the caller decided is kept. Sweep uses it; without
// it Sweep reads the session again right before acting, which leaves a
// short race (see Sweep). MemoryStore, FileStore and pgstore's Store
// have it. It is looked for on the store itself, not through wrappers,
// which may change what a session holds.
type ConditionalRemover interface {
	// DeleteIfUnchanged deletes session id (as Store.Delete) if its log
	// still matches seen; ErrConflict, changing nothing, otherwise, and
	// ErrNotFound for an unknown session.
	DeleteIfUnchanged(ctx context.Context, id string, seen LogMark) error
	// ArchiveIfUnchanged archives session id (as Archiver.Archive) if its
	// log still matches seen; ErrConflict, changing nothing, otherwise.
	ArchiveIfUnchanged(ctx context.Context, id string, seen LogMark) error
}

// ArchiveCompressor is a store that can keep an archived session
// compressed, as FileStore does (see FileStoreOptions.CompressArchive):
// CompressArchived fails with ErrConflict for a session that is not
// archived.
type ArchiveCompressor interface {
	CompressArchived(ctx context.Context, id string) error
}

// conditionalRemover returns store's ConditionalRemover, or an error
// wrapping errors.ErrUnsupported: what the wrappers of this package
// return when the store beneath them has none.
func conditionalRemover(store Store) (ConditionalRemover, error) {
	if cr, ok := findAbility[ConditionalRemover](store); ok {
		return cr, nil
	}
	return nil, fmt.Errorf("session: %T: conditional delete and archive: %w", store, errors.ErrUnsupported)
}

// ---- Events and shared state ----

// Subscriber is an optional Store ability: delivering its changes.
// MemoryStore, FileStore (with the other processes' changes, from a
// watcher of its root), pgstore (from the server's notifications) and
// an ObservedStore on one of them have it.
type Subscriber interface {
	// Subscribe starts a subscription; it ends when ctx does or when it
	// is closed.
	Subscribe(ctx context.Context, opts SubscribeOptions) (*Subscription, error)
}

// SharedStateStore is an optional Store ability: state shared by the
// sessions of one user, or of one app.
type SharedStateStore interface {
	// LoadState returns the state of owner (a user id, or an app name)
	// in scope; an empty State when it has none.
	LoadState(ctx context.Context, scope StateScope, owner string) (State, error)
	// UpdateState applies delta (null values remove keys) to the state
	// of owner in scope, atomically: concurrent updates of other keys
	// are all kept.
	UpdateState(ctx context.Context, scope StateScope, owner string, delta State) error
}

// ---- Blobs ----

// BlobsOf returns the blob store of a store: the store itself when it is
// a BlobStore, looking through wrappers that have an Unwrap method (an
// ObservedStore). ok is false for a store that keeps no blobs.
func BlobsOf(store Store) (BlobStore, bool) { return findAbility[BlobStore](store) }

// BlobCollector is an optional BlobStore ability that garbage collection
// (CollectBlobs) needs: listing the blobs and deleting one.
type BlobCollector interface {
	// ListBlobs calls fn for each blob the store holds, in no order; an
	// error from fn ends the listing with that error.
	ListBlobs(ctx context.Context, fn func(BlobInfo) error) error
	// DeleteBlob removes a blob (ErrNotFound if there is none).
	DeleteBlob(ctx context.Context, ref string) error
}

// BlobStore is implemented by stores that keep large binary content (the
// data of images) apart from the log, addressed by the SHA-256 of the
// bytes. FileStore implements it.
type BlobStore interface {
	// PutBlob stores data and returns its reference, "blob:sha256:<hex>".
	// Storing the same bytes again returns the same reference.
	PutBlob(ctx context.Context, data []byte) (ref string, err error)
	// GetBlob returns the bytes of a reference (ErrNotFound, ErrCorrupt).
	GetBlob(ctx context.Context, ref string) ([]byte, error)
}

// BlobBatcher is an optional BlobStore ability: PutBlobDeferred stores a
// blob as PutBlob does but leaves making it durable to SyncBlobs, which
// makes every blob put that way so far durable. A reference put that way
// must not be written anywhere that outlives a crash (a manifest, an
// entry) before SyncBlobs returned. FileStore and BlobDir have it; a
// store whose PutBlob is durable at no extra cost need not.
type BlobBatcher interface {
	BlobStore
	PutBlobDeferred(ctx context.Context, data []byte) (ref string, err error)
	SyncBlobs(ctx context.Context) error
}

// BlobPinner is the BlobStore ability of pins (see CollectBlobs): a
// collection spares a pinned blob whatever its age. FileStore, BlobDir,
// MemoryStore and pgstore's Store have it; PutBlob pins what it puts on
// FileStore, BlobDir and pgstore (for the collections of other stores).
type BlobPinner interface {
	// PinBlobs pins refs, whether the store holds them yet or not: no
	// collection, the store's own included, deletes them until they are
	// released (by an append, create or rewrite through the store whose
	// entries refer to them, by ReleaseBlobs, or when the store is closed
	// or its process ends). A pin taken while a collection is deleting
	// the blob may come too late: put the bytes (PutBlob) after pinning,
	// or check the blob is there (GetBlob).
	PinBlobs(ctx context.Context, refs ...string) error
	// ReleaseBlobs releases the pins the store holds on refs (taken by
	// PutBlob or PinBlobs), and those of the blobs they refer to that it
	// pinned (a manifest's contents), refreshing their time as a put
	// does. A ref not pinned is passed over.
	ReleaseBlobs(ctx context.Context, refs ...string) error
}

// blobCollectorOf returns the blob store of store when it can be
// collected.
func blobCollectorOf(store Store) (BlobCollector, bool) {
	blobs, ok := BlobsOf(store)
	if !ok {
		return nil, false
	}
	coll, ok := blobs.(BlobCollector)
	return coll, ok
}

// BlobSweeper is the BlobCollector ability that makes a collection safe
// beside writers: a delete that takes a blob only if it was last put
// before a time and no writer pins it (see BlobPinner), atomically with
// respect to PutBlob and the pins, so that a blob put again after the
// collection listed it, whose reference the put returned and an entry
// is about to hold, is never taken. MemoryStore, FileStore, BlobDir and
// pgstore's Store implement it. CollectBlobs uses it when the blob store
// has it; on a BlobCollector without it, a put that refreshes a blob
// between the listing and the delete can lose it.
type BlobSweeper interface {
	// DeleteBlobIfOlder removes the blob ref if it was last put (its
	// BlobInfo.Touched) before cutoff and no writer pins it. deleted is
	// false, with no error, when it was put since or is pinned (it
	// stays), or is not there.
	DeleteBlobIfOlder(ctx context.Context, ref string, cutoff time.Time) (deleted bool, err error)
}

// UpdatedSetter is a store that can set when a session was last updated
// (SessionInfo.Updated), which stores otherwise take from their own
// clock at each write. An import uses it to keep its source's time of
// last activity: a session two years old is listed, and swept by age
// (SweepPolicy.OlderThan), as two years old, not as new on the day it
// was imported. The FileStore, the MemoryStore and pgstore implement it.
type UpdatedSetter interface {
	// SetUpdated sets the session's Updated to t, if its log is still
	// the one seen (ErrConflict otherwise: a writer came in between,
	// and the session keeps the time of that write). A write after it
	// moves Updated to the time of that write, as always. It fails with
	// ErrNotFound for a session the store does not hold.
	SetUpdated(ctx context.Context, id string, seen LogMark, t time.Time) error
}
