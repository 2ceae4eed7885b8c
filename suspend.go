package session

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// Suspended tool calls: a host pauses calls on purpose (waiting for a
// person's approval, or for a long job) and resumes them later, perhaps
// in another process. The log records it in custom entries, which seed
// readers (pi) skip like any custom entry:
//
//   - a suspension (CustomSuspension) names the calls paused, what a
//     person is asked, and the host's own resume state;
//   - decisions (CustomDecision) record approvals and refusals;
//   - an end (CustomSuspensionEnd) records a suspended attempt given up
//     or replaced, on the branch left behind.
//
// A suspended call stays pending: the model view gives it no failure when
// the conversation goes on (messages that come meanwhile wait behind it),
// and its result pairs with it whenever it is appended. This is the shape
// of OpenAI Agents' RunState approvals, LangGraph's interrupts and
// adk-go's tool confirmations, and what Dive's SuspendableSession needs.

// The customTypes of the suspension entries.
const (
	CustomSuspension    = "agentsession.suspension"
	CustomDecision      = "agentsession.decision"
	CustomSuspensionEnd = "agentsession.suspension_end"
)

// Outcomes of EndSuspension.
const (
	SuspensionCancelled = "cancelled"
	SuspensionReplaced  = "replaced"
)

// SuspendedResultText is the text of the placeholder result a suspended
// call gets in the model view when messages must follow it before its
// result has come (Message.Synthetic, not an error).
const SuspendedResultText = "This tool call is suspended: its result has not come yet."

// Suspension is the data of a CustomSuspension entry.
type Suspension struct {
	// Calls are the calls paused; Suspend fills an empty list with every
	// pending call of the leaf, and each Name from its call.
	Calls  []SuspendedCall `json:"calls"`
	Reason string          `json:"reason,omitempty"`
	// State is the host's own resume state, kept verbatim (a JSON value).
	State json.RawMessage `json:"state,omitempty"`
}

// SuspendedCall is one paused tool call.
type SuspendedCall struct {
	CallID string `json:"callId"`
	Name   string `json:"name,omitempty"`
	// Prompt is what a person is asked about the call.
	Prompt string `json:"prompt,omitempty"`
	// Approval says the call waits for a decision (Decide).
	Approval bool            `json:"approval,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// Decision is the data of a CustomDecision entry: a person's (or a
// policy's) answer about a suspended call.
type Decision struct {
	CallID   string `json:"callId"`
	Approved bool   `json:"approved"`
	By       string `json:"by,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Arguments, when set, are the call's arguments as edited by the one
	// who decided (a JSON object).
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// SuspensionEnd is the data of a CustomSuspensionEnd entry.
type SuspensionEnd struct {
	Outcome string   `json:"outcome"`
	Reason  string   `json:"reason,omitempty"`
	CallIDs []string `json:"callIds"`
}

// SuspensionView is the suspension in force at the leaf: the latest one
// on the path with a call still pending.
type SuspensionView struct {
	// EntryID is the suspension entry's.
	EntryID string
	Suspension
	// Pending are the suspended calls still without a result.
	Pending []ToolCallRef
	// Decisions recorded since the suspension, oldest first.
	Decisions []Decision
	// TurnStart is the entry that began the suspended turn: the last user
	// message before the suspended calls' assistant message ("" if none).
	TurnStart string
}

// EndSuspensionOptions says how EndSuspension ends a suspension.
type EndSuspensionOptions struct {
	// Outcome is SuspensionCancelled (the default) or SuspensionReplaced.
	Outcome string
	Reason  string
	// Rewind gives the attempt up as if the turn had not happened: an end
	// entry is written on its branch and the leaf goes back to before
	// TurnStart (in one write), where the host writes the turn anew.
	// Without it, each suspended call is answered with an error result
	// saying it was cancelled, and the session goes on from there.
	Rewind bool
	// TurnStart, with Rewind, names the entry that began the turn when
	// the host knows better than SuspensionView.TurnStart (a turn of
	// several user messages, say): the leaf goes back to before it. It
	// must be on the path, at or before the suspended calls' message.
	TurnStart string
}

// suspensionOf decodes a CustomSuspension entry.
func suspensionOf(e Entry) (Suspension, bool) { return decodeCustom[Suspension](e, CustomSuspension) }

// decodeCustom decodes the data of a custom entry of customType typ.
func decodeCustom[T any](e Entry, typ string) (T, bool) {
	var v T
	d, ok := customData(e, typ)
	if !ok {
		return v, false
	}
	return v, json.Unmarshal(d, &v) == nil
}

// Suspend records that calls of the leaf's last assistant message are
// paused on purpose. Each call must be pending (no result yet); with no
// Calls, every pending call is. It fails with ErrNotSuspended when no call
// is pending.
func (s *Session) Suspend(ctx context.Context, sp *Suspension) (Entry, error) {
	if err := s.makeWhole(ctx); err != nil {
		return Entry{}, err
	}
	if sp == nil {
		sp = &Suspension{}
	}
	if err := s.lock(ctx); err != nil {
		return Entry{}, err
	}
	defer s.mu.Unlock()
	pc := s.leafCtx()
	open := pc.pair.open
	if len(open) == 0 {
		return Entry{}, fmt.Errorf("%w: no tool call is pending at the leaf", ErrNotSuspended)
	}
	c := *sp
	c.Calls = slices.Clone(sp.Calls)
	if len(c.Calls) == 0 {
		for _, o := range open {
			c.Calls = append(c.Calls, SuspendedCall{CallID: o.ref.CallID})
		}
	}
	for k := range c.Calls {
		i := slices.IndexFunc(open, func(o openCall) bool { return o.ref.CallID == c.Calls[k].CallID })
		if i < 0 {
			return Entry{}, fmt.Errorf("session: suspend: call %q is not pending at the leaf", c.Calls[k].CallID)
		}
		if c.Calls[k].Name == "" {
			c.Calls[k].Name = open[i].ref.Name
		}
	}
	return s.appendCustomLocked(ctx, CustomSuspension, c)
}

// appendCustomLocked appends a custom entry under the leaf; callers hold mu.
func (s *Session) appendCustomLocked(ctx context.Context, typ string, data any) (Entry, error) {
	raw, err := marshalRaw(data)
	if err != nil {
		return Entry{}, err
	}
	return s.appendEntryLocked(ctx, TypeCustom, Custom{CustomType: typ, Data: raw})
}

// Suspended returns the suspension in force at the leaf, nil when no
// suspended call is pending there.
func (s *Session) Suspended() *SuspensionView {
	s.mu.Lock()
	s.wholeNoCtx()
	defer s.mu.Unlock()
	return s.suspendedLocked()
}

func (s *Session) suspendedLocked() *SuspensionView {
	pc := s.leafCtx()
	pending := pc.pair.suspendedOpen()
	if len(pending) == 0 {
		return nil
	}
	// The latest suspension with a call still pending, its decisions, and
	// its pending calls.
	v := &SuspensionView{}
	var decisions []Decision
	path := pc.path
	for pos := len(path) - 1; pos >= 0 && v.EntryID == ""; pos-- {
		e := s.t.nodes[path[pos]].e
		if d, ok := decodeCustom[Decision](e, CustomDecision); ok {
			decisions = append(decisions, d)
			continue
		}
		sp, ok := suspensionOf(e)
		if !ok {
			continue
		}
		for _, p := range pending {
			if slices.ContainsFunc(sp.Calls, func(c SuspendedCall) bool { return c.CallID == p.CallID }) {
				v.Pending = append(v.Pending, p)
			}
		}
		if len(v.Pending) > 0 {
			v.EntryID, v.Suspension = e.id, sp
		}
	}
	if v.EntryID == "" {
		return nil // marks without their entry (a compaction kept them out)
	}
	slices.Reverse(decisions)
	for _, d := range decisions {
		if slices.ContainsFunc(v.Calls, func(c SuspendedCall) bool { return c.CallID == d.CallID }) {
			v.Decisions = append(v.Decisions, d)
		}
	}
	// The turn began with the last user message before the calls'.
	if at, ok := s.t.lookup(v.Pending[0].EntryID); ok {
		for p := s.t.nodes[at].parent; p >= 0; p = s.t.nodes[p].parent {
			if m := s.t.contextMessage(p); m != nil && m.Role == RoleUser {
				v.TurnStart = s.t.nodes[p].e.id
				break
			}
		}
	}
	return v
}

// Decide records a decision about a suspended call of the leaf.
func (s *Session) Decide(ctx context.Context, d Decision) (Entry, error) {
	if err := s.makeWhole(ctx); err != nil {
		return Entry{}, err
	}
	if err := s.lock(ctx); err != nil {
		return Entry{}, err
	}
	defer s.mu.Unlock()
	v := s.suspendedLocked()
	if v == nil || !slices.ContainsFunc(v.Pending, func(r ToolCallRef) bool { return r.CallID == d.CallID }) {
		return Entry{}, fmt.Errorf("%w: call %q", ErrNotSuspended, d.CallID)
	}
	if len(d.Arguments) > 0 && !json.Valid(d.Arguments) {
		return Entry{}, fmt.Errorf("session: decision for %q: arguments are not JSON", d.CallID)
	}
	return s.appendCustomLocked(ctx, CustomDecision, d)
}

// EndSuspension ends the suspension in force at the leaf (Suspended; see
// EndSuspensionOptions), ErrNotSuspended when there is none (also for
// the retry of a call whose first attempt landed though it failed).
func (s *Session) EndSuspension(ctx context.Context, o *EndSuspensionOptions) error {
	if err := s.makeWhole(ctx); err != nil {
		return err
	}
	if o == nil {
		o = &EndSuspensionOptions{}
	}
	outcome := o.Outcome
	if outcome == "" {
		outcome = SuspensionCancelled
	}
	if outcome != SuspensionCancelled && outcome != SuspensionReplaced {
		return fmt.Errorf("session: end suspension: unknown outcome %q", o.Outcome)
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	v := s.suspendedLocked()
	if v == nil {
		return ErrNotSuspended
	}
	if !o.Rewind {
		text := "The tool call was " + outcome + " while suspended."
		if o.Reason != "" {
			text += " Reason: " + o.Reason
		}
		msgs := make([]*Message, len(v.Pending))
		for k, c := range v.Pending {
			msgs[k] = ToolError(c.CallID, c.Name, text)
		}
		// All or nothing, paired strictly whatever the handle's setting:
		// a call another writer answered meanwhile makes it fail
		// (ErrUnpairedToolResult) rather than be answered twice.
		_, err := s.appendMessagesLocked(ctx, msgs, nil, true)
		return err
	}
	end := SuspensionEnd{Outcome: outcome, Reason: o.Reason}
	for _, c := range v.Pending {
		end.CallIDs = append(end.CallIDs, c.CallID)
	}
	raw, err := marshalRaw(end)
	if err != nil {
		return err
	}
	// Back to before the turn: TurnStart's parent, or the calls' message's.
	from := v.TurnStart
	if o.TurnStart != "" {
		i, ok := s.t.lookup(o.TurnStart)
		c, _ := s.t.lookup(v.Pending[0].EntryID)
		if !ok || !slices.Contains(s.t.pathTo(c), i) {
			return fmt.Errorf("session: end suspension: turn start %q is not on the path to the suspended calls", o.TurnStart)
		}
		from = o.TurnStart
	}
	if from == "" {
		from = v.Pending[0].EntryID
	}
	target := ""
	if i, ok := s.t.lookup(from); ok && s.t.nodes[i].parent >= 0 {
		target = s.t.nodes[s.t.nodes[i].parent].e.id
	}
	// The end entry on the attempt's branch and the leaf's move are one
	// write: no crash leaves one without the other.
	_, err = s.commit(ctx, s.leafID, func(d *draft) ([]Entry, error) {
		e, err := NewEntry(TypeCustom, d.newID(), d.parent, d.now, Custom{CustomType: CustomSuspensionEnd, Data: raw})
		if err != nil {
			return nil, err
		}
		m, err := NewEntry(TypeCustom, d.newID(), target, d.now, Custom{CustomType: leafMarkerType})
		if err != nil {
			return nil, err
		}
		return []Entry{e, m}, nil
	}, func([]int32) int32 {
		if target == "" {
			return -1
		}
		i, _ := s.t.lookup(target)
		return i
	}, nil)
	return err
}
