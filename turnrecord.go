package session

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// Turn records: what a host knows of a turn beyond its messages (its own
// id, its usage, its metadata), kept in a custom entry (CustomTurn) that
// SaveTurnWith writes after the turn's messages, in the same write. Seed
// readers (pi) skip it like any custom entry.

// CustomTurn is the customType of turn records.
const CustomTurn = "agentsession.turn"

// TurnOptions is what SaveTurnWith keeps of a turn beside its messages.
type TurnOptions struct {
	// ID is the host's id of the turn.
	ID string
	// Usage is the turn's usage. It is recorded once: on the turn's last
	// assistant message when that message carries none (where the seed
	// agents read it); otherwise in the turn record, counted by
	// Session.Usage when the turn has no assistant message, and kept but
	// not counted (TurnRecord.Counted false) when the message carries
	// usage of its own, which the turn's most likely repeats.
	Usage *Usage
	// Metadata is the host's JSON about the turn.
	Metadata json.RawMessage
	// Suspension, when set, suspends calls of the turn's last assistant
	// message in the same write (see Session.Suspend): its entry goes
	// right after that message's results, before any message that
	// follows them (a person's answer, a hook's text). Its Calls must be
	// calls of that message the turn does not answer; none means all of
	// them.
	Suspension *Suspension
}

// TurnRecord is a turn record on the path (TurnRecords).
type TurnRecord struct {
	EntryID string // the record's entry
	ID      string // TurnOptions.ID
	// FirstEntryID is the turn's first message's entry ("" for a record
	// of usage alone).
	FirstEntryID string
	// Usage is the usage the record holds: nil when the turn's assistant
	// message took it; the turn had none (Counted), or its message had
	// usage of its own (the host's report, kept, not counted).
	Usage *Usage
	// Counted says Session.Usage counts Usage (the turn had no assistant
	// message to hold it).
	Counted  bool
	Metadata json.RawMessage
}

// turnData is a turn record's data.
type turnData struct {
	ID       string          `json:"turnId,omitempty"`
	First    string          `json:"firstEntryId,omitempty"`
	Usage    *Usage          `json:"usage,omitempty"`         // counted
	Reported *Usage          `json:"reportedUsage,omitempty"` // kept, not counted
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// SaveTurnWith is SaveTurn keeping the turn's id, usage and metadata (see
// TurnOptions): all or nothing, retried once as SaveTurn is. With no
// messages, a record of the options alone is written; with neither,
// nothing.
func (s *Session) SaveTurnWith(ctx context.Context, msgs []*Message, o *TurnOptions) error {
	if len(msgs) == 0 && (o == nil || (o.ID == "" && o.Usage == nil && len(o.Metadata) == 0)) {
		return s.closedErr(ctx)
	}
	if o != nil && o.Suspension != nil && len(msgs) == 0 {
		return fmt.Errorf("%w: a turn's suspension needs the turn's messages", ErrNotSuspended)
	}
	_, err := s.appendMessages(ctx, msgs, o)
	return err
}

// TurnRecords returns the turn records on the path from the root to the
// leaf, oldest first. It walks the path.
func (s *Session) TurnRecords() []TurnRecord {
	s.mu.Lock()
	s.wholeNoCtx()
	defer s.mu.Unlock()
	var out []TurnRecord
	for _, i := range s.leafCtx().path {
		e := s.t.nodes[i].e
		d, ok := decodeCustom[turnData](e, CustomTurn)
		if !ok {
			continue
		}
		r := TurnRecord{EntryID: e.id, ID: d.ID, FirstEntryID: d.First, Usage: d.Usage, Counted: d.Usage != nil, Metadata: d.Metadata}
		if d.Usage == nil {
			r.Usage = d.Reported
		}
		out = append(out, r)
	}
	return out
}

// turnUsage returns the counted usage of a turn record.
func turnUsage(e Entry) (*Usage, bool) {
	d, ok := decodeCustom[turnData](e, CustomTurn)
	if !ok || d.Usage == nil {
		return nil, false
	}
	return d.Usage, true
}

// EntryUsage returns the usage entry e counts in Session.Usage: an
// assistant message's, or a turn record's that no message holds; ok is
// false for any other entry. For tools that tally usage entry by entry.
func EntryUsage(e Entry) (u Usage, ok bool) {
	if tu, ok := turnUsage(e); ok {
		return *tu, true
	}
	if e.kind != kindMessage {
		return Usage{}, false
	}
	m, err := e.Message()
	if err != nil || m.Role != RoleAssistant || m.Usage == nil {
		return Usage{}, false
	}
	return *m.Usage, true
}

// turnSuspension places a turn's suspension (TurnOptions.Suspension): it
// returns the suspension to write, its Calls filled in, and the index in
// own after which its entry goes (after the last assistant message's
// results).
func turnSuspension(own []*Message, sp *Suspension) (*Suspension, int, error) {
	last := -1
	for k, m := range own {
		if m.Role == RoleAssistant {
			last = k
		}
	}
	if last < 0 {
		return nil, 0, fmt.Errorf("%w: the turn has no assistant message whose calls to suspend", ErrNotSuspended)
	}
	at := last
	answered := map[string]bool{}
	for at+1 < len(own) && own[at+1].Role == RoleToolResult {
		at++
		answered[own[at].ToolCallID] = true
	}
	for _, m := range own[at+1:] {
		if m.Role == RoleToolResult && !answered[m.ToolCallID] {
			answered[m.ToolCallID] = true // a result that comes later in the turn
		}
	}
	var open []Block
	for _, b := range own[last].ToolCalls() {
		if !answered[b.ID] {
			open = append(open, b)
		}
	}
	c := *sp
	c.Calls = slices.Clone(sp.Calls)
	if len(c.Calls) == 0 {
		for _, b := range open {
			c.Calls = append(c.Calls, SuspendedCall{CallID: b.ID})
		}
	}
	if len(c.Calls) == 0 {
		return nil, 0, fmt.Errorf("%w: no call of the turn's last assistant message is left unanswered", ErrNotSuspended)
	}
	for k := range c.Calls {
		i := slices.IndexFunc(open, func(b Block) bool { return b.ID == c.Calls[k].CallID })
		if i < 0 {
			return nil, 0, fmt.Errorf("session: suspend: call %q is not an unanswered call of the turn's last assistant message", c.Calls[k].CallID)
		}
		if c.Calls[k].Name == "" {
			c.Calls[k].Name = open[i].Name
		}
	}
	return &c, at, nil
}
