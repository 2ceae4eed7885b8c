package session

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Events: what a UI or another part of a host subscribes to, to see
// sessions change as they change, in this process and, where the store
// can tell, in others (a FileStore watches its root; pgstore listens to
// the server's notifications).
//
// A store delivers Changes to each subscriber through a buffer of the
// subscriber's own. The writer never waits for a subscriber: when a
// subscriber's buffer is full, the change is dropped for that subscriber
// alone and counted (Subscription.Dropped), so that a slow UI can tell
// it missed something and reload what it shows. Observer is the other,
// synchronous hook, meant for metrics.

// ChangeKind says what happened to a session. The set is OpenCode's
// event set (session created, updated, deleted, compacted, error), with
// "updated" told apart into what was updated.
type ChangeKind string

// Kinds of Change.
const (
	ChangeCreated ChangeKind = "created"
	// ChangeAppended: entries were appended (Change.Entries). The kinds
	// below it up to ChangeCompacted follow it, one per entry that
	// changes what they name.
	ChangeAppended  ChangeKind = "appended"
	ChangeTitle     ChangeKind = "title"     // a session_info entry (Change.Title)
	ChangeMeta      ChangeKind = "metadata"  // a CustomMeta entry changed metadata
	ChangeState     ChangeKind = "state"     // a CustomState entry (Change.Keys)
	ChangeLeaf      ChangeKind = "leaf"      // the leaf moved with no entry of the conversation (Change.Leaf)
	ChangeCompacted ChangeKind = "compacted" // a compaction entry
	// ChangeCompacting: a compaction started, or (Change.Compacting
	// zero) ended without a compaction entry, or after one.
	ChangeCompacting ChangeKind = "compacting"
	ChangeArchived   ChangeKind = "archived"
	ChangeUnarchived ChangeKind = "unarchived"
	// ChangeRewritten: the log was rewritten whole (a prune, a
	// migration); reload it.
	ChangeRewritten ChangeKind = "rewritten"
	ChangeDeleted   ChangeKind = "deleted"
	// ChangeOperation: a checkpoint, rewind, fork or resume by a handle
	// of this process (Change.Op). Only subscribers in the process see it.
	ChangeOperation ChangeKind = "operation"
	// ChangeError: a write failed (Change.Err), or the store could not
	// follow a change (a watcher error); subscribers should reload.
	// Its Session is "" when the error is the store's (every subscriber
	// gets it then, whatever its filter).
	ChangeError ChangeKind = "error"
)

// Change is one event of a session.
type Change struct {
	Kind    ChangeKind
	Session string    // the session's id
	Time    time.Time // when the store saw it
	// Entries are the entries appended, for ChangeAppended, and the one
	// entry of a ChangeTitle, ChangeMeta, ChangeState, ChangeLeaf,
	// ChangeCompacting, ChangeCompacted, ChangeArchived or
	// ChangeUnarchived.
	Entries []EntryRef
	Title   string   // ChangeTitle: the new title
	Keys    []string // ChangeState: the keys set or removed
	Leaf    string   // ChangeLeaf: the new leaf ("" before the first entry)
	// Compacting is ChangeCompacting's time: when the compaction
	// started, zero when it ended.
	Compacting time.Time
	Op         *OpInfo // ChangeOperation
	Err        error   // ChangeError
	// Remote is set on changes a store saw another process make (or, for
	// stores that cannot tell them apart, that it read back from where
	// every process writes).
	Remote bool
}

// EntryRef names an appended entry without its content (Open the
// session, or Reload a handle, to read it).
type EntryRef struct {
	ID         string
	ParentID   string
	Type       string
	CustomType string // for custom entries
	Role       string // for messages
}

// OpInfo is the telemetry of a checkpoint, rewind, fork or resume, with
// ExAthena's fields: the operation, the entry it started from (Anchor)
// and the one it went to or made (Target), what it counted, whether
// doing it again changes nothing (Idempotent), and how long it took.
type OpInfo struct {
	Op         Op
	Anchor     string
	Target     string
	Entries    int
	Idempotent bool
	Duration   time.Duration
	Fork       string // OpFork: the new session
	Err        error
}

// ChangesOf returns the changes that appending entries to session id
// makes: a ChangeAppended, then one change per entry that changes a
// title, metadata, state or the leaf (a leaf marker), or is a
// compaction. Stores use it so that every store reports an append the
// same way.
func ChangesOf(id string, entries []Entry, at time.Time) []Change {
	if len(entries) == 0 {
		return nil
	}
	refs := make([]EntryRef, len(entries))
	out := []Change{{Kind: ChangeAppended, Session: id, Time: at, Entries: refs}}
	for i, e := range entries {
		refs[i] = EntryRef{ID: e.id, ParentID: e.parent, Type: e.typ}
		c := Change{Session: id, Time: at, Entries: refs[i : i+1 : i+1]}
		switch e.kind {
		case kindMessage:
			refs[i].Role = messageRole(e)
		case kindSessionInfo:
			var si SessionInfoEntry
			e.payload(&si)
			c.Kind, c.Title = ChangeTitle, si.Name
		case kindCompaction:
			c.Kind = ChangeCompacted
		case kindCustom:
			refs[i].CustomType = customTypeOf(e)
			switch refs[i].CustomType {
			case leafMarkerType:
				c.Kind, c.Leaf = ChangeLeaf, e.parent
			case CustomState:
				c.Kind, c.Keys = ChangeState, stateKeys(e)
			case CustomMeta:
				c.Kind = ChangeMeta
			}
		}
		if c.Kind != "" {
			out = append(out, c)
		}
	}
	return out
}

func customTypeOf(e Entry) string {
	v, ok := e.field("customType")
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// SubscribeOptions selects what a subscription receives.
type SubscribeOptions struct {
	// Session, when set, keeps the changes of this session only.
	Session string
	// Buffer is how many changes wait for the subscriber before the next
	// ones are dropped (and counted); default DefaultSubscribeBuffer.
	Buffer int
}

// DefaultSubscribeBuffer is SubscribeOptions.Buffer when it is zero.
const DefaultSubscribeBuffer = 1024

// Subscribe subscribes to the changes of store, looking through wrappers
// (Unwrap) for a Subscriber (ErrNoEvents when there is none).
func Subscribe(ctx context.Context, store Store, opts SubscribeOptions) (*Subscription, error) {
	sub, ok := findAbility[Subscriber](store)
	if !ok {
		return nil, fmt.Errorf("%w: %T", ErrNoEvents, store)
	}
	return sub.Subscribe(ctx, opts)
}

// Subscription receives changes; see Subscribe.
type Subscription struct {
	c       chan Change
	session string
	dropped atomic.Uint64
	hub     *Hub
	once    sync.Once
	stop    func() // stops what feeds the subscription (the context's watch)
}

// C returns the channel the changes come on, in the order the store saw
// them. It is closed when the subscription ends.
func (s *Subscription) C() <-chan Change { return s.c }

// Dropped returns how many changes were dropped because the buffer was
// full.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Close ends the subscription and closes C. It is safe to call more than
// once.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.hub.remove(s)
		if s.stop != nil {
			s.stop()
		}
	})
}

// Hub fans changes out to subscribers: the part of events every store
// shares. A store keeps one, calls Subscribe from its own Subscribe and
// Publish for each change, in order. The zero value is ready to use.
type Hub struct {
	mu   sync.Mutex
	subs []*Subscription
	// OnFirst, when set, is called (without the hub's lock) when the
	// first subscriber comes, and OnLast when the last one goes: a store
	// starts and stops what watches other processes there.
	OnFirst, OnLast func()
}

// Subscribe adds a subscriber until ctx ends or it is closed.
func (h *Hub) Subscribe(ctx context.Context, opts SubscribeOptions) (*Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := opts.Buffer
	if n <= 0 {
		n = DefaultSubscribeBuffer
	}
	s := &Subscription{c: make(chan Change, n), session: opts.Session, hub: h}
	h.mu.Lock()
	h.subs = append(h.subs, s)
	first := len(h.subs) == 1
	h.mu.Unlock()
	if first && h.OnFirst != nil {
		h.OnFirst()
	}
	stop := context.AfterFunc(ctx, s.Close)
	s.stop = func() { stop() }
	return s, nil
}

// Active reports whether anyone is subscribed; a store skips the work of
// making changes when no one is.
func (h *Hub) Active() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs) > 0
}

// Publish delivers cs to every subscriber whose filter they pass,
// without waiting: a full buffer drops the change for that subscriber.
func (h *Hub) Publish(cs ...Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.subs {
		for _, c := range cs {
			if s.session != "" && c.Session != "" && s.session != c.Session {
				continue // a change of no session (a store's error) goes to all
			}
			select {
			case s.c <- c:
			default:
				s.dropped.Add(1)
			}
		}
	}
}

func (h *Hub) remove(s *Subscription) {
	h.mu.Lock()
	for i, x := range h.subs {
		if x == s {
			h.subs = append(h.subs[:i], h.subs[i+1:]...)
			close(s.c)
			break
		}
	}
	last := len(h.subs) == 0
	h.mu.Unlock()
	if last && h.OnLast != nil {
		h.OnLast()
	}
}

// Close ends every subscription.
func (h *Hub) Close() {
	h.mu.Lock()
	subs := append([]*Subscription(nil), h.subs...)
	h.mu.Unlock()
	for _, s := range subs {
		s.Close()
	}
}

// hubOf returns the hub of store (through wrappers) for the changes a
// Session makes itself (ChangeOperation), nil when it has none.
func hubOf(store Store) *Hub {
	h, ok := findAbility[interface{ Hub() *Hub }](store)
	if !ok {
		return nil
	}
	return h.Hub()
}
