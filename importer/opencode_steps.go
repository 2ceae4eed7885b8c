package importer

import (
	"encoding/json"
	"strings"

	session "github.com/agentsession/session"
)

// OpenCode assistant messages: their steps, tool results and compaction
// summaries (see opencode.go).

// ocStep is one model call of an assistant message being assembled.
type ocStep struct {
	n       *convNode   // the assistant message
	results []*convNode // its tool results
	after   []*convNode // parts kept as custom entries
	billed  bool
}

func (c *ocConv) assistant(info jsonObj, parts []json.RawMessage) {
	t := c.when(info)
	msgID := info.str("id")
	var (
		step    *ocStep
		made    []*convNode // the assistant messages made, in order
		pending []*convNode // custom parts before any step
		startID string      // the step-start part that opened the next step
		billed  bool
		floor   = t // the latest time placed: a step without its own time follows it
	)
	open := func(own string, k int, at int64) *ocStep {
		if step != nil {
			return step
		}
		m := &session.Message{Role: session.RoleAssistant, StopReason: session.StopEnd,
			Provider: info.str("providerID"), Model: info.str("modelID"), Timestamp: t.UnixMilli()}
		n := &convNode{t: floor, msg: m}
		if at := unixMillis(at); at.After(floor) {
			n.t, floor = at, at
		}
		m.Timestamp = n.t.UnixMilli()
		if len(made) == 0 {
			own = msgID // the first step is the message itself
		} else if startID != "" {
			own = startID
		}
		n.id = c.ids.id(own, c.msg+1, k)
		made = append(made, n)
		step = &ocStep{n: n, after: pending}
		pending, startID = nil, ""
		return step
	}
	flush := func() {
		if step == nil {
			return
		}
		if step.n.msg.Content == nil {
			step.n.msg.Content = []session.Block{}
		}
		c.nodes = append(c.nodes, step.n)
		c.nodes = append(c.nodes, step.results...)
		for _, r := range step.results {
			if r.t.After(floor) {
				floor = r.t
			}
		}
		c.nodes = append(c.nodes, step.after...)
		step = nil
	}
	for k, raw := range parts {
		pt := jsonObject(raw)
		own := pt.str("id")
		at := pt.jsonObj("time").int("start")
		switch typ := pt.str("type"); typ {
		case "step-start":
			flush()
			startID = own
		case "text":
			s := open(own, k, at)
			s.n.msg.Content = append(s.n.msg.Content, session.Text(pt.str("text")))
		case "reasoning":
			s := open(own, k, at)
			b := session.Thinking(pt.str("text"), "")
			if md := pt.raw("metadata"); len(md) > 0 && json.Valid(md) && string(md) != "null" {
				b.Extra.Set("metadata", compactRaw(md))
			}
			s.n.msg.Content = append(s.n.msg.Content, b)
		case "file":
			s := open(own, k, at)
			s.n.msg.Content = append(s.n.msg.Content, fileBlock(pt))
		case "tool":
			s := open(own, k, pt.jsonObj("state").jsonObj("time").int("start"))
			c.tool(s, pt, own, k)
		case "step-finish":
			s := open(own, k, 0)
			s.n.msg.Usage = ocUsage(pt.jsonObj("tokens"), pt.num("cost"))
			if r := stopReason(pt.str("reason")); r != "" {
				s.n.msg.StopReason = r
			}
			s.billed, billed = true, true
			flush()
		default: // agent, subtask, snapshot, patch, retry, compaction, unknown
			at := floor
			if step != nil {
				at = step.n.t
			}
			n := c.custom(orDefault(typ, "part"), raw, own, k, true, &convNode{t: at})
			if step != nil {
				step.after = append(step.after, n)
			} else {
				pending = append(pending, n)
			}
		}
	}
	if step == nil && len(made) == 0 {
		open("", len(parts), 0) // no content: the message (and its error) still counts
	}
	flush()
	c.nodes = append(c.nodes, pending...)
	last := made[len(made)-1].msg
	if !billed {
		last.Usage = ocUsage(info.jsonObj("tokens"), info.num("cost"))
		if r := stopReason(info.str("finish")); r != "" {
			last.StopReason = r
		}
	}
	if e := info.jsonObj("error"); e != nil {
		last.StopReason = session.StopError
		if e.str("name") == "MessageAbortedError" {
			last.StopReason = session.StopAborted
		}
		last.ErrorMessage = orDefault(e.jsonObj("data").str("message"), orDefault(e.str("name"), "error"))
	}
	c.entryOf[msgID] = made[0].id
}

// tool adds a tool part's call to the step and its result after it.
func (c *ocConv) tool(s *ocStep, pt jsonObj, own string, k int) {
	st := pt.jsonObj("state")
	callID := orDefault(pt.str("callID"), own)
	if callID == "" {
		callID = "call_" + derivedID(c.ids.source, c.msg+1, k)
	}
	name := pt.str("tool")
	s.n.msg.Content = append(s.n.msg.Content, session.ToolCall(callID, name, argsObject(st.raw("input"))))
	if s.n.msg.StopReason == session.StopEnd {
		s.n.msg.StopReason = session.StopToolUse
	}
	status := st.str("status")
	if status != "completed" && status != "error" {
		return // pending or running: never answered
	}
	res := &session.Message{Role: session.RoleToolResult, ToolCallID: callID, ToolName: name}
	if status == "completed" {
		res.Content = []session.Block{session.Text(st.str("output"))}
		for _, a := range st.arr("attachments") {
			res.Content = append(res.Content, fileBlock(jsonObject(a)))
		}
	} else {
		res.IsError = true
		res.Content = []session.Block{session.Text(st.str("error"))}
	}
	details := jsonObj{}
	for _, key := range []string{"title", "metadata", "time"} {
		if v := st.raw(key); len(v) > 0 && json.Valid(v) {
			details[key] = v
		}
	}
	if len(details) > 0 {
		res.Details, _ = json.Marshal(details)
	}
	n := &convNode{t: s.n.t, msg: res}
	if end := st.jsonObj("time").int("end"); end > 0 {
		n.t = unixMillis(end)
	}
	res.Timestamp = n.t.UnixMilli()
	n.id = c.ids.id(own, c.msg+1, k)
	s.results = append(s.results, n)
}

// summary makes a compaction entry of a summary assistant message; false
// when it holds no text to summarize with.
func (c *ocConv) summary(info jsonObj, parts []json.RawMessage) bool {
	t := c.when(info)
	var texts []string
	var after []*convNode
	tokens, cost := info.jsonObj("tokens"), info.num("cost")
	for k, raw := range parts {
		pt := jsonObject(raw)
		switch typ := pt.str("type"); typ {
		case "text":
			texts = append(texts, pt.str("text"))
		case "step-start":
		case "step-finish":
			tokens, cost = pt.jsonObj("tokens"), pt.num("cost")
		default:
			after = append(after, c.custom(orDefault(typ, "part"), raw, pt.str("id"), k, true, &convNode{t: t}))
		}
	}
	text := strings.TrimSpace(strings.Join(texts, "\n"))
	if text == "" {
		return false
	}
	u := ocUsage(tokens, cost)
	details, _ := json.Marshal(map[string]any{"opencode": map[string]any{
		"messageID": info.str("id"), "providerID": info.str("providerID"), "modelID": info.str("modelID"),
		"tokens": tokens, "cost": cost,
	}})
	cp := session.Compaction{Summary: text, TokensBefore: u.Input + u.CacheRead + u.CacheWrite, Details: details}
	if id, ok := c.entryOf[c.tail]; ok && c.tail != "" {
		cp.FirstKeptEntryID = id
	}
	c.tail = ""
	n := c.add(&convNode{t: t, typ: session.TypeCompaction, pl: cp}, info.str("id"), -1)
	c.entryOf[info.str("id")] = n.id
	c.nodes = append(c.nodes, after...)
	return true
}
