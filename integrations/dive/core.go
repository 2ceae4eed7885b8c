package session

import (
	"context"
	"encoding/json"
	"time"

	"github.com/deepnoodle-ai/dive/llm"

	as "github.com/agentsession/session"
)

// The few places that use agentsession's turn records and suspensions.
//
// INTERIM: custom entries stand in for the typed turn and suspension
// entries the core is getting (SaveTurnWith, Suspend, EndSuspension);
// this file is all that changes when they land.

const (
	customTurn    = "dive.turn"
	customSuspend = "dive.suspend"
)

// turnRec is the record of one Dive turn (one of Dive's "events").
type turnRec struct {
	ID       string
	Usage    *llm.Usage
	Metadata map[string]any
	// First is the turn's first entry ("" for a turn without messages),
	// Entry the entry that records the turn, At its time.
	First, Entry string
	At           time.Time
}

type turnData struct {
	ID       string          `json:"id"`
	First    string          `json:"first,omitempty"`
	Usage    json.RawMessage `json:"usage,omitempty"`
	Metadata map[string]any  `json:"metadata,omitempty"`
}

// saveTurn appends the messages of a turn and its record.
func saveTurn(ctx context.Context, s *as.Session, msgs []*as.Message, t *turnRec) error {
	if len(msgs) > 0 {
		if err := s.SaveTurn(ctx, msgs, nil); err != nil {
			return err
		}
	}
	d := turnData{ID: t.ID, Metadata: t.Metadata}
	if len(msgs) > 0 {
		id := s.LeafID()
		for k := 1; k < len(msgs); k++ {
			e, _ := s.Entry(id)
			id = e.ParentID()
		}
		d.First = id
	}
	if t.Usage != nil {
		raw, err := json.Marshal(t.Usage)
		if err != nil {
			return err
		}
		d.Usage = raw
	}
	_, err := s.AppendCustom(ctx, customTurn, d)
	return err
}

// pathItem is an entry of the path to the leaf that this package reads:
// a turn record, a compaction or a suspension.
type pathItem struct {
	entry as.Entry
	turn  *turnRec
	comp  *as.Compaction
	susp  *suspension
}

// pathItems returns the turn records, compactions and suspensions on the
// path to the leaf, in order.
func pathItems(s *as.Session) ([]pathItem, error) {
	path, err := s.PathTo(s.LeafID())
	if err != nil || len(path) == 0 {
		return nil, err
	}
	var items []pathItem
	for _, e := range path {
		it, ok, err := itemOf(e)
		if err != nil {
			return nil, err
		}
		if ok {
			items = append(items, it)
		}
	}
	return items, nil
}

// itemOf returns the item entry e is, if it is one.
func itemOf(e as.Entry) (pathItem, bool, error) {
	switch e.Type() {
	case as.TypeCompaction:
		var c as.Compaction
		if err := e.Decode(&c); err != nil {
			return pathItem{}, false, err
		}
		return pathItem{entry: e, comp: &c}, true, nil
	case as.TypeCustom:
		var c as.Custom
		if err := e.Decode(&c); err != nil {
			return pathItem{}, false, nil
		}
		switch c.CustomType {
		case customTurn:
			var d turnData
			if err := json.Unmarshal(c.Data, &d); err != nil {
				return pathItem{}, false, err
			}
			t := &turnRec{ID: d.ID, Metadata: d.Metadata, First: d.First, Entry: e.ID(), At: e.Time()}
			if d.Usage != nil {
				t.Usage = new(llm.Usage)
				if err := json.Unmarshal(d.Usage, t.Usage); err != nil {
					return pathItem{}, false, err
				}
			}
			return pathItem{entry: e, turn: t}, true, nil
		case customSuspend:
			var sp suspension
			if err := json.Unmarshal(c.Data, &sp); err != nil {
				return pathItem{}, false, err
			}
			sp.Entry = e.ID()
			return pathItem{entry: e, susp: &sp}, true, nil
		}
	}
	return pathItem{}, false, nil
}

// suspension is a suspended turn: the calls awaiting results, and Dive's
// SuspensionState (without its TurnMessages, which the session holds) as
// State.
type suspension struct {
	Calls []string        `json:"calls"`
	State json.RawMessage `json:"state,omitempty"`
	// Entry is the suspension's entry; Turn the record of the suspended
	// turn.
	Entry string   `json:"-"`
	Turn  *turnRec `json:"-"`
}

// suspendedAt returns the suspension in force at the leaf, or nil.
func suspendedAt(items []pathItem) *suspension {
	for k := len(items) - 1; k >= 0; k-- {
		switch it := items[k]; {
		case it.susp != nil:
			sp := *it.susp
			for j := k - 1; j >= 0; j-- {
				if items[j].turn != nil {
					sp.Turn = items[j].turn
					break
				}
			}
			return &sp
		case it.turn != nil, it.comp != nil:
			return nil
		}
	}
	return nil
}

// suspend records that the calls of the leaf's turn await results.
func suspend(ctx context.Context, s *as.Session, calls []string, state json.RawMessage) error {
	_, err := s.AppendCustom(ctx, customSuspend, suspension{Calls: calls, State: state})
	return err
}

// endSuspension ends the suspension sp and moves the leaf to before its
// turn, as if the turn had never happened.
func endSuspension(ctx context.Context, s *as.Session, sp *suspension) error {
	to := ""
	if sp.Turn != nil && sp.Turn.First != "" {
		e, _ := s.Entry(sp.Turn.First)
		to = e.ParentID()
	} else if sp.Turn != nil {
		e, _ := s.Entry(sp.Turn.Entry)
		to = e.ParentID()
	}
	return s.Branch(ctx, to)
}

// flatLayout makes a FileStore keep a session at <root>/<id>.jsonl.
func flatLayout(o *as.FileStoreOptions) {
	// INTERIM: FileStoreOptions.Layout (LayoutFlat) is coming.
}
