package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentsession/session/internal/jsonx"
)

// Session is the handle a host holds on one conversation: a tree of
// entries with a movable leaf, persisted in a Store. Appends go under the
// leaf and become the new leaf; Branch moves the leaf anywhere; Context
// rebuilds what the model sees at the leaf.
//
// All tree logic lives here, so a session behaves the same on every Store.
// A Session keeps its path and context up to date as entries are appended:
// asking for the context after each append costs O(new entries).
//
// Several handles, in one process or many, may share a session: every
// append is conditional on the last entry the handle knows of
// (AppendOptions.IfLast). On a conflict the handle reloads what the others
// wrote and retries; its own leaf does not move, so concurrent writers end
// up on sibling branches and nothing is lost or interleaved.
//
// All methods are safe for concurrent use.
type Session struct {
	mu     sync.Mutex
	store  Store
	id     string
	header Header
	t      *tree
	leaf   int32    // -1: before the first entry
	last   string   // id of the last stored entry, for IfLast
	pc     *pathCtx // context at the leaf; nil until asked for or after a move
	usage  usageCache
	obs    Observer // from an ObservedStore; nil: nothing is measured
	// What the last load skipped, kept so Log and Verify can report it.
	malformed []LineError
	partial   []LineError
	zeroed    []LineError
	torn      *LineError
	blobErrs  []*BlobError
	closed    bool
	now       func() time.Time
	// key names the session for writerLocks; keyed is false when the
	// store cannot be a map key.
	key   writerKey
	keyed bool
	// The last timestamp formatted, for appends in the same millisecond.
	stampMs  int64
	stampStr string

	// The write that failed last, whose outcome is unknown (retry.go).
	pending *pendingWrite
	draft   draft // what commit makes entries from, kept to spare an allocation
}

// Conversation is what an agent loop holds of a session: the history
// to send to the model before a generation (Messages, pairing-safe, ready
// for the provider packages' conversions), and a place to save the turn
// after it (SaveTurn: the user's message, the replies and tool results,
// in one append; usage, when not nil, goes on the turn's last assistant
// message that has none). It is the point where a host plugs a session
// into its agent; *Session implements it.
//
// The usual shape: the agent's options hold a default Conversation, a
// per-call WithSession option overrides it, and with neither the agent
// is stateless. examples/agent shows it working, and how to test such an
// agent against a MemoryStore.
type Conversation interface {
	ID() string
	Messages(ctx context.Context) ([]*Message, error)
	SaveTurn(ctx context.Context, msgs []*Message, usage *Usage) error
}

var _ Conversation = (*Session)(nil)

// CreateOptions describes a new session. The zero value is valid.
type CreateOptions struct {
	ID            string // default: a new UUIDv7
	Cwd           string // working directory the session belongs to
	Title         string // written in the header
	ParentSession string // the session this one was forked from
}

// New returns a session kept in memory only, on a fresh MemoryStore.
func New() *Session {
	s, err := Create(context.Background(), NewMemoryStore(), nil)
	if err != nil {
		panic(err) // a new memory store cannot refuse a fresh UUID
	}
	return s
}

// Create creates a session in store and returns its handle.
func Create(ctx context.Context, store Store, opts *CreateOptions) (*Session, error) {
	if opts == nil {
		opts = &CreateOptions{}
	}
	id := opts.ID
	if id == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("session: new id: %w", err)
		}
		id = u.String()
	}
	h := Header{
		Version: CurrentVersion, ID: id, Timestamp: time.Now().UTC().Truncate(time.Millisecond),
		Cwd: opts.Cwd, Title: opts.Title, ParentSession: opts.ParentSession,
	}
	if err := store.Create(ctx, h); err != nil {
		return nil, err
	}
	return newSession(store, &Log{Header: h}), nil
}

// Open opens an existing session of store.
func Open(ctx context.Context, store Store, id string) (*Session, error) {
	log, err := store.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	return newSession(store, log), nil
}

// OpenLog returns a session holding a log read elsewhere (for instance by
// ReadLog), kept in memory: appends change the session, not where the log
// came from. Any log can be opened this way, whatever its session id.
func OpenLog(log *Log) *Session {
	store := NewMemoryStore()
	ms := &memSession{header: log.Header.Clone(), entries: slices.Clone(log.Entries), ids: make(map[string]int, len(log.Entries)), updated: store.tick()}
	for i, e := range log.Entries {
		ms.ids[e.id] = i
	}
	ms.recount()
	store.sessions[log.Header.ID] = ms
	return newSession(store, &Log{Header: ms.header.Clone(), Entries: slices.Clone(ms.entries), Malformed: log.Malformed, Partial: log.Partial, Zeroed: log.Zeroed, Torn: log.Torn, Unresolved: log.Unresolved})
}

func newSession(store Store, log *Log) *Session {
	s := &Session{store: store, id: log.Header.ID, now: time.Now, obs: observerOf(store)}
	s.key, s.keyed = writerKeyOf(store, s.id)
	s.reset(log)
	return s
}

// reset replaces everything the handle knows with log.
func (s *Session) reset(log *Log) {
	s.header = log.Header
	s.t = newTree(log.Entries)
	s.leaf = s.t.defaultLeaf()
	s.last = lastID(log.Entries)
	s.pc = nil
	s.usage = usageCache{leaf: -2}
	s.malformed, s.partial, s.zeroed, s.torn = log.Malformed, log.Partial, log.Zeroed, log.Torn
	s.blobErrs = log.Unresolved
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Store returns the store the session lives in.
func (s *Session) Store() Store { return s.store }

// Header returns a copy of the session header.
func (s *Session) Header() Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.header.Clone()
}

// Title returns the session's display name: the latest session_info name,
// else the header's title.
func (s *Session) Title() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.titleLocked()
}

// Log returns a snapshot of the session's log: the header and every entry,
// in order, as a Store holds them, with what the loads (Open, OpenLog,
// Reload, catching up with other writers) skipped or could not resolve:
// Malformed, Partial, Zeroed, Torn, Unresolved.
func (s *Session) Log() *Log {
	s.mu.Lock()
	defer s.mu.Unlock()
	entries := make([]Entry, len(s.t.nodes))
	for i := range s.t.nodes {
		entries[i] = s.t.nodes[i].e
	}
	l := &Log{Header: s.header.Clone(), Entries: entries, Malformed: slices.Clone(s.malformed), Partial: slices.Clone(s.partial), Zeroed: slices.Clone(s.zeroed),
		Unresolved: slices.Clone(s.blobErrs)}
	if s.torn != nil {
		t := *s.torn
		l.Torn = &t
	}
	return l
}

// Len returns the number of entries in the log.
func (s *Session) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.t.nodes)
}

// ---- Reading the tree ----

// LeafID returns the current leaf's id: "" when the leaf is before the
// first entry (a new session, or after Branch to ""). Entry(LeafID())
// gives the entry itself.
func (s *Session) LeafID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leafID()
}

// Entry returns the entry with this id (for a duplicated id, the later).
func (s *Session) Entry(id string) (Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.t.lookup(id)
	if !ok {
		return Entry{}, false
	}
	return s.t.nodes[i].e, true
}

// Children returns the children of an entry in file order (nil for an
// unknown id). Leaf markers are not listed.
func (s *Session) Children(id string) []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.t.lookup(id)
	if !ok {
		return nil
	}
	return s.entries(s.t.children(i))
}

// Roots returns the entries without a parent: normally one, more after
// a Branch to "" or in a corrupt log (an entry whose parent is missing is a
// root).
func (s *Session) Roots() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries(s.t.children(-1))
}

// Leaves returns the entries without children, in file order: the ends
// of every branch.
func (s *Session) Leaves() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Entry
	for i := range s.t.nodes {
		if !s.t.hidden(int32(i)) && len(s.t.children(int32(i))) == 0 {
			out = append(out, s.t.nodes[i].e)
		}
	}
	return out
}

// PathTo returns the entries from the root to the entry id: the current
// branch for PathTo(LeafID()), and none for "" (before the first entry).
func (s *Session) PathTo(id string) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if id == "" {
		return []Entry{}, nil
	}
	i, ok := s.t.lookup(id)
	if !ok {
		return nil, fmt.Errorf("%w: entry %s", ErrNotFound, id)
	}
	return s.entries(s.t.pathTo(i)), nil
}

func (s *Session) entries(idx []int32) []Entry {
	out := make([]Entry, len(idx))
	for k, i := range idx {
		out[k] = s.t.nodes[i].e
	}
	return out
}

// Entries iterates over every entry in log order, leaf markers and
// duplicates included.
func (s *Session) Entries() iter.Seq[Entry] {
	return func(yield func(Entry) bool) {
		s.mu.Lock()
		nodes := s.t.nodes[:len(s.t.nodes):len(s.t.nodes)]
		s.mu.Unlock()
		for i := range nodes {
			if !yield(nodes[i].e) {
				return
			}
		}
	}
}

// TreeNode is one entry as Tree presents it.
type TreeNode struct {
	Entry    Entry
	Depth    int    // 0 for a root
	Label    string // the entry's label, if any
	Leaf     bool   // it is the session's current leaf
	Children int    // number of children shown
}

// Tree iterates over the tree depth-first, children in log order, as a
// tree view shows it. Leaf markers and shadowed duplicates are left out.
func (s *Session) Tree() iter.Seq[TreeNode] {
	return func(yield func(TreeNode) bool) {
		s.mu.Lock()
		var nodes []TreeNode
		s.t.walk(func(i int32, depth, kids int) bool {
			e := s.t.nodes[i].e
			nodes = append(nodes, TreeNode{Entry: e, Depth: depth, Label: s.t.labels[e.id], Leaf: i == s.leaf, Children: kids})
			return true
		})
		s.mu.Unlock()
		for _, n := range nodes {
			if !yield(n) {
				return
			}
		}
	}
}

// LabelOf returns the label of an entry, "" if none.
func (s *Session) LabelOf(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.labels[id]
}

// Labels returns every label, by entry id.
func (s *Session) Labels() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.t.labels))
	for k, v := range s.t.labels {
		out[k] = v
	}
	return out
}

// ---- Context ----

// Context returns the context at the leaf. It is kept up to date as
// entries are appended, so calling it after every append is cheap.
func (s *Session) Context() *Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leafCtx().snapshot(s.t)
}

func (s *Session) leafCtx() *pathCtx {
	if s.pc == nil {
		s.pc = s.t.buildContext(s.leaf)
	}
	return s.pc
}

// ContextAt returns the context as it would be with the leaf at entry id.
func (s *Session) ContextAt(id string) (*Context, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	i, ok := s.t.lookup(id)
	if !ok {
		return nil, fmt.Errorf("%w: entry %s", ErrNotFound, id)
	}
	if i == s.leaf {
		return s.leafCtx().snapshot(s.t), nil
	}
	return s.t.buildContext(i).snapshot(s.t), nil
}

// Messages returns the messages to send to the model at the leaf: the
// context's messages with tool pairing repaired (see Context.ForModel). It
// implements Agent. The slice and messages are shared: do not modify
// them. Appending to the slice is safe: it has no spare capacity, so
// append copies it.
func (s *Session) Messages(ctx context.Context) ([]*Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return slices.Clip(s.leafCtx().forModel()), nil
}

// ---- Appending ----

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
	unlock, err := s.takeTurn(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
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
	for attempt := 0; ; attempt++ {
		if entries == nil {
			var made []string // few: the entries of one append
			d.newID = func() string {
				id := newEntryID(nil, func(id string) bool {
					_, taken := s.t.byID[id]
					return taken || slices.Contains(made, id)
				})
				made = append(made, id)
				return id
			}
			if entries, err = build(d); err != nil {
				return nil, err
			}
		}
		opts := AppendOptions{IfLast: s.last, IfEmpty: s.last == ""}
		err = s.store.Append(ctx, s.id, opts, entries...)
		if err == nil {
			s.pending = nil
			s.apply(entries, leafAfter, msgs)
			return entries, nil
		}
		if !errors.Is(err, ErrConflict) {
			if !errors.Is(err, ErrTooLarge) {
				// The store may have written them all the same.
				s.pending = &pendingWrite{parent: d.parent, now: d.now, entries: entries, leafAfter: leafAfter}
			}
			return nil, err
		}
		if attempt+1 >= maxConflictRetries {
			return nil, conflictErr(attempt+1, err)
		}
		// Another writer appended: learn what it wrote, then retry under the
		// same leaf with ids that are still free.
		if berr := backoff(ctx, attempt+1); berr != nil {
			return nil, errors.Join(err, berr)
		}
		if rerr := s.reload(ctx); rerr != nil {
			return nil, errors.Join(err, rerr)
		}
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
		if _, dup := s.t.byID[e.id]; dup || seen[e.id] {
			return false
		}
		if e.parent != "" && !seen[e.parent] {
			if _, ok := s.t.byID[e.parent]; !ok {
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

// Reload rereads the session from its store, to see what other handles
// wrote. The leaf stays where it is if that entry still exists.
func (s *Session) Reload(ctx context.Context) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return s.reload(ctx)
}

// stampAt returns t as entries write it. Callers hold mu.
func (s *Session) stampAt(t time.Time) string {
	if ms := t.UnixMilli(); ms != s.stampMs || s.stampStr == "" {
		s.stampMs, s.stampStr = ms, formatTime(t)
	}
	return s.stampStr
}

// leafID returns the leaf's id, "" for none. Callers hold mu.
func (s *Session) leafID() string {
	if s.leaf < 0 {
		return ""
	}
	return s.t.nodes[s.leaf].e.id
}

// prepare validates a message for appending and returns the session's
// own copy. A zero Timestamp is set when the entries are made (the time
// of the write).
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
	return m.Clone(), nil
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
	p := pairing{open: append([]openCall(nil), s.leafCtx().pair.open...)}
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
// again under its own leaf (see the package documentation, "Several
// writers"). It fails with ErrConflict only when it lost every attempt
// for about a second, or when the entry it would append under was
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
// when not nil, is recorded on the turn's last assistant message if that
// message carries none of its own. It implements Agent.
//
// When it fails, the turn may still have been stored (the store's answer
// was lost): calling it again with the same messages stores the turn
// once (see the package documentation, "Retries").
func (s *Session) SaveTurn(ctx context.Context, msgs []*Message, usage *Usage) error {
	if len(msgs) == 0 {
		return s.closedErr(ctx)
	}
	_, err := s.appendMessages(ctx, msgs, usage)
	return err
}

func (s *Session) appendMessages(ctx context.Context, msgs []*Message, usage *Usage) ([]Entry, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
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
	if usage != nil {
		for k := len(own) - 1; k >= 0; k-- {
			if own[k].Role == RoleAssistant {
				if own[k].Usage == nil {
					u := *usage
					u.Extra = usage.Extra.Clone()
					own[k].Usage = &u
				}
				break
			}
		}
	}
	build := func(d *draft) ([]Entry, error) {
		for _, k := range stampless {
			own[k].Timestamp = d.now.UnixMilli()
		}
		out := make([]Entry, len(own))
		parent := d.parent
		for k, m := range own {
			e, err := newMessageEntry(d.newID(), parent, d.stamp, m)
			if err != nil {
				return nil, err
			}
			out[k] = e
			parent = e.id
		}
		return out, nil
	}
	if p := s.pending; p != nil && p.landed && s.retryOf(p, build) {
		// The retry of a write a reload found in the store: it happened,
		// and the pairing it was checked for is behind the leaf now.
		s.pending = nil
		return p.entries, nil
	}
	if err := s.checkPairing(own); err != nil {
		return nil, err
	}
	return s.commit(ctx, s.leafID, build, nil, own)
}

// AppendEntry appends an entry of any type under the leaf, with payload
// marshalled as its other members (see NewEntry). It is the way to write
// types this package has no method for; use Append for messages.
func (s *Session) AppendEntry(ctx context.Context, typ string, payload any) (Entry, error) {
	if typ == TypeMessage {
		return Entry{}, errors.New("session: use Append for messages")
	}
	if err := s.lock(ctx); err != nil {
		return Entry{}, err
	}
	defer s.mu.Unlock()
	es, err := s.commit(ctx, s.leafID, func(d *draft) ([]Entry, error) {
		e, err := NewEntry(typ, d.newID(), d.parent, d.now, payload)
		if err != nil {
			return nil, err
		}
		if e.kind == kindCustom && isLeafMarker(e) {
			return nil, fmt.Errorf("session: custom type %q is reserved for leaf moves", leafMarkerType)
		}
		return []Entry{e}, nil
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

// AppendModelChange records a change of model, in pi's form.
func (s *Session) AppendModelChange(ctx context.Context, provider, modelID string) (Entry, error) {
	if err := s.closedErr(ctx); err != nil {
		return Entry{}, err
	}
	if provider == "" && modelID == "" {
		return Entry{}, errors.New("session: AppendModelChange needs a provider or a model id")
	}
	return s.AppendEntry(ctx, TypeModelChange, ModelChange{Provider: provider, ModelID: modelID})
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
	if err := s.lock(ctx); err != nil {
		return err
	}
	i, ok := s.t.lookup(id)
	ok = ok && s.t.nodes[i].flags&fMarker == 0 // markers are not for users to label
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: entry %s", ErrNotFound, id)
	}
	_, err := s.AppendEntry(ctx, TypeLabel, Label{TargetID: id, Label: label})
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

// ---- Moving the leaf ----

// Branch moves the leaf to entry id, or before the first entry for ""
// (the next append makes a new root); the next append starts a new
// branch there. Nothing is deleted. The move is persisted (see the
// package documentation on leaf markers), so it survives a reopen.
func (s *Session) Branch(ctx context.Context, id string) (err error) {
	start, left := s.begin(), 0
	defer func() { s.report(ctx, OpBranch, start, left, err) }()
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	left = s.leftFor(id)
	return s.branch(ctx, id)
}

// branch is Branch; callers hold mu.
func (s *Session) branch(ctx context.Context, id string) error {
	if id == "" {
		if s.leaf < 0 {
			return nil
		}
		return s.moveLeaf(ctx, -1)
	}
	i, ok := s.t.lookup(id)
	if !ok || s.t.nodes[i].flags&fMarker != 0 {
		return fmt.Errorf("%w: entry %s", ErrNotFound, id)
	}
	if i == s.leaf {
		return nil
	}
	return s.moveLeaf(ctx, i)
}

// leftFor is the count a branch event reports for a move of the leaf to
// entry id ("" for before the first entry): the entries of the current
// path left behind. It is only counted when the session is observed, and
// is 0 for an unknown id; callers hold mu.
func (s *Session) leftFor(id string) int {
	if s.obs == nil {
		return 0
	}
	to := int32(-1)
	if id != "" {
		var ok bool
		if to, ok = s.t.lookup(id); !ok {
			return 0
		}
	}
	return s.t.leftBehind(s.leaf, to)
}

// moveLeaf appends a leaf marker under target and makes target the leaf.
func (s *Session) moveLeaf(ctx context.Context, target int32) error {
	parent := ""
	if target >= 0 {
		parent = s.t.nodes[target].e.id
	}
	_, err := s.commit(ctx, func() string { return parent }, func(d *draft) ([]Entry, error) {
		e, err := NewEntry(TypeCustom, d.newID(), d.parent, d.now, Custom{CustomType: leafMarkerType})
		if err != nil {
			return nil, err
		}
		return []Entry{e}, nil
	}, func([]int32) int32 {
		if target >= 0 {
			// Resolve again: a reload after a conflict renumbers nodes.
			target, _ = s.t.lookup(parent)
		}
		return target
	}, nil)
	return err
}

// BranchWithSummary moves the leaf to entry id ("" for before the first
// entry) and appends a branch_summary there, which puts summary in the
// context in place of the abandoned path; details, when not nil, is
// marshalled into the entry's details (SummarizeBranch keeps the files
// read and modified there). As in the seed format, the summary's fromId
// is the entry branched to ("root" for ""). It returns the summary entry,
// the new leaf.
func (s *Session) BranchWithSummary(ctx context.Context, id, summary string, details any) (e Entry, err error) {
	start, left := s.begin(), 0
	defer func() { s.report(ctx, OpBranch, start, left, err) }()
	if err := s.lock(ctx); err != nil {
		return Entry{}, err
	}
	defer s.mu.Unlock()
	raw, err := marshalRaw(details)
	if err != nil {
		return Entry{}, err
	}
	left = s.leftFor(id)
	return s.branchWithSummary(ctx, id, BranchSummary{Summary: summary, Details: raw})
}

// branchWithSummary is BranchWithSummary; callers hold mu.
func (s *Session) branchWithSummary(ctx context.Context, id string, b BranchSummary) (Entry, error) {
	if id != "" {
		i, ok := s.t.lookup(id)
		if !ok || s.t.nodes[i].flags&fMarker != 0 {
			return Entry{}, fmt.Errorf("%w: entry %s", ErrNotFound, id)
		}
	}
	b.FromID = id
	if id == "" {
		b.FromID = "root"
	}
	es, err := s.commit(ctx, func() string { return id }, func(d *draft) ([]Entry, error) {
		e, err := NewEntry(TypeBranchSummary, d.newID(), d.parent, d.now, b)
		if err != nil {
			return nil, err
		}
		return []Entry{e}, nil
	}, nil, nil)
	if err != nil {
		return Entry{}, err
	}
	return es[0], nil
}

// Flusher is implemented by stores that buffer appends (see SyncPolicy of
// a FileStore); Session.Flush calls it.
type Flusher interface {
	Flush(ctx context.Context, id string) error
}

// Flush makes the appends so far durable, for stores that buffer them; a
// no-op otherwise. Call it at the end of each turn.
func (s *Session) Flush(ctx context.Context) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if f, ok := s.store.(Flusher); ok {
		return f.Flush(ctx, s.id)
	}
	return nil
}

// Close flushes and releases the handle, and lets go of what the store
// holds for it (a FileStore's open file), even when the flush fails: the
// error of a write that failed earlier is returned, once more, but
// nothing stays open. Afterwards every method that returns an error
// returns ErrClosed before doing anything (Close itself returns nil);
// those that return no error (Context, Tree, Leaf, Log ...) keep
// answering from what the handle holds. The session stays in its store.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if f, ok := s.store.(Flusher); ok {
		err = f.Flush(context.Background(), s.id)
	}
	// Whatever happened before, the store lets go of what it holds for
	// the session (a FileStore's open file and its place among
	// MaxOpenFiles).
	if c, ok := s.store.(sessionCloser); ok {
		if cerr := c.closeSession(s.id); cerr != nil && (err == nil || cerr.Error() != err.Error()) {
			err = errors.Join(err, cerr)
		}
	}
	if errors.Is(err, ErrClosed) {
		return nil // the store was closed first
	}
	return err
}

// sessionCloser is implemented by stores that hold resources per session
// (FileStore's open files), which Close lets go.
type sessionCloser interface {
	closeSession(id string) error
}

// ---- Forks and subsessions ----

// ForkOptions configures Fork. The zero value (or nil) forks the whole
// path to the leaf into a new session of the same store.
type ForkOptions struct {
	// At is the entry the fork ends at; default the leaf.
	At string
	// ID is the new session's id; default a new UUIDv7.
	ID string
	// Title is the new session's title; default "<source title> (fork)".
	Title string
	// Store is where the fork goes; default the source's store.
	Store Store
	// Cwd is the new session's working directory; default the source's.
	Cwd string
	// CopyLabels copies the labels (checkpoints) of the copied entries.
	CopyLabels bool
}

// Fork starts a new session holding the path from the root to opts.At
// (the leaf by default): the same entries, with the same ids and bytes,
// but for the labels and title changes on the path, which go (with
// CopyLabels, the labels of the copied entries come again after the
// path). An entry whose parent went is re-parented to the entry before
// it, and a compaction that kept history from one that went keeps it from
// the next: those members are rewritten, the rest of their bytes kept.
// The fork's context is the source's at opts.At. Its header's
// parentSession names this session (by id); the source is not changed.
// It works on every Store, and between stores.
func (s *Session) Fork(ctx context.Context, opts *ForkOptions) (f *Session, err error) {
	start := s.begin()
	defer func() {
		if s.obs != nil {
			e := Event{Op: OpFork, Session: s.id, Duration: time.Since(start), Err: err}
			if f != nil {
				e.Fork, e.Entries = f.id, f.Len()
			}
			s.obs.Observe(ctx, e)
		}
	}()
	var o ForkOptions
	if opts != nil {
		o = *opts
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	at := s.leaf
	if o.At != "" {
		var ok bool
		if at, ok = s.t.lookup(o.At); !ok || s.t.nodes[at].flags&fMarker != 0 {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: entry %s", ErrNotFound, o.At)
		}
	}
	path := s.t.pathTo(at)
	entries := make([]Entry, 0, len(path)+8)
	parent := ""
	copied := map[string]bool{}
	// A compaction may keep history from an entry left out (pi names
	// labels and titles as firstKeptEntryId): it keeps from the next
	// entry copied instead, which gives the same context.
	var left []string
	moved := map[string]string{}
	for _, i := range path {
		e := s.t.nodes[i].e
		if e.kind == kindLabel || e.kind == kindSessionInfo {
			left = append(left, e.id) // labels and titles go (labels may come again after the path)
			continue
		}
		for _, id := range left {
			moved[id] = e.id
		}
		left = left[:0]
		var err error
		if e.parent != parent {
			// Its parent was left out: hang it on the entry before.
			e, err = e.withParent(parent)
		}
		if err == nil && e.kind == kindCompaction && len(moved) > 0 {
			var c Compaction
			if e.payload(&c); moved[c.FirstKeptEntryID] != "" {
				e, err = e.withMember("firstKeptEntryId", jsonx.AppendString(nil, moved[c.FirstKeptEntryID]))
			}
		}
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		entries = append(entries, e)
		copied[e.id] = true
		parent = e.id
	}
	var labels []Label
	if o.CopyLabels {
		for _, i := range path {
			if id := s.t.nodes[i].e.id; copied[id] && s.t.labels[id] != "" {
				labels = append(labels, Label{TargetID: id, Label: s.t.labels[id]})
			}
		}
	}
	h := s.header.Clone()
	title := s.titleLocked()
	s.mu.Unlock()

	store := o.Store
	if store == nil {
		store = s.store
	}
	if o.Title == "" && title != "" {
		o.Title = title + " (fork)"
	}
	if o.Cwd == "" {
		o.Cwd = h.Cwd
	}
	f, err = Create(ctx, store, &CreateOptions{ID: o.ID, Cwd: o.Cwd, Title: o.Title, ParentSession: s.id})
	if err != nil {
		return nil, err
	}
	now := s.now()
	ids := map[string]bool{}
	for _, e := range entries {
		ids[e.id] = true
	}
	for _, l := range labels {
		id := newEntryID(nil, func(id string) bool { return ids[id] })
		ids[id] = true
		e, err := NewEntry(TypeLabel, id, parent, now, l)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
		parent = id
	}
	if len(entries) > 0 {
		if err := f.appendEntries(ctx, entries); err != nil {
			return nil, errors.Join(err, f.Close(), store.Delete(ctx, f.id))
		}
	}
	return f, nil
}

// appendEntries stores entries built elsewhere at the end of a new
// session's log and indexes them; the leaf becomes the last.
func (s *Session) appendEntries(ctx context.Context, entries []Entry) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := s.store.Append(ctx, s.id, AppendOptions{IfEmpty: true}, entries...); err != nil {
		return err
	}
	s.reset(&Log{Header: s.header, Entries: entries})
	return nil
}

// pathOf returns the file of the session, for errors, when its store
// keeps it in one.
func (s *Session) pathOf() string {
	store := s.store
	for {
		u, ok := store.(interface{ Unwrap() Store })
		if !ok {
			break
		}
		store = u.Unwrap()
	}
	if p, ok := store.(interface{ Path(string) (string, error) }); ok {
		if path, err := p.Path(s.id); err == nil {
			return path
		}
	}
	return ""
}

// lock takes mu, giving up when ctx ends (ctx.Err()), and fails with
// ErrClosed once the handle is closed: every method that returns an
// error takes it (or calls closedErr) before doing anything, a
// summarizer's model call or a fork's new session included.
func (s *Session) lock(ctx context.Context) error {
	if err := lockCtx(ctx, &s.mu); err != nil {
		return err
	}
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// closedErr returns ErrClosed once the handle is closed, and ctx's error
// if it ends while another call holds the handle.
func (s *Session) closedErr(ctx context.Context) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	s.mu.Unlock()
	return nil
}

// titleLocked is Title; callers hold mu.
func (s *Session) titleLocked() string {
	for i := len(s.t.nodes) - 1; i >= 0; i-- {
		e := s.t.nodes[i].e
		if e.kind != kindSessionInfo {
			continue
		}
		var si SessionInfoEntry
		if e.payload(&si); strings.TrimSpace(si.Name) != "" {
			return strings.TrimSpace(si.Name)
		}
	}
	return s.header.Title
}

// ListChildren lists the sessions of store whose parent is session
// parentID (its forks and subagents' sessions), most recent first.
func ListChildren(ctx context.Context, store Store, parentID string) ([]SessionInfo, error) {
	var out []SessionInfo
	opts := ListOptions{ParentSession: parentID, Archived: true, Limit: 1000}
	for {
		p, err := store.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Sessions...)
		if p.Next == "" {
			return out, nil
		}
		opts.Cursor = p.Next
	}
}
