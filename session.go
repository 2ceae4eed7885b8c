package session

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
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
	// pathOnly is set while the handle holds the current path alone
	// (pathload.go), cleared once it holds the whole history.
	pathOnly bool
	usage    usageCache
	turns    turnCount  // the number of turns at a leaf (resume.go)
	clear    clearCache // the cleared model view (clearing.go)
	sf       stateFold  // the session state at the leaf and along paths (statefold.go)
	copies   copyCaches // the copies Messages and Context hand out (msgreuse.go)
	// deferred: the session is not in its store yet (CreateOptions.Deferred).
	deferred bool
	obs      Observer // from an ObservedStore; nil: nothing is measured
	hub      *Hub     // the store's, for ChangeOperation; nil: none
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

	// lenientPairing: appends store tool results that answer no pending
	// call (SetStrictPairing(false)).
	lenientPairing bool

	// The write that failed last, whose outcome is unknown (retry.go).
	pending *pendingWrite
	draft   draft // what commit makes entries from, kept to spare an allocation
	// The ids the write commit is making has used (nextID), and
	// nextID as a func value, made once.
	made     []string
	nextIDFn func() string
}

// Conversation is what an agent loop holds of a session: the history
// to send to the model before a generation (Messages, pairing-safe, ready
// for the provider packages' conversions), a place to save the turn
// after it (SaveTurn: the user's message, the replies and tool results,
// in one append; usage, when not nil, goes on the turn's last assistant
// message that has none), and compaction when the history outgrows the
// model's window (NeedsCompaction, Compact), and Flush, which makes the
// turns saved so far durable (a FileStore's default SyncOnFlush syncs
// only then; call it at the end of each turn). It is the point where a
// host plugs a session into its agent; *Session implements it, and a
// host's test double implements all of it, so that an agent never loses
// auto-compaction or durability to a type assertion that fails.
//
// A nil *Session in a Conversation is not a nil Conversation: every
// method of it that returns an error returns ErrNilSession (ID is "",
// and NeedsCompaction is true, so that Compact says so), rather than
// panic.
//
// The usual shape: the agent's options hold a default Conversation, a
// per-call WithSession option overrides it, and with neither the agent
// is stateless. examples/agent shows it working, and how to test such an
// agent against a MemoryStore.
type Conversation interface {
	ID() string
	Messages(ctx context.Context) ([]*Message, error)
	SaveTurn(ctx context.Context, msgs []*Message, usage *Usage) error
	NeedsCompaction(opts *CompactionOptions) bool
	Compact(ctx context.Context, sum Summarizer, opts *CompactionOptions) (*CompactionResult, error)
	Flush(ctx context.Context) error
}

var _ Conversation = (*Session)(nil)

// CreateOptions describes a new session. The zero value is valid.
type CreateOptions struct {
	ID            string // default: a new UUIDv7
	Cwd           string // working directory (the project's directory) the session belongs to
	Title         string // written in the header
	ParentSession string // the session this one was forked from
	// Metadata kept in the header (see Meta): the project, the version
	// of the host application, the user (tenant) and the application the
	// session belongs to (User and App also name the shared state scopes,
	// see State), and free key/value pairs. Session.UpdateMeta changes
	// them later.
	ProjectID  string
	AppVersion string
	User       string
	App        string
	Metadata   map[string]string

	// Deferred holds the session back from the store until its first
	// assistant message is appended, as pi's CLI does: a session left
	// after a prompt that got no reply never reaches the store, and never
	// clutters listings. Until then the handle keeps what is appended;
	// then the header and every entry so far are written in one step, in
	// order (see EntryCreator), and the session goes on as any other.
	// Persist writes it earlier. See Session.Persisted. Two deferred
	// creators of one id (OpenOrCreate in two processes) both think they
	// made it: the second to be written puts its entries after the
	// first's, a branch of its own, as two writers of a session do. A
	// fork of a deferred session names a parent that may never be
	// stored.
	Deferred bool
}

// New returns a session kept in memory only, on a fresh MemoryStore.
func New() *Session {
	s, err := Create(context.Background(), NewMemoryStore(), nil)
	if err != nil {
		panic(err) // a new memory store cannot refuse a fresh UUID
	}
	return s
}

// NewWithID returns a session kept in memory only, on a fresh
// MemoryStore, with the given id (any id ValidateID accepts): what a host
// that names its conversations itself (Dive's session.New(id)) needs
// for tests and for sessions that need not outlive the process.
func NewWithID(id string) (*Session, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	return Create(context.Background(), NewMemoryStore(), &CreateOptions{ID: id})
}

// Create creates a session in store and returns its handle.
func Create(ctx context.Context, store Store, opts *CreateOptions) (*Session, error) {
	h, err := newHeader(store, opts)
	if err != nil {
		return nil, err
	}
	if opts != nil && opts.Deferred {
		return createDeferred(ctx, store, h, opts.ID != "")
	}
	if err := store.Create(ctx, h); err != nil {
		return nil, err
	}
	return newSession(store, &Log{Header: h}), nil
}

// newHeader is the header of a new session of store made with opts.
func newHeader(store Store, opts *CreateOptions) (Header, error) {
	if opts == nil {
		opts = &CreateOptions{}
	}
	id := opts.ID
	if id == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return Header{}, fmt.Errorf("session: new id: %w", err)
		}
		id = u.String()
	}
	h := Header{
		Version: CurrentVersion, ID: id, Timestamp: time.Now().UTC().Truncate(time.Millisecond),
		Cwd: opts.Cwd, Title: opts.Title, ParentSession: opts.ParentSession,
	}
	m := Meta{ProjectID: opts.ProjectID, AppVersion: opts.AppVersion, User: opts.User, App: opts.App, Metadata: opts.Metadata}
	if u, ok := store.(*UserStore); ok && m.User == "" {
		m.User = u.user // as the view stamps it
	}
	if err := setHeaderMeta(&h, m); err != nil {
		return Header{}, fmt.Errorf("session: metadata: %w", err)
	}
	return h, nil
}

// Open opens an existing session of store.
//
// A long session that has been compacted is opened by its current path
// where the store can (a FileStore through the path index it keeps
// beside the log, a MemoryStore): only the entries the context at the
// leaf needs are read, from the latest compaction's first kept entry
// on, with the settings before it, so that a resume costs what the
// context holds, not what the history holds. Context, Messages,
// SharedMessages, the appends and SaveTurn, Flush and Close work on
// that; the first call that needs the rest of the history (Tree,
// Entries, PathTo an older entry, Branch, Fork, Verify, Log, Usage ...)
// reads it then, once. Methods that return no error and need it see
// the current path alone if that read fails, and try again at the next
// call.
func Open(ctx context.Context, store Store, id string) (*Session, error) {
	start := time.Now()
	s, log, err := openPath(ctx, store, id)
	if err != nil {
		return nil, err
	}
	s.telemetry(ctx, start, OpInfo{Op: OpResume, Entries: len(log.Entries), Target: s.LeafID(), Idempotent: true})
	return s, nil
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
	return newSessionTree(store, log, newTree(log.Entries))
}

// newSessionTree is newSession with the tree of log's entries already
// built.
func newSessionTree(store Store, log *Log, t *tree) *Session {
	s := &Session{store: store, id: log.Header.ID, now: time.Now, obs: observerOf(store), hub: hubOf(store)}
	s.key, s.keyed = writerKeyOf(store, s.id)
	s.resetTree(log, t)
	return s
}

// reset replaces everything the handle knows with log.
func (s *Session) reset(log *Log) { s.resetTree(log, newTree(log.Entries)) }

// resetTree is reset with t, the tree of log's entries.
func (s *Session) resetTree(log *Log, t *tree) {
	s.header = log.Header
	s.t = t
	s.pathOnly = false
	s.leaf = s.t.defaultLeaf()
	s.last = lastID(log.Entries)
	s.pc = nil
	s.usage = usageCache{leaf: -2}
	s.turns = turnCount{}
	s.malformed, s.partial, s.zeroed, s.torn = log.Malformed, log.Partial, log.Zeroed, log.Torn
	s.blobErrs = log.Unresolved
}

// ID returns the session id; "" for a nil *Session.
func (s *Session) ID() string {
	if s == nil {
		return ""
	}
	return s.id
}

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
	s.wholeNoCtx()
	defer s.mu.Unlock()
	return s.titleLocked()
}

// Log returns a snapshot of the session's log: the header and every entry,
// in order, as a Store holds them, with what the loads (Open, OpenLog,
// Reload, catching up with other writers) skipped or could not resolve:
// Malformed, Partial, Zeroed, Torn, Unresolved.
func (s *Session) Log() *Log {
	s.mu.Lock()
	s.wholeNoCtx()
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
	s.wholeNoCtx()
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
	s.wholeNoCtx()
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
	s.wholeNoCtx()
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
	s.wholeNoCtx()
	defer s.mu.Unlock()
	return s.entries(s.t.children(-1))
}

// Leaves returns the entries without children, in file order: the ends
// of every branch.
func (s *Session) Leaves() []Entry {
	s.mu.Lock()
	s.wholeNoCtx()
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
	if err := s.makeWhole(context.Background()); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, ErrNilSession
	}
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
		s.wholeNoCtx()
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
		s.wholeNoCtx()
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
	s.wholeNoCtx()
	defer s.mu.Unlock()
	return s.t.labels[id]
}

// Labels returns every label, by entry id.
func (s *Session) Labels() map[string]string {
	s.mu.Lock()
	s.wholeNoCtx()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.t.labels))
	for k, v := range s.t.labels {
		out[k] = v
	}
	return out
}

// ---- Context ----

// Context returns the context at the leaf. It is kept up to date as
// entries are appended, and its messages are copies made once and handed
// out again while unedited (the copy rule, see Context), so calling it
// after every append costs a read of the list and a copy of what is new.
func (s *Session) Context() *Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leafCtx().snapshot(s.t, &s.copies)
}

func (s *Session) leafCtx() *pathCtx {
	if s.pc == nil {
		s.pc = s.t.buildContext(s.leaf)
	}
	return s.pc
}

// ContextAt returns the context as it would be with the leaf at entry
// id; "" gives the context before the first entry, as PathTo and UsageAt
// take it, so that ContextAt(LeafID()) is Context() whatever the leaf.
func (s *Session) ContextAt(id string) (*Context, error) {
	if err := s.makeWhole(context.Background()); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, ErrNilSession
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	i := int32(-1)
	if id != "" {
		var ok bool
		if i, ok = s.t.lookup(id); !ok {
			return nil, fmt.Errorf("%w: entry %s", ErrNotFound, id)
		}
	}
	if i == s.leaf {
		return s.leafCtx().snapshot(s.t, &s.copies), nil
	}
	return s.t.buildContext(i).snapshot(s.t, nil), nil
}

// Messages returns the messages to send to the model at the leaf: the
// context's messages with tool pairing repaired (see Context.ForModel). It
// implements Conversation. The slice and the messages are the caller's:
// editing them changes nothing in the session, and no later answer
// carries the edit (see Context for the copy rule). The copy of a message
// is made once and handed out again while it equals the session's, so a
// call costs a read of the list and a copy of what is new or was edited;
// edit a list before asking again, and Clone a message to edit it later.
func (s *Session) Messages(ctx context.Context) ([]*Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.copies.forModel(s.leafCtx().forModel()), nil
}

// SharedMessages is Messages without the copy, for the hot path of an
// agent loop that only reads the history (converts it to a request, as
// the provider packages do): the list and the messages are the session's
// own, so asking costs O(1) whatever the history's length. Read them
// only: a change to a message changes the session's context (never its
// store) until the session is opened again. The list has no spare
// capacity, so appending to it copies; appends to the session never
// change a list handed out. Use Messages for anything the host keeps or
// edits.
func (s *Session) SharedMessages(ctx context.Context) ([]*Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	m := s.leafCtx().forModel()
	return m[:len(m):len(m)], nil
}

// Reload rereads the session from its store, to see what other handles
// wrote. The leaf stays where it is if that entry still exists.
func (s *Session) Reload(ctx context.Context) error {
	if err := s.makeWhole(ctx); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return s.reload(ctx)
}

// leafID returns the leaf's id, "" for none. Callers hold mu.
func (s *Session) leafID() string {
	if s.leaf < 0 {
		return ""
	}
	return s.t.nodes[s.leaf].e.id
}

// Flush makes the appends so far durable, for stores that buffer them; a
// no-op otherwise. Call it at the end of each turn.
func (s *Session) Flush(ctx context.Context) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.deferred {
		return nil
	}
	return flushStore(ctx, s.store, s.id)
}

// Close flushes and releases the handle, and lets go of what the store
// holds for it (a FileStore's open file), even when the flush fails: the
// error of a write that failed earlier is returned, once more, but
// nothing stays open. Afterwards every method that returns an error
// returns ErrClosed before doing anything (Close itself returns nil);
// those that return no error (Context, Tree, Leaf, Log ...) keep
// answering from what the handle holds. The session stays in its store.
func (s *Session) Close() error {
	if s == nil {
		return ErrNilSession
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.deferred {
		return nil // nothing reached the store: nothing to flush or let go
	}
	err := flushStore(context.Background(), s.store, s.id)
	// Whatever happened before, the store lets go of what it holds for
	// the session (a FileStore's open file and its place among
	// MaxOpenFiles).
	if cerr := closeStoreSession(s.store, s.id); cerr != nil && (err == nil || cerr.Error() != err.Error()) {
		err = errors.Join(err, cerr)
	}
	if errors.Is(err, ErrClosed) {
		return nil // the store was closed first
	}
	return err
}

// pathOf returns the file of the session, for errors, when its store
// keeps it in one.
func (s *Session) pathOf() string {
	if p, ok := innermost(s.store).(interface{ Path(string) (string, error) }); ok {
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
	if s == nil {
		return ErrNilSession
	}
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
