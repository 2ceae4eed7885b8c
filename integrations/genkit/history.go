package genkitstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	session "github.com/agentsession/session"
	gksession "github.com/firebase/genkit/go/core/x/session"
)

// Version is one value a session's data had: what one Save stored.
type Version[S any] struct {
	// EntryID is the id of the session's state entry that holds it
	// (session.CustomState): Session.StateAt(EntryID), a label or a
	// checkpoint can name it.
	EntryID string
	// Time is when it was saved.
	Time time.Time
	// Data is the data saved.
	Data *gksession.Data[S]
}

// History returns the values sessionID's data had on the path to the
// session's leaf, oldest first, the last being what Get returns; none
// when there is no such session or no data was saved in it. Every Save
// is one: nothing a Save replaced is lost. Saves by writers that raced
// each other on one session may stand on branches of their own, off the
// path (the session's Tree shows them).
func (st *Store[S]) History(ctx context.Context, sessionID string) ([]Version[S], error) {
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
	path, err := h.s.PathTo(h.s.LeafID())
	if err != nil {
		return nil, fmt.Errorf("genkitstore: session %q: %w", sessionID, err)
	}
	var out []Version[S]
	for _, e := range path {
		if e.Type() != session.TypeCustom {
			continue
		}
		var c session.Custom
		if err := e.Decode(&c); err != nil || c.CustomType != session.CustomState {
			continue
		}
		var delta session.State
		if json.Unmarshal(c.Data, &delta) != nil {
			continue // not a state update: the fold skips it too
		}
		raw, ok := delta[st.key]
		if !ok || string(raw) == "null" {
			continue
		}
		d, err := st.decode(sessionID, raw)
		if err != nil {
			return nil, fmt.Errorf("entry %s: %w", e.ID(), err)
		}
		out = append(out, Version[S]{EntryID: e.ID(), Time: e.Time(), Data: d})
	}
	return out, nil
}
