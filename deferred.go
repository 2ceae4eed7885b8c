package session

import (
	"context"
	"errors"
	"fmt"
)

// Deferred persistence (CreateOptions.Deferred): a session held back from
// its store until its first assistant message.

// createDeferred returns the handle of a session that is not in store
// yet. An id the host chose is checked now, so that a session of that id
// already there is ErrExists at once rather than at the first reply.
func createDeferred(ctx context.Context, store Store, h Header, chosenID bool) (*Session, error) {
	if err := ValidateID(h.ID); err != nil {
		return nil, err
	}
	if chosenID {
		_, err := store.Load(ctx, h.ID)
		switch {
		case err == nil:
			return nil, fmt.Errorf("%w: session %s", ErrExists, h.ID)
		case !errors.Is(err, ErrNotFound):
			return nil, err
		}
	}
	s := newSession(store, &Log{Header: h})
	s.deferred = true
	return s, nil
}

// Persisted reports whether the session is in its store: false for a
// deferred session (CreateOptions.Deferred) until its first assistant
// message or Persist, true otherwise.
func (s *Session) Persisted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.deferred
}

// Persist writes a deferred session to its store now, whatever it holds
// (pi's ensureOnDisk): the header and every entry appended so far, in one
// step. It does nothing for a session already in its store.
func (s *Session) Persist(ctx context.Context) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if !s.deferred {
		return nil
	}
	return s.persistWith(ctx, nil, true)
}

// persistWith writes a deferred session with entries after those the
// handle holds, when entries hold its first assistant message (or
// always): until then entries stay in the handle only (nil: the caller
// applies them). A write that fails with its outcome unknown is found
// out on the next try: the store then holds the session of this id with
// these very entries, which counts as done. Callers hold mu.
func (s *Session) persistWith(ctx context.Context, entries []Entry, always bool) error {
	if !always && !holdsAssistant(entries) {
		return nil
	}
	all := make([]Entry, 0, len(s.t.nodes)+len(entries))
	for i := range s.t.nodes {
		all = append(all, s.t.nodes[i].e)
	}
	all = append(all, entries...)
	err := createWithEntries(ctx, s.store, s.header, all)
	if errors.Is(err, ErrExists) {
		if log, lerr := s.store.Load(ctx, s.id); lerr == nil && sameIDs(log.Entries, all) {
			err = nil // an earlier try landed
		}
	}
	if err != nil {
		return fmt.Errorf("session: writing deferred session %s: %w", s.id, err)
	}
	s.deferred = false
	s.last = lastID(all)
	return nil
}

// holdsAssistant reports whether entries hold an assistant message.
func holdsAssistant(entries []Entry) bool {
	for _, e := range entries {
		if e.kind == kindMessage && messageRole(e) == RoleAssistant {
			return true
		}
	}
	return false
}

// sameIDs reports whether two lists of entries have the same ids in the
// same order.
func sameIDs(a, b []Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].id != b[i].id {
			return false
		}
	}
	return true
}
