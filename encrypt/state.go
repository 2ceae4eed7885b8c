package encrypt

import (
	"context"
	"encoding/json"
	"fmt"

	session "github.com/agentsession/session"
)

// Shared state (session.SharedStateStore): the state of a user or an
// app, kept by the store beneath with each value sealed.

var _ session.SharedStateStore = (*Store)(nil)

// stateOwner is what the keys of a scope's state are derived for: a
// string no session id can be (ids have no NUL).
func stateOwner(scope session.StateScope, owner string) string {
	return "state\x00" + string(scope) + "\x00" + owner
}

// LoadState implements session.SharedStateStore with the store's
// (session.ErrNoSharedState when it keeps none), opening every value.
// A value the store holds in clear (written without the middleware) is
// returned as it is, or refused by a strict store (*UnsealedError).
func (s *Store) LoadState(ctx context.Context, scope session.StateScope, owner string) (session.State, error) {
	ss, err := s.shared()
	if err != nil {
		return nil, err
	}
	st, err := ss.LoadState(ctx, scope, owner)
	if err != nil {
		return nil, err
	}
	for k, v := range st {
		var t string
		if json.Unmarshal(v, &t) != nil || !isSealedTitle(t) {
			if s.strict {
				return nil, &UnsealedError{Session: string(scope) + " " + owner, Entry: "state " + k, What: "shared state value"}
			}
			continue
		}
		pt, key, err := s.keys.openValue(stateOwner(scope, owner), "state", t, k)
		if err != nil {
			return nil, &OpenError{Session: string(scope) + " " + owner, Entry: "state " + k, Key: key, Err: err}
		}
		st[k] = pt
	}
	return st, nil
}

// UpdateState implements session.SharedStateStore: each value is sealed
// (the keys stay in clear) before the store beneath sees it.
func (s *Store) UpdateState(ctx context.Context, scope session.StateScope, owner string, delta session.State) error {
	ss, err := s.shared()
	if err != nil {
		return err
	}
	out := make(session.State, len(delta))
	for k, v := range delta {
		if string(v) == "null" {
			out[k] = v
			continue
		}
		t, err := s.keys.sealValue(stateOwner(scope, owner), "state", v, k)
		if err != nil {
			return err
		}
		out[k], _ = json.Marshal(t)
	}
	return ss.UpdateState(ctx, scope, owner, out)
}

func (s *Store) shared() (session.SharedStateStore, error) {
	ss, ok := s.Inner().(session.SharedStateStore)
	if !ok {
		return nil, fmt.Errorf("%w: %T keeps none", session.ErrNoSharedState, s.Inner())
	}
	return ss, nil
}
