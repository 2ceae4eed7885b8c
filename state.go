package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// State: key/value state a host keeps on a session, in three scopes, as
// google/adk-go has them.
//
//   - Session state (keys without a prefix) is recorded in the log: each
//     update appends a custom entry of type CustomState holding what
//     changed. The state at an entry is the fold of the updates on the
//     path from the root to it, so that a rewind, a branch or a fork sees
//     the state of the point it goes to (time travel, as LangGraph's
//     checkpoints give it).
//   - User state ("user:" keys) is shared by the sessions of the
//     session's Meta.User, and app state ("app:" keys) by those of its
//     Meta.App, on stores that can share it (SharedStateStore: every
//     store of this module). It is the current value, not a history: a
//     rewind does not take it back.
//
// Values are JSON. A null value in an update removes the key.

// CustomState is the customType of the entries that update session
// state.
const CustomState = "agentsession.state"

// Prefixes of state keys of the shared scopes.
const (
	UserStatePrefix = "user:"
	AppStatePrefix  = "app:"
)

// State is key/value state: JSON values by key.
type State map[string]json.RawMessage

// StateScope names a shared state scope.
type StateScope string

// Shared state scopes.
const (
	ScopeUser StateScope = "user"
	ScopeApp  StateScope = "app"
)

// CheckStateOwner validates a shared state scope and owner: stores that
// implement SharedStateStore call it first.
func CheckStateOwner(scope StateScope, owner string) error {
	if scope != ScopeUser && scope != ScopeApp {
		return fmt.Errorf("session: unknown state scope %q", scope)
	}
	if owner == "" {
		return fmt.Errorf("%w: no %s named", ErrNoSharedState, scope)
	}
	return nil
}

// StateAt returns the session state at entry id: the fold of the updates
// on the path from the root to it. ErrNotFound for an unknown id; ""
// gives the state before the first entry (empty). The fold starts from
// the nearest point of the path whose state is known (see statefold.go),
// not from the root each time.
func (s *Session) StateAt(id string) (State, error) {
	if s == nil {
		return State{}, ErrNilSession
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if id == "" {
		return State{}, nil
	}
	s.wholeNoCtx() // any entry: the whole history
	i, ok := s.t.lookup(id)
	if !ok {
		return nil, fmt.Errorf("%w: entry %s", ErrNotFound, id)
	}
	st, _ := s.foldAt(i)
	return cloneState(st), nil
}

// State returns the state at the leaf: the session state of the path to
// it, and, when the store shares state and the session has a user or an
// app, the user and app state under their prefixed keys. The state at
// the leaf is kept as entries are appended: a call costs the copy it
// returns, and the entries appended or moved past since the last.
func (s *Session) State(ctx context.Context) (State, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	if !s.leafStateKnown() {
		if err := s.whole(ctx); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	}
	st := s.leafState()
	m := HeaderMeta(s.header)
	s.mu.Unlock()
	return s.withShared(ctx, st, m)
}

// leafState returns a copy of the session state at the leaf. Callers
// hold mu.
func (s *Session) leafState() State {
	st, _ := s.foldAt(s.leaf)
	return cloneState(st)
}

// leafStateKnown reports whether the handle knows the state at its leaf:
// always when it holds the whole history; when it holds the current path
// alone (pathload.go), when the fold rests on a compaction's recorded
// state. Callers hold mu.
func (s *Session) leafStateKnown() bool {
	if !s.pathOnly {
		return true
	}
	_, _, based := s.foldAtFrom(s.leaf)
	return based
}

// withShared adds to st, the session state, the shared user and app
// state of the session's metadata m, when the store keeps it.
func (s *Session) withShared(ctx context.Context, st State, m Meta) (State, error) {
	ss, ok := findAbility[SharedStateStore](s.store)
	if !ok {
		return st, nil
	}
	for _, sc := range []struct {
		scope  StateScope
		owner  string
		prefix string
	}{{ScopeUser, m.User, UserStatePrefix}, {ScopeApp, m.App, AppStatePrefix}} {
		if sc.owner == "" {
			continue
		}
		shared, err := ss.LoadState(ctx, sc.scope, sc.owner)
		if errors.Is(err, ErrNoSharedState) {
			break // a wrapper over a store that keeps none
		}
		if err != nil {
			return nil, err
		}
		for k, v := range shared {
			st[sc.prefix+k] = v
		}
	}
	return st, nil
}

// UpdateState changes state: each value is marshalled to JSON (a nil
// value, or JSON null, removes the key). Keys without a prefix go in
// one CustomState entry under the leaf; "user:" and "app:" keys go to
// the store's shared state (ErrNoSharedState when it cannot take them;
// then nothing is changed). The shared part is written first.
func (s *Session) UpdateState(ctx context.Context, delta map[string]any) error {
	if err := s.makeWhole(ctx); err != nil {
		return err
	}
	if err := s.closedErr(ctx); err != nil {
		return err
	}
	if len(delta) == 0 {
		return errors.New("session: UpdateState with nothing to change")
	}
	own, user, app := State{}, State{}, State{}
	for k, v := range delta {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("session: state %q: %w", k, err)
		}
		switch {
		case strings.HasPrefix(k, UserStatePrefix):
			user[strings.TrimPrefix(k, UserStatePrefix)] = raw
		case strings.HasPrefix(k, AppStatePrefix):
			app[strings.TrimPrefix(k, AppStatePrefix)] = raw
		case k == "":
			return errors.New("session: state key is empty")
		default:
			own[k] = raw
		}
	}
	if len(user) > 0 || len(app) > 0 {
		ss, ok := findAbility[SharedStateStore](s.store)
		if !ok {
			return fmt.Errorf("%w: the store %T keeps none", ErrNoSharedState, s.store)
		}
		m := HeaderMeta(s.Header()) // User and App are set at creation only
		if len(user) > 0 && m.User == "" {
			return fmt.Errorf("%w: the session has no user", ErrNoSharedState)
		}
		if len(app) > 0 && m.App == "" {
			return fmt.Errorf("%w: the session has no app", ErrNoSharedState)
		}
		if len(user) > 0 {
			if err := ss.UpdateState(ctx, ScopeUser, m.User, user); err != nil {
				return err
			}
		}
		if len(app) > 0 {
			if err := ss.UpdateState(ctx, ScopeApp, m.App, app); err != nil {
				return err
			}
		}
	}
	if len(own) == 0 {
		return nil
	}
	_, err := s.AppendCustom(ctx, CustomState, own)
	return err
}

// applyState applies delta to st: null values remove their keys. Stores
// that keep shared state use it.
func applyState(st, delta State) {
	for k, v := range delta {
		if string(v) == "null" {
			delete(st, k)
			continue
		}
		st[k] = v
	}
}

// stateKeys returns the keys a CustomState entry changes, sorted.
func stateKeys(e Entry) []string {
	raw, _ := customData(e, CustomState)
	var delta State
	if json.Unmarshal(raw, &delta) != nil {
		return nil
	}
	return slices.Sorted(maps.Keys(delta))
}

// Get decodes the value of key into a T; ok is false when st has no key.
func Get[T any](st State, key string) (v T, ok bool, err error) {
	raw, ok := st[key]
	if !ok {
		return v, false, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, true, fmt.Errorf("session: state %q: %w", key, err)
	}
	return v, true, nil
}

// GetState reads key from the state at the session's leaf into a T. A
// key of the session state costs the copy of its value only.
func GetState[T any](ctx context.Context, s *Session, key string) (v T, ok bool, err error) {
	if !strings.HasPrefix(key, UserStatePrefix) && !strings.HasPrefix(key, AppStatePrefix) {
		if err := s.lock(ctx); err != nil {
			return v, false, err
		}
		if !s.leafStateKnown() {
			if err := s.whole(ctx); err != nil {
				s.mu.Unlock()
				return v, false, err
			}
		}
		raw, ok := s.stateValue(key)
		s.mu.Unlock()
		if !ok {
			return v, false, nil
		}
		return Get[T](State{key: raw}, key)
	}
	st, err := s.State(ctx)
	if err != nil {
		return v, false, err
	}
	return Get[T](st, key)
}

// SetState sets key to v (see UpdateState).
func SetState[T any](ctx context.Context, s *Session, key string, v T) error {
	return s.UpdateState(ctx, map[string]any{key: v})
}
