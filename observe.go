package session

import (
	"context"
	"log/slog"
	"time"
)

// Op names an operation reported to an Observer.
type Op string

// Operations. The store-level ones are reported by the store Observe
// wraps, whoever calls it; the others by a Session on such a store.
const (
	OpCreate  Op = "create"  // a session was created (store)
	OpLoad    Op = "load"    // a session was read (store): Entries read
	OpAppend  Op = "append"  // entries were written (store): Entries, Bytes
	OpRewrite Op = "rewrite" // a session was rewritten whole (store): Entries, Bytes
	OpDelete  Op = "delete"  // a session was deleted (store)
	OpCompact Op = "compact" // Compact or ApplyCompaction: Entries summarized
	OpBranch  Op = "branch"  // Branch, BranchWithSummary, SummarizeBranch: Entries left behind
	OpRewind  Op = "rewind"  // Rewind: Entries left behind
	OpFork    Op = "fork"    // Fork: Entries copied, Fork the new session
	// OpCheckpoint: Checkpoint named Target (subscribers only, in a
	// ChangeOperation).
	OpCheckpoint Op = "checkpoint"
	// OpResume: Open resumed a session: Entries read, Target its leaf
	// (subscribers only, in a ChangeOperation).
	OpResume    Op = "resume"
	OpArchive   Op = "archive"   // a session was archived (store)
	OpUnarchive Op = "unarchive" // a session was brought back (store)
)

// Event is one operation, reported when it has ended. A failed operation
// is reported too, with Err set: those are the error events.
type Event struct {
	Op      Op
	Session string // the session's id
	// Entries counts what the operation touched; what it counts depends
	// on Op (see the constants).
	Entries int
	// Bytes is the size of the entries written, in the seed format, for
	// OpAppend and OpRewrite.
	Bytes    int64
	Duration time.Duration
	Fork     string // OpFork: the new session's id
	// ExAthena's telemetry, on checkpoints, rewinds, forks and resumes:
	// the entry the operation started from (the leaf before it), the one
	// it went to or made, and whether doing it again would change
	// nothing (a rewind to where the leaf is, a label already set).
	Anchor     string
	Target     string
	Idempotent bool
	Err        error
}

// Observer receives events. Observe is called synchronously after the
// operation, from any goroutine: it must be safe for concurrent use and
// should return quickly. Session-level events (compact, branch, rewind,
// fork) are sent with no lock of this package held. Store events are sent
// from inside the store call, which a Session makes while it holds its
// own lock: an Observer must not call back into a Session (hand the event
// to another goroutine if it must).
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ctx context.Context, e Event)

// Observe calls f(ctx, e).
func (f ObserverFunc) Observe(ctx context.Context, e Event) { f(ctx, e) }

// ObservedStore is a Store that reports what it does to an Observer; see
// Observe.
type ObservedStore struct {
	store Store
	obs   Observer
}

var (
	_ Store         = (*ObservedStore)(nil)
	_ Flusher       = (*ObservedStore)(nil)
	_ SessionCloser = (*ObservedStore)(nil)
)

// Observe returns store wrapped so that o receives an event for each
// create, load, append, rewrite and delete, and Sessions created or opened
// on the wrapper also report compactions, branch moves, rewinds and
// forks. Without it nothing is measured: a Session on a plain store pays
// one nil check per operation.
//
// The wrapper forwards Flush and per-session resources to store; reach
// store's own methods (FileStore.Archive ...) through Unwrap.
func Observe(store Store, o Observer) *ObservedStore {
	return &ObservedStore{store: store, obs: o}
}

// Unwrap returns the wrapped store.
func (o *ObservedStore) Unwrap() Store { return o.store }

func (o *ObservedStore) report(ctx context.Context, op Op, id string, start time.Time, entries int, bytes int64, err error) {
	o.obs.Observe(ctx, Event{Op: op, Session: id, Entries: entries, Bytes: bytes, Duration: time.Since(start), Err: err})
}

// Create implements Store.
func (o *ObservedStore) Create(ctx context.Context, h Header) error {
	start := time.Now()
	err := o.store.Create(ctx, h)
	o.report(ctx, OpCreate, h.ID, start, 0, 0, err)
	return err
}

// CreateWithEntries implements EntryCreator, in one step when the store
// beneath can; it is reported as a create.
func (o *ObservedStore) CreateWithEntries(ctx context.Context, h Header, entries []Entry) error {
	start := time.Now()
	err := createWithEntries(ctx, o.store, h, entries)
	o.report(ctx, OpCreate, h.ID, start, len(entries), entriesBytes(entries), err)
	return err
}

// Append implements Store.
func (o *ObservedStore) Append(ctx context.Context, id string, opts AppendOptions, entries ...Entry) error {
	start := time.Now()
	err := o.store.Append(ctx, id, opts, entries...)
	o.report(ctx, OpAppend, id, start, len(entries), entriesBytes(entries), err)
	return err
}

// Load implements Store.
func (o *ObservedStore) Load(ctx context.Context, id string) (*Log, error) {
	start := time.Now()
	log, err := o.store.Load(ctx, id)
	n := 0
	if log != nil {
		n = len(log.Entries)
	}
	o.report(ctx, OpLoad, id, start, n, 0, err)
	return log, err
}

// LoadTail implements TailLoader, with the wrapped store's LoadTail when
// it has one and its Load otherwise; reported as a load of the entries
// returned.
func (o *ObservedStore) LoadTail(ctx context.Context, id string, n int, last string) (*Log, error) {
	start := time.Now()
	log, err := loadTail(ctx, o.store, id, n, last)
	k := 0
	if log != nil {
		k = len(log.Entries)
	}
	o.report(ctx, OpLoad, id, start, k, 0, err)
	return log, err
}

// Rewrite implements Store.
func (o *ObservedStore) Rewrite(ctx context.Context, id string, opts RewriteOptions, h Header, entries []Entry) error {
	start := time.Now()
	err := o.store.Rewrite(ctx, id, opts, h, entries)
	o.report(ctx, OpRewrite, id, start, len(entries), entriesBytes(entries), err)
	return err
}

// List implements Store; it is not reported.
func (o *ObservedStore) List(ctx context.Context, opts ListOptions) (*ListPage, error) {
	return o.store.List(ctx, opts)
}

// Delete implements Store.
func (o *ObservedStore) Delete(ctx context.Context, id string) error {
	start := time.Now()
	err := o.store.Delete(ctx, id)
	o.report(ctx, OpDelete, id, start, 0, 0, err)
	return err
}

// Flush implements Flusher, for stores that buffer appends; for others it
// does nothing.
func (o *ObservedStore) Flush(ctx context.Context, id string) error {
	return flushStore(ctx, o.store, id)
}

// CloseSession implements SessionCloser: it calls the wrapped store's,
// if it has one.
func (o *ObservedStore) CloseSession(id string) error { return closeStoreSession(o.store, id) }

func entriesBytes(entries []Entry) int64 {
	var n int64
	for _, e := range entries {
		n += int64(e.Len()) + 1 // and its newline
	}
	return n
}

// observerOf returns the observer of an ObservedStore, nil for any other
// store.
func observerOf(store Store) Observer {
	if o, ok := store.(*ObservedStore); ok {
		return o.obs
	}
	return nil
}

// begin returns the start time of an operation, read only when the
// session is observed.
func (s *Session) begin() time.Time {
	if s.obs == nil && s.hub == nil {
		return time.Time{}
	}
	return time.Now()
}

// telemetry reports a checkpoint, rewind, fork or resume, with its
// ExAthena fields, as a ChangeOperation to the store's subscribers in
// this process, and the rewinds and forks to the observer.
func (s *Session) telemetry(ctx context.Context, start time.Time, op OpInfo) {
	hub := s.hub
	if hub != nil && !hub.Active() {
		hub = nil // no one listens
	}
	if s.obs == nil && hub == nil {
		return
	}
	op.Duration = time.Since(start)
	// Resumes and checkpoints go to subscribers only: an Observer has
	// the load and the label's append of them already.
	if s.obs != nil && op.Op != OpResume && op.Op != OpCheckpoint {
		s.obs.Observe(ctx, Event{Op: op.Op, Session: s.id, Entries: op.Entries, Duration: op.Duration, Fork: op.Fork,
			Anchor: op.Anchor, Target: op.Target, Idempotent: op.Idempotent, Err: op.Err})
	}
	if hub != nil {
		hub.Publish(Change{Kind: ChangeOperation, Session: s.id, Time: time.Now(), Op: &op})
	}
}

// report sends the event of a session-level operation to the observer.
func (s *Session) report(ctx context.Context, op Op, start time.Time, entries int, err error) {
	if s.obs != nil {
		s.obs.Observe(ctx, Event{Op: op, Session: s.id, Entries: entries, Duration: time.Since(start), Err: err})
	}
}

// SlogObserver returns an Observer that logs each event to l (nil means
// slog.Default()) as a record with the message "session <op>" and the
// attributes session, entries, bytes (when known), duration and fork
// (for forks). Failures are logged at level Error with an "err"
// attribute; appends and loads, the frequent ones, at Debug; the rest at
// Info.
func SlogObserver(l *slog.Logger) Observer {
	if l == nil {
		l = slog.Default()
	}
	return slogObserver{l}
}

type slogObserver struct{ l *slog.Logger }

func (o slogObserver) Observe(ctx context.Context, e Event) {
	level := slog.LevelInfo
	switch {
	case e.Err != nil:
		level = slog.LevelError
	case e.Op == OpAppend || e.Op == OpLoad:
		level = slog.LevelDebug
	}
	if !o.l.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 6)
	attrs = append(attrs, slog.String("session", e.Session), slog.Int("entries", e.Entries))
	if e.Bytes > 0 {
		attrs = append(attrs, slog.Int64("bytes", e.Bytes))
	}
	attrs = append(attrs, slog.Duration("duration", e.Duration))
	if e.Fork != "" {
		attrs = append(attrs, slog.String("fork", e.Fork))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.Any("err", e.Err))
	}
	o.l.LogAttrs(ctx, level, "session "+string(e.Op), attrs...)
}

var (
	_ Archiver         = (*ObservedStore)(nil)
	_ EntryCreator     = (*ObservedStore)(nil)
	_ Subscriber       = (*ObservedStore)(nil)
	_ SharedStateStore = (*ObservedStore)(nil)
	_ CompactionMarker = (*ObservedStore)(nil)
)

// MarkCompacting implements CompactionMarker with the wrapped store's;
// nothing is recorded on a store without one.
func (o *ObservedStore) MarkCompacting(ctx context.Context, id string, since time.Time) error {
	return markCompacting(ctx, o.store, id, since)
}

// Archive implements Archiver with the wrapped store's (an error wrapping
// errors.ErrUnsupported when it has none); reported as an OpArchive.
func (o *ObservedStore) Archive(ctx context.Context, id string) error {
	start := time.Now()
	err := Archive(ctx, o.store, id)
	o.report(ctx, OpArchive, id, start, 0, 0, err)
	return err
}

// DeleteIfUnchanged implements ConditionalRemover with the wrapped
// store's (an error wrapping errors.ErrUnsupported when it has none, for
// Sweep to fall back on); reported as an OpDelete.
func (o *ObservedStore) DeleteIfUnchanged(ctx context.Context, id string, seen LogMark) error {
	cr, err := conditionalRemover(o.store)
	if err != nil {
		return err
	}
	start := time.Now()
	err = cr.DeleteIfUnchanged(ctx, id, seen)
	o.report(ctx, OpDelete, id, start, 0, 0, err)
	return err
}

// ArchiveIfUnchanged implements ConditionalRemover like
// DeleteIfUnchanged; reported as an OpArchive.
func (o *ObservedStore) ArchiveIfUnchanged(ctx context.Context, id string, seen LogMark) error {
	cr, err := conditionalRemover(o.store)
	if err != nil {
		return err
	}
	start := time.Now()
	err = cr.ArchiveIfUnchanged(ctx, id, seen)
	o.report(ctx, OpArchive, id, start, 0, 0, err)
	return err
}

// CompressArchived implements ArchiveCompressor with the wrapped
// store's (an error wrapping errors.ErrUnsupported when it has none).
func (o *ObservedStore) CompressArchived(ctx context.Context, id string) error {
	return compressArchived(ctx, o.store, id)
}

// Unarchive implements Archiver like Archive; reported as an
// OpUnarchive.
func (o *ObservedStore) Unarchive(ctx context.Context, id string) error {
	start := time.Now()
	err := Unarchive(ctx, o.store, id)
	o.report(ctx, OpUnarchive, id, start, 0, 0, err)
	return err
}

// Subscribe implements Subscriber with the wrapped store's (ErrNoEvents
// when it has none).
func (o *ObservedStore) Subscribe(ctx context.Context, opts SubscribeOptions) (*Subscription, error) {
	return Subscribe(ctx, o.store, opts)
}

// LoadState implements SharedStateStore with the wrapped store's
// (ErrNoSharedState when it has none).
func (o *ObservedStore) LoadState(ctx context.Context, scope StateScope, owner string) (State, error) {
	ss, err := sharedStateOf(o.store)
	if err != nil {
		return nil, err
	}
	return ss.LoadState(ctx, scope, owner)
}

// UpdateState implements SharedStateStore like LoadState.
func (o *ObservedStore) UpdateState(ctx context.Context, scope StateScope, owner string, delta State) error {
	ss, err := sharedStateOf(o.store)
	if err != nil {
		return err
	}
	return ss.UpdateState(ctx, scope, owner, delta)
}
