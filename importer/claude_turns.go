package importer

import (
	"bytes"
	"fmt"

	session "github.com/agentsession/session"
)

// The turns of a transcript: one assistant API message and what hangs
// from its lines until the conversation goes on, made one path.
//
// Claude Code 2.1 writes an API message with several tool calls as one
// line per content block (the same message.id), and the tool_result of
// each call as a user line hanging from the line of its own call
// (sourceToolAssistantUUID), so that the lines of one message, their
// results and the hook progress lines between them make a tree whose
// every branch holds part of one turn: the parentUuid chain from the
// last line holds only the last result. Claude Code shows, and sends the
// API, one assistant message with every call, then every result; so does
// the import.

// clTurn is the graph lines of one turn.
type clTurn struct {
	msgID   string
	members []*clNode // the lines of the API message
	rest    []*clNode // results, progress, system lines ... hanging from them
	exited  bool      // the conversation went on from a line of the turn
}

// clTurns rewrites the parents of nodes (in tree order) so that each
// turn is one path, and returns them in tree order again. A turn starts
// at an assistant line (one whose parent is not a line of the same API
// message) and holds every line below it but the lines the conversation
// goes on with (exits: an assistant line of another message, a user line
// holding no tool_result, a compact boundary) and what hangs from those;
// a line of its API message hanging from where the turn's first line
// does is one of its lines too. Its path is the lines of its API message
// (merged into one message when built), then the rest in tree order
// (results in the order written); each exit hangs from the path's last
// line. A line without a tool_result below a turn written after one
// of its exits (a hook's late progress) stays where it is: taking it into
// the path would move the conversation after it. The parent each line
// names is kept in orig.
func clTurns(nodes []*clNode, bad *[]LineError) []*clNode {
	in := make(map[string]*clTurn, len(nodes)) // node id -> its turn
	type exit struct {
		n *clNode
		t *clTurn
	}
	var turns []*clTurn
	var exits []exit
	byMsg := map[string]*clTurn{} // API message id -> its last turn
	for _, n := range nodes {
		n.orig = n.parent
		n.results = clResultIDs(n.l)
		t := in[n.parent]
		switch {
		case n.l.typ == "assistant":
			msgID := clMsgID(n.l)
			if s := byMsg[msgID]; t == nil && s != nil && !s.exited && s.members[0].parent == n.parent {
				t = s // a line of the message hanging where its first line does
			}
			if t != nil && msgID != "" && msgID == t.msgID {
				t.members = append(t.members, n)
				in[n.id] = t
				continue
			}
			if t != nil {
				t.exited = true
				exits = append(exits, exit{n, t})
			}
			nt := &clTurn{msgID: msgID, members: []*clNode{n}}
			turns = append(turns, nt)
			in[n.id] = nt
			if msgID != "" {
				byMsg[msgID] = nt
			}
		case t == nil:
		case len(n.results) > 0:
			t.rest = append(t.rest, n)
			in[n.id] = t
		case n.l.typ == "user" || clBoundary(n.l):
			t.exited = true
			exits = append(exits, exit{n, t})
		case !t.exited:
			t.rest = append(t.rest, n)
			in[n.id] = t
		}
	}
	changed := false
	tail := make(map[*clTurn]string, len(turns))
	for _, t := range turns {
		path := append(append([]*clNode(nil), t.members...), t.rest...)
		for i := 1; i < len(path); i++ {
			changed = changed || path[i].parent != path[i-1].id
			path[i].parent = path[i-1].id
		}
		tail[t] = path[len(path)-1].id
	}
	for _, e := range exits {
		changed = changed || e.n.parent != tail[e.t]
		e.n.parent = tail[e.t]
	}
	if !changed {
		return nodes
	}
	return clTopo(nodes, bad)
}

// clMsgID is the API message id of an assistant line.
func clMsgID(l *claudeLine) string {
	return clStr(clField(clObject(l.get("message")), "id"))
}

// clBoundary reports whether a line is a compact boundary.
func clBoundary(l *claudeLine) bool {
	return l.typ == "system" && l.str("subtype") == "compact_boundary"
}

// clResultIDs returns the tool_use_ids of the tool_result blocks of a
// user line.
func clResultIDs(l *claudeLine) []string {
	if l.typ != "user" || !bytes.Contains(l.raw, []byte(`"tool_result"`)) {
		return nil
	}
	var ids []string
	for _, e := range clArray(clContent(l)) {
		obj := clObject(e)
		if clStr(clField(obj, "type")) == "tool_result" {
			ids = append(ids, clStr(clField(obj, "tool_use_id")))
		}
	}
	return ids
}

// checkResults fails when a tool call on the path to the leaf has its
// result in the file but not on that path, or an API message on the
// path has a line elsewhere: the import would lack a result or a call
// Claude Code shows.
func (b *clBuilder) checkResults(nodes []*clNode, onPath map[string]bool) error {
	answered := map[string]bool{}
	for _, it := range b.items {
		if onPath[it.id] && it.msg != nil && it.msg.Role == session.RoleToolResult {
			answered[it.msg.ToolCallID] = true
		}
	}
	shown := map[string]bool{} // the API messages on the path
	for _, n := range nodes {
		if id := clMsgID(n.l); n.l.typ == "assistant" && id != "" && onPath[b.alias[n.id]] {
			shown[id] = true
		}
	}
	where := map[string]*clNode{} // call id -> the first line holding its result
	for _, n := range nodes {
		if id := clMsgID(n.l); n.l.typ == "assistant" && shown[id] && !onPath[b.alias[n.id]] {
			return fmt.Errorf("%w: line %d (uuid %.80q) of API message %.100q is not on the path to the leaf, where the message is", ErrClaudeConversation, n.l.n, n.l.uuid, id)
		}
		for _, id := range n.results {
			if where[id] == nil {
				where[id] = n
			}
		}
	}
	for _, it := range b.items {
		if !onPath[it.id] || it.asst == nil {
			continue
		}
		for _, raw := range it.asst.blocks {
			obj := clObject(raw)
			if clStr(clField(obj, "type")) != "tool_use" {
				continue
			}
			id := clStr(clField(obj, "id"))
			if r := where[id]; id != "" && !answered[id] && r != nil {
				return fmt.Errorf("%w: the result of tool call %.100q (line %d, uuid %.80q, parentUuid %.80q) is not on the path to the leaf, where its call is (entry %.100q)", ErrClaudeConversation, id, r.l.n, r.l.uuid, r.l.parent(), it.id)
			}
		}
	}
	return nil
}
