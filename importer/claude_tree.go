package importer

import (
	"bytes"
	"fmt"
	"strconv"
)

// The uuid/parentUuid graph of a transcript made a tree we can store:
// ids made unique, missing parents replaced, parents ordered before
// their children.

// clDAG reports whether a line is a node of the conversation graph:
// any line with a uuid, and the message and system lines even without.
func clDAG(l *claudeLine) bool {
	switch l.typ {
	case "user", "assistant", "system":
		return true
	}
	return l.uuid != ""
}

// clNode is a graph line with the id and parent it is stored under.
type clNode struct {
	l      *claudeLine
	id     string
	parent string
}

// clOrder returns the graph lines of lines, their ids unique and their
// parents resolved, every parent before its children (file order
// otherwise), reporting what it had to change in bad. Lines without a
// uuid get one derived from key (the session), their line and part.
func clOrder(lines []*claudeLine, key string, bad *[]LineError) []*clNode {
	var nodes []*clNode
	byID := map[string]*clNode{}
	for _, l := range lines {
		if !clDAG(l) {
			continue
		}
		id := l.uuid
		if id == "" {
			id = derivedID(key, l.n, 0)
		}
		if prev, ok := byID[id]; ok {
			if bytes.Equal(prev.l.raw, l.raw) {
				continue // the same line written twice: nothing to keep
			}
			*bad = append(*bad, LineError{Path: l.path, Line: l.n, Err: fmt.Errorf("%w: %s (line %d): kept as %s~%d", ErrClaudeDuplicate, id, prev.l.n, id, l.n)})
			id += "~" + strconv.Itoa(l.n)
			if byID[id] != nil {
				continue // a second identical duplicate of the same line number cannot happen; be safe
			}
		}
		n := &clNode{l: l, id: id}
		byID[id] = n
		nodes = append(nodes, n)
	}
	// Parents. A compact boundary has no parentUuid but a
	// logicalParentUuid: the line before the compaction, which may be in
	// an older file (then the boundary is a root).
	for i, n := range nodes {
		p := n.l.parent()
		if p == "" && n.l.typ == "system" && n.l.str("subtype") == "compact_boundary" {
			if lp := n.l.str("logicalParentUuid"); byID[lp] != nil && lp != n.id {
				p = lp
			}
		}
		if p != "" && (byID[p] == nil || p == n.id) {
			prev := ""
			if i > 0 {
				prev = nodes[i-1].id
			}
			*bad = append(*bad, LineError{Path: n.l.path, Line: n.l.n, Err: fmt.Errorf("%w: parentUuid %s: attached to %q", ErrClaudeMissingParent, p, prev)})
			p = prev
		}
		n.parent = p
	}
	return clTopo(nodes, bad)
}

// clTopo orders nodes parents first, keeping file order where it can; a
// cycle is broken by making its first line a root.
func clTopo(nodes []*clNode, bad *[]LineError) []*clNode {
	out := make([]*clNode, 0, len(nodes))
	done := make(map[string]bool, len(nodes))
	waiting := map[string][]*clNode{}
	var emit func(n *clNode)
	emit = func(n *clNode) {
		stack := []*clNode{n}
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if done[x.id] {
				continue
			}
			done[x.id] = true
			out = append(out, x)
			kids := waiting[x.id]
			delete(waiting, x.id)
			for i := len(kids) - 1; i >= 0; i-- { // the first child first
				stack = append(stack, kids[i])
			}
		}
	}
	for _, n := range nodes {
		if n.parent == "" || done[n.parent] {
			emit(n)
		} else {
			waiting[n.parent] = append(waiting[n.parent], n)
		}
	}
	for _, n := range nodes {
		if !done[n.id] {
			*bad = append(*bad, LineError{Path: n.l.path, Line: n.l.n, Err: fmt.Errorf("%w: made a root", ErrClaudeCycle)})
			n.parent = ""
			emit(n)
		}
	}
	return out
}
