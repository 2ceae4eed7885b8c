package genkitstore

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	session "github.com/agentsession/session"
	gksession "github.com/firebase/genkit/go/core/x/session"
)

// Errors of the adapter, beside agentsession's (session.ErrInvalidID for
// an id no store can hold, session.ErrClosed after Close, the store's
// own), which its errors wrap.
var (
	// ErrNilStore: New was given no agentsession store.
	ErrNilStore = errors.New("genkitstore: no agentsession store")
	// ErrStateKey: Options.StateKey is not a key of the session's own
	// state (empty, or of the shared "user:" or "app:" scopes).
	ErrStateKey = errors.New("genkitstore: state key not usable")
	// ErrNilData: Save was given nil session data.
	ErrNilData = errors.New("genkitstore: nil session data")
	// ErrUndecodable: the value stored under the state key does not
	// decode as the store's Data[S] (a session saved with another state
	// type, or written by another program). Nothing is changed.
	ErrUndecodable = errors.New("genkitstore: stored session data does not decode")
)

// DefaultStateKey is the session state key the data is kept under when
// Options.StateKey is empty.
const DefaultStateKey = "genkit"

// DefaultMaxOpen is how many sessions a Store keeps open when
// Options.MaxOpen is zero.
const DefaultMaxOpen = 64

// Options configures a Store. The zero value is ready to use.
type Options struct {
	// StateKey is the key of the session state the data is kept under;
	// DefaultStateKey when empty. It cannot start with
	// session.UserStatePrefix or session.AppStatePrefix.
	StateKey string
	// Create is used when Save creates a session (its ID is the session
	// id Save was given, whatever Create.ID says): its working
	// directory, title, user, app or metadata. Deferred is ignored.
	Create session.CreateOptions
	// MaxOpen bounds the sessions the Store keeps open between calls
	// (each with its entries in memory); the least recently used idle
	// one is closed past it. DefaultMaxOpen when zero.
	MaxOpen int
}

// Store is a Genkit session store (gksession.Store[S]) over an
// agentsession store. It is safe for concurrent use, and several Stores
// (in one process or many) may share the agentsession store.
type Store[S any] struct {
	backing session.Store
	key     string
	create  session.CreateOptions
	max     int

	mu     sync.Mutex
	closed bool
	open   map[string]*handle
	lru    list.List // of *handle, most recently used first
}

var _ gksession.Store[struct{}] = (*Store[struct{}])(nil)

// handle is one session the Store keeps open.
type handle struct {
	id   string
	mu   sync.Mutex // orders this Store's uses of s
	s    *session.Session
	n    int // entries s held after this Store last used it
	refs int // callers holding or waiting for mu (guarded by Store.mu)
	elem *list.Element
	dead bool // closed by Store.Close (guarded by mu)

	// The value under the state key at the entry leaf, as the fold of
	// the path gave it or as this Store saved it (nil: none), when known:
	// while s holds what it held then and its leaf is still leaf, Get
	// needs no fold.
	known bool
	leaf  string
	raw   json.RawMessage
}

// remember notes raw as the value at the leaf of h.s.
func (h *handle) remember(raw json.RawMessage) {
	h.known, h.leaf, h.raw = true, h.s.LeafID(), raw
}

// value returns the value under key at the leaf of h.s: the one it
// knows, or the fold's.
func (h *handle) value(ctx context.Context, key string) (json.RawMessage, error) {
	if h.known && h.leaf == h.s.LeafID() {
		return h.raw, nil
	}
	raw, _, err := session.GetState[json.RawMessage](ctx, h.s, key)
	if err != nil {
		return nil, err
	}
	h.remember(raw)
	return raw, nil
}

// New returns a Store of Genkit session data of state type S over
// store. opts may be nil.
func New[S any](store session.Store, opts *Options) (*Store[S], error) {
	if store == nil {
		return nil, ErrNilStore
	}
	if opts == nil {
		opts = &Options{}
	}
	key := opts.StateKey
	if key == "" {
		key = DefaultStateKey
	}
	if strings.HasPrefix(key, session.UserStatePrefix) || strings.HasPrefix(key, session.AppStatePrefix) {
		return nil, fmt.Errorf("%w: %q is shared state, not the session's", ErrStateKey, key)
	}
	max := opts.MaxOpen
	if max <= 0 {
		max = DefaultMaxOpen
	}
	create := opts.Create
	create.Deferred = false
	return &Store[S]{backing: store, key: key, create: create, max: max, open: map[string]*handle{}}, nil
}

// Get returns the data last saved for sessionID, or nil (and no error)
// when there is none: no session of that id, or a session no data was
// saved in. Each call returns a copy of its own. An id no store can
// hold (session.ValidateID) is an error wrapping session.ErrInvalidID.
func (st *Store[S]) Get(ctx context.Context, sessionID string) (*gksession.Data[S], error) {
	h, err := st.acquire(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	defer st.release(h)
	if err := st.sync(ctx, h, false); err != nil {
		if errors.Is(err, session.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	raw, err := h.value(ctx, st.key)
	if err != nil || raw == nil {
		return nil, err
	}
	return st.decode(sessionID, raw)
}

// Save stores data as the latest of sessionID, creating the session if
// there is none (with Options.Create), and flushes it: under a
// FileStore's default sync policy a Save that returned survives a
// machine crash. Earlier data stays in the session's history (History).
func (st *Store[S]) Save(ctx context.Context, sessionID string, data *gksession.Data[S]) error {
	if data == nil {
		return fmt.Errorf("%w: session %q", ErrNilData, sessionID)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("genkitstore: session %q: encoding its data: %w", sessionID, err)
	}
	h, err := st.acquire(ctx, sessionID)
	if err != nil {
		return err
	}
	defer st.release(h)
	if err := st.sync(ctx, h, true); err != nil {
		return err
	}
	err = h.s.UpdateState(ctx, map[string]any{st.key: json.RawMessage(raw)})
	h.n = h.s.Len()
	if err != nil {
		h.known = false
		return fmt.Errorf("genkitstore: saving session %q: %w", sessionID, err)
	}
	h.remember(raw)
	if err := h.s.Flush(ctx); err != nil {
		return fmt.Errorf("genkitstore: flushing session %q: %w", sessionID, err)
	}
	return nil
}

// decode decodes stored data of sessionID.
func (st *Store[S]) decode(sessionID string, raw json.RawMessage) (*gksession.Data[S], error) {
	var d gksession.Data[S]
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("%w: session %q, state key %q: %w", ErrUndecodable, sessionID, st.key, err)
	}
	return &d, nil
}

// Close closes the sessions the Store keeps open; the agentsession store
// stays open (its owner closes it). Afterwards Get and Save fail with
// session.ErrClosed. Close waits for the calls in progress.
func (st *Store[S]) Close() error {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return nil
	}
	st.closed = true
	hs := make([]*handle, 0, len(st.open))
	for _, h := range st.open {
		hs = append(hs, h)
	}
	st.open, st.lru = map[string]*handle{}, list.List{}
	st.mu.Unlock()
	var errs []error
	for _, h := range hs {
		h.mu.Lock()
		h.dead = true
		if h.s != nil {
			errs = append(errs, h.s.Close())
			h.s = nil
		}
		h.mu.Unlock()
	}
	return errors.Join(errs...)
}

// acquire returns the handle of sessionID, locked, for release.
func (st *Store[S]) acquire(ctx context.Context, sessionID string) (*handle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := session.ValidateID(sessionID); err != nil {
		return nil, fmt.Errorf("genkitstore: session id: %w", err)
	}
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return nil, fmt.Errorf("genkitstore: %w", session.ErrClosed)
	}
	h := st.open[sessionID]
	if h == nil {
		h = &handle{id: sessionID}
		h.elem = st.lru.PushFront(h)
		st.open[sessionID] = h
	} else {
		st.lru.MoveToFront(h.elem)
	}
	h.refs++
	st.mu.Unlock()
	h.mu.Lock()
	if h.dead { // Close came first
		st.release(h)
		return nil, fmt.Errorf("genkitstore: %w", session.ErrClosed)
	}
	return h, nil
}

// release unlocks h and closes the idle sessions past MaxOpen.
func (st *Store[S]) release(h *handle) {
	h.mu.Unlock()
	st.mu.Lock()
	h.refs--
	var evicted []*handle
	for e := st.lru.Back(); e != nil && len(st.open) > st.max; {
		prev := e.Prev()
		if v := e.Value.(*handle); v.refs == 0 && st.open[v.id] == v {
			st.lru.Remove(e)
			delete(st.open, v.id)
			evicted = append(evicted, v)
		}
		e = prev
	}
	st.mu.Unlock()
	for _, v := range evicted {
		v.mu.Lock() // no one else can reach it now
		if v.s != nil {
			_ = v.s.Close() // its saves were flushed
			v.s = nil
		}
		v.mu.Unlock()
	}
}

// sync brings h up to date with the store: it opens the session (or,
// with create, opens or creates it) the first time, and afterwards reads
// what other writers appended. When another writer saved since this
// Store last did, the session is opened afresh, so that its leaf is
// theirs: the latest saved data is what a fresh open sees. ErrNotFound
// when there is no session and create is false.
func (st *Store[S]) sync(ctx context.Context, h *handle, create bool) error {
	if h.s != nil {
		err := h.s.Reload(ctx)
		if err == nil && h.s.Len() == h.n {
			return nil
		}
		if err != nil && !errors.Is(err, session.ErrNotFound) {
			return fmt.Errorf("genkitstore: reading session %q: %w", h.id, err)
		}
		_ = h.s.Close()
		h.s = nil
	}
	var (
		s   *session.Session
		err error
	)
	if create {
		opts := st.create
		opts.ID = h.id
		s, _, err = session.OpenOrCreate(ctx, st.backing, &opts)
	} else {
		s, err = session.Open(ctx, st.backing, h.id)
	}
	if err != nil {
		if errors.Is(err, session.ErrNotFound) {
			return err
		}
		return fmt.Errorf("genkitstore: opening session %q: %w", h.id, err)
	}
	h.s, h.n, h.known = s, s.Len(), false
	return nil
}
