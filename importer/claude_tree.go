package importer

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"

	session "github.com/agentsession/session"
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
	orig   string // the parent its line names, resolved (clTurns may change parent)
	// results are the tool_use_ids of the tool_result blocks of a user
	// line (set by clTurns).
	results []string
}

// clOrder returns the graph lines of lines, their ids unique and their
// parents resolved, every parent before its children (file order
// otherwise), reporting what it had to change in bad; and the stored id
// of each uuid. A line without a usable uuid (none, or not a short
// printable string) gets an id derived from key (the session) and its
// line.
func clOrder(lines []*claudeLine, key string, bad *[]LineError) ([]*clNode, map[string]string) {
	var nodes []*clNode
	byUUID := map[string]*clNode{}
	taken := map[string]bool{}
	unique := func(id string) string {
		base := id
		for k := 2; taken[id]; k++ {
			id = base + "." + strconv.Itoa(k)
		}
		taken[id] = true
		return id
	}
	for _, l := range lines {
		if !clDAG(l) {
			continue
		}
		id := l.uuid
		if !clGoodID(id) {
			id = derivedID(key, l.n, 0)
		}
		if prev := byUUID[l.uuid]; prev != nil && l.uuid != "" {
			if bytes.Equal(prev.l.raw, l.raw) {
				continue // the same line written twice: nothing to keep
			}
			id = unique(id + "~" + strconv.Itoa(l.n))
			*bad = append(*bad, LineError{Path: l.path, Line: l.n, Err: fmt.Errorf("%w: %.80q (line %d): kept as %.100q", ErrClaudeDuplicate, l.uuid, prev.l.n, id)})
		} else {
			id = unique(id)
		}
		n := &clNode{l: l, id: id}
		if byUUID[l.uuid] == nil && l.uuid != "" {
			byUUID[l.uuid] = n
		}
		nodes = append(nodes, n)
	}
	// Parents. A compact boundary has no parentUuid but a
	// logicalParentUuid: the line before the compaction, which may be in
	// an older file. A line without a parent but the first (a boundary
	// whose logical parent is not in the file included) continues the
	// conversation from the graph line before it in the file: that is
	// the conversation as Claude Code and the viewers show it, where a
	// root each would make a tree of one-message branches.
	var fileOrder []*clNode
	for i, n := range nodes {
		p := n.l.parent()
		boundary := p == "" && n.l.typ == "system" && n.l.str("subtype") == "compact_boundary"
		if boundary {
			if lp := byUUID[n.l.str("logicalParentUuid")]; lp != nil && lp != n {
				p = lp.l.uuid
			}
		}
		switch pn := byUUID[p]; {
		case p == "" && i == 0:
			n.parent = ""
		case p == "":
			n.parent = nodes[i-1].id
			if !boundary {
				fileOrder = append(fileOrder, n)
			} else if lp := n.l.str("logicalParentUuid"); lp != "" {
				// The line before the compaction is not in this file:
				// placed after the line before it, and said.
				*bad = append(*bad, LineError{Path: n.l.path, Line: n.l.n, Err: fmt.Errorf("%w: the compact boundary's logicalParentUuid %.80q: attached to %.100q", ErrClaudeMissingParent, lp, nodes[i-1].id)})
			}
		case pn != nil && pn != n:
			n.parent = pn.id
		default:
			prev := ""
			if i > 0 {
				prev = nodes[i-1].id
			}
			*bad = append(*bad, LineError{Path: n.l.path, Line: n.l.n, Err: fmt.Errorf("%w: parentUuid %.80q: attached to %.100q", ErrClaudeMissingParent, p, prev)})
			n.parent = prev
		}
	}
	if len(fileOrder) > 0 {
		f := fileOrder[0].l
		*bad = append(*bad, LineError{Path: f.path, Line: f.n, Err: fmt.Errorf("%w: parentUuid null or absent on %d lines after the first (from this one): each placed after the line before it", ErrClaudeFileOrder, len(fileOrder))})
	}
	ids := make(map[string]string, len(byUUID))
	for u, n := range byUUID {
		ids[u] = n.id
	}
	return clTopo(nodes, bad), ids
}

// clGoodID reports whether a uuid can be an entry id as it is: a short
// printable string (Claude Code's are UUIDs).
func clGoodID(id string) bool {
	if id == "" || len(id) > session.MaxIDLength || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
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
