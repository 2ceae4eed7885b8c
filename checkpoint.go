package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
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
	// Metadata is what the host stored with the checkpoint
	// (CheckpointOptions.Metadata), nil when none.
	Metadata json.RawMessage
}

// CheckpointOptions configures CheckpointWith. The zero value (or nil)
// names the current point of the conversation, with no metadata.
type CheckpointOptions struct {
	// At is the entry to name: an entry id, or the name of a checkpoint
	// (see Resolve); default the leaf. A label or title entry stands for
	// the entry it follows, as the leaf does.
	At string
	// Metadata is stored with the checkpoint (any value encoding/json
	// takes, or json.RawMessage; nil for none): the host's own record of
	// the point, such as the files it touched or a commit. It is a member
	// of the label entry, which pi ignores.
	Metadata any
}

// Checkpoint names the current point of the conversation (the leaf, or
// the entry the leaf's trailing labels and title changes follow) so that
// Rewind and Fork can come back to it. It is CheckpointWith with no
// options.
func (s *Session) Checkpoint(ctx context.Context, name string) (Checkpoint, error) {
	return s.CheckpointWith(ctx, name, nil)
}

// CheckpointWith names an entry (opts.At, the current point by default)
// as a checkpoint, with the host's metadata. It is a label, and
// idempotent: naming the same entry with the same name and metadata again
// adds nothing; with other metadata, it records the new metadata (a new
// label entry of the same name). An entry holds one label: if it already
// has another one, CheckpointWith fails with ErrExists rather than rename
// it (Label renames on purpose). An entry that does not exist is
// ErrNotFound.
func (s *Session) CheckpointWith(ctx context.Context, name string, opts *CheckpointOptions) (cp Checkpoint, err error) {
	if err := s.makeWhole(ctx); err != nil {
		return Checkpoint{}, err
	}
	if s == nil {
		return Checkpoint{}, ErrNilSession
	}
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
	var o CheckpointOptions
	if opts != nil {
		o = *opts
	}
	meta, err := marshalRaw(o.Metadata)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("session: checkpoint metadata: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return Checkpoint{}, err
	}
	target := s.leaf
	if o.At != "" {
		var ok bool
		if target, ok = s.resolveLocked(o.At); !ok {
			s.mu.Unlock()
			return Checkpoint{}, fmt.Errorf("%w: no checkpoint or entry %q", ErrNotFound, o.At)
		}
	}
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
	var oldMeta json.RawMessage
	if old == name {
		for _, c := range s.checkpoints() {
			if c.EntryID == id {
				oldMeta = c.Metadata
			}
		}
	}
	s.mu.Unlock()
	switch {
	case old == name && jsonEqual(oldMeta, meta):
		same = true
	case old == "" || old == name:
		if err := s.label(ctx, id, Label{TargetID: id, Label: name, Metadata: meta}); err != nil {
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
	return Checkpoint{Name: name, EntryID: id, Metadata: meta}, nil
}

// jsonEqual reports whether two JSON values are the same value (nil and
// null are).
func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return isNullRaw(a) && isNullRaw(b)
	}
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func isNullRaw(r json.RawMessage) bool {
	r = bytes.TrimSpace(r)
	return len(r) == 0 || string(r) == "null"
}

// Resolve returns the entry that ref names: the entry with that id or,
// when no entry has it, the checkpoint of that name (of several of that
// name, the one named last). It is the rule Rewind, Fork (ForkOptions.At)
// and CheckpointWith (CheckpointOptions.At) follow; ErrNotFound when ref
// names neither.
func (s *Session) Resolve(ref string) (Entry, error) {
	if err := s.makeWhole(context.Background()); err != nil {
		return Entry{}, err
	}
	if s == nil {
		return Entry{}, ErrNilSession
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Entry{}, ErrClosed
	}
	i, ok := s.resolveLocked(ref)
	if !ok {
		return Entry{}, fmt.Errorf("%w: no checkpoint or entry %q", ErrNotFound, ref)
	}
	return s.t.nodes[i].e, nil
}

// resolveLocked is Resolve for callers that hold mu.
func (s *Session) resolveLocked(ref string) (int32, bool) {
	if i, ok := s.t.lookup(ref); ok && s.t.nodes[i].flags&fMarker == 0 {
		return i, true
	}
	target := int32(-1)
	for _, c := range s.checkpoints() {
		if c.Name != ref {
			continue
		}
		if i, ok := s.t.lookup(c.EntryID); ok && s.t.nodes[i].flags&fMarker == 0 {
			target = i // later ones win
		}
	}
	return target, target >= 0
}

// Checkpoints lists the named entries (labels), oldest label first.
func (s *Session) Checkpoints() []Checkpoint {
	s.mu.Lock()
	s.wholeNoCtx()
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
		at[l.TargetID] = checkpoint{Checkpoint{Name: l.Label, EntryID: l.TargetID, Time: e.Time(), Metadata: l.Metadata}, int32(i)}
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
// last: see Resolve), like Branch: nothing is deleted, and the path left behind stays
// reachable from RewindResult.From.
func (s *Session) Rewind(ctx context.Context, to string) (res RewindResult, err error) {
	if err := s.makeWhole(ctx); err != nil {
		return RewindResult{}, err
	}
	if s == nil {
		return RewindResult{}, ErrNilSession
	}
	start := s.begin()
	defer func() {
		s.telemetry(ctx, start, OpInfo{Op: OpRewind, Anchor: res.From, Target: res.To, Entries: res.Left,
			Idempotent: err == nil && res.From == res.To, Err: err})
	}()
	if err := s.lock(ctx); err != nil {
		return RewindResult{}, err
	}
	defer s.mu.Unlock()
	target, ok := s.resolveLocked(to)
	if !ok {
		return RewindResult{}, fmt.Errorf("%w: no checkpoint or entry %q", ErrNotFound, to)
	}
	res = RewindResult{From: s.leafID(), To: s.t.nodes[target].e.id, Left: s.t.leftBehind(s.leaf, target)}
	if err := s.branch(ctx, res.To); err != nil {
		return RewindResult{}, err
	}
	return res, nil
}
