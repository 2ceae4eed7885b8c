package session

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	as "github.com/agentsession/session"
)

// Store is the storage abstraction for persistent sessions.
type Store interface {
	// Open loads an existing session or creates a new one with the given ID.
	// The returned session is connected to the store: SaveTurn calls persist
	// automatically.
	Open(ctx context.Context, id string) (*Session, error)

	// Put saves a session to the store, connecting it for future SaveTurn calls.
	// Use this after Fork to persist the forked session.
	Put(ctx context.Context, sess *Session) error

	// List returns lightweight session summaries.
	List(ctx context.Context, opts *ListOptions) (*ListResult, error)

	// Delete removes a session. Idempotent: returns nil if absent.
	Delete(ctx context.Context, id string) error
}

// ListOptions specifies pagination and filters for List.
type ListOptions struct {
	// Limit caps the number of results returned (0 = no limit).
	Limit int
	// Offset skips this many leading results (0 = start from the top).
	Offset int

	// Suspended filters by the session's suspended state when non-nil:
	// &true lists only sessions awaiting external tool results, &false
	// only the others.
	Suspended *bool
}

// ListResult contains the result of a List call.
type ListResult struct {
	Sessions []*SessionInfo
}

// SessionInfo is a lightweight session summary returned by List.
type SessionInfo struct {
	ID         string         `json:"id"`
	Title      string         `json:"title,omitempty"`
	CreatedAt  time.Time      `json:"created_at"`
	UpdatedAt  time.Time      `json:"updated_at"`
	EventCount int            `json:"event_count"`
	Metadata   map[string]any `json:"metadata,omitempty"`

	// Suspended indicates the session is awaiting external tool results.
	Suspended bool `json:"suspended,omitempty"`

	// DiveFile, set by FileStore.List, is the path of a session file
	// Dive's own FileStore wrote in the store's directory and that is not
	// imported yet: Open imports it with FileStore.ImportOnOpen, else
	// fails with an error wrapping agentsession's ErrForeignFormat; or
	// FileStore.ImportDive takes it in.
	DiveFile string `json:"dive_file,omitempty"`
}

// ForkSession loads a session, forks it, and saves the fork to the store.
func ForkSession(ctx context.Context, store Store, fromID, newID string) (*Session, error) {
	original, err := store.Open(ctx, fromID)
	if err != nil {
		return nil, err
	}
	forked := original.Fork(newID)
	if err := store.Put(ctx, forked); err != nil {
		return nil, err
	}
	return forked, nil
}

// StoreAdapter is a Store on any agentsession Store: FileStore, MemoryStore,
// pgstore, or a wrapped one (redacting, encrypting, per-user ...).
//
// Open returns one shared *Session per id, as Dive's stores do: every Open
// of an id returns the same instance until Delete evicts it or Put
// replaces it. Several processes (or machines, on PostgreSQL) may share a
// session: agentsession keeps every writer's entries.
type StoreAdapter struct {
	backend as.Store

	mu       sync.Mutex
	sessions map[string]*Session
}

// NewStore returns a Store keeping sessions in backend.
func NewStore(backend as.Store) *StoreAdapter {
	return &StoreAdapter{backend: backend, sessions: map[string]*Session{}}
}

// Backend returns the agentsession store underneath.
func (st *StoreAdapter) Backend() as.Store { return st.backend }

// Open returns the session with the given id, creating it if it does not
// exist.
func (st *StoreAdapter) Open(ctx context.Context, id string) (*Session, error) {
	if err := as.ValidateID(id); err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if sess, ok := st.sessions[id]; ok {
		return sess, nil
	}
	s, _, err := as.OpenOrCreate(ctx, st.backend, &as.CreateOptions{ID: id})
	if err != nil {
		return nil, foreign(err)
	}
	sess := wrap(s, st)
	st.sessions[id] = sess
	return sess, nil
}

// Put saves a session to the store and connects it: from then on it
// writes to this store, and Open of its id returns it. A session of
// another store (or of none: New, Fork) is copied, replacing a session of
// the same id; a session of this store is already saved.
func (st *StoreAdapter) Put(ctx context.Context, sess *Session) error {
	// Lock order: session first, store second, as in Dive's stores.
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.err != nil {
		return sess.err
	}
	id := sess.id
	st.mu.Lock()
	if st.sessions[id] == sess {
		st.mu.Unlock()
		return sess.check(ctx) // already in the store
	}
	prev := st.sessions[id]
	err := st.put(ctx, sess)
	st.mu.Unlock()
	if prev != nil && prev != sess {
		prev.closeHandle() // replaced: its writes would land in the copy
	}
	if err != nil {
		return err
	}
	return sess.check(ctx)
}

// put copies sess's log into the backend, replacing what has its id, and
// connects sess to it. Callers hold sess.mu and st.mu.
func (st *StoreAdapter) put(ctx context.Context, sess *Session) error {
	id := sess.id
	src := as.OpenLog(sess.s.Log())
	if err := st.backend.Delete(ctx, id); err != nil && !errors.Is(err, as.ErrNotFound) {
		return err
	}
	if err := as.Copy(ctx, st.backend, src.Store(), id); err != nil {
		return err
	}
	s, err := as.Open(ctx, st.backend, id)
	if err != nil {
		return err
	}
	s.SetStrictPairing(false)
	old := sess.s
	if l := old.LeafID(); l != s.LeafID() {
		if err := s.Branch(ctx, l); err != nil {
			_ = s.Close()
			return err
		}
	}
	sess.s, sess.store = s, st
	_ = old.Close()
	st.sessions[id] = sess
	return nil
}

// closeHandle closes the agentsession handle of a session its store no
// longer holds (Delete, or Put of another session of its id): from then
// on its methods fail.
func (s *Session) closeHandle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.s != nil {
		_ = s.s.Close()
	}
}

// List returns a summary of every session, most recently updated first.
// It reads each session (for EventCount and Suspended), as Dive's
// stores do.
func (st *StoreAdapter) List(ctx context.Context, opts *ListOptions) (*ListResult, error) {
	var infos []*SessionInfo
	cursor := ""
	for {
		page, err := st.backend.List(ctx, as.ListOptions{Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, si := range page.Sessions {
			info, suspended, err := st.info(ctx, si)
			if errors.Is(err, as.ErrNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				return nil, err
			}
			if opts != nil && opts.Suspended != nil && *opts.Suspended != suspended {
				continue
			}
			infos = append(infos, info)
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	if opts != nil {
		if opts.Offset > 0 {
			if opts.Offset < len(infos) {
				infos = infos[opts.Offset:]
			} else {
				infos = nil
			}
		}
		if opts.Limit > 0 && opts.Limit < len(infos) {
			infos = infos[:opts.Limit]
		}
	}
	return &ListResult{Sessions: infos}, nil
}

// info summarizes a listed session, from its open instance if it has one.
func (st *StoreAdapter) info(ctx context.Context, si as.SessionInfo) (*SessionInfo, bool, error) {
	st.mu.Lock()
	sess, ok := st.sessions[si.ID]
	st.mu.Unlock()
	if !ok {
		s, err := as.Open(ctx, st.backend, si.ID)
		if err != nil {
			return nil, false, err
		}
		defer s.Close()
		sess = wrap(s, nil)
	}
	info := &SessionInfo{
		ID:         si.ID,
		Title:      sess.Title(),
		CreatedAt:  si.Created,
		UpdatedAt:  si.Updated,
		EventCount: sess.EventCount(),
		Metadata:   sess.Metadata(),
	}
	suspended := sess.IsSuspended()
	info.Suspended = suspended
	return info, suspended, nil
}

// Delete removes a session. Idempotent: returns nil if absent. An
// instance Open returned before is evicted and closed: its methods fail
// from then on.
func (st *StoreAdapter) Delete(ctx context.Context, id string) error {
	st.mu.Lock()
	prev := st.sessions[id]
	delete(st.sessions, id)
	err := st.backend.Delete(ctx, id)
	st.mu.Unlock()
	if prev != nil {
		prev.closeHandle()
	}
	if err != nil && !errors.Is(err, as.ErrNotFound) {
		return err
	}
	return nil
}

// MemoryStore is an in-memory Store: agentsession's MemoryStore.
// Suitable for development, testing, and single-instance deployments.
// Data is lost when the process exits.
type MemoryStore struct {
	*StoreAdapter
}

// NewMemoryStore creates an empty in-memory store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{NewStore(as.NewMemoryStore())}
}

// FileStore persists sessions as JSONL files in agentsession's (pi's)
// format: a session is <dir>/<id>.jsonl (agentsession's flat layout; an id
// with characters a file name cannot hold is escaped). Several processes
// may share a session: appends are whole lines under a file lock, and
// agentsession keeps every writer's entries.
//
// The session files Dive's own FileStore wrote in the directory are
// listed (SessionInfo.DiveFile), not read: Open fails with an error
// wrapping agentsession's ErrForeignFormat, or, with ImportOnOpen,
// imports the file (ImportDive), keeping Dive's file aside.
type FileStore struct {
	*StoreAdapter
	fs *as.FileStore

	importOnOpen bool // guarded by StoreAdapter.mu
}

// NewFileStore creates a FileStore rooted at dir (created if missing; a
// leading "~/" is the home directory). An append returns once the bytes
// are in the file (a process crash loses nothing that returned); see
// NewFileStoreWithSync for power-loss durability.
func NewFileStore(dir string) (*FileStore, error) {
	return NewFileStoreWithSync(dir, false)
}

// NewFileStoreWithSync creates a FileStore rooted at dir. With sync,
// every append is made durable (fdatasync) before it returns
// (agentsession's SyncEveryAppend); without, appends are durable at Close
// and Flush (SyncOnFlush).
func NewFileStoreWithSync(dir string, sync bool) (*FileStore, error) {
	opts := &as.FileStoreOptions{Strict: true, MaxStringChars: -1}
	if sync {
		opts.Sync = as.SyncEveryAppend
	}
	return NewFileStoreWithOptions(dir, opts)
}

// NewFileStoreWithOptions creates a FileStore rooted at dir with
// agentsession's options. Layout is always flat.
func NewFileStoreWithOptions(dir string, opts *as.FileStoreOptions) (*FileStore, error) {
	if strings.HasPrefix(dir, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, err
		}
		dir = filepath.Join(home, dir[2:])
	}
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	o := as.FileStoreOptions{}
	if opts != nil {
		o = *opts
	}
	o.Layout = as.LayoutFlat
	fs, err := as.OpenFileStore(dir, &o)
	if err != nil {
		return nil, fmt.Errorf("dive session: %w", err)
	}
	return &FileStore{StoreAdapter: NewStore(fs), fs: fs}, nil
}

// Open returns the session with the given id, creating it if it does not
// exist. A session file of Dive's FileStore for the id (<dir>/<id>.jsonl,
// Dive's name for it, when agentsession's escaped name differs) makes it
// fail with an error wrapping agentsession's ErrForeignFormat, as one
// where agentsession keeps the session does: import it with ImportDive.
func (s *FileStore) Open(ctx context.Context, id string) (*Session, error) {
	if err := s.diveFileAt(id); err != nil {
		s.mu.Lock()
		imp := s.importOnOpen
		s.mu.Unlock()
		if imp && errors.Is(err, as.ErrForeignFormat) {
			return s.ImportDive(ctx, id)
		}
		return nil, err
	}
	return s.StoreAdapter.Open(ctx, id)
}

// diveFileAt returns a foreign-format error when Dive's FileStore has a
// session file for id (agentsession's own check finds it too when the
// names are the same).
func (s *FileStore) diveFileAt(id string) error {
	s.mu.Lock()
	_, open := s.sessions[id]
	s.mu.Unlock()
	if open || id == "" || strings.ContainsAny(id, `/\`) || strings.Contains(id, "..") {
		return nil // Dive's FileStore refuses these ids
	}
	dive := filepath.Join(s.fs.Root(), id+".jsonl")
	if lt, err := lineType(dive); err != nil || lt == "" {
		return nil // agentsession's file, or none of Dive's
	}
	return foreign(&as.ForeignError{ID: id, Path: dive, Format: "Dive"})
}

// Unwrap returns agentsession's FileStore underneath.
func (s *FileStore) Unwrap() *as.FileStore { return s.fs }

// Close closes the store's files.
func (s *FileStore) Close() error { return s.fs.Close() }

// foreign explains an error wrapping agentsession's ErrForeignFormat (the
// session is in a file the store does not own) for a Dive user: a file of
// Dive's own FileStore is to be imported (FileStore.ImportDive), and a
// file that looks like one with an unknown first line is reported as
// Dive reports it. Other errors are returned as they are.
func foreign(err error) error {
	var fe *as.ForeignError
	if !errors.As(err, &fe) {
		return err
	}
	if lt, ferr := lineType(fe.Path); ferr == nil && lt != "" {
		if lt == "header" {
			return fmt.Errorf("dive session: %s holds session %q as Dive's own FileStore wrote it; import it with FileStore.ImportDive, or set FileStore.ImportOnOpen: %w", fe.Path, fe.ID, err)
		}
		return fmt.Errorf("dive session: session file %s: unrecognized first line type %q: %w", fe.Path, lt, err)
	}
	return err
}

// lineType returns the "line_type" of the first line of a regular file
// ("" when it has none: agentsession's, or no JSON), read as a stream:
// a Dive header can be megabytes long (a suspended session's holds its
// pending calls' inputs). A FIFO put at a session's name is refused,
// not waited on.
func lineType(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", fmt.Errorf("dive session: %s is not a regular file", path)
	}
	dec := json.NewDecoder(bufio.NewReader(io.LimitReader(f, MaxDiveFileBytes)))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", nil
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return "", nil
		}
		if k == "line_type" {
			if t, err := dec.Token(); err == nil {
				s, _ := t.(string)
				return s, nil
			}
			return "", nil
		}
		// Another member: passed over a token at a time (one string
		// held at most, never the whole value).
		for depth := 0; ; {
			t, err := dec.Token()
			if err != nil {
				return "", nil
			}
			switch t {
			case json.Delim('{'), json.Delim('['):
				depth++
			case json.Delim('}'), json.Delim(']'):
				depth--
			}
			if depth == 0 {
				break
			}
		}
	}
	return "", nil
}
