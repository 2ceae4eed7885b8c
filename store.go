package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentsession/session/internal/names"
)

// Store persists session logs: a header and an append-only list of
// entries per session. All tree logic lives in Session, so every Store
// behaves the same; a Store only has to keep bytes, in order, atomically.
//
// Implementations must be safe for concurrent use, return the package's
// sentinel errors (wrapped with %w) and pass storetest.Run. Extra
// abilities are optional interfaces, discovered by type assertion.
type Store interface {
	// Create stores a new session with no entries. It fails with ErrExists
	// if the id is taken and ErrInvalidID if the id is not valid.
	Create(ctx context.Context, h Header) error

	// Append adds entries at the end of the session's log, all or none.
	// It fails with ErrNotFound for an unknown session, and with
	// ErrConflict when opts.IfLast or opts.IfEmpty does not hold or an
	// entry's id is already in the log. An append whose entries are all
	// in the log already, each the same bytes, is the retry of one that
	// happened: it succeeds and writes nothing, whatever opts says (the
	// conditions were met when it happened). Some of them stored and
	// others not, or stored with other bytes, is ErrConflict.
	Append(ctx context.Context, id string, opts AppendOptions, entries ...Entry) error

	// Load returns the session's header and entries (ErrNotFound).
	Load(ctx context.Context, id string) (*Log, error)

	// Rewrite replaces the header and all entries at once (ErrNotFound),
	// if the stored log is still the one opts describes: the log the
	// caller read and decided on. Otherwise it fails with ErrConflict and
	// changes nothing, so a rewrite never drops what another writer
	// appended meanwhile. It is how pruning and migrations are
	// persisted. A store that keeps lines it could not read as entries
	// (a FileStore's malformed lines) refuses to drop them with a
	// *CorruptError naming them, unless opts.DropUnreadable is set.
	Rewrite(ctx context.Context, id string, opts RewriteOptions, h Header, entries []Entry) error

	// List returns sessions, most recently updated first, a page at a time.
	List(ctx context.Context, opts ListOptions) (*ListPage, error)

	// Delete removes the session (ErrNotFound).
	Delete(ctx context.Context, id string) error
}

// AppendOptions makes an append conditional, for several writers sharing
// one session. The zero value appends unconditionally.
type AppendOptions struct {
	// IfLast, when not empty, makes the append succeed only if the last
	// stored entry has this id.
	IfLast string
	// IfEmpty makes the append succeed only if the session has no entries.
	IfEmpty bool
}

// createWithEntries creates a session holding entries on any store: in
// one step where the store can, else Create, then Append. An append the
// store refused outright (ErrTooLarge) leaves a session with no entries,
// which is deleted if it has none still; any other failure leaves the
// session as it is: the append may have happened (its answer lost), or
// another writer may have appended first (ErrConflict), and a delete
// would lose what they wrote.
func createWithEntries(ctx context.Context, store Store, h Header, entries []Entry) error {
	if ec, ok := store.(EntryCreator); ok {
		return ec.CreateWithEntries(ctx, h, entries)
	}
	if err := store.Create(ctx, h); err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	err := store.Append(ctx, h.ID, AppendOptions{IfEmpty: true}, entries...)
	if err == nil || !errors.Is(err, ErrTooLarge) {
		return err
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if log, lerr := store.Load(dctx, h.ID); lerr == nil && len(log.Entries) == 0 {
		if derr := store.Delete(dctx, h.ID); derr != nil && !errors.Is(derr, ErrNotFound) {
			return errors.Join(err, fmt.Errorf("session: removing the session %s the append left empty: %w", h.ID, derr))
		}
	}
	return err
}

// loadTail is LoadTail on any store: the store's own, or its Load cut
// to the tail.
func loadTail(ctx context.Context, store Store, id string, n int, last string) (*Log, error) {
	if tl, ok := store.(TailLoader); ok {
		return tl.LoadTail(ctx, id, n, last)
	}
	log, err := store.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	return cutTail(log, n, last)
}

// cutTail cuts a whole log to its entries after the n-th, if its n-th
// entry is last (ErrConflict otherwise).
func cutTail(log *Log, n int, last string) (*Log, error) {
	if err := tailStarts(log.Entries, n, last); err != nil {
		return nil, err
	}
	log.Entries = log.Entries[n:]
	return log, nil
}

// RewriteOptions makes a Rewrite conditional on the log the caller saw:
// set IfEmpty, or IfLast and IfEntries, from the log the new one was
// made from (Session does). The zero value rewrites unconditionally,
// which only a caller that holds the session alone should do.
type RewriteOptions struct {
	// IfLast, when not empty, makes the rewrite succeed only if the last
	// stored entry has this id.
	IfLast string
	// IfEmpty makes the rewrite succeed only if the session has no
	// entries.
	IfEmpty bool
	// IfEntries, when positive, makes the rewrite succeed only if the log
	// holds exactly this many entries: with IfLast, it notices another
	// rewrite (a prune elsewhere) that kept the last entry.
	IfEntries int
	// DropUnreadable lets the rewrite drop the lines of the stored log
	// that are not entries: malformed lines, and the lines of an append
	// a crash cut short. Without it a store that keeps such lines refuses
	// with a *CorruptError that names them. A torn last line (a write
	// the crash cut mid-line) is always dropped, as an append would.
	DropUnreadable bool
}

// checkRewrite refuses a rewrite of session id with a header of another
// session, or with a zero Entry, before a store looks at what it holds.
func checkRewrite(id string, h Header, entries []Entry) error {
	if h.ID != id {
		return fmt.Errorf("session: rewrite of %s with a header for %s", id, h.ID)
	}
	for i, e := range entries {
		if e.IsZero() {
			return fmt.Errorf("session: rewrite with zero Entry at %d", i)
		}
	}
	return nil
}

// Check reports whether a stored log that ends at the entry last ("" if
// it has none) and holds n entries meets the conditions: nil, or an
// error wrapping ErrConflict. Stores call it under the lock that orders
// their writes.
func (o RewriteOptions) Check(last string, n int) error {
	if o.IfEmpty && n > 0 {
		return fmt.Errorf("%w: session is not empty (last entry %s)", ErrConflict, last)
	}
	if o.IfLast != "" && o.IfLast != last {
		if last == "" {
			return fmt.Errorf("%w: expected last entry %s, session is empty", ErrConflict, o.IfLast)
		}
		return fmt.Errorf("%w: expected last entry %s, found %s (another writer changed the session)", ErrConflict, o.IfLast, last)
	}
	if o.IfEntries > 0 && o.IfEntries != n {
		return fmt.Errorf("%w: expected %d entries, found %d (another writer changed the session)", ErrConflict, o.IfEntries, n)
	}
	return nil
}

// ListOptions selects and pages sessions. The zero value lists every
// session, DefaultListLimit at a time.
type ListOptions struct {
	Cwd string // only sessions of this working directory
	// ParentSession keeps only the sessions forked from (or started as
	// subsessions of) this session id; a header naming its parent by file
	// path, as pi writes it, matches the id in the file name.
	ParentSession string
	UpdatedAfter  time.Time // only sessions updated strictly after
	UpdatedBefore time.Time // only sessions updated strictly before
	Limit         int       // page size; 0 means DefaultListLimit
	Cursor        string    // ListPage.Next of the previous page
	// Archived includes archived sessions (see Archiver), which are left
	// out by default; OnlyArchived lists archived sessions only.
	Archived     bool
	OnlyArchived bool
	// ProjectID, User and App keep the sessions whose metadata (Meta)
	// have these values; Metadata keeps those whose metadata map has
	// every key with its value.
	ProjectID string
	User      string
	App       string
	Metadata  map[string]string
}

// DefaultListLimit is the page size when ListOptions.Limit is 0.
const DefaultListLimit = 100

// Matches reports whether a session's listing passes the filters of o
// (all but Cursor and Limit), as every store of this module applies
// them: Cwd as stored (names.StoredString), ParentSession by id
// (ParentID), the update times strictly, archived sessions left out
// unless asked for, and the metadata. A store that lists in memory
// filters with it.
func (opts ListOptions) Matches(info SessionInfo) bool {
	if opts.Cwd != "" && info.Cwd != names.StoredString(opts.Cwd) {
		return false
	}
	if opts.ParentSession != "" && (ParentID(info.ParentSession) != opts.ParentSession || ValidateID(opts.ParentSession) != nil) {
		return false // a session id, matched exactly
	}
	if !opts.UpdatedAfter.IsZero() && !info.Updated.After(opts.UpdatedAfter) {
		return false
	}
	if !opts.UpdatedBefore.IsZero() && !info.Updated.Before(opts.UpdatedBefore) {
		return false
	}
	return opts.matchesMeta(info)
}

// matchesMeta applies the filters of ListOptions on archiving and
// metadata: what a store that keeps a SessionInfo per session can check
// on it (MatchesMeta, for other stores).
func (opts ListOptions) matchesMeta(info SessionInfo) bool {
	if (opts.OnlyArchived && !info.Archived) || (!opts.Archived && !opts.OnlyArchived && info.Archived) {
		return false
	}
	if (opts.ProjectID != "" && info.ProjectID != opts.ProjectID) || (opts.User != "" && info.User != opts.User) ||
		(opts.App != "" && info.App != opts.App) {
		return false
	}
	for k, v := range opts.Metadata {
		if got, ok := info.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// ListPage is one page of sessions.
type ListPage struct {
	Sessions []SessionInfo
	// Next is the cursor of the following page, "" on the last one.
	Next string
}

// SessionInfo describes a session without loading its entries.
type SessionInfo struct {
	ID      string
	Title   string
	Cwd     string
	Created time.Time
	Updated time.Time
	// ParentSession is the header's parentSession as written: a session
	// id (what this library writes) or, in files pi wrote, the parent's
	// file path. ParentID extracts the id from either.
	ParentSession string
	Entries       int   // number of entries
	Size          int64 // bytes of the log in the seed format
	// Archived tells whether the session is archived (see Archiver),
	// since ArchivedAt (zero when the store does not know when: a file
	// an older version moved to the archive).
	Archived   bool
	ArchivedAt time.Time
	// Compressed tells whether the store keeps the session's log
	// compressed (a FileStore's archived session, see
	// FileStoreOptions.CompressArchive); Size is then the compressed
	// size.
	Compressed bool
	// Compacting is when the compaction running on the session started;
	// zero when none is. One that stays set is a compaction whose process
	// crashed (see Session.Lifecycle).
	Compacting time.Time
	// TitleDerived tells that the session has no title of its own and
	// Title was derived from its first user message (TitleFromText).
	TitleDerived bool
	// The session's metadata (see Meta).
	ProjectID  string
	AppVersion string
	User       string
	App        string
	Metadata   map[string]string
}

// ParentID returns the id of the parent session a header's parentSession
// names: the value itself when it is an id, or, when it is a path to a
// seed-layout file ("<timestamp>_<id>.jsonl", as pi writes forks), the id
// in the file name. "" for "".
func ParentID(parentSession string) string {
	if !strings.ContainsAny(parentSession, `/\`) && !strings.HasSuffix(parentSession, ".jsonl") {
		return parentSession
	}
	base := parentSession[strings.LastIndexAny(parentSession, `/\`)+1:]
	base = strings.TrimSuffix(base, ".jsonl")
	if i := strings.LastIndexByte(base, '_'); i >= 0 {
		base = base[i+1:]
	}
	return base
}

// Continue opens the most recently updated session of cwd in store, or
// creates one there if it has none: what an agent does when started again
// in the same directory.
func Continue(ctx context.Context, store Store, cwd string) (*Session, error) {
	p, err := store.List(ctx, ListOptions{Cwd: cwd, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(p.Sessions) > 0 {
		return Open(ctx, store, p.Sessions[0].ID)
	}
	return Create(ctx, store, &CreateOptions{Cwd: cwd})
}

// Copy copies the session id from src to dst through the Store interface
// alone: the header and every entry, byte for byte as src returns them
// (a FileStore upgrades an older file format when it reads it), so a
// session moves between backends (a file session into PostgreSQL and
// back) with the same context.
//
// Copy never overwrites: when dst holds the id already it fails with
// ErrExists and changes nothing. The entries go in one all-or-nothing
// append conditional on the new session being empty (a log that repeats
// an entry id, which files may, goes in one Rewrite instead). If that
// fails, Copy deletes the session it created, unless another writer has
// added entries to it meanwhile. A source log with lines that are not
// entries (lines a lenient read skipped, or those of an append a crash
// cut short: Log.Malformed, Log.Partial) is not copied (ErrCorrupt): the
// copy would silently lose them; run "agentsession verify" on it to
// decide what to keep. A torn last line, a single append a crash cut off
// mid-line, is not an entry and is not copied.
func Copy(ctx context.Context, dst, src Store, id string) error {
	log, err := src.Load(ctx, id)
	if err != nil {
		return err
	}
	if err := unreadableError("", log, "a copy of "+id); err != nil {
		return err
	}
	if err := dst.Create(ctx, log.Header); err != nil {
		return err
	}
	if len(log.Entries) == 0 {
		return nil
	}
	if repeatsID(log.Entries) {
		err = dst.Rewrite(ctx, id, RewriteOptions{IfEmpty: true}, log.Header, log.Entries)
	} else {
		err = dst.Append(ctx, id, AppendOptions{IfEmpty: true}, log.Entries...)
	}
	if err == nil {
		return nil
	}
	// Remove the partial copy, with a context of its own (ctx may be what
	// failed), but only while it is still empty: an entry in it now is
	// another writer's.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if l, lerr := dst.Load(cctx, id); lerr == nil && len(l.Entries) == 0 {
		if derr := dst.Delete(cctx, id); derr != nil && !errors.Is(derr, ErrNotFound) {
			return fmt.Errorf("session: copy of %s: %w (and removing the empty copy failed: %v)", id, err, derr)
		}
	}
	return fmt.Errorf("session: copy of %s: %w", id, err)
}

func repeatsID(entries []Entry) bool {
	seen := make(map[string]struct{}, len(entries))
	for _, e := range entries {
		if _, ok := seen[e.id]; ok {
			return true
		}
		seen[e.id] = struct{}{}
	}
	return false
}

// CorruptError is a log that cannot be read, or a line of one.
type CorruptError struct {
	Path string // file, when known
	Line int    // 1-based line, 0 for the whole file
	Err  error
}

func (e *CorruptError) Error() string {
	var b strings.Builder
	b.WriteString("session: ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// UnsupportedVersionError is a log written in a newer format than this
// package knows. Such a log is never modified.
type UnsupportedVersionError struct {
	Path    string
	Version int
}

func (e *UnsupportedVersionError) Error() string {
	p := ""
	if e.Path != "" {
		p = e.Path + ": "
	}
	return fmt.Sprintf("session: %sformat version %d is newer than this library supports (%d)", p, e.Version, CurrentVersion)
}

// Is makes errors.Is(err, ErrUnsupportedVersion) true.
func (e *UnsupportedVersionError) Is(target error) bool { return target == ErrUnsupportedVersion }

// WithPath sets the file path on the *CorruptError,
// *UnsupportedVersionError or *LimitError inside err, for stores and
// tools that read files.
func WithPath(err error, path string) error {
	var ce *CorruptError
	if errors.As(err, &ce) && ce.Path == "" {
		ce.Path = path
	}
	var ve *UnsupportedVersionError
	if errors.As(err, &ve) && ve.Path == "" {
		ve.Path = path
	}
	var le *LimitError
	if errors.As(err, &le) && le.Path == "" {
		le.Path = path
	}
	return err
}

// storedHeader returns h with its strings as stores keep them.
func storedHeader(h Header) Header {
	h.Cwd, h.Title, h.ParentSession = names.StoredString(h.Cwd), names.StoredString(h.Title), names.StoredString(h.ParentSession)
	return h
}

// MaxIDLength bounds session and entry ids, in bytes.
const MaxIDLength = names.MaxIDLength

// ValidateID reports whether id can name a session in any Store: 1 to
// MaxIDLength bytes of valid UTF-8 without control characters (Unicode
// category Cc). Hosts' own ids qualify as they are: "user:42",
// "alice@example.com", "chat 7", "Ünïcode", ".hidden", as do UUIDs (the
// default). Every store takes the same ids and keeps them apart exactly
// (byte for byte: "Alice" and "alice" are two sessions). FileStore names
// a session's file by its id escaped (ASCII letters, digits, '-', '_'
// and '.' kept, a leading '.' and every other byte written as %XX, so
// "user:42" is in "<time>_user%3A42.jsonl"); an id whose escaped form
// passes 200 bytes is named by its first bytes and a hash, its id read
// from the file's header.
func ValidateID(id string) error { return names.ValidateID(id) }
