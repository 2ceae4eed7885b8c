package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// The session state kept incrementally, recorded at compactions and
// pruned of superseded values: each checked against the plain fold of
// every state update on the path from the root (sfRefState), which is
// what the state means.

// sfRefState folds the CustomState updates of path, as the state was
// defined before any cache or snapshot: the reference.
func sfRefState(t testing.TB, path []session.Entry) map[string]string {
	t.Helper()
	st := map[string]string{}
	for _, e := range path {
		if e.Type() != session.TypeCustom {
			continue
		}
		var c struct {
			CustomType string                     `json:"customType"`
			Data       map[string]json.RawMessage `json:"data"`
		}
		if json.Unmarshal(e.JSON(), &c) != nil || c.CustomType != session.CustomState {
			continue
		}
		for k, v := range c.Data {
			if string(v) == "null" {
				delete(st, k)
			} else {
				st[k] = sfCompact(t, v)
			}
		}
	}
	return st
}

func sfCompact(t testing.TB, v []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		t.Fatalf("value %q: %v", v, err)
	}
	return b.String()
}

// sfPlain is a State with its values compacted, to compare.
func sfPlain(t testing.TB, st session.State) map[string]string {
	out := make(map[string]string, len(st))
	for k, v := range st {
		out[k] = sfCompact(t, v)
	}
	return out
}

// sfStateAt is the state at id as the session gives it.
func sfStateAt(t testing.TB, s *session.Session, id string) map[string]string {
	t.Helper()
	st, err := s.StateAt(id)
	require.NoError(t, err)
	return sfPlain(t, st)
}

// sfCut is the log a lazy open reads: the header and the path to the
// leaf from the latest compaction's first kept entry.
func sfCut(t testing.TB, s *session.Session) *session.Log {
	t.Helper()
	path, err := s.PathTo(s.LeafID())
	require.NoError(t, err)
	from := 0
	for k := len(path) - 1; k >= 0; k-- {
		if path[k].Type() != session.TypeCompaction {
			continue
		}
		from = k
		var c session.Compaction
		require.NoError(t, path[k].Decode(&c))
		for j := range k {
			if path[j].ID() == c.FirstKeptEntryID {
				from = j
			}
		}
		break
	}
	return &session.Log{Header: s.Header(), Entries: path[from:]}
}

// TestStateFromCompactionPoint: the state at the leaf is computable from
// the path between the latest compaction's first kept entry and the leaf,
// whichever way the compaction was made, so an open that reads only that
// part of the file gets the state whole.
func TestStateFromCompactionPoint(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"Compact", "AppendCompaction"} {
		t.Run(how, func(t *testing.T) {
			s := session.New()
			require.NoError(t, session.SetState(ctx, s, "plan", []string{"a", "b"}))
			require.NoError(t, s.UpdateState(ctx, map[string]any{"gone": 1, "kept": "k", "n": 1}))
			for i := range 8 {
				_, err := s.Append(ctx, session.UserText(fmt.Sprintf("question %d", i)))
				require.NoError(t, err)
				_, err = s.Append(ctx, session.AssistantText(fmt.Sprintf("answer %d", i)))
				require.NoError(t, err)
				require.NoError(t, session.SetState(ctx, s, "n", i))
			}
			require.NoError(t, s.UpdateState(ctx, map[string]any{"gone": nil}))
			switch how {
			case "Compact":
				_, err := s.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{KeepRecentTokens: 1})
				require.NoError(t, err)
			default:
				path, err := s.PathTo(s.LeafID())
				require.NoError(t, err)
				_, err = s.AppendCompaction(ctx, session.Compaction{Summary: "so far", FirstKeptEntryID: path[len(path)-3].ID(), TokensBefore: 100})
				require.NoError(t, err)
			}
			require.NoError(t, session.SetState(ctx, s, "after", true))
			want := map[string]string{"plan": `["a","b"]`, "kept": `"k"`, "n": "7", "after": "true"}
			st, err := s.State(ctx)
			require.NoError(t, err)
			require.Equal(t, want, sfPlain(t, st))

			cut := sfCut(t, s)
			require.Less(t, len(cut.Entries), s.Len(), "the cut leaves out the start")
			part := session.OpenLog(cut)
			st, err = part.State(ctx)
			require.NoError(t, err)
			require.Equal(t, want, sfPlain(t, st), "the state from the compaction's point")
			st, err = part.StateAt(part.LeafID())
			require.NoError(t, err)
			require.Equal(t, want, sfPlain(t, st))
		})
	}
}

// TestStateCompactionWithoutStateUnchanged: a session that never kept
// state writes its compactions as before (no state recorded).
func TestStateCompactionWithoutStateUnchanged(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	for i := range 4 {
		_, err := s.Append(ctx, session.UserText(fmt.Sprintf("q %d", i)))
		require.NoError(t, err)
		_, err = s.Append(ctx, session.AssistantText(fmt.Sprintf("a %d", i)))
		require.NoError(t, err)
	}
	res, err := s.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{KeepRecentTokens: 1})
	require.NoError(t, err)
	require.NotContains(t, string(res.Entry.JSON()), "agentsession")
}

// TestStateSnapshotOfCopiedCompactionIgnored: a compaction copied under
// another parent (as a rewind past one does, or a hand-edited file)
// carries a recorded state that is not the state of its new place: it
// is not used, and the fold goes back further.
func TestStateSnapshotOfCopiedCompactionIgnored(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	require.NoError(t, session.SetState(ctx, s, "k", 1))
	first, err := s.Append(ctx, session.UserText("q"))
	require.NoError(t, err)
	require.NoError(t, session.SetState(ctx, s, "k", 2))
	c, err := s.AppendCompaction(ctx, session.Compaction{Summary: "s", FirstKeptEntryID: first.ID()})
	require.NoError(t, err)
	require.Contains(t, string(c.JSON()), `"k":2`)
	// The same compaction, copied (a new id) under the first update.
	path, err := s.PathTo(first.ID())
	require.NoError(t, err)
	raw := strings.Replace(string(c.JSON()), `"id":"`+c.ID()+`"`, `"id":"c0c0c0c0"`, 1)
	raw = strings.Replace(raw, `"parentId":"`+c.ParentID()+`"`, `"parentId":"`+path[0].ID()+`"`, 1)
	copied, err := session.ParseEntry([]byte(raw))
	require.NoError(t, err)
	log := s.Log()
	log.Entries = append(log.Entries, copied)
	o := session.OpenLog(log)
	require.Equal(t, "c0c0c0c0", o.LeafID())
	require.Equal(t, map[string]string{"k": "1"}, sfStateAt(t, o, "c0c0c0c0"))
	st, err := o.State(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"k": "1"}, sfPlain(t, st))
}

// TestStateIncrementalFollowsTheLeaf: the state at the leaf stays right
// through appends, branches, rewinds, another handle's appends (read by
// Reload and by a conflict), compactions and prunes.
func TestStateIncrementalFollowsTheLeaf(t *testing.T) {
	ctx := context.Background()
	store := openFS(t, t.TempDir(), nil)
	a, err := session.Create(ctx, store, nil)
	require.NoError(t, err)
	b, err := session.Open(ctx, store, a.ID())
	require.NoError(t, err)
	check := func(s *session.Session) {
		t.Helper()
		path, err := s.PathTo(s.LeafID())
		require.NoError(t, err)
		st, err := s.State(ctx)
		require.NoError(t, err)
		require.Equal(t, sfRefState(t, path), sfPlain(t, st))
		v, ok, err := session.GetState[int](ctx, s, "n")
		require.NoError(t, err)
		ref, has := sfRefState(t, path)["n"]
		require.Equal(t, has, ok)
		if has {
			require.Equal(t, ref, fmt.Sprint(v))
		}
	}
	require.NoError(t, session.SetState(ctx, a, "n", 1))
	check(a)
	mark := a.LeafID()
	require.NoError(t, session.SetState(ctx, a, "n", 2))
	check(a)
	require.NoError(t, a.Branch(ctx, mark))
	check(a)
	require.NoError(t, session.SetState(ctx, a, "m", 3))
	check(a)
	// b appends without knowing a's: a conflict, b reloads.
	require.NoError(t, session.SetState(ctx, b, "n", 10))
	check(b)
	require.NoError(t, a.Reload(ctx))
	check(a)
	require.NoError(t, a.Branch(ctx, b.LeafID()))
	check(a)
	require.NoError(t, session.SetState(ctx, a, "n", 11))
	check(a)
	require.NoError(t, a.Branch(ctx, ""))
	check(a)
	require.NoError(t, session.SetState(ctx, a, "root2", 1))
	check(a)
	require.NoError(t, a.Branch(ctx, mark))
	u, err := a.Append(ctx, session.UserText("q"))
	require.NoError(t, err)
	_, err = a.AppendCompaction(ctx, session.Compaction{Summary: "s", FirstKeptEntryID: u.ID()})
	require.NoError(t, err)
	check(a)
	require.NoError(t, a.UpdateState(ctx, map[string]any{"n": nil, "z": "z"}))
	check(a)
	_, err = a.Prune(ctx, nil)
	require.NoError(t, err)
	check(a)
	require.NoError(t, session.SetState(ctx, a, "n", 12))
	check(a)
	_, err = a.Rewind(ctx, mark)
	require.NoError(t, err)
	check(a)
}

// sfOps drives a session with the operations the state goes through,
// read from data, checking after each that the state at the leaf and at
// every entry (every end of a branch, label and the leaf once a prune has
// dropped the history between them) is the plain fold of its path, and
// that the state at the leaf is computable from the latest compaction.
func sfOps(t *testing.T, data []byte) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	s, err := session.Create(ctx, store, nil)
	require.NoError(t, err)
	other, err := session.Open(ctx, store, s.ID())
	require.NoError(t, err)
	pos := 0
	next := func() int {
		if pos >= len(data) {
			return 0
		}
		pos++
		return int(data[pos-1])
	}
	keys := []string{"a", "b", "c", "d"}
	var ids []string // entries appended, to branch to and label
	for pos < len(data) {
		op := next() % 10
		if os.Getenv("SFOPS_LOG") != "" {
			t.Logf("op %d at %d, leaf %s", op, pos, s.LeafID())
		}
		switch op {
		case 0, 1, 2: // an update of one to three keys, some deletes
			delta := map[string]any{}
			for range 1 + next()%3 {
				k := keys[next()%len(keys)]
				if v := next(); v%4 == 0 {
					delta[k] = nil
				} else {
					delta[k] = map[string]int{"v": v}
				}
			}
			require.NoError(t, s.UpdateState(ctx, delta))
		case 3:
			_, err := s.Append(ctx, session.UserText("m"))
			require.NoError(t, err)
		case 4: // a compaction keeping from an entry of the path
			path, err := s.PathTo(s.LeafID())
			require.NoError(t, err)
			if len(path) == 0 {
				continue
			}
			_, err = s.AppendCompaction(ctx, session.Compaction{Summary: "s", FirstKeptEntryID: path[len(path)-1-next()%len(path)].ID()})
			require.NoError(t, err)
		case 5: // a branch anywhere, or before the first entry
			if len(ids) == 0 || next()%8 == 0 {
				require.NoError(t, s.Branch(ctx, ""))
			} else if err := s.Branch(ctx, ids[next()%len(ids)]); err != nil {
				require.ErrorIs(t, err, session.ErrNotFound) // pruned away
			}
		case 6: // a label (a checkpoint) on the leaf
			if s.LeafID() != "" {
				require.NoError(t, s.Label(ctx, s.LeafID(), fmt.Sprintf("l%d", pos)))
			}
		case 7: // another handle's update, then this one catches up
			if err := other.Reload(ctx); err != nil {
				t.Fatal(err)
			}
			require.NoError(t, session.SetState(ctx, other, keys[next()%len(keys)], next()))
			require.NoError(t, s.Reload(ctx))
			if next()%2 == 0 {
				require.NoError(t, s.Branch(ctx, other.LeafID()))
			}
		case 8:
			if next()%3 == 0 {
				// The state at every end, label and the leaf stays.
				ends := map[string]map[string]string{s.LeafID(): nil}
				for _, e := range s.Leaves() {
					ends[e.ID()] = nil
				}
				for id := range s.Labels() {
					ends[id] = nil
				}
				for id := range ends {
					if _, ok := s.Entry(id); ok || id == "" {
						ends[id] = sfStateAt(t, s, id)
					}
				}
				_, err := s.Prune(ctx, nil)
				require.NoError(t, err)
				for id, want := range ends {
					if want != nil {
						require.Equal(t, want, sfStateAt(t, s, id), "state at %s after the prune", id)
					}
				}
			}
		case 9: // a reopen
			s, err = session.Open(ctx, store, s.ID())
			require.NoError(t, err)
		}
		if id := s.LeafID(); id != "" {
			ids = append(ids, id)
		}
		sfCheck(t, s)
	}
}

// sfCheck compares the session's state with the plain fold of what the
// log holds, at every entry: after a prune too (the state at the entries
// between the ends, labels and recorded states changes then, but the
// fold from a recorded state and the fold from the root still agree).
func sfCheck(t *testing.T, s *session.Session) {
	t.Helper()
	ctx := context.Background()
	path, err := s.PathTo(s.LeafID())
	require.NoError(t, err)
	want := sfRefState(t, path)
	st, err := s.State(ctx)
	require.NoError(t, err)
	require.Equal(t, want, sfPlain(t, st), "state at the leaf %s", s.LeafID())
	part := session.OpenLog(sfCut(t, s))
	st, err = part.State(ctx)
	require.NoError(t, err)
	require.Equal(t, want, sfPlain(t, st), "state from the latest compaction")
	at := map[string]bool{}
	for e := range s.Entries() {
		at[e.ID()] = true
	}
	for id := range at {
		if _, ok := s.Entry(id); !ok {
			continue
		}
		p, err := s.PathTo(id)
		require.NoError(t, err)
		require.Equal(t, sfRefState(t, p), sfStateAt(t, s, id), "state at %s", id)
	}
}

// TestStateFoldProperty runs sfOps on random operations.
func TestStateFoldProperty(t *testing.T) {
	n := 60
	if testing.Short() {
		n = 15
	}
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 40))
		data := make([]byte, 40+r.IntN(160))
		for i := range data {
			data[i] = byte(r.UintN(256))
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) { sfOps(t, data) })
	}
}

// FuzzStateFold: any sequence of updates, deletes, compactions,
// branches, labels, other writers, prunes and reopens keeps the state the
// plain fold of its path, and computable from the latest compaction.
func FuzzStateFold(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 3, 0, 4, 5, 0, 4, 1, 2, 6, 0, 7, 1, 2, 0, 8, 0, 9, 5, 3, 0})
	f.Add([]byte{0, 0, 0, 0, 0, 1, 4, 1, 0, 0, 2, 9, 5, 1, 0, 8, 3, 4, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 400 {
			return
		}
		sfOps(t, data)
	})
}

// sfPruneFixture builds a session whose state a prune can shrink: many
// updates of one big value, a checkpoint and a label on the way, another
// branch, deletes, and a compaction.
func sfPruneFixture(t *testing.T, ctx context.Context, s *session.Session) (points []string) {
	big := strings.Repeat("x", 4096)
	require.NoError(t, s.UpdateState(ctx, map[string]any{"once": "o", "del": 1}))
	for i := range 60 {
		require.NoError(t, session.SetState(ctx, s, "ck", fmt.Sprintf("%d %s", i, big)))
		if i%10 == 0 {
			_, err := s.Append(ctx, session.UserText(fmt.Sprintf("turn %d", i)))
			require.NoError(t, err)
		}
		switch i {
		case 20:
			cp, err := s.Checkpoint(ctx, "cp20")
			require.NoError(t, err)
			points = append(points, cp.EntryID)
		case 30:
			target := s.LeafID()
			require.NoError(t, s.Label(ctx, target, "l30"))
			points = append(points, target)
		case 40:
			// A branch left behind at 40, then back.
			back := s.LeafID()
			require.NoError(t, session.SetState(ctx, s, "ck", "branch"))
			points = append(points, s.LeafID())
			require.NoError(t, s.Branch(ctx, back))
		case 45:
			require.NoError(t, s.UpdateState(ctx, map[string]any{"del": nil}))
		case 50:
			path, err := s.PathTo(s.LeafID())
			require.NoError(t, err)
			_, err = s.AppendCompaction(ctx, session.Compaction{Summary: "s", FirstKeptEntryID: path[len(path)-2].ID()})
			require.NoError(t, err)
		}
	}
	return append(points, s.LeafID())
}

// TestStatePruneDropsSuperseded: Prune drops the state updates whose
// every key a later update changes on every path that needs them, and
// the state at every checkpoint, label, branch end and the leaf reads
// the same after a reopen, on a FileStore and a MemoryStore.
func TestStatePruneDropsSuperseded(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"file", "memory"} {
		t.Run(kind, func(t *testing.T) {
			var store session.Store = session.NewMemoryStore()
			var fs *session.FileStore
			if kind == "file" {
				fs = openFS(t, t.TempDir(), nil)
				store = fs
			}
			s, err := session.Create(ctx, store, nil)
			require.NoError(t, err)
			points := sfPruneFixture(t, ctx, s)
			before := map[string]map[string]string{}
			for _, id := range points {
				before[id] = sfStateAt(t, s, id)
			}
			leaf := s.LeafID()
			require.Equal(t, map[string]string{"once": `"o"`, "ck": `"59 ` + strings.Repeat("x", 4096) + `"`}, before[leaf])
			size := func() int64 {
				if fs == nil {
					return 0
				}
				p, err := fs.Path(s.ID())
				require.NoError(t, err)
				fi, err := os.Stat(p)
				require.NoError(t, err)
				return fi.Size()
			}
			sizeBefore, n := size(), s.Len()
			res, err := s.Prune(ctx, nil)
			require.NoError(t, err)
			// 60 updates of ck: kept are those of the checkpoint, the
			// label, the branch and the leaf, and the one before the
			// compaction's own point is not needed either.
			require.GreaterOrEqual(t, res.Dropped, 50, "superseded updates dropped")
			require.Equal(t, n-res.Dropped, res.Kept)
			require.NoError(t, s.Close())
			if fs != nil {
				require.Less(t, size(), sizeBefore/5)
			}
			o, err := session.Open(ctx, store, s.ID())
			require.NoError(t, err)
			require.Equal(t, leaf, o.LeafID())
			for _, id := range points {
				require.Equal(t, before[id], sfStateAt(t, o, id), "state at %s", id)
			}
			cps := o.Checkpoints()
			require.Len(t, cps, 2)
			require.ElementsMatch(t, points[:2], []string{cps[0].EntryID, cps[1].EntryID})
			st, err := o.State(ctx)
			require.NoError(t, err)
			require.Equal(t, before[leaf], sfPlain(t, st))
			// What is left is what the state needs: a second prune drops
			// nothing.
			res, err = o.Prune(ctx, nil)
			require.NoError(t, err)
			require.Zero(t, res.Dropped)
		})
	}
}

// TestStatePruneKeepsWhatIsReferenced: an update that a compaction
// names as its first kept entry, or that a label names, stays, though
// later updates override it.
func TestStatePruneKeepsWhatIsReferenced(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	require.NoError(t, session.SetState(ctx, s, "k", 1))
	first := s.LeafID()
	require.NoError(t, session.SetState(ctx, s, "k", 2))
	c, err := s.AppendCompaction(ctx, session.Compaction{Summary: "s", FirstKeptEntryID: first})
	require.NoError(t, err)
	require.NoError(t, session.SetState(ctx, s, "k", 3))
	require.NoError(t, session.SetState(ctx, s, "k", 4))
	res, err := s.Prune(ctx, nil)
	require.NoError(t, err)
	// k=3 goes; k=2 stays, as the compaction recorded it: a fold from
	// the root (pi's) gives there what the recorded state says.
	require.Equal(t, 1, res.Dropped)
	require.Equal(t, map[string]string{"k": "2"}, sfStateAt(t, s, c.ID()))
	require.Equal(t, map[string]string{"k": "2"}, sfRefState(t, must(s.PathTo(c.ID()))))
	_, ok := s.Entry(first)
	require.True(t, ok)
	require.Equal(t, map[string]string{"k": "4"}, sfStateAt(t, s, s.LeafID()))
	require.Equal(t, map[string]string{"k": "1"}, sfStateAt(t, s, first))
}

// TestStatePruneDeletesSupersede: a removal (null) overrides what came
// before as a value does, and is itself dropped once set again.
func TestStatePruneDeletesSupersede(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	require.NoError(t, session.SetState(ctx, s, "k", 1))
	require.NoError(t, s.UpdateState(ctx, map[string]any{"k": nil, "j": 1}))
	require.NoError(t, s.UpdateState(ctx, map[string]any{"j": nil}))
	require.NoError(t, session.SetState(ctx, s, "k", 2))
	require.NoError(t, session.SetState(ctx, s, "last", 0))
	res, err := s.Prune(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, 2, res.Dropped) // k=1, then {k:null, j:1}
	require.Equal(t, map[string]string{"k": "2", "last": "0"}, sfStateAt(t, s, s.LeafID()))
}

// TestStatePartialHandle: a handle opened by its path (the latest
// compaction's kept entries to the leaf) answers State and GetState from
// the state the compaction recorded, without reading the rest; where the
// compaction recorded none (pi wrote it), it reads the rest first.
func TestStatePartialHandle(t *testing.T) {
	ctx := context.Background()
	ms := session.NewMemoryStore()
	s, err := session.Create(ctx, ms, nil)
	require.NoError(t, err)
	require.NoError(t, s.UpdateState(ctx, map[string]any{"early": "e", "n": 0}))
	for i := range 12 {
		_, err := s.Append(ctx, session.UserText(fmt.Sprintf("question %d %s", i, strings.Repeat("w ", 40))))
		require.NoError(t, err)
		_, err = s.Append(ctx, session.AssistantText(fmt.Sprintf("answer %d %s", i, strings.Repeat("w ", 40))))
		require.NoError(t, err)
		require.NoError(t, session.SetState(ctx, s, "n", i))
	}
	_, err = s.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{KeepRecentTokens: 100})
	require.NoError(t, err)
	require.NoError(t, session.SetState(ctx, s, "late", true))
	want := map[string]string{"early": `"e"`, "n": "11", "late": "true"}
	log := s.Log()
	require.NoError(t, s.Close())

	o, err := session.Open(ctx, ms, s.ID())
	require.NoError(t, err)
	require.True(t, session.IsPartial(o))
	st, err := o.State(ctx)
	require.NoError(t, err)
	require.Equal(t, want, sfPlain(t, st))
	v, ok, err := session.GetState[string](ctx, o, "early")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "e", v)
	require.True(t, session.IsPartial(o), "the state came from the compaction")

	// The same log as pi would write it: the compaction without the
	// state it recorded.
	var entries []session.Entry
	for _, e := range log.Entries {
		if e.Type() == session.TypeCompaction {
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(e.JSON(), &m))
			require.Contains(t, m, "agentsessionState")
			delete(m, "agentsessionState")
			raw, err := json.Marshal(m)
			require.NoError(t, err)
			e, err = session.ParseEntry(raw)
			require.NoError(t, err)
		}
		entries = append(entries, e)
	}
	pi := session.NewMemoryStore()
	p, err := session.Create(ctx, pi, nil)
	require.NoError(t, err)
	require.NoError(t, pi.Append(ctx, p.ID(), session.AppendOptions{}, entries...))
	o, err = session.Open(ctx, pi, p.ID())
	require.NoError(t, err)
	require.True(t, session.IsPartial(o))
	st, err = o.State(ctx)
	require.NoError(t, err)
	require.Equal(t, want, sfPlain(t, st))
	require.False(t, session.IsPartial(o), "the state needed what came before")
}
