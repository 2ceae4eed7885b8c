package session

import (
	"cmp"
	"context"
	"fmt"

	"github.com/agentsession/session/internal/jsonx"
)

// Picking a session up again: what a host shows or needs when it resumes
// one (ResumeView, in one call), the number of turns on the path, and
// replaying the last user turn.

// ResumeView is what a host needs to pick a session up again, taken in
// one call under one lock, so its parts agree with each other: the last
// user and assistant messages on the path to the leaf, the state there,
// and the settings in force. The messages are the caller's copies.
type ResumeView struct {
	ID    string
	Title string
	// LeafID is the entry the view was taken at ("" for an empty
	// session).
	LeafID string
	// LastUser is the latest user message on the path (nil when there is
	// none), read from its entry even when a compaction summarized it
	// away; LastUserID is that entry.
	LastUser   *Message
	LastUserID string
	// LastAssistant is the latest assistant message on the path (nil when
	// there is none), LastAssistantID its entry. A reply that came before
	// LastUser is the previous turn's: compare the ids' positions with
	// AssistantAfterUser.
	LastAssistant   *Message
	LastAssistantID string
	// AssistantAfterUser says the last assistant message answers the last
	// user message (it comes after it): false means the user's turn is
	// still unanswered (the agent stopped, or crashed, before replying).
	AssistantAfterUser bool
	// State is the session state at the leaf (see Session.State), with the
	// shared user and app state when the store keeps it.
	State State
	// Model and ThinkingLevel are those in force at the leaf (see
	// Context); Model is nil when nothing on the path names one.
	Model         *ModelRef
	ThinkingLevel string
	// Pending lists the tool calls at the end of the path still waiting
	// for results: the agent was about to run them.
	Pending []ToolCallRef
	// Suspended lists the calls a host suspended on purpose that still
	// await their results (see Session.Suspend): not for the agent to run
	// again, but to resume when their results come.
	Suspended []ToolCallRef
	// Entries counts the entries of the session (every branch), Turns the
	// user messages on the path to the leaf, Messages the messages of the
	// context at the leaf.
	Entries, Turns, Messages int
}

// Resume returns the session's ResumeView at the leaf, taken under the
// handle's lock; only the shared user and app state is read from the
// store after it (that state is not the session's, and has no history).
func (s *Session) Resume(ctx context.Context) (*ResumeView, error) {
	if err := s.makeWhole(ctx); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	v := &ResumeView{ID: s.id, Title: s.titleLocked(), LeafID: s.leafID(), Entries: len(s.t.nodes), Turns: s.turnsLocked()}
	pc := s.leafCtx()
	v.ThinkingLevel, v.Messages = pc.thinking, len(pc.msgs)
	if pc.hasModel {
		m := pc.model
		v.Model = &m
	}
	v.Pending, v.Suspended = pc.pair.pending(), pc.pair.suspendedOpen()
	user, userAt := s.lastOnPath(RoleUser)
	asst, asstAt := s.lastOnPath(RoleAssistant)
	if user >= 0 {
		v.LastUserID = s.t.nodes[user].e.id
	}
	if asst >= 0 {
		v.LastAssistantID = s.t.nodes[asst].e.id
		v.AssistantAfterUser = asstAt > userAt
	}
	v.LastUser, v.LastAssistant = s.messageCopy(user), s.messageCopy(asst)
	st, m := s.leafState(), HeaderMeta(s.header)
	s.mu.Unlock()
	st, err := s.withShared(ctx, st, m)
	if err != nil {
		return nil, err
	}
	v.State = st
	return v, nil
}

// lastOnPath returns the latest message entry of role on the path to the
// leaf and its depth (-1, -1 when there is none). Callers hold mu.
func (s *Session) lastOnPath(role string) (int32, int32) {
	for i := s.leaf; i >= 0; i = s.t.nodes[i].parent {
		if s.roleOf(i) == role {
			return i, s.t.nodes[i].depth
		}
	}
	return -1, -1
}

// messageCopy returns a copy of the message of entry i, nil for none
// (i < 0, or an entry whose message cannot be read). Callers hold mu.
func (s *Session) messageCopy(i int32) *Message {
	if i < 0 {
		return nil
	}
	m := s.t.contextMessage(i)
	if m == nil {
		return nil
	}
	return copyMessages([]*Message{m})[0]
}

// roleOf returns the role of the message of entry i, "" for an entry
// that holds none, without decoding the message when it is not decoded
// yet. Callers hold mu.
func (s *Session) roleOf(i int32) string {
	n := &s.t.nodes[i]
	if n.e.kind != kindMessage {
		return ""
	}
	if n.state == msgReady && n.msg != nil {
		return n.msg.Role
	}
	return messageRole(n.e)
}

// Turns returns the number of user messages on the path to the leaf:
// the turns of the conversation as the user sees them (tool results and
// replies belong to the turn their user message opened). It is counted
// from the last count, so asking after each turn costs what the turn
// added.
func (s *Session) Turns() int {
	s.mu.Lock()
	s.wholeNoCtx()
	defer s.mu.Unlock()
	return s.turnsLocked()
}

// turnsLocked counts the turns at the leaf, from the count kept for an
// earlier leaf when that one is on the path. Callers hold mu.
func (s *Session) turnsLocked() int {
	c := &s.turns
	if c.valid && c.leaf == s.leaf {
		return c.n
	}
	n := 0
	i := s.leaf
	for ; i >= 0; i = s.t.nodes[i].parent {
		if c.valid && i == c.leaf {
			n += c.n
			break
		}
		if s.roleOf(i) == RoleUser {
			n++
		}
	}
	*c = turnCount{valid: true, leaf: s.leaf, n: n}
	return n
}

// turnCount is the number of turns at a leaf, kept so that the next count
// walks only what was appended since.
type turnCount struct {
	valid bool
	leaf  int32
	n     int
}

// Replay is what ReplayLastTurn did.
type Replay struct {
	// User is the user message of the turn replayed, a copy the host may
	// show, edit or send again; UserID is its entry, the new leaf.
	User   *Message
	UserID string
	// Rewind says where the leaf was and how much of the old path was
	// left behind: Branch to Rewind.From to come back.
	Rewind RewindResult
}

// ReplayLastTurn takes the conversation back to just after the last user
// message on the path: the replies and tool results that followed it are
// left behind (on a branch, nothing deleted), and the context ends with
// that message again, ready for the model to answer anew. The message is
// handed back to the host. To edit the message instead of replaying it,
// Rewind to its parent and append the edited one. ErrNotFound when the
// path holds no user message.
//
// When a compaction came after the message (the usual compaction at the
// end of a turn), going back to the message would undo it: the compaction
// is written again before the message instead (copies of both, under the
// message's parent; the compaction keeps what it kept from before the
// message), so the context stays compacted.
func (s *Session) ReplayLastTurn(ctx context.Context) (*Replay, error) {
	if err := s.makeWhole(ctx); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	user, _ := s.lastOnPath(RoleUser)
	if user < 0 {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: no user message on the path to replay", ErrNotFound)
	}
	comp := int32(-1) // the compaction in force, if it came after the message
	for i := s.leaf; i >= 0 && i != user; i = s.t.nodes[i].parent {
		if s.t.nodes[i].e.kind == kindCompaction {
			comp = i
			break
		}
	}
	id := s.t.nodes[user].e.id
	m := s.messageCopy(user)
	if comp < 0 {
		s.mu.Unlock()
		res, err := s.Rewind(ctx, id)
		if err != nil {
			return nil, err
		}
		return &Replay{User: m, UserID: id, Rewind: res}, nil
	}
	defer s.mu.Unlock()
	fromID, parent := s.leafID(), s.t.nodes[user].parent
	before := "" // the entry the copies go under
	if parent >= 0 {
		before = s.t.nodes[parent].e.id
	}
	// The entries themselves, not their places: a retry after a conflict
	// builds again on a tree read anew.
	compE, userE := s.t.nodes[comp].e, s.t.nodes[user].e
	var c Compaction
	compE.payload(&c)
	kept := c.FirstKeptEntryID // kept if it is on the path up to the message's parent
	if k, ok := s.t.lookup(kept); !ok || parent < 0 || !s.t.onPathTo(k, parent) {
		kept = ""
	}
	build := func(d *draft) ([]Entry, error) {
		cid, uid := d.newID(), d.newID()
		ce, err := compE.copyAs(cid, d.parent)
		if err == nil {
			// Keeping nothing older is keeping from itself, as pi reads it.
			ce, err = ce.withMember("firstKeptEntryId", jsonx.AppendString(nil, cmp.Or(kept, cid)))
		}
		if err != nil {
			return nil, err
		}
		ue, err := userE.copyAs(uid, cid)
		if err != nil {
			return nil, err
		}
		return []Entry{ce, ue}, nil
	}
	added, err := s.commit(ctx, func() string { return before }, build, nil, nil)
	if err != nil {
		return nil, err
	}
	to := added[len(added)-1].id
	res := RewindResult{From: fromID, To: to}
	if from, ok := s.t.lookup(fromID); ok {
		res.Left = s.t.leftBehind(from, s.leaf)
	}
	return &Replay{User: m, UserID: to, Rewind: res}, nil
}
