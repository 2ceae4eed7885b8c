package importer

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	session "github.com/agentsession/session"
)

// One session (the main transcript, or one subagent) built from its
// lines: the graph lines in tree order, then the records outside the
// graph chained after the main leaf.

// clGroup is the lines of one session.
type clGroup struct {
	id, parent string // the session, and the session it belongs to
	source     string
	lines      []*claudeLine
	bad        []LineError
	meta       session.Fields // more of the header's "claude" member
	title      string         // the title when no line gives one
}

// clItem is an entry being built.
type clItem struct {
	id, parent string
	t          time.Time
	msg        *session.Message
	asst       *clAssistant
	noUsage    bool // a later line of the same API message has it
	comp       *session.Compaction
	compDone   bool // its summary was found
	custom     string
	data       json.RawMessage
	label      *session.Label
}

type clBuilder struct {
	g     *clGroup
	p     *Parsed
	items []*clItem
	byID  map[string]*clItem
	alias map[string]string // line id -> the entry its children hang from
	byMsg map[string]*clItem
	names map[string]string // tool call id -> tool name
	lastT time.Time
	ids   map[string]string // uuid -> the id of its line
}

// parsed builds the session of g.
func (g *clGroup) parsed() (*Parsed, error) {
	p := &Parsed{Format: Claude, Source: g.source, Unknown: map[string]int{}}
	bad := append([]LineError(nil), g.bad...)
	nodes, ids := clOrder(g.lines, g.id, &bad)
	b := &clBuilder{g: g, p: p, byID: map[string]*clItem{}, alias: map[string]string{},
		byMsg: map[string]*clItem{}, names: clToolNames(g.lines), ids: ids}
	pos := make(map[*claudeLine]int, len(g.lines))
	for i, l := range g.lines {
		pos[l] = i
	}
	var last *clNode // the graph line last in the file: Claude Code's current leaf
	for _, n := range nodes {
		b.node(n)
		if last == nil || pos[n.l] > pos[last.l] {
			last = n
		}
	}
	leaf := ""
	if last != nil {
		leaf = b.alias[last.id]
	}
	title := b.tail(leaf, len(nodes) == 0)
	if title == "" {
		title = g.title
	}
	for _, it := range b.items {
		e, err := it.entry()
		if err != nil {
			return nil, fmt.Errorf("importer: %s: entry %s: %w", g.source, it.id, err)
		}
		p.Entries = append(p.Entries, e)
	}
	p.Malformed = bad
	p.Header = g.header(title)
	if len(p.Unknown) == 0 {
		p.Unknown = nil
	}
	return p, nil
}

// clToolNames maps the id of every tool call of lines to its tool.
func clToolNames(lines []*claudeLine) map[string]string {
	names := map[string]string{}
	for _, l := range lines {
		if l.typ != "assistant" {
			continue
		}
		for _, e := range clArray(clContent(l)) {
			obj := clObject(e)
			if clStr(clField(obj, "type")) == "tool_use" {
				names[clStr(clField(obj, "id"))] = clStr(clField(obj, "name"))
			}
		}
	}
	return names
}

func (g *clGroup) header(title string) session.Header {
	h := session.Header{ID: g.id, Title: title, ParentSession: g.parent}
	var meta session.Fields
	for _, l := range g.lines {
		if h.Timestamp.IsZero() && !l.t.IsZero() {
			h.Timestamp = l.t
		}
		if h.Cwd == "" {
			h.Cwd = l.str("cwd")
		}
		for _, k := range []string{"version", "gitBranch"} {
			if _, ok := meta.Get(k); !ok && l.str(k) != "" {
				meta.Set(k, l.get(k))
			}
		}
	}
	meta = append(meta, g.meta...)
	if len(meta) > 0 {
		h.Extra.Set("claude", clFieldsJSON(meta))
	}
	return h
}

// push adds an item, its id made unique.
func (b *clBuilder) push(it *clItem) *clItem {
	base := it.id
	for k := 2; b.byID[it.id] != nil; k++ {
		it.id = base + "." + strconv.Itoa(k)
	}
	if it.t.IsZero() {
		it.t = b.lastT
	}
	b.lastT = it.t
	b.byID[it.id] = it
	b.items = append(b.items, it)
	return it
}

// node adds the entries of one graph line.
func (b *clBuilder) node(n *clNode) {
	l := n.l
	parent := b.alias[n.parent]
	pe := b.byID[parent]
	it := &clItem{id: n.id, parent: parent, t: l.t}
	switch l.typ {
	case "assistant":
		msgID := clStr(clField(clObject(l.get("message")), "id"))
		if pe != nil && pe.asst != nil && msgID != "" && pe.asst.msgID == msgID {
			pe.asst.add(l) // the next block of the same API message
			b.alias[n.id] = pe.id
			return
		}
		it.asst = newClAssistant(l)
		if prev := b.byMsg[msgID]; prev != nil && msgID != "" {
			prev.noUsage = true // its usage repeats on this later part
		}
		b.push(it)
		if msgID != "" {
			b.byMsg[msgID] = it
		}
	case "user":
		if pe != nil && pe.comp != nil && !pe.compDone && clCompactSummary(l) {
			pe.comp.Summary, pe.compDone = clText(clContent(l)), true
			det := clObject(pe.comp.Details)
			det.Set("summaryLine", clFieldsJSON(clObject(clLineMeta(l, "parentUuid"))))
			det.Set("summaryUuid", clJSON(n.id))
			pe.comp.Details = clFieldsJSON(det)
			b.alias[n.id] = pe.id
			return
		}
		for i, m := range clUserMessages(l, b.names) {
			x := &clItem{id: n.id, parent: parent, t: l.t, msg: m}
			if i > 0 {
				x.id = n.id + "." + strconv.Itoa(i)
			}
			parent = b.push(x).id
		}
		b.alias[n.id] = parent
		return
	case "system":
		if l.str("subtype") == "compact_boundary" {
			cm := clObject(l.get("compactMetadata"))
			it.comp = &session.Compaction{TokensBefore: clInt(clField(cm, "preTokens"))}
			it.comp.Details = clFieldsJSON(session.Fields{{Key: "boundary", Value: clFieldsJSON(clObject(clLineMeta(l)))}})
			b.push(it)
			break
		}
		b.keep(it, l)
	default:
		b.keep(it, l)
	}
	b.alias[n.id] = it.id
}

// keep makes a line this importer does not model a custom entry
// "claude.<type>" holding the whole line, and counts it.
func (b *clBuilder) keep(it *clItem, l *claudeLine) {
	typ := l.typ
	if typ == "" {
		typ = "untyped"
	}
	it.custom, it.data = "claude."+typ, json.RawMessage(l.raw)
	b.p.Unknown[it.custom]++
	b.push(it)
}

// tail chains the records outside the graph after the main leaf:
// summary lines become labels of their branch's last entry (a summary
// of a branch not in the file is kept as a custom entry), others custom
// entries. It returns the session's title: the last custom-title, else
// the summary of the main leaf, else the last summary of a branch in the
// file (any summary when the file has no graph at all).
func (b *clBuilder) tail(leaf string, noGraph bool) string {
	parent := leaf
	custom, leafTitle, anyTitle := "", "", ""
	seen := map[string]bool{}
	for _, l := range b.g.lines {
		if clDAG(l) || seen[string(l.raw)] {
			continue // a record repeated as it is (resumes write the summaries again) is kept once
		}
		seen[string(l.raw)] = true
		it := &clItem{id: derivedID(b.g.id, l.n, 0), parent: parent, t: l.t}
		if it.t.IsZero() {
			it.t = b.byTime(parent)
		}
		switch l.typ {
		case "custom-title":
			if s := l.str("customTitle"); s != "" {
				custom = s
				continue
			}
			b.keep(it, l)
		case "summary":
			text, target := l.str("summary"), b.alias[b.ids[l.str("leafUuid")]]
			if noGraph {
				anyTitle = text
			}
			if target == "" || text == "" {
				it.custom, it.data = "claude.summary", json.RawMessage(l.raw)
				b.push(it)
				break
			}
			it.label = &session.Label{TargetID: target, Label: text}
			b.push(it)
			if target == leaf {
				leafTitle = text
			}
			anyTitle = text
		default:
			b.keep(it, l)
		}
		parent = it.id
	}
	switch {
	case custom != "":
		return custom
	case leafTitle != "":
		return leafTitle
	}
	return anyTitle
}

func (b *clBuilder) byTime(id string) time.Time {
	if it := b.byID[id]; it != nil {
		return it.t
	}
	return b.lastT
}

// entry builds the item's entry.
func (it *clItem) entry() (session.Entry, error) {
	switch {
	case it.asst != nil:
		return messageEntry(it.id, it.parent, it.t, it.asst.message(!it.noUsage))
	case it.msg != nil:
		return messageEntry(it.id, it.parent, it.t, it.msg)
	case it.comp != nil:
		return session.NewEntry(session.TypeCompaction, it.id, it.parent, it.t, it.comp)
	case it.label != nil:
		return session.NewEntry(session.TypeLabel, it.id, it.parent, it.t, it.label)
	}
	return customEntry(it.id, it.parent, it.t, it.custom, it.data)
}

// clCompactSummary reports whether a user line is the summary a
// compaction continues from.
func clCompactSummary(l *claudeLine) bool {
	return l.flag("isCompactSummary") || strings.HasPrefix(clText(clContent(l)), "This session is being continued from a previous conversation")
}
