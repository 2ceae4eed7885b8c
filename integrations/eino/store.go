package eino

import (
	"context"
	"errors"
	"fmt"
	"sync"

	session "github.com/agentsession/session"
)

// StateKey is the session state key a checkpoint's bytes are kept under.
const StateKey = "eino.checkpoint"

// DefaultPrefix is put before a checkpoint id to make the id of its
// session when Options.Prefix is empty.
const DefaultPrefix = "eino:"

// ErrInvalidCheckPointID is wrapped by the errors of a checkpoint id that
// cannot name a session: empty, not UTF-8, holding a control character,
// or too long once prefixed (session.MaxIDLength bytes). Such errors also
// wrap session.ErrInvalidID.
var ErrInvalidCheckPointID = errors.New("eino: invalid checkpoint id")

// ErrCorruptCheckPoint is wrapped by the errors of a session whose
// checkpoint value was not written by Set (edited by hand, or another
// program's state under StateKey). Nothing is overwritten because of it:
// Set appends a new value after it, as always.
var ErrCorruptCheckPoint = errors.New("eino: stored checkpoint value is not one Set writes")

// Options configures a Store. The zero value is usable.
type Options struct {
	// Prefix is put before each checkpoint id to make its session id
	// (DefaultPrefix when empty), so that checkpoints and other sessions
	// can share a store.
	Prefix string
}

// Store keeps Eino checkpoints in agentsession sessions: it implements
// compose.CheckPointStore (and so adk.CheckPointStore) of
// github.com/cloudwego/eino. It is safe for concurrent use.
type Store struct {
	store  session.Store
	prefix string

	mu      sync.Mutex
	handles map[string]*handle // by session id
	closed  bool
}

// handle is the open session of one checkpoint; mu orders its use.
type handle struct {
	mu sync.Mutex
	s  *session.Session
	n  int // the session's entries after this Store last used it
}

// New returns a Store keeping checkpoints in store (a session.FileStore,
// MemoryStore, pgstore, or any wrapper of them).
func New(store session.Store, opts *Options) (*Store, error) {
	if store == nil {
		return nil, errors.New("eino: New with a nil session.Store")
	}
	prefix := DefaultPrefix
	if opts != nil && opts.Prefix != "" {
		prefix = opts.Prefix
	}
	if err := session.ValidateID(prefix + "x"); err != nil {
		return nil, fmt.Errorf("eino: prefix %q: %w", prefix, err)
	}
	return &Store{store: store, prefix: prefix, handles: map[string]*handle{}}, nil
}

// SessionID returns the id of the session that keeps checkPointID: the
// prefix and the id. An error wrapping ErrInvalidCheckPointID (and
// session.ErrInvalidID) for an id no session can have. Any other id is
// kept byte for byte: "../x" or "a/b" name sessions like any other, whose
// FileStore file names escape them (they stay inside the directory).
func (s *Store) SessionID(checkPointID string) (string, error) {
	if checkPointID == "" {
		return "", fmt.Errorf("%w: empty: %w", ErrInvalidCheckPointID, session.ErrInvalidID)
	}
	id := s.prefix + checkPointID
	if err := session.ValidateID(id); err != nil {
		return "", fmt.Errorf("%w %q: %w", ErrInvalidCheckPointID, checkPointID, err)
	}
	return id, nil
}

// Get returns the checkpoint saved as checkPointID, and whether there is
// one: (nil, false, nil) when no Set stored it. The bytes are the
// caller's.
func (s *Store) Get(ctx context.Context, checkPointID string) (b []byte, ok bool, err error) {
	err = s.with(ctx, checkPointID, false, func(sess *session.Session) error {
		st, err := sess.State(ctx)
		if err != nil {
			return fmt.Errorf("eino: checkpoint %q: %w", checkPointID, err)
		}
		raw, found := st[StateKey]
		if !found {
			return nil
		}
		if b, err = decodeValue(raw); err != nil {
			return fmt.Errorf("eino: checkpoint %q (session %s): %w", checkPointID, sess.ID(), err)
		}
		ok = true
		return nil
	})
	return b, ok, err
}

// Set saves checkPoint as checkPointID: one state update (one entry)
// appended to its session, created by the first Set. Earlier values stay
// on the session's path (History).
func (s *Store) Set(ctx context.Context, checkPointID string, checkPoint []byte) error {
	return s.with(ctx, checkPointID, true, func(sess *session.Session) error {
		if err := sess.UpdateState(ctx, map[string]any{StateKey: encodeValue(checkPoint)}); err != nil {
			return fmt.Errorf("eino: checkpoint %q: %w", checkPointID, err)
		}
		return nil
	})
}

// Session returns the session of checkPointID, up to date with what
// other writers appended; (nil, nil) when there is none yet. The Store
// keeps using it: do not close it. When a later Get or Set finds that
// another writer appended, the Store opens the session afresh and closes
// this handle.
func (s *Store) Session(ctx context.Context, checkPointID string) (sess *session.Session, err error) {
	err = s.with(ctx, checkPointID, false, func(x *session.Session) error {
		sess = x
		return nil
	})
	return sess, err
}

// with runs fn on the session of checkPointID, holding its handle: the
// session opened (with create, opened or created) the first time, and
// afterwards brought up to date with what other writers appended. When
// another writer (another Store, another process) wrote since this Store
// last did, the session is opened afresh, so that its leaf is theirs: a
// fresh open sees the latest value. Without create and no session, fn is
// not run.
func (s *Store) with(ctx context.Context, checkPointID string, create bool, fn func(*session.Session) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	id, err := s.SessionID(checkPointID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("eino: store: %w", session.ErrClosed)
	}
	h := s.handles[id]
	if h == nil {
		h = &handle{}
		s.handles[id] = h
	}
	s.mu.Unlock()

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.s != nil {
		err := h.s.Reload(ctx)
		if err != nil && !errors.Is(err, session.ErrNotFound) {
			return fmt.Errorf("eino: checkpoint %q: %w", checkPointID, err)
		}
		if err != nil || h.s.Len() != h.n {
			h.s.Close() // what it wrote is in the store; a fresh open follows
			h.s = nil
		}
	}
	if h.s == nil {
		var sess *session.Session
		if create {
			sess, _, err = session.OpenOrCreate(ctx, s.store, &session.CreateOptions{ID: id, Title: "eino checkpoint " + checkPointID})
		} else {
			sess, err = session.Open(ctx, s.store, id)
			if errors.Is(err, session.ErrNotFound) {
				return nil
			}
		}
		if err != nil {
			return fmt.Errorf("eino: checkpoint %q: %w", checkPointID, err)
		}
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed { // Close ran meanwhile and did not see this one
			sess.Close()
			return fmt.Errorf("eino: store: %w", session.ErrClosed)
		}
		h.s = sess
	}
	err = fn(h.s)
	h.n = h.s.Len()
	return err
}

// Close closes the sessions the Store opened (flushing them); Get and
// Set fail with an error wrapping session.ErrClosed from then on. The
// session.Store is the caller's: it stays open.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	handles := s.handles
	s.handles = nil
	s.mu.Unlock()
	var errs []error
	for _, h := range handles {
		h.mu.Lock()
		if h.s != nil {
			errs = append(errs, h.s.Close())
		}
		h.mu.Unlock()
	}
	return errors.Join(errs...)
}
