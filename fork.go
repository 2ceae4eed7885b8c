package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentsession/session/internal/jsonx"
)

// Forks: a new session holding the path to an entry of this one, in
// this store or another; and the listing of a session's children.

// ForkOptions configures Fork. The zero value (or nil) forks the whole
// path to the leaf into a new session of the same store.
type ForkOptions struct {
	// At is where the fork ends: an entry id or a checkpoint name (see
	// Session.Resolve); default the leaf.
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
// but for the labels, title and metadata changes on the path, which go
// (the fork's header takes the source's metadata as it is; with
// CopyLabels, the labels of the copied entries come again after the
// path). An entry whose parent went is re-parented to the entry before
// it, and a compaction that kept history from one that went keeps it from
// the next: those members are rewritten, the rest of their bytes kept.
// The fork's context is the source's at opts.At. Its header's
// parentSession names this session (by id); the source is not changed.
// It works on every Store, and between stores.
func (s *Session) Fork(ctx context.Context, opts *ForkOptions) (f *Session, err error) {
	if err := s.makeWhole(ctx); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, ErrNilSession
	}
	start := s.begin()
	anchor := s.LeafID()
	if opts != nil && opts.At != "" {
		anchor = opts.At
	}
	defer func() {
		op := OpInfo{Op: OpFork, Anchor: anchor, Err: err}
		if f != nil {
			op.Fork, op.Target, op.Entries = f.id, f.LeafID(), f.Len()
		}
		s.telemetry(ctx, start, op)
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
		if at, ok = s.resolveLocked(o.At); !ok {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: no checkpoint or entry %q", ErrNotFound, o.At)
		}
	}
	path := s.t.pathTo(at)
	entries := make([]Entry, 0, len(path)+8)
	parent := ""
	var copied map[string]bool // what the labels may point at: only for CopyLabels
	if o.CopyLabels {
		copied = make(map[string]bool, len(path))
	}
	// A compaction may keep history from an entry left out (pi names
	// labels and titles as firstKeptEntryId): it keeps from the next
	// entry copied instead, which gives the same context.
	var left []string
	moved := map[string]string{}
	for _, i := range path {
		e := s.t.nodes[i].e
		if _, meta := customData(e, CustomMeta); meta || e.kind == kindLabel || e.kind == kindSessionInfo {
			// Labels and titles go (labels may come again after the
			// path), and metadata changes: the fork's header has the
			// source's metadata as it is now.
			left = append(left, e.id)
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
		if copied != nil {
			copied[e.id] = true
		}
		parent = e.id
	}
	var labels []Label
	if o.CopyLabels {
		meta := map[string]json.RawMessage{} // checkpoints' metadata
		for _, c := range s.checkpoints() {
			meta[c.EntryID] = c.Metadata
		}
		for _, i := range path {
			if id := s.t.nodes[i].e.id; copied[id] && s.t.labels[id] != "" {
				labels = append(labels, Label{TargetID: id, Label: s.t.labels[id], Metadata: meta[id]})
			}
		}
	}
	h := s.header.Clone()
	title := s.titleLocked()
	fold := s.foldLocked()
	meta := fold.meta(h)
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
	if u, ok := store.(*UserStore); ok {
		meta.User = u.user // a fork into a user's view is that user's
	}
	fh, err := newHeader(store, &CreateOptions{ID: o.ID, Cwd: o.Cwd, Title: o.Title, ParentSession: s.id,
		ProjectID: meta.ProjectID, AppVersion: meta.AppVersion, User: meta.User, App: meta.App, Metadata: meta.Metadata})
	if err != nil {
		return nil, err
	}
	now := s.now()
	var ids map[string]bool // the ids taken, for the labels' new ids
	if len(labels) > 0 {
		ids = make(map[string]bool, len(entries)+len(labels))
		for _, e := range entries {
			ids[e.id] = true
		}
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
	// The fork's tree is built while its file is written: the store's
	// sync leaves the processor free for it, even on one core.
	built := make(chan *tree, 1)
	go func() { built <- newTree(entries) }()
	// The header and the entries in one step where the store can: a
	// crash leaves the whole fork or none of it.
	err = createWithEntries(ctx, store, fh, entries)
	t := <-built
	if err != nil {
		return nil, err
	}
	return newSessionTree(store, &Log{Header: fh, Entries: entries}, t), nil
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
