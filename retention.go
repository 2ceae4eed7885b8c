package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Retention: Sweep archives or deletes the sessions a policy says have
// expired, safely beside writers that are still appending to them.

// LogMark identifies a log as a caller read it: the id of its last entry
// ("" when it has none) and how many entries it holds. A store compares
// it with what it holds to tell whether the session changed since.
type LogMark struct {
	Last    string
	Entries int
}

// MarkOf returns the mark of a log as read.
func MarkOf(log *Log) LogMark {
	return LogMark{Last: lastID(log.Entries), Entries: len(log.Entries)}
}

// Check reports whether a stored log of session id that ends at the
// entry last and holds n entries is still the one the mark describes:
// nil, or an error wrapping ErrConflict. Stores call it under the lock
// that orders their writes.
func (m LogMark) Check(id, last string, n int) error {
	if m.Last != last || m.Entries != n {
		return fmt.Errorf("%w: session %s changed since it was read (%d entries ending at %q, now %d ending at %q)", ErrConflict, id, m.Entries, m.Last, n, last)
	}
	return nil
}

// SweepGroup says how Sweep groups sessions for SweepPolicy.KeepNewest.
type SweepGroup int

const (
	// GroupByCwd groups sessions by working directory (the default).
	GroupByCwd SweepGroup = iota
	// GroupByUser groups them by their user metadata (SessionInfo.User;
	// the sessions without one form a group).
	GroupByUser
	// GroupNone makes the whole store one group.
	GroupNone
)

// SweepPolicy says which sessions expire and what becomes of them.
type SweepPolicy struct {
	// OlderThan expires the live (not archived) sessions last updated
	// (SessionInfo.Updated) more than OlderThan before now; 0 expires
	// none.
	OlderThan time.Duration
	// KeepNewest keeps the newest KeepNewest live sessions of each group
	// (GroupBy), expired or not.
	KeepNewest int
	GroupBy    SweepGroup
	// ArchiveOnly archives the expired live sessions (the store must be
	// an Archiver) instead of deleting them.
	ArchiveOnly bool
	// DeleteArchivedAfter deletes the archived sessions neither archived
	// nor updated for that long (the later of SessionInfo.ArchivedAt and
	// Updated); 0 leaves archived sessions alone. With ArchiveOnly it
	// makes "archive first, delete later".
	DeleteArchivedAfter time.Duration
	// IncludeLabeled lets Sweep touch sessions that hold a label (a named
	// checkpoint is one); by default they are kept.
	IncludeLabeled bool
	// Compress keeps every archived session compressed: those the sweep
	// archives, and those archived before that are not (a sweep killed
	// between the two steps leaves some). The store must be an
	// ArchiveCompressor (a FileStore; PostgreSQL compresses large values
	// itself). Compression loses nothing, so labels do not hold it back.
	Compress bool
	// DryRun reports what the sweep would do and changes nothing.
	DryRun bool
	// KeepBlobs leaves the blobs of deleted sessions in the store; by
	// default those no remaining session refers to are collected, as
	// DeleteSession does, with BlobGrace as its DeleteOptions.BlobGrace.
	KeepBlobs bool
	BlobGrace time.Duration
	// Now is the clock expiry is measured with; time.Now when nil.
	Now func() time.Time
	// Progress, when set, is called after each session Sweep decided on,
	// with how many it has done of how many it lists.
	Progress func(done, total int)
}

// Why Sweep kept a session.
const (
	KeptYoung    = "young"    // updated (or archived) too recently to expire
	KeptNewest   = "newest"   // among the KeepNewest newest of its group
	KeptLabeled  = "labeled"  // holds a label or named checkpoint
	KeptArchived = "archived" // archived, and DeleteArchivedAfter is 0
)

// SweptSession is a session Sweep kept, with why.
type SweptSession struct {
	ID     string
	Reason string
}

// SweepResult says what Sweep did (with DryRun, would do).
type SweepResult struct {
	Listed   int      // sessions listed, archived ones included
	Archived []string // sessions archived
	Deleted  []string // sessions deleted
	// Compressed lists the archived sessions compressed (Compress).
	Compressed []string
	Kept       []SweptSession
	// Skipped lists the expired sessions that changed while the sweep
	// ran (appended to, rewritten, deleted by another): left as they are.
	Skipped []string
	// Blobs is how many blobs the deletions freed.
	Blobs int
	// Errors holds, by session, what failed; the sweep goes on with the
	// other sessions.
	Errors map[string]error
}

// Sweep applies the retention policy to every session of store: it
// lists them (archived ones too), decides from the listing which have
// expired, reads each of those to see whether it holds a label (kept
// unless IncludeLabeled), and archives or deletes it. Deletions go as
// DeleteSession's (without children: a child session expires by its own
// time, and deleting its parent leaves it, naming a parent that is gone),
// and the blobs no remaining session refers to are collected once, at
// the end. A failure on one session is recorded in SweepResult.Errors
// and the sweep goes on; the error returned is for the listing, the
// blob collection, or ctx.
//
// Writers may go on meanwhile. A session is acted on only if its log is
// still the one Sweep read and decided on: a session whose entry count
// differs from the listing's when read is skipped, and the act itself is
// conditional on the log read (ConditionalRemover, in one step with
// respect to appends), so a session appended to at any point of the
// sweep is kept (SweepResult.Skipped). On a store without
// ConditionalRemover the session is read again just before the act: an
// append between that read and the act is lost with the session (or
// archived with it, which loses nothing). A rewrite that keeps the last
// entry and the count (a migration of the file format) is not noticed.
//
// A sweep stopped at any point (killed, or its machine down) leaves each
// session whole or gone, never half deleted, and the next sweep carries
// on. The blobs of the sessions it deleted before it stopped are not
// collected by the next sweep, which does not know them: CollectBlobs
// collects them (they are garbage, not data).
func Sweep(ctx context.Context, store Store, policy *SweepPolicy) (*SweepResult, error) {
	var p SweepPolicy
	if policy != nil {
		p = *policy
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	start := time.Now() // blob times are the real clock's
	res := &SweepResult{Errors: map[string]error{}}
	infos, err := listForSweep(ctx, store)
	if err != nil {
		return nil, err
	}
	res.Listed = len(infos)
	t := now()

	type todo struct {
		info    SessionInfo
		archive bool
	}
	var work []todo
	kept := func(id, why string) { res.Kept = append(res.Kept, SweptSession{id, why}) }

	// Live sessions: by group, newest first.
	groups := map[string][]SessionInfo{}
	var keys []string
	for _, info := range infos {
		if info.Archived {
			continue
		}
		k := ""
		switch p.GroupBy {
		case GroupByUser:
			k = info.User
		case GroupNone:
		default:
			k = info.Cwd
		}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], info)
	}
	for _, k := range keys {
		g := groups[k]
		slices.SortStableFunc(g, func(a, b SessionInfo) int { return b.Updated.Compare(a.Updated) })
		for i, info := range g {
			switch {
			case p.OlderThan <= 0 || !info.Updated.Before(t.Add(-p.OlderThan)):
				kept(info.ID, KeptYoung)
			case i < p.KeepNewest:
				kept(info.ID, KeptNewest)
			default:
				work = append(work, todo{info, p.ArchiveOnly})
			}
		}
	}
	for _, info := range infos {
		if !info.Archived {
			continue
		}
		last := info.Updated
		if info.ArchivedAt.After(last) {
			last = info.ArchivedAt
		}
		switch {
		case p.DeleteArchivedAfter <= 0:
			kept(info.ID, KeptArchived)
		case !last.Before(t.Add(-p.DeleteArchivedAfter)):
			kept(info.ID, KeptYoung)
		default:
			work = append(work, todo{info, false})
		}
	}
	if len(work) > 0 && p.ArchiveOnly {
		if _, ok := findAbility[Archiver](store); !ok {
			return res, fmt.Errorf("session: sweep: archive: %T: %w", store, errors.ErrUnsupported)
		}
	}
	var compressor ArchiveCompressor
	if p.Compress {
		var ok bool
		if compressor, ok = findAbility[ArchiveCompressor](store); !ok {
			return res, fmt.Errorf("session: sweep: compress: %T: %w", store, errors.ErrUnsupported)
		}
	}
	compress := func(id string) {
		if p.DryRun {
			res.Compressed = append(res.Compressed, id)
			return
		}
		switch err := compressor.CompressArchived(ctx, id); {
		case errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound):
			res.Skipped = append(res.Skipped, id) // unarchived or deleted meanwhile
		case err != nil:
			res.Errors[id] = err
		default:
			res.Compressed = append(res.Compressed, id)
		}
	}

	var m *marker
	if _, ok := blobCollectorOf(store); ok && !p.KeepBlobs && !p.DryRun {
		m = newMarker(store)
	}
	cr, _ := findAbility[ConditionalRemover](store)
	done := len(infos) - len(work)
	if p.Progress != nil {
		p.Progress(done, len(infos))
	}
	for _, w := range work {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		id := w.info.ID
		act, err := sweepOne(ctx, store, cr, w.info, w.archive, p)
		switch {
		case errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound):
			res.Skipped = append(res.Skipped, id)
		case err != nil:
			res.Errors[id] = err
		case act.labeled:
			kept(id, KeptLabeled)
		case w.archive:
			res.Archived = append(res.Archived, id)
			if compressor != nil {
				compress(id)
			}
		default:
			res.Deleted = append(res.Deleted, id)
			if m != nil {
				m.log(id, act.log)
			}
		}
		done++
		if p.Progress != nil {
			p.Progress(done, len(infos))
		}
	}
	if compressor != nil {
		// The archived sessions left as they were, not yet compressed.
		gone := map[string]bool{}
		for _, w := range work {
			gone[w.info.ID] = true
		}
		for _, info := range infos {
			if info.Archived && !info.Compressed && !gone[info.ID] {
				if err := ctx.Err(); err != nil {
					return res, err
				}
				compress(info.ID)
			}
		}
	}
	slices.SortFunc(res.Kept, func(a, b SweptSession) int { return cmp.Compare(a.ID, b.ID) })
	if m == nil || len(res.Deleted) == 0 {
		return res, nil
	}
	if err := m.follow(ctx); err != nil {
		return res, fmt.Errorf("session: sweep: the sessions are deleted, their blobs are not: %w", err)
	}
	if len(m.marked) == 0 {
		return res, nil
	}
	grace := p.BlobGrace
	if grace == 0 {
		grace = -1
	}
	c, err := collectBlobs(ctx, store, &CollectOptions{Grace: grace}, start, m.marked)
	if c != nil {
		res.Blobs = len(c.Deleted)
	}
	if err != nil {
		return res, fmt.Errorf("session: sweep: the sessions are deleted, their blobs are not: %w", err)
	}
	return res, nil
}

// sweepPage is the page size of the sweep's listing: large, as stores
// that sort or scan all their sessions for each page (MemoryStore,
// FileStore) pay per page.
const sweepPage = 5000

// listForSweep lists every session of store, archived ones included,
// each once.
func listForSweep(ctx context.Context, store Store) ([]SessionInfo, error) {
	var out []SessionInfo
	seen := map[string]bool{}
	cursor := ""
	for {
		pg, err := store.List(ctx, ListOptions{Archived: true, Cursor: cursor, Limit: sweepPage})
		if err != nil {
			return nil, fmt.Errorf("session: sweep: list sessions: %w", err)
		}
		for _, info := range pg.Sessions {
			if !seen[info.ID] {
				seen[info.ID] = true
				out = append(out, info)
			}
		}
		if pg.Next == "" {
			return out, nil
		}
		cursor = pg.Next
	}
}

type sweepAct struct {
	log     *Log
	labeled bool
}

// sweepOne reads the expired session info, and archives or deletes it
// if it holds no label (or the policy includes labeled sessions) and is
// still what the listing showed. ErrConflict when it changed.
func sweepOne(ctx context.Context, store Store, cr ConditionalRemover, info SessionInfo, archive bool, p SweepPolicy) (sweepAct, error) {
	id := info.ID
	log, err := store.Load(ctx, id)
	if err != nil {
		return sweepAct{}, err
	}
	if len(log.Entries) != info.Entries {
		return sweepAct{}, fmt.Errorf("%w: session %s has %d entries, listed with %d", ErrConflict, id, len(log.Entries), info.Entries)
	}
	if !p.IncludeLabeled && hasLabel(log) {
		return sweepAct{labeled: true}, nil
	}
	if p.DryRun {
		return sweepAct{log: log}, nil
	}
	seen := MarkOf(log)
	if cr != nil {
		if archive {
			err = cr.ArchiveIfUnchanged(ctx, id, seen)
		} else {
			err = cr.DeleteIfUnchanged(ctx, id, seen)
		}
		if !errors.Is(err, errors.ErrUnsupported) {
			return sweepAct{log: log}, err
		}
		// A wrapper over a store without one.
	}
	// No compare-and-act: read again, right before.
	again, err := store.Load(ctx, id)
	if err != nil {
		return sweepAct{}, err
	}
	if err := seen.Check(id, lastID(again.Entries), len(again.Entries)); err != nil {
		return sweepAct{}, err
	}
	if archive {
		err = Archive(ctx, store, id)
	} else {
		err = store.Delete(ctx, id)
	}
	return sweepAct{log: log}, err
}

// hasLabel reports whether a log has a label in force (a named
// checkpoint is one), as the session's tree reads them.
func hasLabel(log *Log) bool {
	labels := map[string]bool{}
	for _, e := range log.Entries {
		if e.kind != kindLabel {
			continue
		}
		var l Label
		if e.payload(&l); l.TargetID == "" {
			continue
		}
		if l.Label != "" {
			labels[l.TargetID] = true
		} else {
			delete(labels, l.TargetID)
		}
	}
	return len(labels) > 0
}
