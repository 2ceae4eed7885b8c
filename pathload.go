package session

import (
	"context"
)

// Opening a long session by its current path (issue 40: a resume costs
// what the context holds, not what the history holds).
//
// After a compaction the model sees a summary and the entries from the
// compaction's first kept entry on; everything before is history. A
// store that can (the PathLoader ability) gives Open only what the context at the
// default leaf needs: the path from the first kept entry of the latest
// compaction on it to the leaf, and, before that, the entries of the
// earlier path that the context still reads: its settings (thinking
// level, model changes, mode, injected rules) and the latest assistant
// message (whose model is the context's when nothing later names one).
// The handle is then partial (Session.pathOnly): the tree holds that chain
// alone, each entry the child of the one before.
//
// What works on the chain works as on a whole session: Context,
// Messages, SharedMessages, ContextTokens, NeedsCompaction, the appends
// and SaveTurn, Flush, Close, the header. Everything else asks for the
// whole history first (Session.whole): the rest is read then, once,
// through the store's Load, and the handle is whole from then on, as if
// opened whole (a Reload that keeps the leaf). TestPartialGates checks
// that every exported method of Session either calls whole or is named
// in partialSafe.

// partialSafe names the exported methods of Session that work on a
// partial handle without reading the rest of the history.
var partialSafe = map[string]bool{
	"ID": true, "Store": true, "Header": true, "Meta": true, "LeafID": true,
	"Persisted": true, "SetStrictPairing": true, "Close": true, "Flush": true,
	"Context": true, "Messages": true, "SharedMessages": true,
	"ContextTokens": true, "NeedsCompaction": true,
	"Append": true, "AppendCustom": true, "AppendCustomMessage": true,
	"AppendEntry": true, "AppendModeChange": true, "AppendModelChange": true,
	"AppendThinkingLevel": true, "AppendTTSRInjection": true,
	"SaveTurn": true, "SaveTurnWith": true,
	// Through AppendEntry, which makes the handle whole for a compaction.
	"AppendCompaction": true, "AppendSessionInit": true, "SetTitle": true,
}

// whole makes a partial handle whole: it reads the session's whole
// history from the store, keeping the leaf. Callers hold mu.
func (s *Session) whole(ctx context.Context) error {
	if !s.pathOnly {
		return nil
	}
	return s.reload(ctx)
}

// wholeNoCtx is whole for the methods that take no context and return
// no error: if the read fails they see the chain alone, and the next
// call tries again.
func (s *Session) wholeNoCtx() {
	if s.pathOnly {
		_ = s.whole(context.Background())
	}
}

// pathSubset returns what a path load holds of a session whose entries
// are entries (in log order), and whether that is all of them. A store
// that keeps a session's entries in memory answers with it; one that
// reads them from elsewhere must give the same entries.
func pathSubset(entries []Entry) (chain []Entry, complete bool) {
	t := newTree(entries)
	leaf := t.defaultLeaf()
	if leaf < 0 {
		return entries, true
	}
	path := t.pathTo(leaf)
	start := chainStart(t, path)
	if start <= 0 {
		return entries, true
	}
	// The earlier path's settings and its latest assistant message with
	// a model, in path order.
	asst := int32(-1)
	for pos := start - 1; pos >= 0 && asst < 0; pos-- {
		if t.nodes[path[pos]].e.kind == kindMessage {
			if _, ok := assistantModel(t, path[pos]); ok {
				asst = path[pos]
			}
		}
	}
	for _, i := range path[:start] {
		if i == asst || carriedSetting(t.nodes[i].e.kind) {
			chain = append(chain, t.nodes[i].e)
		}
	}
	for _, i := range path[start:] {
		chain = append(chain, t.nodes[i].e)
	}
	if len(chain) == len(entries) {
		return entries, true
	}
	return chain, false
}

// carriedSetting reports whether entries of kind k set what a context
// reads from anywhere on its path (pathCtx.applySetting).
func carriedSetting(k entryKind) bool {
	switch k {
	case kindThinkingLevelChange, kindModelChange, kindModeChange, kindTTSRInjection:
		return true
	}
	return false
}

// chainStart returns the position on path of the first entry the
// context at its end needs in full: the first kept entry of the latest
// compaction on it (the compaction itself when that entry is not on the
// path before it, as the seed rule reads it), 0 with no compaction.
func chainStart(t *tree, path []int32) int {
	comp := -1
	for pos := len(path) - 1; pos >= 0; pos-- {
		if t.nodes[path[pos]].e.kind == kindCompaction {
			comp = pos
			break
		}
	}
	if comp < 0 {
		return 0
	}
	var cp Compaction
	t.nodes[path[comp]].e.payload(&cp)
	if cp.FirstKeptEntryID != "" {
		if k, ok := t.lookup(cp.FirstKeptEntryID); ok {
			if d := t.nodes[k].depth; d >= 0 && int(d) < comp && path[d] == k {
				return int(d)
			}
		}
	}
	return comp
}

// newChainTree is the tree of a partial handle: entries, each the child
// of the one before, whatever parent they name (the entries between are
// not read).
func newChainTree(entries []Entry) *tree {
	t := &tree{
		nodes:  make([]node, len(entries), len(entries)+16),
		byID:   newIDIndex(len(entries)),
		labels: map[string]string{},
	}
	for i, e := range entries {
		n := &t.nodes[i]
		*n = node{e: e, parent: int32(i) - 1, first: -1, last: -1, next: -1, depth: int32(i)}
		t.byID.set(e.id, e.idHash(), int32(i), t.nodes)
		t.noteEntry(n)
		if i > 0 {
			t.link(int32(i-1), int32(i))
		}
	}
	return t
}

// LoadPath implements PathLoader.
func (s *MemoryStore) LoadPath(ctx context.Context, id string) (*PathLog, error) {
	log, err := s.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	pl := &PathLog{Log: log, Complete: true, Last: lastID(log.Entries)}
	if chain, complete := pathSubset(log.Entries); !complete {
		pl.Log = &Log{Header: log.Header, Entries: chain}
		pl.Complete = false
	}
	return pl, nil
}

// openPath loads session id from store, by its path where the store can
// (see above), and returns its handle and what was read.
func openPath(ctx context.Context, store Store, id string) (*Session, *Log, error) {
	pl, ok := store.(PathLoader)
	if !ok {
		log, err := store.Load(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		return newSession(store, log), log, nil
	}
	p, err := pl.LoadPath(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if p == nil || p.Log == nil || (!p.Complete && (len(p.Log.Entries) == 0 || p.Last == "")) {
		// Not an answer the contract allows: read the whole log.
		log, err := store.Load(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		return newSession(store, log), log, nil
	}
	if p.Complete {
		return newSession(store, p.Log), p.Log, nil
	}
	s := newSessionTree(store, p.Log, newChainTree(p.Log.Entries))
	s.pathOnly = true
	s.last = p.Last
	return s, p.Log, nil
}

// makeWhole is whole for callers that do not hold mu.
func (s *Session) makeWhole(ctx context.Context) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return s.whole(ctx)
}
