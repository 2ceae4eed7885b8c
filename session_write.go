package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentsession/session/internal/jsonx"
)

// Writing a session: every append goes through commit (ids, retries on
// a conflict, the retry of a write whose answer was lost), and the
// Append methods of each entry type build on it.

// commit appends the entries that build makes, the first one a child of
// the entry at returns (an entry id, "" for a root), and moves the leaf to
// the last one (or where leafAfter says). build is called again after a
// conflict, with ids that are still free; every attempt of one call has
// the same time.
//
// msgs, when not nil, holds for each entry the message it was encoded
// from (or nil): once committed, each is turned into the form a reopen
// would decode and kept as the entry's context message, so that what was
// just encoded need not be decoded again.
//
// A write that failed in a way that leaves its outcome unknown is kept
// (s.pending): the host's retry of the same call sends the same entries
// again, and any other call first finds out whether it happened (see
// retry.go).
func (s *Session) commit(ctx context.Context, at func() string, build func(d *draft) ([]Entry, error), leafAfter func(added []int32) int32, msgs []*Message) ([]Entry, error) {
	if s.closed {
		return nil, ErrClosed
	}
	turn, err := s.takeTurn(ctx)
	if err != nil {
		return nil, err
	}
	defer turn.unlock()
	var entries []Entry // the entries of the next attempt, when already made
	d := &s.draft       // the handle's own: one write at a time, under mu
	*d = draft{now: s.now()}
	if p := s.pending; p != nil {
		switch same := s.retryOf(p, build); {
		case same && p.landed:
			s.pending = nil
			return p.entries, nil // the first attempt happened, and the handle took it in
		case same:
			entries, d.now, d.parent = p.entries, p.now, p.parent
		default:
			if err := s.settle(ctx); err != nil {
				return nil, err
			}
		}
	}
	if entries == nil {
		d.parent = at()
	}
	d.stamp = s.stampAt(d.now)
	var stall stalls // see writers.go: no give-up while others make progress
	for attempt := 0; ; attempt++ {
		if entries == nil {
			s.made = s.made[:0]
			if s.nextIDFn == nil {
				s.nextIDFn = s.nextID // made once: a method value allocates
			}
			d.newID = s.nextIDFn
			if entries, err = build(d); err != nil {
				return nil, err
			}
		}
		opts := AppendOptions{IfLast: s.last, IfEmpty: s.last == ""}
		deferred := s.deferred
		if deferred {
			err = s.persistWith(ctx, entries, false)
		} else {
			err = s.store.Append(ctx, s.id, opts, entries...)
		}
		if err == nil {
			s.pending = nil
			s.apply(entries, leafAfter, msgs)
			return entries, nil
		}
		if deferred {
			// Kept as any write whose outcome is unknown: its retry sends
			// the same entries, which joinStored finds stored; another
			// call first finds out (reloadDeferred).
			if !errors.Is(err, ErrTooLarge) {
				s.pending = &pendingWrite{parent: d.parent, now: d.now, entries: entries, leafAfter: leafAfter}
			}
			return nil, err
		}
		if !errors.Is(err, ErrConflict) {
			if !errors.Is(err, ErrTooLarge) {
				// The store may have written them all the same.
				s.pending = &pendingWrite{parent: d.parent, now: d.now, entries: entries, leafAfter: leafAfter}
			}
			return nil, err
		}
		if stall.n >= maxConflictRetries {
			return nil, conflictErr(attempt+1, stall.n, err)
		}
		// Another writer appended: learn what it wrote, then retry under the
		// same leaf with ids that are still free.
		if berr := backoff(ctx, stall.n+1); berr != nil {
			return nil, errors.Join(err, berr)
		}
		stall.before(s)
		if rerr := s.reload(ctx); rerr != nil {
			return nil, errors.Join(err, rerr)
		}
		stall.after(s)
		if p := s.pending; p != nil {
			// A retry the store did not recognize as one: the reload
			// tells whether the first attempt is there after all.
			s.pending = nil
			if p.landed {
				return p.entries, nil
			}
		}
		if d.parent != "" {
			if _, ok := s.t.lookup(d.parent); !ok {
				return nil, fmt.Errorf("%w: entry %s was removed by another writer", ErrConflict, d.parent)
			}
		}
		entries = nil
	}
}

// nextID is the id of the next new entry of the write commit is making:
// one the session does not hold and the write has not used yet (s.made).
// Callers hold mu.
func (s *Session) nextID() string {
	for {
		id := newEntryID(nil, nil)
		if _, taken := s.t.lookup(id); !taken && !slices.Contains(s.made, id) {
			s.made = append(s.made, id)
			return id
		}
	}
}

// rewriteOptions are the conditions of a rewrite decided on what this
// handle knows of the log. Callers hold mu.
func (s *Session) rewriteOptions() RewriteOptions {
	if s.last == "" {
		return RewriteOptions{IfEmpty: true}
	}
	return RewriteOptions{IfLast: s.last, IfEntries: len(s.t.nodes)}
}

// apply adds committed entries to the index and moves the leaf.
func (s *Session) apply(entries []Entry, leafAfter func(added []int32) int32, msgs []*Message) {
	added := make([]int32, len(entries))
	for k, e := range entries {
		p := int32(-1)
		if e.parent != "" {
			p, _ = s.t.lookup(e.parent)
		}
		i := s.t.add(e, p)
		added[k] = i
		if k < len(msgs) && msgs[k] != nil && msgs[k].canonicalize(e.validText) {
			s.t.nodes[i].msg, s.t.nodes[i].state = msgs[k], msgReady
		}
	}
	s.last = entries[len(entries)-1].id
	newLeaf := added[len(added)-1]
	if leafAfter != nil {
		newLeaf = leafAfter(added)
	}
	if s.pc != nil {
		// Keep the context incremental when the new leaf extends the path.
		chain := true
		prev := s.leaf
		for _, i := range added {
			if s.t.nodes[i].parent != prev || prev != s.pc.leaf {
				chain = false
				break
			}
			s.pc.extend(s.t, i)
			prev = i
			if i == newLeaf {
				break
			}
		}
		if !chain || s.pc.leaf != newLeaf {
			s.pc = nil
		}
	}
	s.noteUsage(added, s.leaf, newLeaf)
	s.leaf = newLeaf
}

// addSuffix indexes entries appended by another writer, if they can be
// added without re-linking the tree (no duplicate ids, parents known).
func (s *Session) addSuffix(entries []Entry) bool {
	seen := map[string]bool{}
	for _, e := range entries {
		if _, dup := s.t.lookup(e.id); dup || seen[e.id] {
			return false
		}
		if e.parent != "" && !seen[e.parent] {
			if _, ok := s.t.lookup(e.parent); !ok {
				return false
			}
		}
		seen[e.id] = true
	}
	added := make([]int32, 0, len(entries))
	for _, e := range entries {
		p := int32(-1)
		if e.parent != "" {
			p, _ = s.t.lookup(e.parent)
		}
		added = append(added, s.t.add(e, p))
	}
	// Another writer's entries count in the session total; the leaf has
	// not moved, so the branch total stands.
	s.noteUsage(added, s.leaf, s.leaf)
	return true
}

// stampAt returns t as entries write it. Callers hold mu.
func (s *Session) stampAt(t time.Time) string {
	if ms := t.UnixMilli(); ms != s.stampMs || s.stampStr == "" {
		s.stampMs, s.stampStr = ms, formatTime(t)
	}
	return s.stampStr
}

// prepare validates a message for appending and returns the session's
// own copy. A zero Timestamp is set when the entries are made (the time
// of the write). The copy has no streaming leftovers (see prepMessage).
func (s *Session) prepare(m *Message) (*Message, error) {
	if m == nil {
		return nil, errors.New("session: nil message")
	}
	switch m.Role {
	case "":
		return nil, errors.New("session: message without a role")
	case RoleBranchSummary, RoleCompactionSummary:
		return nil, fmt.Errorf("session: %s messages are made from entries; use BranchWithSummary or AppendCompaction", m.Role)
	}
	return prepMessage(m.Clone()), nil
}

// placeTurn puts a turn's usage on its last assistant message when that
// carries none, and returns the turn record to write after the messages
// (nil when none is needed): see TurnOptions.
func placeTurn(own []*Message, turn *TurnOptions) (*turnData, error) {
	if turn == nil {
		return nil, nil
	}
	var r turnData
	if u := turn.Usage; u != nil {
		c := *u
		c.Extra = u.Extra.Clone()
		last := -1
		for k := len(own) - 1; k >= 0 && last < 0; k-- {
			if own[k].Role == RoleAssistant {
				last = k
			}
		}
		switch {
		case last < 0:
			r.Usage = &c
		case own[last].Usage == nil:
			own[last].Usage = &c
		default:
			r.Reported = &c
		}
	}
	if len(turn.Metadata) > 0 {
		if !json.Valid(turn.Metadata) {
			return nil, errors.New("session: turn metadata is not JSON")
		}
		r.Metadata = turn.Metadata
	}
	r.ID = turn.ID
	if r.ID == "" && r.Usage == nil && r.Reported == nil && r.Metadata == nil {
		return nil, nil
	}
	return &r, nil
}

// checkPairing simulates appending msgs and rejects a tool result that
// answers no pending call.
func (s *Session) checkPairing(msgs []*Message) error {
	results := false
	for _, m := range msgs {
		results = results || m.Role == RoleToolResult
	}
	if !results {
		return nil // nothing to pair
	}
	lc := s.leafCtx()
	p := pairing{open: append([]openCall(nil), lc.pair.open...), susp: lc.pair.susp, late: slices.Clone(lc.pair.late)}
	for _, m := range msgs {
		if m.Role == RoleToolResult && !p.accepts(m.ToolCallID) {
			return fmt.Errorf("%w: result for call %q (%s)", ErrUnpairedToolResult, m.ToolCallID, m.ToolName)
		}
		p.push(m, "")
		p.model = nil
	}
	return nil
}

// Append appends a message under the leaf and returns its entry. A tool
// result must answer a call of the last assistant message that has no
// result yet (ErrUnpairedToolResult). A zero Timestamp is set to now.
//
// Other writers on the session never make an append fail by themselves:
// when one got there first, the handle learns what it wrote and tries
// again under its own leaf (see "Several writers" in ARCHITECTURE.md).
// It does not give up while the others make progress, however
// many races it loses (until ctx ends); it fails with ErrConflict only
// when the store kept refusing it with nothing new written (32 times in
// a row, about a second), or when the entry it would append under was
// removed by another writer (a Prune): reopen the session then. It fails
// with ErrClosed after Close, with the store's error when the store
// fails (ErrWriteFailed, ErrTooLarge ...), and with ctx's error when ctx
// ends first, waiting for another process's file lock included.
func (s *Session) Append(ctx context.Context, m *Message) (Entry, error) {
	es, err := s.appendMessages(ctx, []*Message{m}, nil)
	if err != nil {
		return Entry{}, err
	}
	return es[0], nil
}

// SaveTurn appends the messages of one agent turn, all or nothing. usage,
// when not nil, is kept whatever the messages: on the turn's last
// assistant message if that message carries none of its own, else in a
// turn record written with them (see TurnOptions, SaveTurnWith for a
// turn's id and metadata too). It implements Conversation.
//
// When it fails, the turn may still have been stored (the store's answer
// was lost): calling it again with the same messages stores the turn
// once (see "Retries are safe" in ARCHITECTURE.md).
func (s *Session) SaveTurn(ctx context.Context, msgs []*Message, usage *Usage) error {
	if len(msgs) == 0 && usage == nil {
		return s.closedErr(ctx)
	}
	_, err := s.appendMessages(ctx, msgs, &TurnOptions{Usage: usage})
	return err
}

func (s *Session) appendMessages(ctx context.Context, msgs []*Message, turn *TurnOptions) ([]Entry, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.appendMessagesLocked(ctx, msgs, turn, !s.lenientPairing)
}

// appendMessagesLocked is appendMessages, the pairing checked when
// strict; callers hold mu.
func (s *Session) appendMessagesLocked(ctx context.Context, msgs []*Message, turn *TurnOptions, strict bool) ([]Entry, error) {
	own := make([]*Message, len(msgs))
	var stampless []int // the messages whose Timestamp the write sets
	for k, m := range msgs {
		c, err := s.prepare(m)
		if err != nil {
			return nil, err
		}
		own[k] = c
		if c.Timestamp == 0 {
			stampless = append(stampless, k)
		}
	}
	record, err := placeTurn(own, turn)
	if err != nil {
		return nil, err
	}
	var susp *Suspension
	suspAt := -1
	if turn != nil && turn.Suspension != nil {
		if susp, suspAt, err = turnSuspension(own, turn.Suspension); err != nil {
			return nil, err
		}
	}
	build := func(d *draft) ([]Entry, error) {
		for _, k := range stampless {
			own[k].Timestamp = d.now.UnixMilli()
		}
		n := len(own) // and the suspension's entry and the turn's record, if any
		if suspAt >= 0 {
			n++
		}
		if record != nil {
			n++
		}
		out := make([]Entry, 0, n)
		parent := d.parent
		for k, m := range own {
			e, err := newMessageEntry(d.newID(), parent, d.stamp, m)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
			parent = e.id
			if k == suspAt {
				raw, err := marshalRaw(susp)
				if err != nil {
					return nil, err
				}
				e, err := NewEntry(TypeCustom, d.newID(), parent, d.now, Custom{CustomType: CustomSuspension, Data: raw})
				if err != nil {
					return nil, err
				}
				out = append(out, e)
				parent = e.id
			}
		}
		if record != nil {
			r := *record
			if len(out) > 0 {
				r.First = out[0].id
			}
			raw, err := marshalRaw(r)
			if err != nil {
				return nil, err
			}
			e, err := NewEntry(TypeCustom, d.newID(), parent, d.now, Custom{CustomType: CustomTurn, Data: raw})
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	}
	if p := s.pending; p != nil && p.landed && s.retryOf(p, build) {
		// The retry of a write a reload found in the store: it happened,
		// and the pairing it was checked for is behind the leaf now.
		s.pending = nil
		return p.entries, nil
	}
	if err := s.checkPairing(own); err != nil && strict {
		return nil, err
	}
	return s.commit(ctx, s.leafID, build, nil, own)
}

// AppendEntry appends an entry of any type under the leaf, with payload
// marshalled as its other members (see NewEntry). It is the way to write
// types this package has no method for; use Append for messages.
// Members named partialJson or jsonlEvents (streaming leftovers) are not
// stored, at any depth, as oh-my-pi stores none; nor are they in messages.
func (s *Session) AppendEntry(ctx context.Context, typ string, payload any) (Entry, error) {
	if typ == TypeMessage {
		return Entry{}, errors.New("session: use Append for messages")
	}
	if err := s.lock(ctx); err != nil {
		return Entry{}, err
	}
	defer s.mu.Unlock()
	if typ == TypeCompaction {
		// Its first kept entry may lie before what a partial handle holds.
		if err := s.whole(ctx); err != nil {
			return Entry{}, err
		}
	}
	return s.appendEntryLocked(ctx, typ, payload)
}

// appendEntryLocked is AppendEntry; callers hold mu.
func (s *Session) appendEntryLocked(ctx context.Context, typ string, payload any) (Entry, error) {
	es, err := s.commit(ctx, s.leafID, func(d *draft) ([]Entry, error) {
		e, err := NewEntry(typ, d.newID(), d.parent, d.now, payload)
		if err != nil {
			return nil, err
		}
		if e.kind == kindCustom && isLeafMarker(e) {
			return nil, fmt.Errorf("session: custom type %q is reserved for leaf moves", leafMarkerType)
		}
		if e, err = s.withStateSnapshot(e); err != nil { // a compaction records the state (statefold.go)
			return nil, err
		}
		return []Entry{prepEntry(e)}, nil
	}, nil, nil)
	if err != nil {
		return Entry{}, err
	}
	return es[0], nil
}

// AppendThinkingLevel records a change of thinking level ("off",
// "minimal", "low", "medium", "high", ...).
func (s *Session) AppendThinkingLevel(ctx context.Context, level string) (Entry, error) {
	return s.AppendEntry(ctx, TypeThinkingLevelChange, ThinkingLevelChange{ThinkingLevel: level})
}

// AppendModelChange records a change of model. With no role (or the
// role "default") it is the model of the conversation, written in pi's
// form ({"provider","modelId"}), which every seed agent reads. A role
// names another of the agent's models, as oh-my-pi has them ("smol",
// "slow", "plan", ...; Context.Models holds the latest per role): it is
// written in oh-my-pi's form ({"model":"provider/modelId","role"}). pi
// knows no roles and reads every model_change as its own model's: from
// this form it gets a change naming no model (its model is unknown until
// the next reply names one), where pi's form would switch it to the
// role's model. At most one role.
func (s *Session) AppendModelChange(ctx context.Context, provider, modelID string, role ...string) (Entry, error) {
	if err := s.closedErr(ctx); err != nil {
		return Entry{}, err
	}
	if provider == "" && modelID == "" {
		return Entry{}, errors.New("session: AppendModelChange needs a provider or a model id")
	}
	if len(role) > 1 {
		return Entry{}, fmt.Errorf("session: AppendModelChange takes one role, got %d", len(role))
	}
	if len(role) == 0 || role[0] == "" || role[0] == "default" {
		return s.AppendEntry(ctx, TypeModelChange, ModelChange{Provider: provider, ModelID: modelID})
	}
	if strings.Contains(provider, "/") || (provider == "" && strings.Contains(modelID, "/")) {
		return Entry{}, fmt.Errorf("session: model %q of provider %q: the role form (provider/modelId) cannot hold a slash in the provider, or in a model id without one", modelID, provider)
	}
	model := modelID
	if provider != "" {
		model = provider + "/" + modelID
	}
	return s.AppendEntry(ctx, TypeModelChange, ModelChange{Model: model, Role: role[0]})
}

// AppendCompaction appends a compaction entry. From then on the context
// starts with its summary, followed by the path from FirstKeptEntryID.
func (s *Session) AppendCompaction(ctx context.Context, c Compaction) (Entry, error) {
	return s.AppendEntry(ctx, TypeCompaction, c)
}

// AppendCustom appends extension state that never reaches the model.
func (s *Session) AppendCustom(ctx context.Context, customType string, data any) (Entry, error) {
	if err := s.closedErr(ctx); err != nil {
		return Entry{}, err
	}
	raw, err := marshalRaw(data)
	if err != nil {
		return Entry{}, err
	}
	return s.AppendEntry(ctx, TypeCustom, Custom{CustomType: customType, Data: raw})
}

// AppendCustomMessage appends an extension message that takes part in the
// context (a custom_message entry); m must have role "custom", as made by
// CustomMessage. The entry stores customType, content, display and
// details, and keeps m.Extra as members of its own; the message's
// Timestamp is not stored, since in the context a custom message takes
// the time of its entry, which is the time of this append.
func (s *Session) AppendCustomMessage(ctx context.Context, m *Message) (Entry, error) {
	if err := s.closedErr(ctx); err != nil {
		return Entry{}, err
	}
	if m == nil || m.Role != RoleCustom {
		return Entry{}, errors.New(`session: AppendCustomMessage needs a message with role "custom"`)
	}
	payload := []byte(`{"customType":`)
	payload = jsonx.AppendString(payload, m.CustomType)
	payload = append(payload, `,"content":`...)
	var err error
	content := m.Content
	if content == nil {
		content = []Block{}
	}
	if payload, err = appendContent(payload, content, m.ContentIsString()); err != nil {
		return Entry{}, err
	}
	payload = append(payload, `,"display":`...)
	payload = appendBool(payload, m.Display)
	if m.Details != nil {
		d, err := rawValue(m.Details, "null")
		if err != nil {
			return Entry{}, fmt.Errorf("session: custom message details: %w", err)
		}
		payload = append(payload, `,"details":`...)
		payload = append(payload, d...)
	}
	// Members this package does not model are kept on the entry, so
	// nothing the caller set is dropped; they are not part of the
	// context message, whose shape the seed format fixes.
	payload, _, err = m.Extra.appendTo(payload, false, func(k string) bool {
		switch k {
		case "customType", "content", "display", "details", "role":
			return true
		}
		return false
	})
	if err != nil {
		return Entry{}, err
	}
	payload = append(payload, '}')
	return s.AppendEntry(ctx, TypeCustomMessage, json.RawMessage(payload))
}

// AppendModeChange records a change of agent mode ("none" to leave one).
func (s *Session) AppendModeChange(ctx context.Context, mode string, data any) (Entry, error) {
	if err := s.closedErr(ctx); err != nil {
		return Entry{}, err
	}
	raw, err := marshalRaw(data)
	if err != nil {
		return Entry{}, err
	}
	return s.AppendEntry(ctx, TypeModeChange, ModeChange{Mode: mode, Data: raw})
}

// AppendSessionInit records how a (sub)agent session was started.
func (s *Session) AppendSessionInit(ctx context.Context, init SessionInit) (Entry, error) {
	return s.AppendEntry(ctx, TypeSessionInit, init)
}

// AppendTTSRInjection records rules injected into the conversation (a
// ttsr_injection entry).
func (s *Session) AppendTTSRInjection(ctx context.Context, rules ...string) (Entry, error) {
	return s.AppendEntry(ctx, TypeTTSRInjection, TTSRInjection{InjectedRules: rules})
}

// SetTitle sets the session's display name by appending a session_info
// entry, as the seed agents do.
func (s *Session) SetTitle(ctx context.Context, title string) error {
	_, err := s.AppendEntry(ctx, TypeSessionInfo, SessionInfoEntry{Name: strings.TrimSpace(title)})
	return err
}

// Label sets the label of entry id, or clears it when label is empty. As
// in the seed format the label entry is appended under the leaf.
func (s *Session) Label(ctx context.Context, id, label string) error {
	if err := s.makeWhole(ctx); err != nil {
		return err
	}
	return s.label(ctx, id, Label{TargetID: id, Label: label})
}

// label appends l, once its target is known to be an entry a user may
// label.
func (s *Session) label(ctx context.Context, id string, l Label) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	i, ok := s.t.lookup(id)
	ok = ok && s.t.nodes[i].flags&fMarker == 0 // markers are not for users to label
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: entry %s", ErrNotFound, id)
	}
	_, err := s.AppendEntry(ctx, TypeLabel, l)
	return err
}

func marshalRaw(v any) (json.RawMessage, error) {
	switch d := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return d, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	return b, nil
}
