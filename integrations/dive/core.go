package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/deepnoodle-ai/dive"
	"github.com/deepnoodle-ai/dive/llm"

	as "github.com/agentsession/session"
)

// The places this package uses agentsession's turn records
// (SaveTurnWith, TurnRecords) and suspensions (Suspend, Suspended,
// EndSuspension).

// turnRec is what this package keeps of a Dive turn (one of Dive's
// "events") in agentsession's turn record.
type turnRec struct {
	ID string
	// Usage is the usage of this attempt at the turn alone: what
	// agentsession counts (Session.Usage, on every branch).
	Usage *llm.Usage
	// Replaced is the usage of the attempts this one replaced (a
	// suspended turn, resumed): Dive counts it in the turn's, and it is
	// counted by agentsession on their branches already.
	Replaced *llm.Usage
	Metadata map[string]any
}

// replacedKey is the member of a turn record's metadata that holds the
// usage of the attempts the turn replaced (Dive's usage JSON). The other
// members are Dive's event metadata.
const replacedKey = "dive.replacedUsage"

// turnOptions returns the options that record t.
func turnOptions(t *turnRec) (*as.TurnOptions, error) {
	o := &as.TurnOptions{ID: t.ID}
	u, err := toUsage(t.Usage)
	if err != nil {
		return nil, err
	}
	o.Usage = u
	meta := t.Metadata
	if t.Replaced != nil {
		meta = maps.Clone(meta)
		if meta == nil {
			meta = map[string]any{}
		}
		meta[replacedKey] = t.Replaced
	}
	if meta != nil {
		raw, err := json.Marshal(meta)
		if err != nil {
			return nil, err
		}
		o.Metadata = raw
	}
	return o, nil
}

// saveTurn appends the messages of a turn and its record, in one write.
func saveTurn(ctx context.Context, s *as.Session, msgs []*as.Message, t *turnRec) error {
	o, err := turnOptions(t)
	if err != nil {
		return err
	}
	return s.SaveTurnWith(ctx, msgs, o)
}

// ErrNothingPending is returned by SaveSuspendedTurn for a turn none of
// whose tool calls awaits a result: there is nothing to suspend.
var ErrNothingPending = errors.New("dive session: the suspended turn has no tool call awaiting a result")

// saveSuspended appends a suspended turn in one write: its messages, its
// record, and a suspension of every call of its last assistant message
// that has no result in the turn (those Dive waits for, with their prompt
// and metadata, and those it has not run yet, which must stay pending
// too), with Dive's SuspensionState (but its TurnMessages) as the state.
// The core puts the suspension right after the results, before the user
// messages that follow them (a hook's added context).
func saveSuspended(ctx context.Context, s *as.Session, msgs []*as.Message, t *turnRec, state *dive.SuspensionState) error {
	last := -1 // the last assistant message
	for k, m := range msgs {
		if m.Role == as.RoleAssistant {
			last = k
		}
	}
	if last < 0 {
		return ErrNothingPending
	}
	head := last + 1
	answered := map[string]bool{}
	for head < len(msgs) && msgs[head].Role == as.RoleToolResult {
		answered[msgs[head].ToolCallID] = true
		head++
	}
	for _, m := range msgs[head:] {
		if m.Role != as.RoleUser {
			return fmt.Errorf("dive session: a suspended turn ends with its last assistant message's results and user messages, not a %s message", m.Role)
		}
	}
	pending := map[string]*dive.PendingToolCall{}
	var reason string
	if state != nil {
		for _, p := range state.PendingToolCalls {
			if p != nil {
				pending[p.ID] = p
				if reason == "" {
					reason = string(p.Reason)
				}
			}
		}
	}
	sp := &as.Suspension{Reason: reason}
	for _, b := range msgs[last].ToolCalls() {
		if answered[b.ID] {
			continue
		}
		c := as.SuspendedCall{CallID: b.ID, Name: b.Name}
		if p := pending[b.ID]; p != nil {
			c.Prompt = p.Prompt
			if p.Metadata != nil {
				raw, err := json.Marshal(p.Metadata)
				if err != nil {
					return err
				}
				c.Metadata = raw
			}
		}
		sp.Calls = append(sp.Calls, c)
	}
	if len(sp.Calls) == 0 {
		return ErrNothingPending
	}
	if state != nil {
		raw, err := json.Marshal(dive.SuspensionState{PendingToolCalls: state.PendingToolCalls, CompletedToolCalls: state.CompletedToolCalls})
		if err != nil {
			return err
		}
		sp.State = raw
	}
	o, err := turnOptions(t)
	if err != nil {
		return err
	}
	o.Suspension = sp
	return s.SaveTurnWith(ctx, msgs, o)
}

// suspended is the suspension in force at the leaf, with the record of
// the suspended turn.
type suspended struct {
	view *as.SuspensionView
	turn *as.TurnRecord // nil if the turn has no record (another host's)
}

// suspendedAt returns the suspension in force at the leaf, or nil.
func suspendedAt(s *as.Session) *suspended {
	v := s.Suspended()
	if v == nil {
		return nil
	}
	sp := &suspended{view: v}
	// The suspended turn's record: the last one whose turn began before
	// the suspension (a turn saved with its suspension has its record
	// after it, at the end of the write; one suspended later, before it).
	path, err := s.PathTo(s.LeafID())
	if err != nil {
		return sp
	}
	at := slices.IndexFunc(path, func(e as.Entry) bool { return e.ID() == v.EntryID })
	if at < 0 {
		return sp
	}
	recs := s.TurnRecords()
	for k := len(recs) - 1; k >= 0; k-- {
		first := recs[k].FirstEntryID
		if first == "" {
			first = recs[k].EntryID
		}
		if i := slices.IndexFunc(path[:at], func(e as.Entry) bool { return e.ID() == first }); i >= 0 {
			sp.turn = &recs[k]
			break
		}
	}
	return sp
}

// turnStart returns the entry that began the suspended turn: its
// record's first message, else agentsession's TurnStart.
func (sp *suspended) turnStart() string {
	if sp.turn != nil && sp.turn.FirstEntryID != "" {
		return sp.turn.FirstEntryID
	}
	if sp.turn != nil {
		return sp.turn.EntryID
	}
	return sp.view.TurnStart
}

// endSuspension ends the suspension sp (outcome as.SuspensionCancelled or
// as.SuspensionReplaced) and moves the leaf back to before its turn, as if
// the turn had never happened, in one write. A Dive turn may begin before
// the last user message before the suspended calls (several input
// messages, or a hook's text after an earlier round of results): the
// turn's record names its first message.
func endSuspension(ctx context.Context, s *as.Session, sp *suspended, outcome string) error {
	return s.EndSuspension(ctx, &as.EndSuspensionOptions{Outcome: outcome, Rewind: true, TurnStart: sp.turnStart()})
}

// turnUsage returns the usage of a turn: its record's, or (agentsession
// puts a turn's usage on its last assistant message) that message's.
func turnUsage(s *as.Session, r *as.TurnRecord) *llm.Usage {
	if r.Usage != nil {
		return fromUsage(r.Usage)
	}
	e, ok := s.Entry(r.EntryID)
	for ok && e.ID() != r.FirstEntryID {
		if e, ok = s.Entry(e.ParentID()); !ok {
			break
		}
		if e.Type() != as.TypeMessage {
			continue
		}
		if m, err := e.Message(); err == nil && m.Role == as.RoleAssistant {
			return fromUsage(m.Usage)
		}
	}
	return nil
}

// diveTurnUsage returns the usage Dive counts for a turn: its own, and
// that of the attempts it replaced.
func diveTurnUsage(s *as.Session, r *as.TurnRecord) *llm.Usage {
	own := turnUsage(s, r)
	var m struct {
		Replaced *llm.Usage `json:"dive.replacedUsage"`
	}
	if len(r.Metadata) == 0 || json.Unmarshal(r.Metadata, &m) != nil || m.Replaced == nil {
		return own
	}
	total := &llm.Usage{}
	total.Add(m.Replaced)
	total.Add(own)
	return total
}
