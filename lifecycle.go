package session

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Lifecycle: open-or-create, archive and unarchive, delete with blobs
// and children, the same on every store.

// OpenOrCreate opens the session opts.ID of store, or creates it with
// opts when there is none, in one race-free call: of several callers
// (in one process or many) doing it at once, one creates the session and
// all end up with handles on it. created tells whether this call created
// it. opts.ID is required; the other options only apply to a creation.
// With opts.Deferred a created session reaches the store with its first
// reply; callers racing on an id not stored yet may then each create it,
// and their entries end up in the one session (see Deferred).
func OpenOrCreate(ctx context.Context, store Store, opts *CreateOptions) (s *Session, created bool, err error) {
	if opts == nil || opts.ID == "" {
		return nil, false, errors.New("session: OpenOrCreate needs CreateOptions.ID")
	}
	if err := ValidateID(opts.ID); err != nil {
		return nil, false, err
	}
	// Open first: the usual case is a session that exists. A Create that
	// loses to another creator (ErrExists) opens what it made; an Open
	// that finds nothing after that (the session was deleted meanwhile)
	// tries again, a few times.
	for range 8 {
		s, err = Open(ctx, store, opts.ID)
		if !errors.Is(err, ErrNotFound) {
			return s, false, err
		}
		s, err = Create(ctx, store, opts)
		if !errors.Is(err, ErrExists) {
			return s, err == nil, err
		}
	}
	return nil, false, fmt.Errorf("session: open or create %s: it was created and deleted again under each attempt: %w", opts.ID, ErrConflict)
}

// Archive archives session id of store with its Archiver (looking
// through wrappers); an error wrapping errors.ErrUnsupported when it has
// none.
func Archive(ctx context.Context, store Store, id string) error {
	a, ok := findAbility[Archiver](store)
	if !ok {
		return fmt.Errorf("session: archive: %T: %w", store, errors.ErrUnsupported)
	}
	return a.Archive(ctx, id)
}

// Unarchive brings session id of store back from the archive (see
// Archive).
func Unarchive(ctx context.Context, store Store, id string) error {
	a, ok := findAbility[Archiver](store)
	if !ok {
		return fmt.Errorf("session: unarchive: %T: %w", store, errors.ErrUnsupported)
	}
	return a.Unarchive(ctx, id)
}

// DeleteOptions configures DeleteSession.
type DeleteOptions struct {
	// Children deletes the sessions whose parent is the session (its
	// forks and subagents' sessions), theirs, and so on, first.
	Children bool
	// KeepBlobs leaves the blobs of the deleted sessions in the store;
	// by default those no other session refers to are deleted (on stores
	// that can list and delete blobs, see BlobCollector).
	KeepBlobs bool
	// BlobGrace is the CollectOptions.Grace of that deletion. The default
	// (0) deletes the blobs put before DeleteSession started; a blob put
	// again since (by another writer, with the same content) stays. A
	// writer in another process that put such a blob before and refers to
	// it only after the deletion is not covered: give a grace longer than
	// its put-to-append time when the store has such writers.
	BlobGrace time.Duration
}

// DeleteResult says what DeleteSession deleted.
type DeleteResult struct {
	Sessions []string // the ids deleted, children first
	Blobs    int      // blobs deleted
}

// DeleteSession deletes session id of store (ErrNotFound), with its
// children when opts.Children is set, and then the blobs those sessions
// referred to that no other session does (see DeleteOptions). Handles on
// a deleted session fail with ErrNotFound from then on; a session is
// never written back to life by one.
//
// Blobs are freed by a collection (CollectBlobs) of the blobs the
// deleted sessions named: every other session of the store is read to
// know what it refers to, so that deleting is as costly as a collection.
// On a store without blob collection the blobs stay (Blobs is 0).
func DeleteSession(ctx context.Context, store Store, id string, opts *DeleteOptions) (*DeleteResult, error) {
	var o DeleteOptions
	if opts != nil {
		o = *opts
	}
	ids := []string{id}
	if o.Children {
		var err error
		if ids, err = descendants(ctx, store, id); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	res := &DeleteResult{}
	// What the sessions refer to, read before they go.
	var cand map[string]struct{}
	_, collectable := blobCollectorOf(store)
	if !o.KeepBlobs && collectable {
		m := newMarker(store)
		for _, sid := range ids {
			if err := m.session(ctx, sid); err != nil {
				return nil, err
			}
		}
		if err := m.follow(ctx); err != nil {
			return nil, err
		}
		cand = m.marked
	}
	for _, sid := range ids {
		err := store.Delete(ctx, sid)
		if errors.Is(err, ErrNotFound) && sid != id {
			continue // a child deleted meanwhile
		}
		if err != nil {
			return res, err
		}
		res.Sessions = append(res.Sessions, sid)
	}
	if len(cand) == 0 {
		return res, nil
	}
	grace := o.BlobGrace
	if grace == 0 {
		grace = -1
	}
	cr, err := collectBlobs(ctx, store, &CollectOptions{Grace: grace}, start, cand)
	if cr != nil {
		res.Blobs = len(cr.Deleted)
	}
	if err != nil {
		return res, fmt.Errorf("session: delete %s: the session is deleted, its blobs are not: %w", id, err)
	}
	return res, nil
}

// descendants returns id's children, theirs, ..., deepest first, then id.
func descendants(ctx context.Context, store Store, id string) ([]string, error) {
	var out []string
	seen := map[string]bool{id: true}
	var walk func(string) error
	walk = func(p string) error {
		kids, err := ListChildren(ctx, store, p)
		if err != nil {
			return err
		}
		for _, k := range kids {
			if seen[k.ID] {
				continue
			}
			seen[k.ID] = true
			if err := walk(k.ID); err != nil {
				return err
			}
		}
		out = append(out, p)
		return nil
	}
	if err := walk(id); err != nil {
		return nil, err
	}
	return out, nil
}
