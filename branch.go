package session

import (
	"context"
	"fmt"
	"time"
)

// Moving the leaf: Branch, and BranchWithSummary, which records what
// the move leaves behind. A move is persisted as a leaf marker (tree.go).

// Branch moves the leaf to entry id, or before the first entry for ""
// (the next append makes a new root); the next append starts a new
// branch there. Nothing is deleted. The move is persisted (as a leaf
// marker entry, see ARCHITECTURE.md), so it survives a reopen.
func (s *Session) Branch(ctx context.Context, id string) (err error) {
	if err := s.makeWhole(ctx); err != nil {
		return err
	}
	if s == nil {
		return ErrNilSession
	}
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
	if err := s.makeWhole(ctx); err != nil {
		return Entry{}, err
	}
	if s == nil {
		return Entry{}, ErrNilSession
	}
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
		return []Entry{prepEntry(e)}, nil
	}, nil, nil)
	if err != nil {
		return Entry{}, err
	}
	return es[0], nil
}

// NewLeafMarker returns the entry that moves a session's leaf to entry
// target ("" for before the first entry), as Branch appends it: for
// tools that write at the store's level (a mirror keeping one side's
// leaf when it adds the other's entries as a branch). id must be new in
// the session.
func NewLeafMarker(id, target string, t time.Time) (Entry, error) {
	return NewEntry(TypeCustom, id, target, t, Custom{CustomType: leafMarkerType})
}

// DefaultLeaf returns the leaf a session whose log holds entries opens
// at: the target of the last entry when that is a leaf marker, else the
// last entry ("" for none, or a marker to before the first entry).
func DefaultLeaf(entries []Entry) string {
	if len(entries) == 0 {
		return ""
	}
	last := entries[len(entries)-1]
	if last.kind == kindCustom && isLeafMarker(last) {
		return last.parent
	}
	return last.id
}
