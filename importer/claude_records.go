package importer

import (
	"encoding/json"
	"sort"

	session "github.com/agentsession/session"
)

// Placing the entries: the graph lines in tree order, and every record
// outside the graph (file-history-snapshot, summary, custom-title,
// queue-operation, ...) where it is in the file, so that the entries of
// a file are the first entries of the same file grown (see "Importing
// again" in claude.go).

// clRecord is a record outside the graph.
type clRecord struct {
	l      *claudeLine
	anchor string // the node of the graph line last before it in the file ("" for none)
}

// build adds the entries of the nodes, in their order, and the records
// of the group. It returns the session's title: the last custom-title,
// else the summary of the main leaf (the graph line last in the file),
// else the last summary of a branch in the file (any summary when the
// file has no graph at all).
func (b *clBuilder) build(nodes []*clNode) string {
	pos := make(map[*claudeLine]int, len(b.g.lines))
	for i, l := range b.g.lines {
		pos[l] = i
	}
	// The nodes in file order, and each record's anchor.
	byFile := append([]*clNode(nil), nodes...)
	sort.SliceStable(byFile, func(i, j int) bool { return pos[byFile[i].l] < pos[byFile[j].l] })
	var recs []clRecord
	seen := map[string]bool{}
	anchor, k := "", 0
	for _, l := range b.g.lines {
		for ; k < len(byFile) && pos[byFile[k].l] < pos[l]; k++ {
			anchor = byFile[k].id
		}
		if clDAG(l) || seen[string(l.raw)] {
			continue // a record repeated as it is (resumes write the summaries again) is kept once
		}
		seen[string(l.raw)] = true
		recs = append(recs, clRecord{l: l, anchor: anchor})
	}
	leaf := ""
	if len(byFile) > 0 {
		leaf = byFile[len(byFile)-1].id
	}
	t := &clTitles{noGraph: len(nodes) == 0}
	// A record is placed once every graph line before it in the file is:
	// in file order when the tree order is the file's (Claude Code
	// writes parents first), and never before what precedes it.
	done := make(map[string]bool, len(nodes))
	waiting := map[string][]*claudeLine{} // labels waiting for their target
	front, r := 0, 0
	flush := func() {
		for ; front < len(byFile) && done[byFile[front].id]; front++ {
		}
		for ; r < len(recs) && (front == len(byFile) || pos[byFile[front].l] > pos[recs[r].l]); r++ {
			if target := b.record(recs[r], done, t); target != "" {
				waiting[target] = append(waiting[target], recs[r].l)
			}
		}
	}
	flush()
	for _, n := range nodes {
		b.node(n)
		done[n.id] = true
		flush()
		for _, l := range waiting[n.id] {
			b.label(l, n.id, n.id, t)
		}
		delete(waiting, n.id)
	}
	if leaf != "" {
		t.leaf = t.byTarget[b.alias[leaf]]
	}
	return t.title()
}

// clTitles gathers what the title is chosen from.
type clTitles struct {
	noGraph     bool
	custom, any string
	byTarget    map[string]string // entry -> the last summary labelling it
	leaf        string
}

func (t *clTitles) title() string {
	switch {
	case t.custom != "":
		return t.custom
	case t.leaf != "":
		return t.leaf
	}
	return t.any
}

// hangOf is the entry the children of node id hang from.
func (b *clBuilder) hangOf(id string) string {
	if h, ok := b.hang[id]; ok {
		return h
	}
	return b.alias[id]
}

// record adds the entry of a record after its anchor (the entries its
// anchor's children hang from then hang after it, so it adds no
// branch). A summary of a branch whose last line is in the file but not
// placed yet is not added: its target's node is returned, and the label
// is added when that node is.
func (b *clBuilder) record(r clRecord, done map[string]bool, t *clTitles) string {
	l := r.l
	it := b.recordItem(l, r.anchor)
	switch l.typ {
	case "custom-title":
		if s := l.str("customTitle"); s != "" {
			t.custom = s
			it.info = &session.SessionInfoEntry{Name: s}
			b.pushAfter(it, r.anchor)
			return ""
		}
	case "summary":
		text, target := l.str("summary"), b.ids[l.str("leafUuid")]
		if t.noGraph && text != "" {
			t.any = text
		}
		switch {
		case target != "" && text != "" && !done[target]:
			return target
		case target != "" && text != "":
			b.label(l, target, r.anchor, t)
		default:
			it.custom, it.data = "claude.summary", json.RawMessage(l.raw)
			b.pushAfter(it, r.anchor)
		}
		return ""
	}
	b.keep(it, l)
	b.hang[r.anchor] = it.id
	return ""
}

// recordItem is the item of a record hanging from anchor.
func (b *clBuilder) recordItem(l *claudeLine, anchor string) *clItem {
	parent := b.hangOf(anchor)
	it := &clItem{id: derivedID(b.g.id, l.n, 0), parent: parent, t: l.t}
	if it.t.IsZero() {
		if p := b.byID[parent]; p != nil {
			it.t = p.t
		}
	}
	return it
}

// pushAfter adds a record's item after anchor.
func (b *clBuilder) pushAfter(it *clItem, anchor string) {
	b.push(it)
	b.hang[anchor] = it.id
}

// label adds a summary line as a label of the entry of node target,
// after node anchor.
func (b *clBuilder) label(l *claudeLine, target, anchor string, t *clTitles) {
	it := b.recordItem(l, anchor)
	text := l.str("summary")
	it.label = &session.Label{TargetID: b.alias[target], Label: text}
	b.pushAfter(it, anchor)
	if t.byTarget == nil {
		t.byTarget = map[string]string{}
	}
	t.byTarget[it.label.TargetID] = text
	t.any = text
}

// meta makes a user line Claude Code marks isMeta (context it injects:
// a caveat before local command output, a skill's text, ...) a custom
// message "claude.meta": in the context, as the model saw it, but no
// prompt of the user's (it neither titles the session nor counts as a
// turn). A line that holds more than text (tool results, images) stays
// a user message, its isMeta kept in its "claude" member.
func (b *clBuilder) meta(it *clItem, l *claudeLine) bool {
	if !l.flag("isMeta") {
		return false
	}
	ms := clUserMessages(l, b.names)
	if len(ms) != 1 || ms[0].Role != session.RoleUser {
		return false
	}
	for _, blk := range ms[0].Content {
		if blk.Type != session.BlockText || len(blk.Extra) > 0 {
			return false
		}
	}
	it.cmsg = &customMessagePayload{CustomType: "claude.meta", Content: ms[0].Text(), Details: clLineMeta(l)}
	b.push(it)
	return true
}
