package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Checkpoints (named entries, stored as labels), the resolution of what
// a host names an entry by (an id or a checkpoint name), and Rewind.

// Checkpoint is a named entry to come back to (a label).
type Checkpoint struct {
	Name    string
	EntryID string
	Time    time.Time // when the label was set
}

// Checkpoint names the current point of the conversation (the leaf, or
// the entry the leaf's trailing labels and title changes follow) so that
// Rewind can come back to it. It is a label, and idempotent: naming the
// same entry with the same name again adds nothing. An entry holds one
// label: if it already has another one, Checkpoint fails with ErrExists
// rather than rename it (Label renames on purpose).
func (s *Session) Checkpoint(ctx context.Context, name string) (cp Checkpoint, err error) {
	start := s.begin()
	anchor, same := s.LeafID(), false
	defer func() {
		s.telemetry(ctx, start, OpInfo{Op: OpCheckpoint, Anchor: anchor, Target: cp.EntryID, Entries: 1, Idempotent: same, Err: err})
	}()
	if err := s.closedErr(ctx); err != nil {
		return Checkpoint{}, err
	}
	if strings.TrimSpace(name) == "" {
		return Checkpoint{}, fmt.Errorf("session: a checkpoint needs a name")
	}
	if err := s.lock(ctx); err != nil {
		return Checkpoint{}, err
	}
	target := s.leaf
	for target >= 0 {
		k := s.t.nodes[target].e.kind
		if k != kindLabel && k != kindSessionInfo && s.t.nodes[target].flags&fMarker == 0 {
			break
		}
		target = s.t.nodes[target].parent
	}
	if target < 0 {
		s.mu.Unlock()
		return Checkpoint{}, fmt.Errorf("%w: no entry to name as a checkpoint", ErrNotFound)
	}
	id := s.t.nodes[target].e.id
	old := s.t.labels[id]
	s.mu.Unlock()
	switch old {
	case name:
		same = true
	case "":
		if err := s.Label(ctx, id, name); err != nil {
			return Checkpoint{}, err
		}
	default:
		return Checkpoint{}, fmt.Errorf("%w: entry %s is already checkpoint %q", ErrExists, id, old)
	}
	for _, c := range s.Checkpoints() {
		if c.EntryID == id {
			return c, nil
		}
	}
	return Checkpoint{Name: name, EntryID: id}, nil
}

// Checkpoints lists the named entries (labels), oldest label first.
func (s *Session) Checkpoints() []Checkpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	cps := s.checkpoints()
	out := make([]Checkpoint, len(cps))
	for i, c := range cps {
		out[i] = c.Checkpoint
	}
	slices.SortStableFunc(out, func(a, b Checkpoint) int { return a.Time.Compare(b.Time) })
	return out
}

// checkpoint is a Checkpoint with the log position of its label entry.
type checkpoint struct {
	Checkpoint
	at int32
}

// checkpoints lists the labels in force, in the log order of the label
// entries that set them. Callers hold mu.
func (s *Session) checkpoints() []checkpoint {
	at := map[string]checkpoint{}
	for i := range s.t.nodes {
		e := s.t.nodes[i].e
		if e.kind != kindLabel {
			continue
		}
		var l Label
		if e.payload(&l); l.TargetID == "" {
			continue
		}
		at[l.TargetID] = checkpoint{Checkpoint{Name: l.Label, EntryID: l.TargetID, Time: e.Time()}, int32(i)}
	}
	var out []checkpoint
	for id, c := range at {
		if c.Name != "" && s.t.labels[id] == c.Name {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b checkpoint) int { return int(a.at - b.at) })
	return out
}

// RewindResult says what Rewind did.
type RewindResult struct {
	From string // the leaf before: Branch back to it to redo
	To   string // the new leaf
	// Left is how many entries of the old path are not on the new one.
	Left int
}

// Rewind moves the leaf back to an entry (by id) or, if no entry has that
// id, to a checkpoint (by name; of several of that name, the one named
// last), like Branch: nothing is deleted, and the path left behind stays
// reachable from RewindResult.From.
func (s *Session) Rewind(ctx context.Context, to string) (res RewindResult, err error) {
	start := s.begin()
	defer func() {
		s.telemetry(ctx, start, OpInfo{Op: OpRewind, Anchor: res.From, Target: res.To, Entries: res.Left,
			Idempotent: err == nil && res.From == res.To, Err: err})
	}()
	if err := s.lock(ctx); err != nil {
		return RewindResult{}, err
	}
	defer s.mu.Unlock()
	target, ok := s.t.lookup(to)
	if !ok || s.t.nodes[target].flags&fMarker != 0 {
		target = -1
		for _, c := range s.checkpoints() {
			if c.Name != to {
				continue
			}
			if i, ok := s.t.lookup(c.EntryID); ok && s.t.nodes[i].flags&fMarker == 0 {
				target = i // later ones win
			}
		}
	}
	if target < 0 {
		return RewindResult{}, fmt.Errorf("%w: no checkpoint or entry %q", ErrNotFound, to)
	}
	res = RewindResult{From: s.leafID(), To: s.t.nodes[target].e.id, Left: s.t.leftBehind(s.leaf, target)}
	if err := s.branch(ctx, res.To); err != nil {
		return RewindResult{}, err
	}
	return res, nil
}
