package importer

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/anthropic"
)

// One session (the main transcript, or one subagent) built from its
// lines: the graph lines in tree order, each record outside the graph
// placed where it is in the file (claude_records.go).

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
	comp       *session.Compaction
	compDone   bool // its summary was found
	custom     string
	data       json.RawMessage
	label      *session.Label
	info       *session.SessionInfoEntry
	cmsg       *customMessagePayload
}

type clBuilder struct {
	g     *clGroup
	p     *Parsed
	items []*clItem
	byID  map[string]*clItem
	alias map[string]string // node id -> the entry it made (or was merged into)
	hang  map[string]string // node id -> the entry its children hang from, when not alias's ("" for roots)
	names map[string]string // tool call id -> tool name
	lastT time.Time
	ids   map[string]string // uuid -> the id of its node
}

// parsed builds the session of g.
func (g *clGroup) parsed() (*Parsed, error) {
	p := &Parsed{Format: Claude, Source: g.source, Unknown: map[string]int{}}
	bad := append([]LineError(nil), g.bad...)
	nodes, ids := clOrder(g.lines, g.id, &bad)
	nodes = clTurns(nodes, &bad)
	b := &clBuilder{g: g, p: p, byID: map[string]*clItem{}, alias: map[string]string{},
		hang: map[string]string{}, names: clToolNames(g.lines), ids: ids}
	title := b.build(nodes)
	if title == "" {
		title = g.title
	}
	counted := map[string]*anthropic.Usage{} // API message id -> the usage its entries hold so far
	for _, it := range b.items {
		var e session.Entry
		var err error
		if it.asst != nil {
			prev := counted[it.asst.msgID]
			m, total := it.asst.message(prev)
			if it.asst.msgID != "" {
				counted[it.asst.msgID] = &total
			}
			e, err = messageEntry(it.id, it.parent, it.t, m)
		} else {
			e, err = it.entry()
		}
		if err != nil {
			return nil, fmt.Errorf("importer: %s: entry %s: %w", g.source, it.id, err)
		}
		p.Entries = append(p.Entries, e)
	}
	if err := b.checkShown(nodes); err != nil {
		return nil, fmt.Errorf("importer: %s: %w", g.source, err)
	}
	p.Malformed = bad
	p.Header = g.header(title)
	if len(p.Unknown) == 0 {
		p.Unknown = nil
	}
	return p, nil
}

// checkShown fails unless the conversation Claude Code resumes, the
// chain of parents from the last message line of the file (as the lines
// name them), is on the path to the session's leaf (the last entry), and
// every tool call on that path has there the result the file holds for
// it: the import must be the conversation the tool shows, or an error.
func (b *clBuilder) checkShown(nodes []*clNode) error {
	var last *clNode
	byID := make(map[string]*clNode, len(nodes))
	for _, n := range nodes {
		byID[n.id] = n
		if (n.l.typ == "user" || n.l.typ == "assistant") && (last == nil || n.l.n > last.l.n) {
			last = n
		}
	}
	if last == nil || len(b.items) == 0 {
		return nil
	}
	parentOf := make(map[string]string, len(b.items))
	for _, it := range b.items {
		parentOf[it.id] = it.parent
	}
	onPath := map[string]bool{}
	for id, k := b.items[len(b.items)-1].id, 0; id != "" && k <= len(b.items); id, k = parentOf[id], k+1 {
		onPath[id] = true
	}
	for n, k := last, 0; n != nil && k <= len(nodes); n, k = byID[n.orig], k+1 {
		if e := b.alias[n.id]; e != "" && !onPath[e] {
			return fmt.Errorf("%w: line %d (uuid %.80q), on the way back from line %d, the last message, is not on the path to the leaf", ErrClaudeConversation, n.l.n, n.l.uuid, last.l.n)
		}
	}
	return b.checkResults(nodes, onPath)
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
	parent := b.hangOf(n.parent)
	pe := b.byID[b.alias[n.parent]] // the entry of its parent line, which it may be merged into
	it := &clItem{id: n.id, parent: parent, t: l.t}
	switch l.typ {
	case "assistant":
		msgID := clStr(clField(clObject(l.get("message")), "id"))
		if pe != nil && pe.asst != nil && msgID != "" && pe.asst.msgID == msgID {
			pe.asst.add(l) // the next block of the same API message
			b.alias[n.id], b.hang[n.id] = pe.id, parent
			return
		}
		it.asst = newClAssistant(l)
		b.push(it)
	case "user":
		if b.meta(it, l) {
			break
		}
		if pe != nil && pe.comp != nil && !pe.compDone && clCompactSummary(l) {
			pe.comp.Summary, pe.compDone = clText(clContent(l)), true
			det := clObject(pe.comp.Details)
			det.Set("summaryLine", clFieldsJSON(clObject(clLineMeta(l, "parentUuid"))))
			det.Set("summaryUuid", clJSON(n.id))
			pe.comp.Details = clFieldsJSON(det)
			b.alias[n.id], b.hang[n.id] = pe.id, parent
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

// entry builds the item's entry.
func (it *clItem) entry() (session.Entry, error) {
	switch {
	case it.msg != nil:
		return messageEntry(it.id, it.parent, it.t, it.msg)
	case it.comp != nil:
		return session.NewEntry(session.TypeCompaction, it.id, it.parent, it.t, it.comp)
	case it.label != nil:
		return session.NewEntry(session.TypeLabel, it.id, it.parent, it.t, it.label)
	case it.info != nil:
		return session.NewEntry(session.TypeSessionInfo, it.id, it.parent, it.t, it.info)
	case it.cmsg != nil:
		return session.NewEntry(session.TypeCustomMessage, it.id, it.parent, it.t, it.cmsg)
	}
	return customEntry(it.id, it.parent, it.t, it.custom, it.data)
}

// clCompactSummary reports whether a user line is the summary a
// compaction continues from.
func clCompactSummary(l *claudeLine) bool {
	return l.flag("isCompactSummary") || strings.HasPrefix(clText(clContent(l)), "This session is being continued from a previous conversation")
}
