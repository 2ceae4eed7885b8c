package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deepnoodle-ai/dive"
	"github.com/deepnoodle-ai/dive/llm"

	as "github.com/agentsession/session"
)

// ErrNotFound is returned when a session does not exist. It is
// agentsession's ErrNotFound.
var ErrNotFound = as.ErrNotFound

// ErrSuspendedSession is returned when an operation is not permitted on a
// session that is currently suspended: SaveTurn (resume completions go
// through SaveResumedTurn) and Compact.
var ErrSuspendedSession = errors.New("session is suspended")

// ErrNotSuspended is returned from SaveResumedTurn and CancelSuspension
// when the session is not suspended. It is agentsession's ErrNotSuspended.
var ErrNotSuspended = as.ErrNotSuspended

// ErrInvalidSessionID is returned for a session id agentsession does not
// accept (see agentsession's ValidateID). It is agentsession's
// ErrInvalidID.
var ErrInvalidSessionID = as.ErrInvalidID

// Compile-time checks: a Session is what a Dive agent takes.
var (
	_ dive.Session            = (*Session)(nil)
	_ dive.SuspendableSession = (*Session)(nil)
)

// eventCounter makes event ids unique under concurrent generation.
var eventCounter uint64

// newEventID returns an id for a turn or compaction, in Dive's form.
func newEventID() string {
	n := atomic.AddUint64(&eventCounter, 1)
	return fmt.Sprintf("evt-%d-%d", time.Now().UnixNano(), n)
}

// Session implements dive.Session and dive.SuspendableSession on an
// agentsession session.
//
// Create one with New (in memory) or a Store's Open. All methods are safe
// for concurrent use.
type Session struct {
	mu sync.RWMutex
	// s is the agentsession handle; Put replaces it with one on the store
	// the session is put in.
	s     *as.Session
	id    string
	store *StoreAdapter // nil for a session in no store (New, Fork)
	// err is why the session could not be made (New with an id
	// agentsession refuses, a Fork that failed): every method returning an
	// error returns it.
	err error

	title    string
	metadata map[string]any

	// unsaved holds title and metadata changes whose write failed; the
	// next write stores them first.
	unsaved *infoChange

	// pieces holds each message of the model view converted once, for
	// Messages (pieces.go).
	pieces pieceCache
}

// New creates a session kept in memory only, with the given id: on a
// MemoryStore of its own, lost when the process exits. Put it in a Store
// to keep it. An id agentsession refuses gives a session whose methods
// fail with an error wrapping ErrInvalidSessionID.
func New(id string) *Session {
	s, err := as.NewWithID(id)
	if err != nil {
		return &Session{id: id, err: err}
	}
	return wrap(s, nil)
}

// wrap makes the Session of an agentsession handle.
func wrap(s *as.Session, store *StoreAdapter) *Session {
	// Dive stores what a turn holds: a tool result whose call is not
	// pending too (Messages leaves it out of the model's view).
	s.SetStrictPairing(false)
	sess := &Session{s: s, id: s.ID(), store: store}
	sess.loadInfo()
	return sess
}

// Unwrap returns the agentsession session underneath, for what this
// package does not offer (Verify, Tree, Branch, Context, Decide ...).
// Messages appended to it directly are in Dive's view from then on (it
// follows the leaf); the title and metadata this Session shows are those
// it was opened with and was given since.
func (s *Session) Unwrap() *as.Session {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.s
}

// ID returns the session's unique identifier.
func (s *Session) ID() string { return s.id }

// check returns the error a method must return before doing anything,
// and stores title and metadata changes whose write failed. Callers hold
// the write lock.
func (s *Session) check(ctx context.Context) error {
	if s.err != nil {
		return s.err
	}
	if s.unsaved != nil {
		if err := s.writeInfo(ctx, s.unsaved); err != nil {
			return err
		}
		s.unsaved = nil
	}
	return nil
}

// Messages returns the active conversation window: the most recent
// compaction summary (if any) plus every message recorded after it, as
// the agent sends it to the model. The messages are the caller's: new
// messages, content lists and content blocks on every call. Each stored
// message is converted to Dive's form once and kept, so a call costs a
// copy of the window's blocks, and a turn the conversion of its own
// messages (see pieceCache for what the copies share).
func (s *Session) Messages(ctx context.Context) ([]*llm.Message, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.err != nil {
		return nil, s.err
	}
	return s.messagesLocked(ctx)
}

func (s *Session) messagesLocked(ctx context.Context) ([]*llm.Message, error) {
	msgs, err := s.s.SharedMessages(ctx)
	if err != nil {
		return nil, err
	}
	pieces, err := s.pieces.pieces(msgs, func(m *as.Message) (*piece, error) {
		return convertPiece(m, s.leafSummary)
	})
	if err != nil {
		return nil, err
	}
	return fromPieces(pieces), nil
}

// leafSummary converts the compaction summary that starts the context at
// the leaf: the summary messages Dive's Compact stored, or else its text.
func (s *Session) leafSummary(m *as.Message) ([]*llm.Message, error) {
	for id := s.s.LeafID(); id != ""; {
		e, ok := s.s.Entry(id)
		if !ok {
			break
		}
		if e.Type() == as.TypeCompaction {
			return summaryMessages(e)
		}
		id = e.ParentID()
	}
	return []*llm.Message{summaryText(m.Summary)}, nil
}

// compactionInfo is what a compaction entry made by Compact keeps of
// Dive's compaction event, in the member "dive" of its details.
type compactionInfo struct {
	ID                   string         `json:"id"`
	Summary              []*llm.Message `json:"summary"`
	OriginalEventCount   int            `json:"original_event_count"`
	OriginalMessageCount int            `json:"original_message_count"`
	// Timestamp is when Dive made the compaction, for one imported from
	// a Dive file (ImportDive); otherwise the entry's time.
	Timestamp time.Time `json:"timestamp,omitzero"`
}

// summaryMessages returns the summary of a compaction entry as Dive
// messages.
func summaryMessages(e as.Entry) ([]*llm.Message, error) {
	msgs, _, err := compactionOf(e)
	return msgs, err
}

// compactionOf returns the summary of a compaction entry as Dive messages,
// and when the compaction was made.
func compactionOf(e as.Entry) ([]*llm.Message, time.Time, error) {
	var c as.Compaction
	if err := e.Decode(&c); err != nil {
		return nil, time.Time{}, err
	}
	var d struct {
		Dive *compactionInfo `json:"dive"`
		// A Dive compaction event's messages, as agentsession's importer
		// keeps them when the summary does not hold them whole.
		Messages []*llm.Message `json:"messages"`
	}
	if len(c.Details) > 0 && json.Unmarshal(c.Details, &d) == nil && d.Dive == nil && len(d.Messages) > 0 {
		return d.Messages, e.Time(), nil
	}
	if d.Dive != nil {
		at := e.Time()
		if !d.Dive.Timestamp.IsZero() {
			at = d.Dive.Timestamp
		}
		if d.Dive.Summary == nil {
			return []*llm.Message{}, at, nil
		}
		return d.Dive.Summary, at, nil
	}
	return []*llm.Message{summaryText(c.Summary)}, e.Time(), nil
}

// summaryText is the Dive message standing for a compaction another agent
// made: its summary, as agentsession renders it for a model.
func summaryText(summary string) *llm.Message {
	blocks, _ := as.UserContent(&as.Message{Role: as.RoleCompactionSummary, Summary: summary})
	return &llm.Message{Role: llm.User, Content: []llm.Content{&llm.TextContent{Text: blocks[0].Text}}}
}

// AllMessages returns the complete, uncompacted transcript: every message
// on the path to the leaf in order, with each compaction summary inline at
// the point it was made.
func (s *Session) AllMessages(ctx context.Context) ([]*llm.Message, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.err != nil {
		return nil, s.err
	}
	var out []*llm.Message
	err := s.walk(func(seg, summary []*llm.Message, _ time.Time, _ bool) {
		out = append(out, seg...)
		out = append(out, summary...)
	})
	return out, err
}

// walk calls fn for each stretch of the path to the leaf that a
// compaction ends (with its summary and time), then for what follows the
// last one (compacted false).
func (s *Session) walk(fn func(msgs, summary []*llm.Message, at time.Time, compacted bool)) error {
	path, err := s.s.PathTo(s.s.LeafID())
	if err != nil {
		return err
	}
	var seg []*as.Message
	flush := func(summary []*llm.Message, at time.Time, compacted bool) error {
		msgs, err := fromAgent(seg, nil)
		if err != nil {
			return err
		}
		seg = seg[:0]
		fn(msgs, summary, at, compacted)
		return nil
	}
	for _, e := range path {
		switch e.Type() {
		case as.TypeMessage:
			m, err := e.Message()
			if err != nil {
				return err
			}
			seg = append(seg, m)
		case as.TypeCompaction:
			summary, at, err := compactionOf(e)
			if err != nil {
				return err
			}
			if err := flush(summary, at, true); err != nil {
				return err
			}
		}
	}
	return flush(nil, time.Time{}, false)
}

// SaveTurn persists the messages of one turn (the user input and the
// assistant's response), all or nothing, with the turn's usage.
//
// Returns ErrSuspendedSession if the session is suspended: resume
// completions go through SaveResumedTurn.
func (s *Session) SaveTurn(ctx context.Context, messages []*llm.Message, usage *llm.Usage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	if s.s.Suspended() != nil {
		return ErrSuspendedSession
	}
	conv, err := toAgent(messages, s.callName)
	if err != nil {
		return err
	}
	return saveTurn(ctx, s.s, conv, &turnRec{ID: newEventID(), Usage: usage})
}

// callName returns the tool name of a call of the last assistant message
// at the leaf ("" if there is none of that id), for a tool result saved
// in a turn after its call's.
func (s *Session) callName(callID string) string {
	for id := s.s.LeafID(); id != ""; {
		e, ok := s.s.Entry(id)
		if !ok {
			return ""
		}
		if e.Type() == as.TypeMessage {
			if m, err := e.Message(); err == nil && m.Role == as.RoleAssistant {
				for _, b := range m.ToolCalls() {
					if b.ID == callID {
						return b.Name
					}
				}
				return ""
			}
		}
		id = e.ParentID()
	}
	return ""
}

// LoadSuspension returns the stored suspension state, or nil if the
// session is not suspended. TurnMessages holds the suspended turn's
// messages. The state is the caller's.
//
// A suspension another agentsession host recorded (without Dive's state)
// is described from its calls.
func (s *Session) LoadSuspension() *dive.SuspensionState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.err != nil {
		return nil
	}
	sp := suspendedAt(s.s)
	if sp == nil {
		return nil
	}
	state := &dive.SuspensionState{}
	if len(sp.view.State) > 0 {
		if err := json.Unmarshal(sp.view.State, state); err != nil {
			state = &dive.SuspensionState{}
		}
	}
	// The calls still pending: a result appended by any process since
	// answers one.
	still := map[string]bool{}
	for _, r := range sp.view.Pending {
		still[r.CallID] = true
	}
	if state.PendingToolCalls != nil {
		state.PendingToolCalls = slices.DeleteFunc(state.PendingToolCalls, func(p *dive.PendingToolCall) bool {
			return p == nil || !still[p.ID]
		})
	} else {
		for _, c := range sp.view.Calls {
			if !still[c.CallID] {
				continue
			}
			p := &dive.PendingToolCall{ID: c.CallID, Name: c.Name, Prompt: c.Prompt, Reason: dive.SuspendReason(sp.view.Reason)}
			if len(c.Metadata) > 0 {
				_ = json.Unmarshal(c.Metadata, &p.Metadata)
			}
			state.PendingToolCalls = append(state.PendingToolCalls, p)
		}
	}
	if turn, err := s.turnMessages(sp.turnStart()); err == nil {
		state.TurnMessages = turn
		for _, p := range state.PendingToolCalls {
			if p.Input == nil {
				p.Input = callInput(turn, p.ID)
			}
		}
	}
	return state
}

// callInput returns the input of the tool call id in msgs.
func callInput(msgs []*llm.Message, id string) json.RawMessage {
	for _, m := range msgs {
		for _, c := range m.Content {
			if tu, ok := c.(*llm.ToolUseContent); ok && tu.ID == id {
				return tu.Input
			}
		}
	}
	return nil
}

// turnMessages returns the messages on the path from the entry start to
// the leaf.
func (s *Session) turnMessages(start string) ([]*llm.Message, error) {
	if start == "" {
		return nil, nil
	}
	path, err := s.s.PathTo(s.s.LeafID())
	if err != nil {
		return nil, err
	}
	at := slices.IndexFunc(path, func(e as.Entry) bool { return e.ID() == start })
	if at < 0 {
		return nil, nil
	}
	var msgs []*as.Message
	for _, e := range path[at:] {
		if e.Type() == as.TypeMessage {
			m, err := e.Message()
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, m)
		}
	}
	return fromAgent(msgs, nil)
}

// SaveSuspendedTurn persists a partial turn, ending in an assistant
// tool_use message and an (optionally partial) tool_result message, and
// the suspension: the turn's calls without a result stay pending until
// their results come (SaveResumedTurn), from this process or another.
//
// If the session is already suspended, the suspended turn is replaced (a
// partial resume), keeping its id; TotalUsage counts both. A turn none of whose
// calls awaits a result fails with ErrNothingPending, before writing.
func (s *Session) SaveSuspendedTurn(ctx context.Context, messages []*llm.Message, usage *llm.Usage, state *dive.SuspensionState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	conv, err := toAgent(messages, s.callName)
	if err != nil {
		return err
	}
	t := &turnRec{ID: newEventID(), Usage: usage, Metadata: map[string]any{"suspended": true}}
	leaf := s.s.LeafID()
	if sp := suspendedAt(s.s); sp != nil {
		if sp.turn != nil {
			t.ID, t.Replaced = sp.turn.ID, diveTurnUsage(s.s, sp.turn)
		}
		if err := endSuspension(ctx, s.s, sp, as.SuspensionReplaced); err != nil {
			return err
		}
	}
	if err := saveSuspended(ctx, s.s, conv, t, state); err != nil {
		s.rollback(leaf)
		return err
	}
	return nil
}

// rollback moves the leaf back to where it was before a write of several
// steps failed, if it moved.
func (s *Session) rollback(leaf string) {
	if s.s.LeafID() != leaf {
		_ = s.s.Branch(context.Background(), leaf)
	}
}

// SaveResumedTurn replaces the suspended turn with the completed one and
// ends the suspension. The turn keeps the suspended turn's id, and
// TotalUsage counts the usage of both (agentsession's Usage counts each
// once, on its own branch).
//
// Returns ErrNotSuspended if the session is not suspended.
func (s *Session) SaveResumedTurn(ctx context.Context, messages []*llm.Message, usage *llm.Usage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	sp := suspendedAt(s.s)
	if sp == nil {
		return ErrNotSuspended
	}
	conv, err := toAgent(messages, s.callName)
	if err != nil {
		return err
	}
	t := &turnRec{ID: newEventID(), Usage: usage}
	if sp.turn != nil {
		t.ID, t.Replaced = sp.turn.ID, diveTurnUsage(s.s, sp.turn)
	}
	leaf := s.s.LeafID()
	err = endSuspension(ctx, s.s, sp, as.SuspensionReplaced)
	if err == nil {
		err = saveTurn(ctx, s.s, conv, t)
	}
	if err != nil {
		s.rollback(leaf)
		return err
	}
	return nil
}

// CancelSuspension abandons the suspended turn: the session goes on as if
// it had never happened (its entries stay in the log, on a branch of
// their own marked cancelled). Returns ErrNotSuspended if the session is
// not suspended.
func (s *Session) CancelSuspension(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	sp := suspendedAt(s.s)
	if sp == nil {
		return ErrNotSuspended
	}
	leaf := s.s.LeafID()
	if err := endSuspension(ctx, s.s, sp, as.SuspensionCancelled); err != nil {
		s.rollback(leaf)
		return err
	}
	return nil
}

// IsSuspended reports whether the session is awaiting external tool
// results.
func (s *Session) IsSuspended() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.err == nil && s.s.Suspended() != nil
}

// EventCount returns the number of Dive events on the path to the leaf:
// turns and compactions.
func (s *Session) EventCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.err != nil {
		return 0
	}
	n := len(s.s.TurnRecords())
	if path, err := s.s.PathTo(s.s.LeafID()); err == nil {
		for _, e := range path {
			if e.Type() == as.TypeCompaction {
				n++
			}
		}
	}
	return n
}

// TotalUsage sums the usage of the turns on the path to the leaf, and of
// the assistant messages on it that no turn record covers (written by
// another agent, or imported).
func (s *Session) TotalUsage() *llm.Usage {
	s.mu.RLock()
	defer s.mu.RUnlock()
	total := &llm.Usage{}
	if s.err != nil {
		return total
	}
	recs := s.s.TurnRecords()
	for k := range recs {
		total.Add(diveTurnUsage(s.s, &recs[k]))
	}
	path, err := s.s.PathTo(s.s.LeafID())
	if err != nil {
		return total
	}
	first, last := map[string]bool{}, map[string]bool{}
	for _, r := range recs {
		first[r.FirstEntryID], last[r.EntryID] = true, true
	}
	inTurn := false // between a turn's first entry and its record
	for _, e := range path {
		switch {
		case first[e.ID()]:
			inTurn = true
		case last[e.ID()]:
			inTurn = false
		case !inTurn && e.Type() == as.TypeMessage:
			if m, err := e.Message(); err == nil && m.Role == as.RoleAssistant && m.Usage != nil {
				total.Add(fromUsage(m.Usage))
			}
		}
	}
	return total
}

// Fork creates a new in-memory session holding the path to the leaf (a
// session of its own, whose header names this one as its parent), with
// the same title and metadata. Put it in a store to keep it.
//
// A fork is never suspended: a suspended turn's messages up to its
// results are copied, the suspension is not.
func (s *Session) Fork(newID string) *Session {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.err != nil {
		return &Session{id: newID, err: s.err}
	}
	ctx := context.Background()
	opts := &as.ForkOptions{ID: newID, Store: as.NewMemoryStore(), Title: s.title, CopyLabels: true}
	f, err := s.s.Fork(ctx, opts)
	if err != nil {
		return &Session{id: newID, err: err}
	}
	// As Dive's: the fork has the suspended turn, not the suspension (its
	// calls stay pending, suspended no more).
	if v := f.Suspended(); v != nil {
		end := as.SuspensionEnd{Outcome: "forked"}
		for _, c := range v.Pending {
			end.CallIDs = append(end.CallIDs, c.CallID)
		}
		if _, err := f.AppendCustom(ctx, as.CustomSuspensionEnd, end); err != nil {
			return &Session{id: newID, err: err}
		}
	}
	forked := wrap(f, nil)
	if forked.title != s.title {
		forked.SetTitle(s.title)
	}
	return forked
}

// CompactFunc summarizes a conversation into a shorter form.
type CompactFunc func(ctx context.Context, messages []*llm.Message) ([]*llm.Message, error)

// CompactionRecord describes a single compaction checkpoint.
type CompactionRecord struct {
	// Summary is the messages the checkpoint produced — the compacted form
	// that became the active context window.
	Summary []*llm.Message
	// ReplacedMessages are the messages this checkpoint superseded: the
	// turns since the previous checkpoint, plus the previous checkpoint's
	// summary if there was one.
	ReplacedMessages []*llm.Message
	// CompactedAt is when the compaction occurred.
	CompactedAt time.Time
}

// Compact summarizes the active conversation window and appends a
// compaction entry: its summary becomes the new active window (see
// Messages), while every original message stays in the log (see
// AllMessages and CompactionHistory).
//
// The entry's summary is the text of the summary messages, for other
// readers; the messages themselves are kept in its details, under "dive".
//
// Returns ErrSuspendedSession if the session is suspended.
func (s *Session) Compact(ctx context.Context, summarize CompactFunc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	if s.s.Suspended() != nil {
		return ErrSuspendedSession
	}
	// Dive's count: the events since the last compaction, it included.
	path, err := s.s.PathTo(s.s.LeafID())
	if err != nil {
		return err
	}
	since := 0
	for k, e := range path {
		if e.Type() == as.TypeCompaction {
			since = k
		}
	}
	records := map[string]bool{}
	for _, r := range s.s.TurnRecords() {
		records[r.EntryID] = true
	}
	events := 0
	for _, e := range path[since:] {
		if e.Type() == as.TypeCompaction || records[e.ID()] {
			events++
		}
	}
	msgs, err := s.messagesLocked(ctx)
	if err != nil {
		return err
	}
	compacted, err := summarize(ctx, msgs)
	if err != nil {
		return err
	}
	return s.appendCompaction(ctx, &compactionInfo{ID: newEventID(), Summary: compacted, OriginalEventCount: events, OriginalMessageCount: len(msgs)})
}

// appendCompaction appends the compaction entry of a Dive compaction.
func (s *Session) appendCompaction(ctx context.Context, info *compactionInfo) error {
	details, err := json.Marshal(map[string]any{"dive": info})
	if err != nil {
		return err
	}
	var text []string
	for _, m := range info.Summary {
		if m != nil {
			if t := m.Text(); t != "" {
				text = append(text, t)
			}
		}
	}
	_, err = s.s.AppendCompaction(ctx, as.Compaction{
		Summary:      strings.Join(text, "\n\n"),
		TokensBefore: s.s.ContextTokens(as.DefaultTokenEstimator),
		Details:      details,
	})
	return err
}

// CompactionHistory returns one record per compaction on the path to the
// leaf, in order; none when the session was never compacted.
func (s *Session) CompactionHistory(_ context.Context) ([]CompactionRecord, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.err != nil {
		return nil, s.err
	}
	var records []CompactionRecord
	var prev []*llm.Message // the previous checkpoint's summary
	err := s.walk(func(seg, summary []*llm.Message, at time.Time, compacted bool) {
		if !compacted {
			return
		}
		replaced := append(append([]*llm.Message(nil), prev...), seg...)
		records = append(records, CompactionRecord{
			Summary:          copyMessages(summary),
			ReplacedMessages: copyMessages(replaced),
			CompactedAt:      at,
		})
		prev = summary
	})
	return records, err
}

func copyMessages(msgs []*llm.Message) []*llm.Message {
	if len(msgs) == 0 {
		return nil
	}
	out := make([]*llm.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m.Copy()
	}
	return out
}

// ---- title and metadata ----

// metaJSONKey is the agentsession metadata key that lists, as a JSON array,
// the keys whose values are JSON (Dive metadata values other than
// strings). String values are stored as they are.
const metaJSONKey = "dive.json"

// loadInfo reads the title and metadata.
func (s *Session) loadInfo() {
	s.title = s.s.Header().Title
	for e := range s.s.Entries() {
		if e.Type() == as.TypeSessionInfo {
			var si as.SessionInfoEntry
			if e.Decode(&si) == nil {
				s.title = si.Name
			}
		}
	}
	s.metadata = decodeMeta(s.s.Meta().Metadata)
}

// decodeMeta returns Dive's metadata from agentsession's.
func decodeMeta(m map[string]string) map[string]any {
	if len(m) == 0 {
		return nil
	}
	var jsonKeys []string
	if raw, ok := m[metaJSONKey]; ok {
		_ = json.Unmarshal([]byte(raw), &jsonKeys)
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k == metaJSONKey {
			continue
		}
		if slices.Contains(jsonKeys, k) {
			var val any
			if json.Unmarshal([]byte(v), &val) == nil {
				out[k] = val
				continue
			}
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// infoChange is a change of title or metadata to store.
type infoChange struct {
	title *string
	meta  map[string]string
}

func (c *infoChange) merge(d *infoChange) *infoChange {
	if c == nil {
		return d
	}
	if d.title != nil {
		c.title = d.title
	}
	for k, v := range d.meta {
		if c.meta == nil {
			c.meta = map[string]string{}
		}
		c.meta[k] = v
	}
	return c
}

func (s *Session) writeInfo(ctx context.Context, c *infoChange) error {
	if c.title != nil {
		if err := s.s.SetTitle(ctx, *c.title); err != nil {
			return err
		}
		c.title = nil
	}
	if len(c.meta) > 0 {
		if err := s.s.UpdateMeta(ctx, as.MetaUpdate{Set: c.meta}); err != nil {
			return err
		}
		c.meta = nil
	}
	return nil
}

// store writes a title or metadata change now; if that fails, the next
// write stores it first.
func (s *Session) storeInfo(c *infoChange) {
	if s.err != nil {
		return
	}
	c = s.unsaved.merge(c)
	if err := s.writeInfo(context.Background(), c); err != nil {
		s.unsaved = c
		return
	}
	s.unsaved = nil
}

// Title returns the session title.
func (s *Session) Title() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.title
}

// SetTitle sets the session title. It is stored at once, as a session_info
// entry (surrounding spaces trimmed, as agentsession stores titles); if
// that fails, the next write stores it first.
func (s *Session) SetTitle(title string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.title = strings.TrimSpace(title)
	s.storeInfo(&infoChange{title: &s.title})
}

// Metadata returns a copy of the session's metadata (nil when it has
// none).
func (s *Session) Metadata() map[string]any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.metadata == nil {
		return nil
	}
	return maps.Clone(s.metadata)
}

// SetMetadata sets a key-value pair in the session's metadata. It is
// stored at once, in agentsession's metadata (a string as it is, any other
// value as JSON); if that fails, the next write stores it first. Values
// come back from storage as JSON decodes them (numbers as float64).
func (s *Session) SetMetadata(key string, value any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.storeInfo(s.metaChange(key, value))
}

// setMetadata stores a metadata change now.
func (s *Session) setMetadata(ctx context.Context, key string, value any) error {
	return s.writeInfo(ctx, s.metaChange(key, value))
}

// metaChange sets key in the metadata and returns the change to store.
func (s *Session) metaChange(key string, value any) *infoChange {
	if s.metadata == nil {
		s.metadata = map[string]any{}
	}
	s.metadata[key] = value
	set := map[string]string{}
	if str, ok := value.(string); ok {
		set[key] = str
	} else {
		raw, err := json.Marshal(value)
		if err != nil {
			raw = []byte("null")
		}
		set[key] = string(raw)
	}
	var jsonKeys []string
	for k, v := range s.metadata {
		if _, ok := v.(string); !ok {
			jsonKeys = append(jsonKeys, k)
		}
	}
	slices.Sort(jsonKeys)
	raw, _ := json.Marshal(jsonKeys)
	if len(jsonKeys) > 0 || s.hadJSONKeys() {
		set[metaJSONKey] = string(raw)
	}
	return &infoChange{meta: set}
}

func (s *Session) hadJSONKeys() bool {
	if s.s == nil {
		return false
	}
	_, ok := s.s.Meta().Metadata[metaJSONKey]
	return ok
}
