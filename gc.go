package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Garbage collection of blobs: CollectBlobs marks every blob a session
// refers to, directly or through a workspace snapshot's manifest, and
// sweeps the others that are old enough.

// DefaultCollectGrace is CollectOptions.Grace when it is zero.
const DefaultCollectGrace = time.Hour

// CollectOptions configures CollectBlobs; nil means the zero value.
type CollectOptions struct {
	// Grace spares the blobs no session refers to that were put, or put
	// again, less than Grace before the collection started. Default
	// DefaultCollectGrace (an hour); a negative value spares none but the
	// pinned ones.
	//
	// A writer puts a blob before it appends the entry that refers to it:
	// a workspace snapshot writes its content blobs, then its manifest,
	// then the entry, and an image goes to the blob store before its
	// message is written. A collection that read the session before the
	// entry came sees no reference to those blobs. Pins protect them
	// however slow the writer is (see BlobPinner): a put pins what it
	// puts until the append that refers to it, or until the writer ends
	// (closed, exited, killed), and a collection spares pinned blobs
	// whatever the grace. The release refreshes the blob's time, so that
	// a collection that read the session before the append, and deletes
	// after it, spares it too: the grace must only be longer than the
	// clocks of the machines involved disagree (none, on one machine).
	//
	// The grace remains the protection of the writers pins do not cover,
	// who must then append within it: writers that predate pins (an
	// older version of this package, oh-my-pi), puts through the store
	// the collection runs on (its own; pin them with PinBlobs, or collect
	// through a store of their own), a FileStore's other writers
	// elsewhere than on Linux, references reused without a put (a cache
	// vouching that content is stored: PinBlobs them). Putting the same
	// bytes again refreshes the blob's time, so content reused from an
	// old snapshot is as young as the new one.
	Grace time.Duration
	// DryRun lists what would be deleted (CollectResult.Deleted) and
	// deletes nothing.
	DryRun bool
}

// CollectResult is what a collection found and did.
type CollectResult struct {
	Sessions  int // sessions read
	Manifests int // workspace manifests read
	// Kept counts the blobs some session refers to, and their size.
	Kept      int
	KeptBytes int64
	// Deleted lists the blobs deleted (with DryRun, those that would
	// be), sorted, and DeletedBytes their size as the store reports it.
	Deleted      []string
	DeletedBytes int64
	// Young counts the blobs no session refers to that the grace or a
	// pin spared: put after Cutoff, put again while the collection ran,
	// or pinned by a writer (a blob another collection deleted
	// meanwhile is counted here too).
	Young      int
	YoungBytes int64
	// Missing lists the references sessions hold (directly or through a
	// manifest) whose blob the store does not have, sorted: an image
	// whose blob was lost, a snapshot that cannot be restored.
	Missing []string
	// Started is when the collection started, and Cutoff that time less
	// the grace: unreferenced blobs last put before Cutoff are deleted.
	Started, Cutoff time.Time
}

// collections counts the collections of this process that set out to
// delete blobs.
var collections atomic.Uint64

// BlobCollections returns how many collections (CollectBlobs) of this
// process have set out to delete blobs so far, whatever the store; the
// count changes before the first blob is deleted. A cache that vouches
// that contents are in a store without putting them again (the workspace
// package's stat cache) compares it with the count it saw when they were
// put, and checks again when it changed: a collection whose grace is
// shorter than the cache's trust (a negative one, after sessions were
// deleted) may have deleted them. Collections in other processes are not
// counted; for those, the cache's trust must stay shorter than their
// grace.
func BlobCollections() uint64 { return collections.Load() }

// collectHook, when set (by tests only), runs when a collection has
// marked what the sessions refer to, before it lists the blobs:
// "marked".
var collectHook func(stage string)

// collectPage is the page size of the collection's listings.
const collectPage = 500

// maxCollectRounds bounds the listings of a collection (see
// marker.sessions).
const maxCollectRounds = 32

// CollectBlobs deletes the blobs of store that no session refers to and
// that were last put before the collection started, less
// CollectOptions.Grace. The store must keep blobs (BlobsOf) that it can
// list and delete (BlobCollector); ErrNoBlobCollector otherwise. Deleting
// a session does not delete its blobs, which other sessions may share:
// a collection afterwards frees those no remaining session refers to.
//
// Mark: every session is listed (archived ones included, every page) and
// loaded, and every reference "blob:sha256:<64 hex digits>" in the bytes
// of its entries is marked, with those the store resolved as it read
// them (Log.BlobRefs: FileStore's images). The workspace snapshots the
// log records (CustomSnapshot entries) name their manifests, Snapshot and
// Previous: each manifest is read from the store and every reference in
// its bytes is marked too. References are found as spelled out in the
// bytes; lines a store skipped as unreadable (Log.Malformed) hold none.
//
// Sweep: every blob the store lists that is not marked, and was last put
// before the cutoff, is deleted, with DeleteBlobIfOlder when the store is
// a BlobSweeper (every store of this module is), so that a blob put again
// meanwhile, or pinned by a writer (see BlobPinner), stays.
//
// A collection never deletes blindly. A session that cannot be read (a
// corrupt file, one over the limits, an error of the store) makes it
// fail with an error naming the session, before anything is deleted: the
// blobs that session refers to cannot be told from garbage. So does a
// manifest that cannot be read for another reason than being missing
// (corrupt: delete it, the snapshot is lost anyway, and collect again),
// and, on a FileStore, a session file that its listing leaves out (see
// FileStore.List). A session deleted while the collection runs is passed
// over. The sessions a FileStore opened by path outside its tree
// (OpenPath) are read too; those other processes opened are not seen.
//
// What it assumes of writers: that their blobs are pinned from their put
// to their append (see BlobPinner and CollectOptions.Grace: PutBlob pins
// for the collections of other stores and processes, PinBlobs for the
// store's own), or else that the entry is appended less than the grace
// after the put; or that an entry copies the reference from a session
// that is not deleted before the collection ends (a fork: its source).
// And that the store's sessions are the only ones that refer to its
// blobs: a blob directory that several FileStore roots share (see
// FileStoreOptions.BlobDir), or that oh-my-pi writes to while this
// package does not see its sessions, must not be collected from one of
// them.
func CollectBlobs(ctx context.Context, store Store, opts *CollectOptions) (*CollectResult, error) {
	return collectBlobs(ctx, store, opts, time.Now(), nil)
}

// newMarker returns a marker of store's sessions (BlobsOf(store) must
// hold).
func newMarker(store Store) *marker {
	blobs, _ := BlobsOf(store)
	return &marker{store: store, blobs: blobs, res: &CollectResult{},
		seen: map[string]struct{}{}, marked: map[string]struct{}{}, manifests: map[string]string{}}
}

// collectBlobs is CollectBlobs from start, deleting only the blobs in
// only when it is not nil (DeleteSession's).
func collectBlobs(ctx context.Context, store Store, opts *CollectOptions, start time.Time, only map[string]struct{}) (*CollectResult, error) {
	var o CollectOptions
	if opts != nil {
		o = *opts
	}
	grace := o.Grace
	if grace == 0 {
		grace = DefaultCollectGrace
	}
	blobs, ok := BlobsOf(store)
	if !ok {
		return nil, fmt.Errorf("%w: %T is no BlobStore", ErrNoBlobCollector, store)
	}
	coll, ok := blobs.(BlobCollector)
	if !ok {
		return nil, fmt.Errorf("%w: %T is no BlobCollector", ErrNoBlobCollector, blobs)
	}
	m := newMarker(store)
	res := m.res
	res.Started, res.Cutoff = start, start.Add(-max(grace, 0))
	if err := m.sessions(ctx); err != nil {
		return nil, err
	}
	if err := m.unlisted(ctx); err != nil {
		return nil, err
	}
	if err := m.follow(ctx); err != nil {
		return nil, err
	}
	if collectHook != nil {
		collectHook("marked")
	}

	// Sweep: first the listing, then the deletes, so that no store is
	// asked to delete while it lists.
	var doomed []BlobInfo
	listed := make(map[string]struct{}, len(m.marked))
	err := coll.ListBlobs(ctx, func(b BlobInfo) error {
		if _, ok := m.marked[b.Ref]; ok {
			listed[b.Ref] = struct{}{}
			res.Kept++
			res.KeptBytes += b.Size
			return nil
		}
		if only != nil {
			if _, ok := only[b.Ref]; !ok {
				return nil // not one of those to delete
			}
		}
		if !b.Touched.Before(res.Cutoff) {
			res.Young++
			res.YoungBytes += b.Size
			return nil
		}
		doomed = append(doomed, b)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("session: collect blobs: list blobs: %w", err)
	}
	for ref := range m.marked {
		if _, ok := listed[ref]; !ok {
			res.Missing = append(res.Missing, ref)
		}
	}
	slices.Sort(res.Missing)
	slices.SortFunc(doomed, func(a, b BlobInfo) int { return strings.Compare(a.Ref, b.Ref) })
	sweeper, conditional := blobs.(BlobSweeper)
	if len(doomed) > 0 && !o.DryRun {
		collections.Add(1) // before the first delete: see BlobCollections
	}
	for _, b := range doomed {
		deleted := true
		var err error
		switch {
		case o.DryRun:
		case conditional:
			deleted, err = sweeper.DeleteBlobIfOlder(ctx, b.Ref, res.Cutoff)
		default:
			if err = coll.DeleteBlob(ctx, b.Ref); errors.Is(err, ErrNotFound) {
				deleted, err = false, nil // deleted by another
			}
		}
		if err != nil {
			return res, fmt.Errorf("session: collect blobs: delete %s: %w", b.Ref, err)
		}
		if deleted {
			res.Deleted = append(res.Deleted, b.Ref)
			res.DeletedBytes += b.Size
		} else {
			res.Young++
			res.YoungBytes += b.Size
		}
	}
	return res, nil
}

// marker is the mark phase of a collection.
type marker struct {
	store  Store
	blobs  BlobStore
	res    *CollectResult
	seen   map[string]struct{} // sessions read
	marked map[string]struct{} // references
	// manifests maps each manifest to follow to a session that names it.
	manifests map[string]string
}

// sessions reads every session of the store. A listing in pages is not
// one snapshot of the store: a session updated while the pages are read
// moves to the front, before the cursor, and a page read afterwards
// misses it. Such a session was updated after the listing began, so a
// listing of the sessions updated since the newest one it showed first
// finds it again. Rounds of those go on until one is read in a single
// page, which is one call of the store, or until a round finds the same
// newest session as the round before: nothing was updated since that
// round began, which therefore missed nothing.
func (m *marker) sessions(ctx context.Context) error {
	var (
		after time.Time // zero: every session
		prev  SessionInfo
	)
	for round := 0; round < maxCollectRounds; round++ {
		var newest SessionInfo
		pages, cursor := 0, ""
		for {
			p, err := m.store.List(ctx, ListOptions{Archived: true, UpdatedAfter: after, Cursor: cursor, Limit: collectPage})
			if err != nil {
				return fmt.Errorf("session: collect blobs: list sessions: %w", err)
			}
			if pages == 0 && len(p.Sessions) > 0 {
				newest = p.Sessions[0]
				if round > 0 && newest.ID == prev.ID && newest.Updated.Equal(prev.Updated) {
					return nil
				}
			}
			pages++
			for _, info := range p.Sessions {
				if err := m.session(ctx, info.ID); err != nil {
					return err
				}
			}
			if p.Next == "" {
				break
			}
			cursor = p.Next
		}
		if pages == 1 {
			return nil
		}
		// A millisecond of slack for clocks that are not strictly
		// monotonic across sessions (a database's, file times).
		prev, after = newest, newest.Updated.Add(-time.Millisecond)
	}
	return fmt.Errorf("session: collect blobs: the sessions kept changing through %d listings; nothing deleted", maxCollectRounds)
}

// session reads session id, once, and marks what it refers to.
func (m *marker) session(ctx context.Context, id string) error {
	if _, ok := m.seen[id]; ok {
		return nil
	}
	m.seen[id] = struct{}{}
	log, err := m.store.Load(ctx, id)
	if errors.Is(err, ErrNotFound) && ctx.Err() == nil {
		return nil // deleted since it was listed
	}
	if err != nil {
		return fmt.Errorf("session: collect blobs: session %s cannot be read, so the blobs it refers to cannot be told from garbage; nothing deleted: %w", id, err)
	}
	m.res.Sessions++
	m.log(id, log)
	return nil
}

// log marks what the log of session id refers to.
func (m *marker) log(id string, log *Log) {
	for _, ref := range log.BlobRefs {
		m.marked[ref] = struct{}{}
	}
	for _, e := range log.Entries {
		// A compact entry's holes never hold a reference: its template
		// has them all.
		scanRefs(e.raw, func(ref string) { m.marked[ref] = struct{}{} })
		if w, ok := SnapshotOf(e); ok {
			for _, ref := range []string{w.Snapshot, w.Previous} {
				if ValidateBlobRef(ref) != nil {
					continue
				}
				m.marked[ref] = struct{}{}
				if _, ok := m.manifests[ref]; !ok {
					m.manifests[ref] = id
				}
			}
		}
	}
}

// unlisted asks a store what its listing leaves out (a FileStore): it
// refuses a store with session files it cannot read, which could refer
// to anything, and reads the sessions it holds outside its listing.
func (m *marker) unlisted(ctx context.Context) error {
	u, ok := findAbility[interface {
		unlistedSessions(context.Context) (unreadable, outside []string, err error)
	}](m.store)
	if !ok {
		return nil
	}
	unreadable, outside, err := u.unlistedSessions(ctx)
	if err != nil {
		return fmt.Errorf("session: collect blobs: list sessions: %w", err)
	}
	if len(unreadable) > 0 {
		return fmt.Errorf("session: collect blobs: %d session files cannot be listed (no readable header, or over the store's limits), so the blobs they refer to cannot be told from garbage; nothing deleted: %s", len(unreadable), strings.Join(unreadable, ", "))
	}
	for _, id := range outside {
		if err := m.session(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// follow reads the manifests the sessions name and marks what they refer
// to. A missing manifest is reported (CollectResult.Missing); one that
// cannot be read otherwise fails the collection.
func (m *marker) follow(ctx context.Context) error {
	refs := make([]string, 0, len(m.manifests))
	for ref := range m.manifests {
		refs = append(refs, ref)
	}
	slices.Sort(refs)
	for _, ref := range refs {
		data, err := m.blobs.GetBlob(ctx, ref)
		if errors.Is(err, ErrNotFound) && ctx.Err() == nil {
			continue // reported as missing by the sweep
		}
		if err != nil {
			return fmt.Errorf("session: collect blobs: the workspace manifest %s of session %s cannot be read, so the blobs it refers to cannot be told from garbage; nothing deleted: %w", ref, m.manifests[ref], err)
		}
		m.res.Manifests++
		scanRefs(data, func(r string) { m.marked[r] = struct{}{} })
	}
	return nil
}
