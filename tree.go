package session

import (
	"slices"

	"github.com/agentsession/session/internal/jsonx"
)

// leafMarkerType is the customType of the entries that record leaf moves.
//
// The seed format has no leaf pointer: a reader takes the last entry as
// the leaf. So Branch (to an entry, or to "") appends a custom entry whose parent is
// the new leaf (null for a reset); the seed agents follow it to the same
// path (a custom entry adds nothing to the context) and this package
// resolves it to its parent. Markers without children (all of ours: an
// append after Branch attaches to the target) are hidden from tree views.
const leafMarkerType = "agentsession.leaf"

// tree indexes a log's entries: by id, parent links, children in file
// order, depth, labels. It never hangs on a corrupt log: duplicate ids
// resolve to the later line, a missing or self parent makes a root, and a
// cycle is cut at its earliest line, which becomes a root.
type tree struct {
	nodes  []node
	byID   idIndex           // id -> node; a shadowed duplicate's id leads to the later line
	labels map[string]string // target id -> label, last label entry wins
}

type node struct {
	e      Entry
	parent int32 // -1 for a root
	first  int32 // first child, -1 if none
	last   int32
	next   int32 // next sibling
	depth  int32 // position on its root-to-node path; -1 if shadowed
	flags  uint8
	msg    *Message // context message, decoded on first use
	state  uint8    // msg cache state
}

const (
	fShadowed      uint8 = 1 << iota // a later line has the same id
	fMissingParent                   // parentId names no entry
	fSelfParent                      // parentId is its own id
	fCycle                           // parent link cut to break a cycle
	fMarker                          // a leaf marker
)

const (
	msgUnknown uint8 = iota
	msgNone          // the entry adds no message
	msgReady
)

func newTree(entries []Entry) *tree {
	t := &tree{
		nodes:  make([]node, len(entries), len(entries)+16),
		byID:   newIDIndex(len(entries)),
		labels: map[string]string{},
	}
	for i, e := range entries {
		n := &t.nodes[i]
		*n = node{e: e, parent: -1, first: -1, last: -1, next: -1}
		if j, dup := t.byID.get(e.id, e.idHash(), t.nodes); dup {
			t.nodes[j].flags |= fShadowed
		}
		t.byID.set(e.id, e.idHash(), int32(i), t.nodes)
		t.noteEntry(n)
	}
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.flags&fShadowed != 0 || n.e.parent == "" {
			continue
		}
		p, ok := t.byID.get(n.e.parent, n.e.parentHash(), t.nodes)
		switch {
		case !ok:
			n.flags |= fMissingParent
		case p == int32(i):
			n.flags |= fSelfParent
		default:
			n.parent = p
		}
	}
	t.breakCycles()
	for i := range t.nodes {
		if p := t.nodes[i].parent; p >= 0 {
			t.link(p, int32(i))
		}
	}
	t.computeDepths()
	return t
}

// noteEntry records what an entry means for the whole tree: labels and
// leaf markers.
func (t *tree) noteEntry(n *node) {
	switch n.e.kind {
	case kindLabel:
		var l Label
		if n.e.payload(&l); l.TargetID != "" {
			if l.Label != "" {
				t.labels[l.TargetID] = l.Label
			} else {
				delete(t.labels, l.TargetID)
			}
		}
	case kindCustom:
		if isLeafMarker(n.e) {
			n.flags |= fMarker
		}
	}
}

func isLeafMarker(e Entry) bool {
	v, ok := e.field("customType")
	if !ok {
		return false
	}
	s, _ := jsonx.String(v)
	return s == leafMarkerType
}

func (t *tree) link(p, c int32) {
	pn := &t.nodes[p]
	if pn.first < 0 {
		pn.first = c
	} else {
		t.nodes[pn.last].next = c
	}
	pn.last = c
}

// breakCycles cuts the parent link of the earliest line of every cycle.
func (t *tree) breakCycles() {
	const (
		unseen = iota
		walking
		done
	)
	state := make([]uint8, len(t.nodes))
	var stack []int32
	for i := range t.nodes {
		if state[i] != unseen {
			continue
		}
		stack = stack[:0]
		j := int32(i)
		for j >= 0 && state[j] == unseen {
			state[j] = walking
			stack = append(stack, j)
			j = t.nodes[j].parent
		}
		if j >= 0 && state[j] == walking {
			// j is on the current walk: the stack from j onwards is a cycle.
			k := len(stack) - 1
			for stack[k] != j {
				k--
			}
			low := j
			for _, c := range stack[k:] {
				low = min(low, c)
			}
			t.nodes[low].parent = -1
			t.nodes[low].flags |= fCycle
		}
		for _, c := range stack {
			state[c] = done
		}
	}
}

func (t *tree) computeDepths() {
	var stack []int32
	for i := range t.nodes {
		t.nodes[i].depth = -1
	}
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.parent >= 0 || n.flags&fShadowed != 0 {
			continue
		}
		n.depth = 0
		stack = append(stack[:0], int32(i))
		for len(stack) > 0 {
			j := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			d := t.nodes[j].depth + 1
			for c := t.nodes[j].first; c >= 0; c = t.nodes[c].next {
				t.nodes[c].depth = d
				stack = append(stack, c)
			}
		}
	}
}

// add appends an entry whose parent is already in the tree (or -1).
func (t *tree) add(e Entry, parent int32) int32 {
	i := int32(len(t.nodes))
	if len(t.nodes) == cap(t.nodes) {
		// Double, rather than append's gentler growth for large slices:
		// each copy of nodes (which hold pointers) is costly while the
		// collector runs.
		t.nodes = slices.Grow(t.nodes, max(len(t.nodes), 64))
	}
	t.nodes = append(t.nodes, node{e: e, parent: parent, first: -1, last: -1, next: -1})
	n := &t.nodes[i]
	t.byID.set(e.id, e.idHash(), i, t.nodes)
	if parent >= 0 {
		t.link(parent, i)
		n.depth = t.nodes[parent].depth + 1
	} else {
		n.depth = 0
		if e.parent != "" {
			n.flags |= fMissingParent
		}
	}
	t.noteEntry(n)
	return i
}

// lookup returns the live node with this id.
func (t *tree) lookup(id string) (int32, bool) {
	return t.byID.get(id, hashID(id), t.nodes)
}

// hidden reports entries left out of tree views: shadowed duplicates and
// leaf markers nothing was appended to.
func (t *tree) hidden(i int32) bool {
	n := &t.nodes[i]
	return n.flags&fShadowed != 0 || (n.flags&fMarker != 0 && n.first < 0)
}

// defaultLeaf is the leaf of a freshly read log: the last entry, or the
// parent of a leaf marker.
func (t *tree) defaultLeaf() int32 {
	last := int32(len(t.nodes) - 1)
	if last < 0 {
		return -1
	}
	if t.nodes[last].flags&fMarker != 0 {
		return t.nodes[last].parent
	}
	return last
}

// pathTo returns the node indexes from the root to i.
func (t *tree) pathTo(i int32) []int32 {
	if i < 0 {
		return nil
	}
	d := t.nodes[i].depth
	if d < 0 {
		return []int32{i}
	}
	path := make([]int32, d+1)
	for j := i; j >= 0 && d >= 0; j = t.nodes[j].parent {
		path[d] = j
		d--
	}
	return path
}

// children returns the visible children of i, or the roots for -1.
func (t *tree) children(i int32) []int32 {
	var out []int32
	if i < 0 {
		for j := range t.nodes {
			if t.nodes[j].parent < 0 && !t.hidden(int32(j)) {
				out = append(out, int32(j))
			}
		}
		return out
	}
	for c := t.nodes[i].first; c >= 0; c = t.nodes[c].next {
		if !t.hidden(c) {
			out = append(out, c)
		}
	}
	return out
}

// walk visits the visible tree depth-first, children in file order.
func (t *tree) walk(visit func(i int32, depth int, kids int) bool) {
	type item struct {
		i     int32
		depth int
	}
	var stack []item
	roots := t.children(-1)
	for k := len(roots) - 1; k >= 0; k-- {
		stack = append(stack, item{roots[k], 0})
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		kids := t.children(it.i)
		if !visit(it.i, it.depth, len(kids)) {
			return
		}
		for k := len(kids) - 1; k >= 0; k-- {
			stack = append(stack, item{kids[k], it.depth + 1})
		}
	}
}

// leftBehind counts the entries on the path to from that are not on the
// path to to (-1 for either: before the first entry).
func (t *tree) leftBehind(from, to int32) int {
	n := 0
	for from >= 0 && to >= 0 && from != to {
		df, dt := t.nodes[from].depth, t.nodes[to].depth
		if df < 0 || dt < 0 {
			// A node off every well-formed path (a repaired corrupt
			// tree): the count stops here, short rather than wrong.
			return n
		}
		if df >= dt {
			from = t.nodes[from].parent
			n++
		} else {
			to = t.nodes[to].parent
		}
	}
	if to < 0 {
		for ; from >= 0 && n <= len(t.nodes); from = t.nodes[from].parent {
			n++
		}
	}
	return n
}

// onPathTo reports whether node a is on the path from the root to node
// i: i itself or one of its ancestors.
func (t *tree) onPathTo(a, i int32) bool {
	for ; i >= 0; i = t.nodes[i].parent {
		if i == a {
			return true
		}
	}
	return false
}
