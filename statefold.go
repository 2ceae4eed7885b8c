package session

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	"github.com/agentsession/session/internal/jsonx"
)

// The session state folded incrementally, and recorded where a fold may
// start: State and StateAt without folding the whole path on every read.
//
// The state at an entry is the fold of the CustomState updates on the
// path from the root to it. A compaction records the state at its point
// (the fold up to its parent) in its own member stateSnapshotMember, so
// that the fold can start at the latest compaction on the path instead of
// the root: an open that reads only the path from the latest compaction's
// first kept entry to the leaf gets the state whole. pi, and any reader
// that does not know the member, ignores it and folds every update, which
// gives the same state (Prune drops an update only where a later update
// overrides all of its keys, never because a recorded state holds them).
//
// A Session keeps the fold at its leaf (stateFold): an append extends it
// by the new entries only, and a leaf that moved is folded from the
// nearest point already known on its path (a fold kept every
// few entries of a path folded before (markStride), bounded in size), a
// recorded state, or the root.

// stateSnapshotMember is the member of a compaction entry that records
// the session state at it: {"id": the compaction's own id, "state": the
// state}. The id ties it to its place: a copy of the compaction with
// another id (a rewind past it, an edit of the file) is not trusted, as
// the state may differ where the copy stands.
const stateSnapshotMember = "agentsessionState"

// markStride is the depth between the folds kept on a path for a state
// of keys keys: 8 for a small state, more for a larger one (a power of
// two, so that the points of a larger stride are points of the smaller),
// so that keeping them costs about a key per entry folded.
func markStride(keys int) int32 {
	s := int32(8)
	for int(s) < keys && s < 1024 {
		s <<= 1
	}
	return s
}

// stateMarkBudget bounds the keys the kept folds hold together; past it
// they are let go and kept again from the next fold on.
const stateMarkBudget = 1 << 16

// stateFold is the state folded at the leaf and at points of the paths
// folded so far. Values are the fold's own bytes, never handed out: a
// caller gets copies (cloneState).
type stateFold struct {
	t     *tree // the tree the node indexes are of; another: start again
	at    int32 // node st is the fold at; -2: none
	st    State
	seen  bool               // the path to at holds a state update or a recorded state
	based bool               // st was folded from a recorded state, not from the root
	marks map[int32]foldMark // folds at points of paths
	held  int                // keys held in marks
}

type foldMark struct {
	st          State
	seen, based bool
}

// foldAt returns the state at node i (-1: before the first entry),
// shared: the caller may not change it. seen reports whether the path to
// i holds any state update or recorded state. Callers hold mu.
func (s *Session) foldAt(i int32) (st State, seen bool) {
	st, seen, _ = s.foldAtFrom(i)
	return st, seen
}

// foldAtFrom is foldAt, and reports whether the fold started from a
// recorded state (based) rather than from the root of the tree the
// handle holds: on a handle holding part of the history (pathload.go),
// only a based fold is the state. Callers hold mu.
func (s *Session) foldAtFrom(i int32) (st State, seen, based bool) {
	f := &s.sf
	if f.t != s.t {
		*f = stateFold{t: s.t, at: -2}
	}
	if i < 0 {
		return State{}, false, true
	}
	if f.at == i {
		return f.st, f.seen, f.based
	}
	leaf := i == s.leaf
	if leaf && f.at >= 0 {
		// The leaf moved down the path of the fold (appends, a branch to
		// a descendant): fold the entries since.
		if chain, ok := s.t.chainBetween(f.at, i); ok {
			for _, j := range chain {
				f.seen = f.applyEntry(s.t, j, f.st, f.seen, f.based)
			}
			f.at = i
			return f.st, f.seen, f.based
		}
	}
	st, seen, based = f.foldFrom(s.t, i)
	if leaf {
		f.at, f.st, f.seen, f.based = i, st, seen, based
	}
	return st, seen, based
}

// chainBetween returns the nodes after a on the path to i, a excluded,
// when a is on that path.
func (t *tree) chainBetween(a, i int32) ([]int32, bool) {
	da, di := t.nodes[a].depth, t.nodes[i].depth
	if da < 0 || di < da {
		return nil, false
	}
	chain := make([]int32, di-da)
	j := i
	for k := len(chain) - 1; k >= 0; k-- {
		chain[k] = j
		j = t.nodes[j].parent
		if j < 0 {
			return nil, false
		}
	}
	return chain, j == a
}

// foldFrom folds the state at i from the nearest point of its path whose
// fold is known: a kept fold, a compaction's recorded state, or the
// root. It keeps folds at the points it passes.
func (f *stateFold) foldFrom(t *tree, i int32) (State, bool, bool) {
	var todo []int32
	st, seen, based := State{}, false, false
	for j := i; j >= 0; j = t.nodes[j].parent {
		if m, ok := f.marks[j]; ok {
			st, seen, based = maps0(m.st, len(m.st)+1), m.seen, m.based
			break
		}
		if snap, ok := recordedState(t.nodes[j].e); ok {
			st, seen, based = snap, true, true
			f.mark(j, st, seen, based)
			break
		}
		todo = append(todo, j)
		if len(todo) > len(t.nodes) {
			break // a cycle cannot be, but never loop
		}
	}
	for k := len(todo) - 1; k >= 0; k-- {
		seen = f.applyEntry(t, todo[k], st, seen, based)
	}
	return st, seen, based
}

// applyEntry applies node j's update, if it is one, to st, and keeps a
// fold at j when it is a point of the stride (based: st rests on a
// recorded state).
func (f *stateFold) applyEntry(t *tree, j int32, st State, seen, based bool) bool {
	if data, ok := stateData(t.nodes[j].e); ok && applyData(st, data) {
		seen = true
	}
	if t.nodes[j].depth%markStride(len(st)) == 0 {
		f.mark(j, st, seen, based)
	}
	return seen
}

// stateData returns the data of a CustomState entry: customData read in
// one pass over the entry's bytes.
func stateData(e Entry) ([]byte, bool) {
	if e.kind != kindCustom {
		return nil, false
	}
	it, err := jsonx.Object(e.bytes())
	if err != nil {
		return nil, false
	}
	var data []byte
	typed, has := false, false
	for it.Next() {
		switch {
		case it.KeyIs("customType"):
			typed = string(it.Value()) == `"`+CustomState+`"`
		case it.KeyIs("data"):
			data, has = it.Value(), true
		}
	}
	return data, typed && has && it.Err() == nil
}

// applyData applies the update data (a JSON object of values by key,
// null removing its key) to st, as applyState applies it decoded, with
// the values views of data: an entry's bytes never change. Data that is
// not an object of valid JSON changes nothing (false).
func applyData(st State, data []byte) bool {
	var pairs [8]statePair
	ps, ok := dataPairs(pairs[:0], data)
	if !ok {
		return false
	}
	for _, p := range ps {
		if string(p.v) == "null" {
			delete(st, p.k)
			continue
		}
		st[p.k] = json.RawMessage(p.v[:len(p.v):len(p.v)])
	}
	return true
}

type statePair struct {
	k string
	v []byte
}

// dataPairs appends the members of update data to ps, in order; false
// when data is not an object of valid JSON.
func dataPairs(ps []statePair, data []byte) ([]statePair, bool) {
	it, err := jsonx.Object(data)
	if err != nil {
		return nil, false
	}
	for it.Next() {
		ps = append(ps, statePair{it.Key(), it.Value()})
	}
	return ps, it.Err() == nil
}

// mark keeps a copy of the fold at j (its values shared: they never
// change), within the budget.
func (f *stateFold) mark(j int32, st State, seen, based bool) {
	if _, ok := f.marks[j]; ok {
		return
	}
	if f.held+len(st) > stateMarkBudget {
		f.marks, f.held = nil, 0
	}
	if f.marks == nil {
		f.marks = map[int32]foldMark{}
	}
	// An empty fold (most paths of a session without state) is kept as
	// nil: a compaction's fold of a long path marked every few entries,
	// a map each, whatever the state held.
	var cp State
	if len(st) > 0 {
		cp = maps0(st, len(st))
	}
	f.marks[j] = foldMark{st: cp, seen: seen, based: based}
	f.held += len(st) + 1
}

// maps0 copies st's keys and value slices (not their bytes) into a new
// map of room n.
func maps0(st State, n int) State {
	out := make(State, n)
	for k, v := range st {
		out[k] = v
	}
	return out
}

// recordedState returns the state a compaction recorded at its point,
// when it is one of ours, for this very entry.
func recordedState(e Entry) (State, bool) {
	if e.kind != kindCompaction {
		return nil, false
	}
	raw, ok := e.field(stateSnapshotMember)
	if !ok {
		return nil, false
	}
	var snap struct {
		ID    string `json:"id"`
		State State  `json:"state"`
	}
	if json.Unmarshal(raw, &snap) != nil || snap.ID != e.id || snap.State == nil {
		return nil, false
	}
	for k, v := range snap.State {
		if string(v) == "null" {
			delete(snap.State, k) // never written; a null is no value
		}
	}
	return snap.State, true
}

// withStateSnapshot returns a compaction entry being appended with the
// state at its point recorded (see stateSnapshotMember), when the path to
// its parent holds any state; other entries, and compactions of paths
// without state, are returned as they are. Callers hold mu.
func (s *Session) withStateSnapshot(e Entry) (Entry, error) {
	if e.kind != kindCompaction {
		return e, nil
	}
	_, has := e.field(stateSnapshotMember)
	st, seen := State{}, false
	if e.parent != "" {
		if p, ok := s.t.lookup(e.parent); ok {
			st, seen = s.foldAt(p)
		}
	}
	if !seen && !has {
		return e, nil
	}
	return e.withMember(stateSnapshotMember, appendSnapshot(nil, e.id, st))
}

// appendSnapshot appends the recorded state {"id":id,"state":{...}}, its
// keys sorted and its values compact.
func appendSnapshot(dst []byte, id string, st State) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonx.AppendString(dst, id)
	dst = append(dst, `,"state":{`...)
	for k, key := range slices.Sorted(maps.Keys(st)) {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = jsonx.AppendString(dst, key)
		dst = append(dst, ':')
		dst = appendCompact(dst, st[key])
	}
	return append(dst, "}}"...)
}

// appendCompact appends the JSON value v without insignificant
// whitespace (a value read from a foreign file may have some, newlines
// included, which a line cannot hold).
func appendCompact(dst []byte, v []byte) []byte {
	b := bytes.NewBuffer(dst)
	if json.Compact(b, v) != nil {
		return append(dst, "null"...) // not JSON: cannot be in a fold
	}
	return b.Bytes()
}

// cloneState copies st for a caller: a new map, and the values' bytes in
// one allocation.
func cloneState(st State) State {
	n := 0
	for _, v := range st {
		n += len(v)
	}
	buf := make([]byte, 0, n)
	out := make(State, len(st))
	for k, v := range st {
		start := len(buf)
		buf = append(buf, v...)
		out[k] = buf[start:len(buf):len(buf)]
	}
	return out
}

// stateValue returns a copy of the value of key in the session state at
// the leaf. Callers hold mu.
func (s *Session) stateValue(key string) (json.RawMessage, bool) {
	st, _ := s.foldAt(s.leaf)
	v, ok := st[key]
	if !ok {
		return nil, false
	}
	return slices.Clone(v), true
}
