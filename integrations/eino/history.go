package eino

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	session "github.com/agentsession/session"
)

// Revision is one value a checkpoint had: what one Set stored.
type Revision struct {
	// EntryID is the id of the session entry that stored it.
	EntryID string
	// Time is when it was stored.
	Time time.Time
	// Data is the checkpoint's bytes.
	Data []byte
}

// History returns the values checkPointID had, oldest first, the last
// being what Get returns: each Set's value, on the path of its session to
// the leaf. None (and no error) for a checkpoint never set. A value Set
// did not write fails it with an error wrapping ErrCorruptCheckPoint.
func (s *Store) History(ctx context.Context, checkPointID string) ([]Revision, error) {
	var revs []Revision
	err := s.with(ctx, checkPointID, false, func(sess *session.Session) error {
		path, err := sess.PathTo(sess.LeafID())
		if err != nil {
			return fmt.Errorf("eino: checkpoint %q: %w", checkPointID, err)
		}
		for _, e := range path {
			raw, ok := stateValue(e)
			if !ok || string(raw) == "null" { // null: a removal, by another writer of the state
				continue
			}
			b, err := decodeValue(raw)
			if err != nil {
				return fmt.Errorf("eino: checkpoint %q, entry %s: %w", checkPointID, e.ID(), err)
			}
			revs = append(revs, Revision{EntryID: e.ID(), Time: e.Time(), Data: b})
		}
		return nil
	})
	return revs, err
}

// stateValue returns the value of StateKey an entry sets, if it is a
// state update that changes it.
func stateValue(e session.Entry) (json.RawMessage, bool) {
	if e.Type() != session.TypeCustom {
		return nil, false
	}
	ct, ok := e.Field("customType")
	if !ok {
		return nil, false
	}
	var name string
	if json.Unmarshal(ct, &name) != nil || name != session.CustomState {
		return nil, false
	}
	data, ok := e.Field("data")
	if !ok {
		return nil, false
	}
	var delta session.State
	if json.Unmarshal(data, &delta) != nil {
		return nil, false
	}
	raw, ok := delta[StateKey]
	return raw, ok
}
