package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	if err := s.makeWhole(ctx); err != nil {
		return err
	}
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
// applies them). When the store holds a session of this id already, see
// joinStored. Callers hold mu.
func (s *Session) persistWith(ctx context.Context, entries []Entry, always bool) error {
	if !always && !holdsAssistant(entries) {
		return nil
	}
	nodes := s.nodeEntries()
	all := append(slices.Clip(nodes), entries...)
	err := createWithEntries(ctx, s.store, s.header, all)
	if errors.Is(err, ErrExists) {
		err = s.joinStored(ctx, nodes, entries)
	}
	if err != nil {
		return fmt.Errorf("session: writing deferred session %s: %w", s.id, err)
	}
	s.deferred = false
	return nil
}

// joinStored writes the handle's entries (nodes, then entries) into the
// session of its id that the store holds already:
//   - an earlier try of this very write, or of a Persist, whose answer
//     was lost: the store holds a first part of them (by id), and the
//     rest is appended;
//   - the handle's entries and others after them (an earlier write of
//     this handle landed, then another writer appended): the handle
//     takes those in, and entries go after them;
//   - another writer's session (two deferred creators of one id, as
//     OpenOrCreate may make them): the handle's entries go after the
//     stored ones, a branch of their own, and the handle takes the
//     stored ones in, as two writers of one session end up.
//
// Every append is conditional on the log read. Callers hold mu.
func (s *Session) joinStored(ctx context.Context, nodes, entries []Entry) error {
	log, err := s.store.Load(ctx, s.id)
	if err != nil {
		return err
	}
	all := append(slices.Clip(nodes), entries...)
	var rest, keep []Entry // what to append; what the handle holds after
	switch {
	case idsPrefix(log.Entries, all):
		rest = all[len(log.Entries):]
	case idsPrefix(nodes, log.Entries):
		rest, keep = entries, log.Entries
	default:
		rest, keep = all, append(slices.Clip(log.Entries), nodes...)
	}
	if len(rest) > 0 {
		last := lastID(log.Entries)
		if err := s.store.Append(ctx, s.id, AppendOptions{IfLast: last, IfEmpty: last == ""}, rest...); err != nil {
			return err
		}
	}
	if keep != nil {
		leafID := s.leafID()
		s.reset(&Log{Header: log.Header, Entries: keep})
		s.leaf = -1
		if i, ok := s.t.lookup(leafID); ok {
			s.leaf = i
		}
	}
	s.last = lastID(append(slices.Clip(log.Entries), rest...))
	return nil
}

// nodeEntries returns the entries the handle holds, in log order.
// Callers hold mu.
func (s *Session) nodeEntries() []Entry {
	out := make([]Entry, len(s.t.nodes))
	for i := range s.t.nodes {
		out[i] = s.t.nodes[i].e
	}
	return out
}

// reloadDeferred finds out, for a deferred session with a pending write
// (its persist failed with its outcome unknown), whether the write
// landed: when the store holds a session of this id that starts with the
// handle's entries, it is this one, and is returned for the handle to
// take in (and no longer be deferred); otherwise nil: nothing of the
// handle's is stored. Callers hold mu.
func (s *Session) reloadDeferred(ctx context.Context) (*Log, error) {
	if s.pending == nil {
		return nil, nil // no other writer can know of it yet
	}
	log, err := s.store.Load(ctx, s.id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !idsPrefix(s.nodeEntries(), log.Entries) {
		return nil, nil // another writer's session: ours did not land
	}
	s.deferred = false
	return log, nil
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

// idsPrefix reports whether the entries of a are, by id, the first
// entries of b.
func idsPrefix(a, b []Entry) bool {
	if len(a) > len(b) {
		return false
	}
	for i := range a {
		if a[i].id != b[i].id {
			return false
		}
	}
	return true
}
