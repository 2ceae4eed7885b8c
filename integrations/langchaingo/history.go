package langchaingo

import (
	"context"
	"errors"
	"sync"

	session "github.com/agentsession/session"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/schema"
)

// ChatMessageHistory is a langchaingo schema.ChatMessageHistory kept in
// an agentsession session: the messages are the context at the session's
// leaf, and each one added is appended under it. See the package
// documentation for how messages are stored and what Clear and
// SetMessages do.
//
// Its methods are safe for concurrent use.
type ChatMessageHistory struct {
	s     *session.Session
	owned bool // New opened s: Close closes it

	mu sync.Mutex
	// The langchaingo messages of the context at leaf, when valid, and
	// the calls that may still get a result there. Kept as messages are
	// added, so that Messages costs a copy of the list and not a
	// rebuild of the context; rebuilt when the leaf is elsewhere (the
	// session was written through another way, or a write failed).
	valid bool
	leaf  string
	msgs  []llms.ChatMessage
	pair  pairing
}

// Statically assert that ChatMessageHistory implements the chat message
// history interface.
var _ schema.ChatMessageHistory = (*ChatMessageHistory)(nil)

// Option configures New.
type Option func(*options)

type options struct {
	create session.CreateOptions
}

// WithCreateOptions gives the options of the session New creates when
// there is none of its id yet (working directory, title, metadata,
// Deferred ...). Its ID is ignored: New's id argument names the session.
func WithCreateOptions(o session.CreateOptions) Option {
	return func(opts *options) { opts.create = o }
}

// New returns the history of session id of store, opening the session
// or creating it when there is none (session.OpenOrCreate, race-free
// across processes); an empty id creates a new session with a fresh id
// (see ID). Close the history when done with it: that closes the
// session, which a FileStore needs to flush and let go of its file.
func New(ctx context.Context, store session.Store, id string, opts ...Option) (*ChatMessageHistory, error) {
	if store == nil {
		return nil, errors.New("langchaingo: nil store")
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	co := o.create
	co.ID = id
	var (
		s   *session.Session
		err error
	)
	if id == "" {
		s, err = session.Create(ctx, store, &co)
	} else {
		s, _, err = session.OpenOrCreate(ctx, store, &co)
	}
	if err != nil {
		return nil, err
	}
	return &ChatMessageHistory{s: s, owned: true}, nil
}

// FromSession returns the history of an open session. The session stays
// the caller's: the history's Close does not close it, and the caller may
// go on using it (appending, branching, compacting); the history follows
// its leaf.
func FromSession(s *session.Session) *ChatMessageHistory {
	return &ChatMessageHistory{s: s}
}

// Session returns the session the history is kept in: to browse or
// restore the branches Clear and SetMessages leave behind (Leaves,
// Branch), compact it, fork it, or hand it to anything that takes a
// session.
func (h *ChatMessageHistory) Session() *session.Session { return h.s }

// ID returns the session id.
func (h *ChatMessageHistory) ID() string { return h.s.ID() }

// Messages returns the messages of the context at the session's leaf,
// converted to langchaingo's types (see the package documentation). The
// slice and the messages are the caller's. It is never nil.
func (h *ChatMessageHistory) Messages(ctx context.Context) ([]llms.ChatMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.sync(); err != nil {
		return nil, err
	}
	out := make([]llms.ChatMessage, len(h.msgs))
	for i, m := range h.msgs {
		out[i] = clone(m)
	}
	return out, nil
}

// sync rebuilds the cached messages when they are not those at the leaf.
// Callers hold mu.
func (h *ChatMessageHistory) sync() error {
	leaf := h.s.LeafID()
	if h.valid && leaf == h.leaf {
		return nil
	}
	c, err := h.s.ContextAt(leaf)
	if err != nil {
		h.valid = false
		return err
	}
	msgs := make([]llms.ChatMessage, len(c.Messages))
	for i, m := range c.Messages {
		msgs[i] = fromSession(m)
	}
	h.msgs, h.leaf, h.valid = msgs, c.LeafID, true
	h.pair = pairing{open: c.Pending}
	return nil
}

// AddMessage appends message to the session, under its leaf. A tool
// message that answers no call awaiting a result is kept as a custom
// message (see the package documentation).
func (h *ChatMessageHistory) AddMessage(ctx context.Context, message llms.ChatMessage) error {
	msg, err := normalize(message)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.sync(); err != nil {
		return err
	}
	sm, err := toSession(msg, &h.pair)
	if err != nil {
		return err
	}
	e, err := h.s.Append(ctx, sm)
	if errors.Is(err, session.ErrUnpairedToolResult) {
		// The leaf moved since sync (the caller wrote to the session
		// directly meanwhile): keep the message all the same.
		tm := msg.(llms.ToolChatMessage)
		if sm, err = custom(details{Type: llms.ChatMessageTypeTool, ToolCallID: tm.ID}, tm.Content); err == nil {
			e, err = h.s.Append(ctx, sm)
		}
	}
	if err != nil {
		h.valid = false
		return err
	}
	if !h.valid || e.ParentID() != h.leaf {
		h.valid = false // appended elsewhere than the cache knows
		return nil
	}
	// What the entry holds, as a reopen reads it (JSON has put U+FFFD in
	// place of invalid UTF-8, for one).
	stored, err := e.Message()
	if err != nil {
		h.valid = false
		return nil
	}
	h.msgs = append(h.msgs, fromSession(stored))
	h.leaf = e.ID()
	h.pair.push(stored)
	return nil
}

// AddUserMessage appends a human message.
func (h *ChatMessageHistory) AddUserMessage(ctx context.Context, text string) error {
	return h.AddMessage(ctx, llms.HumanChatMessage{Content: text})
}

// AddAIMessage appends an AI message.
func (h *ChatMessageHistory) AddAIMessage(ctx context.Context, text string) error {
	return h.AddMessage(ctx, llms.AIChatMessage{Content: text})
}

// Clear empties the history without deleting anything: it moves the
// session's leaf before its first entry (Session.Branch to ""), so that
// the next message starts a new branch from the root. What was there
// stays in the session as a branch of its own.
func (h *ChatMessageHistory) Clear(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.s.Branch(ctx, ""); err != nil {
		h.valid = false
		return err
	}
	h.msgs, h.leaf, h.valid, h.pair = nil, "", true, pairing{}
	return nil
}

// SetMessages replaces the history with messages without deleting
// anything: it moves the session's leaf before its first entry, as
// Clear does, and appends messages there in one write, all or nothing:
// a new branch from the root. What was there stays in the session as a
// branch of its own. If the write fails, the leaf is moved back where it
// was. An empty list is Clear.
func (h *ChatMessageHistory) SetMessages(ctx context.Context, messages []llms.ChatMessage) error {
	var p pairing
	sms := make([]*session.Message, len(messages))
	for i, m := range messages {
		msg, err := normalize(m)
		if err != nil {
			return err
		}
		if sms[i], err = toSession(msg, &p); err != nil {
			return err
		}
		p.push(sms[i])
	}
	if len(sms) == 0 {
		return h.Clear(ctx)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.valid = false // rebuilt by the next call
	from := h.s.LeafID()
	if err := h.s.Branch(ctx, ""); err != nil {
		return err
	}
	if err := h.s.SaveTurn(ctx, sms, nil); err != nil {
		if from != "" {
			if berr := h.s.Branch(context.WithoutCancel(ctx), from); berr != nil {
				return errors.Join(err, berr)
			}
		}
		return err
	}
	return nil
}

// Flush makes what was added durable, on stores that buffer appends (a
// FileStore syncs its file; see session.SyncPolicy).
func (h *ChatMessageHistory) Flush(ctx context.Context) error { return h.s.Flush(ctx) }

// Close closes the session when New opened it (flushing it, and letting
// go of a FileStore's file); a history made by FromSession leaves the
// session open. The history is of no use afterwards.
func (h *ChatMessageHistory) Close() error {
	if !h.owned {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.valid = false // what follows asks the closed session: ErrClosed
	return h.s.Close()
}
