package importer

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/jsonx"
	"github.com/agentsession/session/provider/anthropic"
)

// The events and messages of a Dive session file (see dive.go).

// turn converts a turn event: its messages, its usage on the last
// assistant message, its metadata.
func (c *diveConv) turn(ev session.Fields) {
	var lastAssistant *convNode
	msgs := clField(ev, "messages")
	if k := jsonx.KindOf(msgs); k != jsonx.KindArray && k != jsonx.KindNull && k != jsonx.KindInvalid {
		c.custom("dive.messages", msgs, true) // not a list
	}
	for _, raw := range diveArray(msgs) {
		if n := c.message(raw); n != nil {
			lastAssistant = n
		}
	}
	if u := clField(ev, "usage"); jsonx.KindOf(u) == jsonx.KindObject {
		if lastAssistant != nil {
			lastAssistant.msg.Usage = diveUsage(clObject(u))
		} else {
			c.custom("dive.usage", u, true)
		}
	}
	if md := clField(ev, "metadata"); len(md) > 0 && jsonx.KindOf(md) != jsonx.KindNull {
		if c.suspension != nil && c.line == c.lastEvent && bytes.Equal(compactRaw(md), []byte(`{"suspended":true}`)) {
			return // the suspended turn: the suspension entry stands for it
		}
		c.custom("dive.turn_metadata", md, true)
	}
}

// message converts one message of an event; it returns the node of an
// assistant message.
func (c *diveConv) message(raw json.RawMessage) *convNode {
	obj := clObject(raw)
	if obj == nil {
		c.custom("dive.message", raw, true)
		return nil
	}
	role := clStr(clField(obj, "role"))
	content := clField(obj, "content")
	ms := c.t.UnixMilli()
	switch role {
	case "assistant":
		m := &session.Message{Role: session.RoleAssistant, StopReason: session.StopEnd, Timestamp: ms,
			Content: c.blocks(content)}
		for _, b := range m.Content {
			if b.Type == session.BlockToolCall {
				m.StopReason = session.StopToolUse
				c.calls[b.ID] = b.Name
			}
		}
		diveKeep(&m.Extra, obj, "responseId")
		return c.add(&convNode{msg: m})
	case "user":
		c.user(obj, content, ms)
		return nil
	}
	// system, developer and roles to come: context, not a turn.
	typ := "dive." + orDefault(diveName(role), "message")
	var texts []string
	textOnly := true
	for _, b := range c.blocks(content) {
		texts = append(texts, b.Text)
		textOnly = textOnly && b.Type == session.BlockText && len(b.Extra) == 0
	}
	if (role != "system" && role != "developer") || len(texts) == 0 || !textOnly {
		c.custom(typ, raw, true)
		return nil
	}
	var details json.RawMessage
	if rest := clWithout(obj, "role", "content"); rest != nil {
		details = compactRaw(rest) // its id
	}
	c.add(&convNode{typ: session.TypeCustomMessage, pl: customMessagePayload{CustomType: typ, Content: strings.Join(texts, "\n\n"), Details: details}})
	return nil
}

// diveKeep keeps a message's id, and members a message does not model,
// in its Extra: the id under key, the rest under "dive".
func diveKeep(extra *session.Fields, obj session.Fields, key string) {
	drop := []string{"role", "content"}
	if id := clField(obj, "id"); jsonx.KindOf(id) == jsonx.KindString {
		if clStr(id) != "" {
			extra.Set(key, compactRaw(id))
		}
		drop = append(drop, "id")
	}
	if rest := clWithout(obj, drop...); rest != nil {
		extra.Set("dive", compactRaw(rest))
	}
}

// user converts a user message: runs of blocks other than tool_result
// make user messages, each tool_result a toolResult message.
func (c *diveConv) user(obj session.Fields, content json.RawMessage, ms int64) {
	var run []session.Block
	made := 0
	flush := func(force bool) {
		if len(run) == 0 && !force {
			return
		}
		if run == nil {
			run = []session.Block{}
		}
		m := &session.Message{Role: session.RoleUser, Content: run, Timestamp: ms}
		if made == 0 {
			diveKeep(&m.Extra, obj, "diveId")
		}
		c.add(&convNode{msg: m})
		made++
		run = nil
	}
	elems := diveArray(content)
	if k := jsonx.KindOf(content); k == jsonx.KindString || k == jsonx.KindObject {
		elems = []json.RawMessage{content} // a string, or a lone block
	}
	for _, e := range elems {
		b := clObject(e)
		if clStr(clField(b, "type")) != "tool_result" {
			run = append(run, c.block(e))
			continue
		}
		flush(false)
		id := clStr(clField(b, "tool_use_id"))
		m := &session.Message{Role: session.RoleToolResult, ToolCallID: id, ToolName: c.calls[id],
			IsError: clBool(clField(b, "is_error")), Content: c.result(clField(b, "content")), Timestamp: ms}
		m.Extra = clExtra(b, "type", "tool_use_id", "is_error", "content")
		if made == 0 {
			diveKeep(&m.Extra, obj, "diveId")
		}
		c.add(&convNode{msg: m})
		made++
	}
	flush(made == 0)
}

// blocks converts message content: a list of blocks, a string (one text
// block) or a lone block.
func (c *diveConv) blocks(content json.RawMessage) []session.Block {
	switch jsonx.KindOf(content) {
	case jsonx.KindString, jsonx.KindObject:
		return []session.Block{c.block(content)}
	}
	elems := diveArray(content)
	out := make([]session.Block, 0, len(elems))
	for _, e := range elems {
		out = append(out, c.block(e))
	}
	return out
}

// block converts one content block (anything but a tool_result).
func (c *diveConv) block(raw json.RawMessage) session.Block {
	obj := clObject(raw)
	if obj == nil {
		if jsonx.KindOf(raw) == jsonx.KindString {
			return session.Text(clStr(raw))
		}
		return session.Block{Type: "dive.value", Extra: session.Fields{{Key: "value", Value: compactRaw(raw)}}}
	}
	s := func(k string) string { return clStr(clField(obj, k)) }
	typ := s("type")
	var b session.Block
	switch typ {
	case "text":
		b = session.Text(s("text"))
		b.Extra = clExtra(obj, "type", "text", "citations")
		if cit := clField(obj, "citations"); jsonx.KindOf(cit) == jsonx.KindArray {
			b.Citations = compactRaw(cit)
		} else if cit != nil {
			b.Extra.Set("citations", compactRaw(cit))
		}
	case "refusal":
		b = session.Refusal(s("text"))
		b.Extra = clExtra(obj, "type", "text")
	case "document":
		var ok bool
		if b, ok = anthropicDocument(obj); !ok {
			b = diveWhole("dive.document", obj) // content blocks or unknown: kept whole
		}
	case "thinking":
		b = session.Thinking(s("thinking"), s("signature"))
		b.Extra = clExtra(obj, "type", "thinking", "signature")
	case "redacted_thinking":
		b = session.Thinking(anthropic.RedactedThinkingText, s("data"))
		b.Redacted = true
		b.Extra = clExtra(obj, "type", "data")
	case "tool_use":
		id := s("id")
		if id == "" {
			id = "call_" + derivedID(c.ids.source, c.line, c.part+1<<30)
		}
		b = session.ToolCall(id, s("name"), argsObject(clField(obj, "input")))
		b.Extra = clExtra(obj, "type", "id", "name", "input")
	case "image":
		src := clObject(clField(obj, "source"))
		sv := func(k string) string { return clStr(clField(src, k)) }
		if sv("type") == "base64" && sv("data") != "" {
			b = session.ImageBase64(sv("media_type"), sv("data"))
			b.Extra = clExtra(obj, "type", "source")
			if rest := clWithout(src, "type", "media_type", "data"); rest != nil {
				b.Extra.Set("source", compactRaw(rest))
			}
			break
		}
		typ = "dive.image" // by URL or file id: no data to show inline
		fallthrough
	default:
		b = diveWhole(typ, obj)
	}
	return b
}

// diveWhole keeps a block this reader does not map, its members in
// Extra. A type that is one of the session's own block types, or none,
// is renamed so that it is not read as one.
func diveWhole(typ string, obj session.Fields) session.Block {
	switch typ {
	case "", session.BlockText, session.BlockThinking, session.BlockImage, session.BlockToolCall:
		typ = "dive." + orDefault(typ, "block")
	}
	return session.Block{Type: typ, Extra: clExtra(obj, "type")}
}

// result converts what a tool returned (a tool_result's content): a
// list of {type "text"|"image"|"audio", text, data, mimeType} (or
// Anthropic blocks), a string, or nothing.
func (c *diveConv) result(content json.RawMessage) []session.Block {
	var elems []json.RawMessage
	switch jsonx.KindOf(content) {
	case jsonx.KindArray:
		elems = diveArray(content)
	case jsonx.KindString:
		return []session.Block{session.Text(clStr(content))}
	case jsonx.KindObject:
		elems = []json.RawMessage{content}
	case jsonx.KindNull, jsonx.KindInvalid:
		return []session.Block{}
	default: // a number or a boolean
		return []session.Block{session.Text(string(content))}
	}
	out := make([]session.Block, 0, len(elems))
	for _, e := range elems {
		obj := clObject(e)
		if obj == nil {
			if jsonx.KindOf(e) == jsonx.KindString {
				out = append(out, session.Text(clStr(e)))
			} else {
				out = append(out, session.Text(string(compactRaw(e))))
			}
			continue
		}
		s := func(k string) string { return clStr(clField(obj, k)) }
		switch typ := s("type"); {
		case typ == "text":
			b := session.Text(s("text"))
			b.Extra = clExtra(obj, "type", "text")
			out = append(out, b)
		case typ == "image" && s("data") != "":
			b := session.ImageBase64(s("mimeType"), s("data"))
			b.Extra = clExtra(obj, "type", "data", "mimeType")
			out = append(out, b)
		case typ == "image" && clField(obj, "source") != nil:
			out = append(out, c.block(e)) // an Anthropic image block
		default:
			if typ == "image" {
				typ = "dive.image"
			}
			out = append(out, diveWhole(typ, obj))
		}
	}
	return out
}

// diveUsage converts an llm.Usage: the turn's tokens and cost.
func diveUsage(obj session.Fields) *session.Usage {
	n := func(k string) int64 { return clInt(clField(obj, k)) }
	u := &session.Usage{
		Input: n("input_tokens"), Output: n("output_tokens"),
		CacheRead: n("cache_read_input_tokens"), CacheWrite: n("cache_creation_input_tokens"),
	}
	u.TotalTokens = u.Input + u.Output + u.CacheRead + u.CacheWrite
	cost := clObject(clField(obj, "cost"))
	if cost != nil {
		f := func(k string) float64 {
			v, err := strconv.ParseFloat(string(clField(cost, k)), 64)
			if err != nil || v != v {
				return 0
			}
			return v
		}
		u.Cost = session.Cost{Input: f("input"), Output: f("output"), CacheRead: f("cache_read"), CacheWrite: f("cache_write"), Total: f("total")}
		u.Cost.Extra = clExtra(cost, "input", "output", "cache_read", "cache_write", "total")
	}
	for _, m := range obj {
		switch m.Key {
		case "input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens":
		case "cost":
			if cost == nil && jsonx.KindOf(m.Value) != jsonx.KindNull {
				u.Extra.Set("cost", compactRaw(m.Value))
			}
		case "reasoning_tokens":
			if jsonx.KindOf(m.Value) == jsonx.KindNumber {
				u.Extra.Set("reasoning", json.RawMessage(strconv.FormatInt(clInt(m.Value), 10)))
			} else {
				u.Extra.Set(m.Key, compactRaw(m.Value))
			}
		default:
			u.Extra.Set(m.Key, compactRaw(m.Value))
		}
	}
	return u
}

// compaction converts a compaction event: a compaction entry whose
// summary is the text of the event's messages.
func (c *diveConv) compaction(ev session.Fields, raw json.RawMessage) {
	msgs := diveArray(clField(ev, "messages"))
	var texts []string
	whole := len(msgs) == 1 // the summary holds the messages whole
	for _, m := range msgs {
		obj := clObject(m)
		whole = whole && clStr(clField(obj, "role")) == "user" && clWithout(obj, "role", "content") == nil
		for _, b := range c.blocks(clField(obj, "content")) {
			switch {
			case b.Type == session.BlockText:
				texts = append(texts, b.Text)
				whole = whole && len(b.Extra) == 0
			case b.Type == "summary":
				v, _ := b.Extra.Get("summary")
				texts = append(texts, clStr(v))
				whole = false
			default:
				whole = false
			}
		}
	}
	summary := strings.TrimSpace(strings.Join(texts, "\n\n"))
	if summary == "" {
		c.custom("dive.compaction", raw, true)
		return
	}
	drop := []string{"id", "type", "timestamp"}
	if whole {
		drop = append(drop, "messages")
	}
	var details json.RawMessage
	if rest := clWithout(clObject(raw), drop...); rest != nil {
		details = compactRaw(rest)
	}
	c.add(&convNode{typ: session.TypeCompaction, pl: session.Compaction{Summary: summary, Details: details}})
}
