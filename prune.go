package session

import (
	"context"
	"errors"
)

// Prune: the rewrite of a log without what no context needs any more.

// PruneResult says what Prune did.
type PruneResult struct {
	Dropped int // entries removed
	Kept    int // entries left
}

// PruneOptions configures Prune. The zero value (or nil) is the safe
// default.
type PruneOptions struct {
	// DropUnreadable lets Prune drop the lines of the stored log that
	// could not be read as entries (see Log.Malformed and
	// RewriteOptions.DropUnreadable). Without it a log with such lines is
	// refused with a *CorruptError naming them.
	DropUnreadable bool
}

// Prune rewrites the session's log without the entries no context needs
// any more: messages, custom messages, branch summaries and compactions
// that a later compaction summarized on every branch that reaches them.
// The contexts of every end of a branch, of the leaf and of every labeled
// entry (checkpoints) stay exactly as they were, and so does the leaf;
// session state updates (UpdateState) go when a later update sets or
// removes each of their keys again on every path to those entries, so
// the state at each of them stays as it was (the state between them is
// the history dropped); other entries (settings, labels, titles,
// extension state, unknown types) are all kept; the children of dropped
// entries move up to the nearest kept ancestor (their parentId is
// rewritten, the rest of their bytes kept).
//
// The rewrite is atomic and conditional (Store.Rewrite with the last
// entry and the number of entries this handle knows of): if another
// writer changed the log meanwhile, Prune reads it again and decides
// anew, so nothing another writer appended is ever dropped. A log with
// lines that could not be read is refused (*CorruptError, ErrCorrupt)
// unless opts.DropUnreadable is set, and a tree with structural problems
// with ErrUnclean.
//
// Prune keeps what every branch end, label and this handle's leaf need,
// but cannot know where other handles stand: a handle (in this process
// or another) whose leaf is an entry Prune drops, because it opened the
// session there and has appended nothing since, gets ErrConflict ("entry
// ... was removed by another writer") at its next append, and should be
// opened again. A handle that has appended keeps its branch, as every
// branch end is kept; a checkpoint (Checkpoint) keeps a place for good.
func (s *Session) Prune(ctx context.Context, opts *PruneOptions) (PruneResult, error) {
	if err := s.makeWhole(ctx); err != nil {
		return PruneResult{}, err
	}
	var o PruneOptions
	if opts != nil {
		o = *opts
	}
	if err := s.lock(ctx); err != nil {
		return PruneResult{}, err
	}
	defer s.mu.Unlock()
	turn, err := s.takeTurn(ctx)
	if err != nil {
		return PruneResult{}, err
	}
	defer turn.unlock()
	var stall stalls
	for attempt := 0; ; attempt++ {
		res, err := s.prune(ctx, o)
		if err == nil || !errors.Is(err, ErrConflict) {
			return res, err
		}
		if stall.n >= maxConflictRetries {
			return res, conflictErr(attempt+1, stall.n, err)
		}
		// Another writer changed the log: read it again and decide anew.
		if berr := backoff(ctx, stall.n+1); berr != nil {
			return PruneResult{}, errors.Join(err, berr)
		}
		stall.before(s)
		if rerr := s.reload(ctx); rerr != nil {
			return PruneResult{}, errors.Join(err, rerr)
		}
		stall.after(s)
	}
}

// prune is one attempt of Prune; callers hold mu.
func (s *Session) prune(ctx context.Context, o PruneOptions) (PruneResult, error) {
	if len(s.malformed)+len(s.partial) > 0 && !o.DropUnreadable {
		return PruneResult{}, unreadableError(s.pathOf(), &Log{Malformed: s.malformed, Partial: s.partial}, "pruning session "+s.id)
	}
	for i := range s.t.nodes {
		if s.t.nodes[i].flags&(fShadowed|fMissingParent|fSelfParent|fCycle) != 0 {
			return PruneResult{}, ErrUnclean
		}
	}
	needed := s.t.neededEntries(s.leaf)
	s.t.dropSupersededState(needed, s.leaf) // state updates overridden later (stateprune.go)
	n := len(s.t.nodes)
	drop := 0
	for i := range needed {
		if !needed[i] {
			drop++
		}
	}
	if drop == 0 {
		return PruneResult{Kept: n}, nil
	}
	entries := make([]Entry, 0, n-drop)
	for i := range s.t.nodes {
		if !needed[i] {
			continue
		}
		e := s.t.nodes[i].e
		p := s.t.nodes[i].parent
		for p >= 0 && !needed[p] {
			p = s.t.nodes[p].parent
		}
		parent := ""
		if p >= 0 {
			parent = s.t.nodes[p].e.id
		}
		if parent != e.parent {
			var err error
			if e, err = e.withParent(parent); err != nil {
				return PruneResult{}, err
			}
		}
		entries = append(entries, e)
	}
	ro := s.rewriteOptions()
	ro.DropUnreadable = o.DropUnreadable
	if s.deferred {
		// Not in the store yet: the handle's log is the whole session.
	} else if err := s.store.Rewrite(ctx, s.id, ro, s.header, entries); err != nil {
		return PruneResult{}, err
	}
	leaf := s.leafID()
	s.reset(&Log{Header: s.header, Entries: entries})
	s.leaf = -1
	if i, ok := s.t.lookup(leaf); ok {
		s.leaf = i
	}
	s.last = lastID(entries)
	return PruneResult{Dropped: drop, Kept: len(entries)}, nil
}

// neededEntries marks the entries some context needs: every entry but the
// messages (and summaries) that the last compaction on every path through
// them summarizes, and for each context the message that names its model.
// The contexts kept are those of the ends of branches, of leaf and of
// labeled entries.
func (t *tree) neededEntries(leaf int32) []bool {
	needed := make([]bool, len(t.nodes))
	var ends []int32
	for i := range t.nodes {
		n := &t.nodes[i]
		switch n.e.kind {
		case kindMessage, kindCustomMessage, kindBranchSummary, kindCompaction:
		default:
			needed[i] = true // settings, labels, extension state, unknown types
		}
		if n.first < 0 || t.labels[n.e.id] != "" {
			ends = append(ends, int32(i))
		}
	}
	if leaf >= 0 {
		ends = append(ends, leaf)
	}
	done := map[int32]bool{}
	for _, end := range ends {
		if done[end] {
			continue
		}
		done[end] = true
		path := t.pathTo(end)
		from := 0
		for pos := len(path) - 1; pos >= 0; pos-- {
			n := &t.nodes[path[pos]]
			if n.e.kind != kindCompaction {
				continue
			}
			from = pos // the compaction itself, then what follows
			var c Compaction
			if n.e.payload(&c); c.FirstKeptEntryID != "" {
				if k, ok := t.lookup(c.FirstKeptEntryID); ok {
					if d := t.nodes[k].depth; d >= 0 && int(d) < pos && path[d] == k {
						from = int(d)
					}
				}
			}
			break
		}
		for _, i := range path[from:] {
			needed[i] = true
		}
		// The context's model may come from an assistant message before
		// the kept part: keep the entry that names it.
		if i, _, ok := t.modelMessage(path); ok {
			needed[i] = true
		}
	}
	return needed
}
