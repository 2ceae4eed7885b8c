package session

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentsession/session/internal/names"
	"github.com/agentsession/session/internal/storerule"
)

// MemoryStore keeps sessions in memory. It is the store behind New and
// the one to use in a host's unit tests. It copies what it is given and
// what it returns, so callers can never change what it holds. Safe for
// concurrent use.
type MemoryStore struct {
	mu       sync.RWMutex
	sessions map[string]*memSession
	last     time.Time // latest update time handed out

	blobMu sync.Mutex
	blobs  map[string]memBlob // by reference
	// held are the blobs pinned with PinBlobs (under blobMu), by
	// reference; nheld is len(held), which appends read without the
	// lock.
	held  map[string]struct{}
	nheld atomic.Int64

	hub Hub // changes are published under mu, in order

	stateMu sync.Mutex
	state   map[StateScope]map[string]State // shared state by scope and owner
}

type memBlob struct {
	data    []byte
	touched time.Time
}

type memSession struct {
	header     Header
	entries    []Entry
	ids        map[string]int // entry id → its index in entries
	updated    time.Time
	size       int64
	fold       InfoFold // what the listing shows of the entries
	archived   time.Time
	compacting time.Time
}

var (
	_ Store              = (*MemoryStore)(nil)
	_ TailLoader         = (*MemoryStore)(nil)
	_ EntryCreator       = (*MemoryStore)(nil)
	_ Archiver           = (*MemoryStore)(nil)
	_ Subscriber         = (*MemoryStore)(nil)
	_ SharedStateStore   = (*MemoryStore)(nil)
	_ CompactionMarker   = (*MemoryStore)(nil)
	_ ConditionalRemover = (*MemoryStore)(nil)
)

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{sessions: map[string]*memSession{}}
}

// tick returns a time later than any handed out before, so that the
// listing order is total even when the clock is coarse.
func (s *MemoryStore) tick() time.Time {
	t := time.Now()
	if !t.After(s.last) {
		t = s.last.Add(time.Nanosecond)
	}
	s.last = t
	return t
}

// Create implements Store.
func (s *MemoryStore) Create(ctx context.Context, h Header) error {
	return s.CreateWithEntries(ctx, h, nil)
}

// CreateWithEntries implements EntryCreator.
func (s *MemoryStore) CreateWithEntries(ctx context.Context, h Header, entries []Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateID(h.ID); err != nil {
		return err
	}
	if err := checkEntries(entries); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[h.ID]; ok {
		return fmt.Errorf("%w: session %s", ErrExists, h.ID)
	}
	ms := &memSession{header: storedHeader(h.Clone()), ids: map[string]int{}, updated: s.tick()}
	ms.recount()
	if err := memLimits.checkWrite(0, 0, 1, func(int) int { return int(ms.size - 1) }); err != nil {
		return fmt.Errorf("session: create %s: the header: %w", h.ID, err)
	}
	if err := memLimits.checkWrite(ms.size, 0, len(entries), func(i int) int { return entries[i].Len() }); err != nil {
		return fmt.Errorf("session: create %s: %w", h.ID, err)
	}
	ms.entries = slices.Clone(entries)
	for k, e := range entries {
		ms.ids[e.id] = k
		ms.note(e)
	}
	s.sessions[h.ID] = ms
	s.hub.Publish(Change{Kind: ChangeCreated, Session: h.ID, Time: ms.updated})
	if len(entries) > 0 && s.hub.Active() {
		s.hub.Publish(ChangesOf(h.ID, entries, ms.updated)...)
	}
	s.releaseIn(entries)
	return nil
}

// memLimits are the Limits a MemoryStore applies to what it is given:
// the defaults, as for every store, so that what it holds can be written
// to a file and read again.
var memLimits = Limits{}.withDefaults()

func (ms *memSession) recount() {
	hb, _ := ms.header.appendJSON(nil)
	ms.size = int64(len(hb) + 1)
	ms.fold = InfoFold{}
	for _, e := range ms.entries {
		ms.note(e)
	}
}

func (ms *memSession) note(e Entry) {
	ms.size += int64(e.Len() + 1)
	ms.fold.Add(e)
}

func (s *MemoryStore) get(id string) (*memSession, error) {
	ms, ok := s.sessions[id]
	if !ok {
		return nil, fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	return ms, nil
}

// Append implements Store.
func (s *MemoryStore) Append(ctx context.Context, id string, opts AppendOptions, entries ...Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkEntries(entries); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ms, err := s.get(id)
	if err != nil {
		return err
	}
	exists := func(e Entry) bool { _, ok := ms.ids[e.id]; return ok }
	done, err := retried(entries, exists, func() (bool, error) {
		return sameEntries(entries, func(id string) ([]byte, bool) {
			i, ok := ms.ids[id]
			if !ok {
				return nil, false
			}
			return ms.entries[i].bytes(), true
		}), nil
	})
	if err != nil || done {
		return err
	}
	if err := checkAppend(opts, lastID(ms.entries)); err != nil {
		return err
	}
	if err := memLimits.checkWrite(ms.size, len(ms.entries), len(entries), func(i int) int { return entries[i].Len() }); err != nil {
		return fmt.Errorf("session: append to %s: %w", id, err)
	}
	n := len(ms.entries)
	ms.entries = append(ms.entries, entries...)
	for k, e := range entries {
		ms.ids[e.id] = n + k
		ms.note(e)
	}
	ms.updated = s.tick()
	if s.hub.Active() {
		s.hub.Publish(ChangesOf(id, entries, ms.updated)...)
	}
	s.releaseIn(entries)
	return nil
}

func lastID(entries []Entry) string {
	if len(entries) == 0 {
		return ""
	}
	return entries[len(entries)-1].id
}

// checkEntries rejects zero entries and ids repeated within one append
// (the rule storekit.CheckEntries gives other stores).
func checkEntries(entries []Entry) error {
	return storerule.CheckEntries(ErrConflict, entries, Entry.IsZero, func(e Entry) string { return e.id })
}

// checkAppend applies the AppendOptions conditions; shared by the stores
// of this package, which check the ids first (retried), and given other
// stores as storekit.CheckAppend.
func checkAppend(opts AppendOptions, last string) error {
	return storerule.CheckAppend(ErrConflict, opts.IfEmpty, opts.IfLast, last)
}

// Load implements Store.
func (s *MemoryStore) Load(ctx context.Context, id string) (*Log, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	ms, err := s.get(id)
	if err != nil {
		return nil, err
	}
	return &Log{Header: ms.header.Clone(), Entries: slices.Clone(ms.entries)}, nil
}

// LoadTail implements TailLoader.
func (s *MemoryStore) LoadTail(ctx context.Context, id string, n int, last string) (*Log, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	ms, err := s.get(id)
	if err != nil {
		return nil, err
	}
	if err := tailStarts(ms.entries, n, last); err != nil {
		return nil, err
	}
	return &Log{Header: ms.header.Clone(), Entries: slices.Clone(ms.entries[n:])}, nil
}

// tailStarts reports whether entries start the way a LoadTail caller
// read them: n entries, the n-th with id last (ErrConflict otherwise).
func tailStarts(entries []Entry, n int, last string) error {
	switch {
	case n < 0 || n > len(entries):
		return fmt.Errorf("%w: the log holds %d entries, not the %d read", ErrConflict, len(entries), n)
	case n == 0 && last != "", n > 0 && entries[n-1].id != last:
		return fmt.Errorf("%w: entry %d is no longer %s (the log was rewritten)", ErrConflict, n, last)
	}
	return nil
}

// Rewrite implements Store.
func (s *MemoryStore) Rewrite(ctx context.Context, id string, opts RewriteOptions, h Header, entries []Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkRewrite(id, h, entries); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ms, err := s.get(id)
	if err != nil {
		return err
	}
	if err := opts.Check(lastID(ms.entries), len(ms.entries)); err != nil {
		return err
	}
	if err := memLimits.CheckLog(h, entries); err != nil {
		return fmt.Errorf("session: rewrite %s: %w", id, err)
	}
	ms.header = storedHeader(h.Clone())
	ms.entries = slices.Clone(entries)
	ms.ids = make(map[string]int, len(entries))
	for i, e := range entries {
		ms.ids[e.id] = i
	}
	ms.recount()
	ms.updated = s.tick()
	s.hub.Publish(Change{Kind: ChangeRewritten, Session: id, Time: ms.updated})
	s.releaseIn(entries)
	return nil
}

// Delete implements Store.
func (s *MemoryStore) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(id); err != nil {
		return err
	}
	s.deleteLocked(id)
	return nil
}

// deleteLocked deletes the session id, which exists. Callers hold mu.
func (s *MemoryStore) deleteLocked(id string) {
	delete(s.sessions, id)
	s.hub.Publish(Change{Kind: ChangeDeleted, Session: id, Time: s.tick()})
}

// Archive implements Archiver.
func (s *MemoryStore) Archive(ctx context.Context, id string) error {
	return s.setArchived(ctx, id, true)
}

// Unarchive implements Archiver.
func (s *MemoryStore) Unarchive(ctx context.Context, id string) error {
	return s.setArchived(ctx, id, false)
}

func (s *MemoryStore) setArchived(ctx context.Context, id string, archived bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ms, err := s.get(id)
	if err != nil {
		return err
	}
	s.setArchivedLocked(id, ms, archived)
	return nil
}

// setArchivedLocked archives or unarchives ms. Callers hold mu.
func (s *MemoryStore) setArchivedLocked(id string, ms *memSession, archived bool) {
	if ms.archived.IsZero() != archived {
		return // as asked already
	}
	kind := ChangeUnarchived
	ms.archived = time.Time{}
	if archived {
		kind, ms.archived = ChangeArchived, time.Now().UTC()
	}
	s.hub.Publish(Change{Kind: kind, Session: id, Time: time.Now()})
}

// MarkCompacting implements CompactionMarker.
func (s *MemoryStore) MarkCompacting(ctx context.Context, id string, since time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ms, err := s.get(id)
	if err != nil {
		return err
	}
	ms.compacting = since.UTC()
	if since.IsZero() {
		ms.compacting = time.Time{}
	}
	s.hub.Publish(Change{Kind: ChangeCompacting, Session: id, Time: time.Now(), Compacting: ms.compacting})
	return nil
}

// Subscribe implements Subscriber: the changes of this store, as they
// are made.
func (s *MemoryStore) Subscribe(ctx context.Context, opts SubscribeOptions) (*Subscription, error) {
	return s.hub.Subscribe(ctx, opts)
}

// Hub returns the store's hub, where Sessions on it publish the changes
// they make themselves (ChangeOperation).
func (s *MemoryStore) Hub() *Hub { return &s.hub }

// LoadState implements SharedStateStore.
func (s *MemoryStore) LoadState(ctx context.Context, scope StateScope, owner string) (State, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	return maps.Clone(s.state[scope][owner]), nil
}

// UpdateState implements SharedStateStore.
func (s *MemoryStore) UpdateState(ctx context.Context, scope StateScope, owner string, delta State) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckStateOwner(scope, owner); err != nil {
		return err
	}
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	if s.state == nil {
		s.state = map[StateScope]map[string]State{}
	}
	if s.state[scope] == nil {
		s.state[scope] = map[string]State{}
	}
	st := s.state[scope][owner]
	if st == nil {
		st = State{}
		s.state[scope][owner] = st
	}
	for k, v := range delta {
		applyState(st, State{k: cloneRaw(v)})
	}
	return nil
}

// List implements Store.
func (s *MemoryStore) List(ctx context.Context, opts ListOptions) (*ListPage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	after, err := parseCursor(opts.Cursor)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	all := make([]SessionInfo, 0, len(s.sessions))
	for _, ms := range s.sessions {
		info := ms.info()
		if opts.Matches(info) {
			all = append(all, info)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(all, compareInfo)
	return page(all, after, opts.Limit), nil
}

func (ms *memSession) info() SessionInfo {
	info := SessionInfo{
		ID: ms.header.ID, Cwd: ms.header.Cwd, Created: ms.header.Timestamp,
		Updated: ms.updated, ParentSession: ms.header.ParentSession,
		Entries: len(ms.entries), Size: ms.size,
	}
	ms.fold.Fill(&info, ms.header)
	info.Archived, info.ArchivedAt = !ms.archived.IsZero(), ms.archived
	info.Compacting = ms.compacting
	return info
}

// compareInfo orders sessions most recently updated first, then by id
// (storekit.CompareInfo for other stores).
func compareInfo(a, b SessionInfo) int {
	return storerule.Compare(a.Updated, a.ID, b.Updated, b.ID)
}

// listCursor is the position after which a page starts: a cursor
// parseCursor accepted.
type listCursor string

func parseCursor(c string) (listCursor, error) {
	if c != "" {
		if _, _, err := names.ParseCursor(c); err != nil {
			return "", err
		}
	}
	return listCursor(c), nil
}

// page cuts one page out of sessions sorted by compareInfo
// (storekit.Page for other stores).
func page(all []SessionInfo, after listCursor, limit int) *ListPage {
	if limit <= 0 {
		limit = DefaultListLimit
	}
	sessions, next, _ := storerule.Page(all, infoKey, string(after), limit) // after is a valid cursor
	return &ListPage{Sessions: sessions, Next: next}
}

func infoKey(info SessionInfo) (time.Time, string) { return info.Updated, info.ID }

var (
	_ BlobStore     = (*MemoryStore)(nil)
	_ BlobCollector = (*MemoryStore)(nil)
	_ BlobSweeper   = (*MemoryStore)(nil)
)

// PutBlob implements BlobStore: the blob is kept in memory, once per
// content; putting it again refreshes the time it was last put. It pins
// nothing: every writer of a MemoryStore is in the process of the
// collections on it, which cannot tell a put whose entry is coming from
// garbage (see BlobPinner); writers that collections run beside pin
// their blobs with PinBlobs.
func (s *MemoryStore) PutBlob(ctx context.Context, data []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	ref := BlobRef(data)
	s.blobMu.Lock()
	defer s.blobMu.Unlock()
	if s.blobs == nil {
		s.blobs = map[string]memBlob{}
	}
	b, ok := s.blobs[ref]
	if !ok {
		b.data = bytes.Clone(data)
	}
	b.touched = time.Now()
	s.blobs[ref] = b
	return ref, nil
}

// GetBlob implements BlobStore (ErrNotFound). The bytes are the caller's.
func (s *MemoryStore) GetBlob(ctx context.Context, ref string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.blobMu.Lock()
	defer s.blobMu.Unlock()
	b, ok := s.blobs[ref]
	if !ok {
		return nil, fmt.Errorf("%w: blob %s", ErrNotFound, ref)
	}
	return bytes.Clone(b.data), nil
}

// ListBlobs implements BlobCollector.
func (s *MemoryStore) ListBlobs(ctx context.Context, fn func(BlobInfo) error) error {
	s.blobMu.Lock()
	infos := make([]BlobInfo, 0, len(s.blobs))
	for ref, b := range s.blobs {
		infos = append(infos, BlobInfo{Ref: ref, Size: int64(len(b.data)), Touched: b.touched})
	}
	s.blobMu.Unlock()
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}

// DeleteBlob implements BlobCollector.
func (s *MemoryStore) DeleteBlob(ctx context.Context, ref string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.blobMu.Lock()
	defer s.blobMu.Unlock()
	if _, ok := s.blobs[ref]; !ok {
		return fmt.Errorf("%w: blob %s", ErrNotFound, ref)
	}
	delete(s.blobs, ref)
	return nil
}

// DeleteBlobIfOlder implements BlobSweeper: the blob is deleted if it
// was last put before cutoff and is not pinned (PinBlobs), under the
// lock PutBlob and PinBlobs take.
func (s *MemoryStore) DeleteBlobIfOlder(ctx context.Context, ref string, cutoff time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.blobMu.Lock()
	defer s.blobMu.Unlock()
	if b, ok := s.blobs[ref]; !ok || !b.touched.Before(cutoff) {
		return false, nil
	}
	if _, pinned := s.held[ref]; pinned {
		return false, nil
	}
	delete(s.blobs, ref)
	return true, nil
}

// PinBlobs implements BlobPinner: until they are released (by an
// append, a create or a rewrite whose entries refer to them, or
// ReleaseBlobs) no collection deletes them.
func (s *MemoryStore) PinBlobs(ctx context.Context, refs ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, ref := range refs {
		if err := ValidateBlobRef(ref); err != nil {
			return err
		}
	}
	s.blobMu.Lock()
	defer s.blobMu.Unlock()
	if s.held == nil {
		s.held = map[string]struct{}{}
	}
	for _, ref := range refs {
		s.held[ref] = struct{}{}
	}
	s.nheld.Store(int64(len(s.held)))
	return nil
}

// ReleaseBlobs implements BlobPinner: each blob released, and those its
// bytes refer to that are pinned (a manifest's contents), is refreshed
// as a put refreshes it.
func (s *MemoryStore) ReleaseBlobs(ctx context.Context, refs ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, ref := range refs {
		if err := ValidateBlobRef(ref); err != nil {
			return err
		}
	}
	s.release(refs)
	return nil
}

// release releases the pins of refs and of what they refer to.
func (s *MemoryStore) release(refs []string) {
	s.blobMu.Lock()
	defer s.blobMu.Unlock()
	now := time.Now()
	for len(refs) > 0 {
		ref := refs[len(refs)-1]
		refs = refs[:len(refs)-1]
		if _, ok := s.held[ref]; !ok {
			continue
		}
		delete(s.held, ref)
		if b, ok := s.blobs[ref]; ok {
			b.touched = now
			s.blobs[ref] = b
			if len(s.held) > 0 { // what it refers to (a manifest's contents)
				scanRefs(b.data, func(c string) { refs = append(refs, c) })
			}
		}
	}
	s.nheld.Store(int64(len(s.held)))
}

// releaseIn releases the pins of the blobs entries refer to, once they
// are stored.
func (s *MemoryStore) releaseIn(entries []Entry) {
	if s.nheld.Load() == 0 {
		return
	}
	var refs []string
	for _, e := range entries {
		scanRefs(e.bytes(), func(ref string) { refs = append(refs, ref) })
	}
	if len(refs) > 0 {
		s.release(refs)
	}
}

// DeleteIfUnchanged implements ConditionalRemover.
func (s *MemoryStore) DeleteIfUnchanged(ctx context.Context, id string, seen LogMark) error {
	return s.ifUnchanged(ctx, id, seen, func(*memSession) { s.deleteLocked(id) })
}

// ArchiveIfUnchanged implements ConditionalRemover.
func (s *MemoryStore) ArchiveIfUnchanged(ctx context.Context, id string, seen LogMark) error {
	return s.ifUnchanged(ctx, id, seen, func(ms *memSession) { s.setArchivedLocked(id, ms, true) })
}

// ifUnchanged runs act under the store's lock if session id's log is
// still the one seen (ErrConflict otherwise).
func (s *MemoryStore) ifUnchanged(ctx context.Context, id string, seen LogMark, act func(*memSession)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ms, err := s.get(id)
	if err != nil {
		return err
	}
	if err := seen.Check(id, lastID(ms.entries), len(ms.entries)); err != nil {
		return err
	}
	act(ms)
	return nil
}
