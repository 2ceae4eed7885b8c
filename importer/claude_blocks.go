package importer

import (
	"encoding/json"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/jsonx"
	"github.com/agentsession/session/provider/anthropic"
)

// The messages of Claude Code lines: the Anthropic API message a line
// holds, mapped to session messages.

// clLineMeta is what the "claude" member of a message keeps of its line:
// every member but those the entry or the message already hold.
func clLineMeta(l *claudeLine, drop ...string) json.RawMessage {
	return clWithout(l.obj, append([]string{"type", "uuid", "parentUuid", "timestamp", "message", "sessionId"}, drop...)...)
}

// clBlock maps a content block of a user message or a tool result.
func clBlock(raw json.RawMessage) session.Block {
	obj := clObject(raw)
	if obj == nil {
		if jsonx.KindOf(raw) == jsonx.KindString {
			return session.Text(clStr(raw))
		}
		return session.Block{Type: "claude.value", Extra: session.Fields{{Key: "value", Value: raw}}}
	}
	get := func(k string) []byte { v, _ := obj.Get(k); return v }
	typ := clStr(get("type"))
	switch typ {
	case "text":
		b := session.Text(clStr(get("text")))
		b.Extra = clExtra(obj, "type", "text")
		return b
	case "image":
		src := clObject(get("source"))
		sv := func(k string) string { v, _ := src.Get(k); return clStr(v) }
		if sv("type") == "base64" && sv("data") != "" {
			b := session.ImageBase64(sv("media_type"), sv("data"))
			b.Extra = clExtra(obj, "type", "source")
			return b
		}
		typ = "claude.image" // a URL or file image: no data to show inline
	case "document":
		if b, ok := anthropicDocument(obj); ok {
			return b
		}
		typ = "claude.document" // of content blocks: kept whole
	case "":
		typ = "claude.block"
	}
	return session.Block{Type: typ, Extra: clExtra(obj, "type")}
}

// clExtra is the members of obj but those named, as Fields.
func clExtra(obj session.Fields, drop ...string) session.Fields {
	var f session.Fields
	for _, m := range obj {
		keep := true
		for _, d := range drop {
			keep = keep && m.Key != d
		}
		if keep {
			f = append(f, m)
		}
	}
	return f
}

// clBlocks maps message content: a string is one text block, an array
// its blocks, an object one block; anything else is no content.
func clBlocks(raw json.RawMessage) []session.Block {
	switch jsonx.KindOf(raw) {
	case jsonx.KindString:
		return []session.Block{session.Text(clStr(raw))}
	case jsonx.KindObject:
		return []session.Block{clBlock(raw)}
	}
	elems := clArray(raw)
	out := make([]session.Block, 0, len(elems))
	for _, e := range elems {
		out = append(out, clBlock(e))
	}
	return out
}

// clText is the text of message content (its text blocks joined).
func clText(raw json.RawMessage) string {
	var parts []string
	for _, b := range clBlocks(raw) {
		if b.Type == session.BlockText {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// clContent returns the content of a line's message.
func clContent(l *claudeLine) json.RawMessage {
	raw := l.get("message")
	if jsonx.KindOf(raw) == jsonx.KindString {
		return raw // a bare string: its text
	}
	msg := clObject(raw)
	v, _ := msg.Get("content")
	return v
}

// clUserMessages maps a user line: runs of ordinary blocks become user
// messages, each tool_result block a toolResult message (its tool's name
// from names, the line's toolUseResult as the first one's Details).
func clUserMessages(l *claudeLine, names map[string]string) []*session.Message {
	content := clContent(l)
	ms := l.t.UnixMilli()
	var out []*session.Message
	var run []session.Block
	flush := func(force bool) {
		if len(run) > 0 || force {
			if run == nil {
				run = []session.Block{}
			}
			out = append(out, &session.Message{Role: session.RoleUser, Content: run, Timestamp: ms})
			run = nil
		}
	}
	var elems []json.RawMessage
	switch jsonx.KindOf(content) {
	case jsonx.KindArray:
		elems = clArray(content)
	case jsonx.KindString, jsonx.KindObject:
		run = clBlocks(content)
	}
	details := l.get("toolUseResult")
	for _, e := range elems {
		obj := clObject(e)
		get := func(k string) []byte { v, _ := obj.Get(k); return v }
		if clStr(get("type")) != "tool_result" {
			run = append(run, clBlock(e))
			continue
		}
		flush(false)
		id := clStr(get("tool_use_id"))
		m := &session.Message{
			Role: session.RoleToolResult, ToolCallID: id, ToolName: names[id],
			IsError: clBool(get("is_error")), Content: clBlocks(get("content")), Timestamp: ms,
		}
		m.Extra = clExtra(obj, "type", "tool_use_id", "is_error", "content")
		if details != nil {
			m.Details, details = json.RawMessage(details), nil
		}
		out = append(out, m)
	}
	flush(len(out) == 0)
	drop := []string{}
	if details == nil {
		drop = append(drop, "toolUseResult") // kept as a result's Details
	}
	if meta := clLineMeta(l, drop...); meta != nil {
		for _, m := range out {
			m.Extra.Set("claude", meta)
		}
	}
	return out
}

// clAssistant gathers the lines of one assistant API message, which
// Claude Code writes one content block a line (see claude.go).
type clAssistant struct {
	first  *claudeLine
	msgID  string
	uuids  []string
	blocks []json.RawMessage
	seen   map[string]bool
	last   session.Fields // the latest line's message members
	apiErr bool
}

func newClAssistant(l *claudeLine) *clAssistant {
	a := &clAssistant{first: l, seen: map[string]bool{}}
	a.add(l)
	return a
}

// add takes a line's blocks (those not already taken: older versions
// repeat the earlier blocks on each line) and its usage and stop reason,
// the latest being the final ones.
func (a *clAssistant) add(l *claudeLine) {
	msg := clObject(l.get("message"))
	a.last = msg
	a.msgID = clStr(clField(msg, "id"))
	a.uuids = append(a.uuids, l.uuid)
	a.apiErr = a.apiErr || l.flag("isApiErrorMessage")
	content := clField(msg, "content")
	elems := clArray(content)
	if elems == nil && content != nil && jsonx.KindOf(content) != jsonx.KindNull {
		elems = []json.RawMessage{content} // a string or a lone block
	}
	for _, e := range elems {
		if k := string(e); !a.seen[k] {
			a.seen[k] = true
			a.blocks = append(a.blocks, e)
		}
	}
}

func clField(f session.Fields, k string) []byte { v, _ := f.Get(k); return v }

// message maps the gathered message with the provider's own conversion
// (anthropic.MessageFromResponse), blocks it does not know kept in
// place. counted is the usage earlier entries of the same API message
// already hold (nil for none): the message's usage is what its last
// line adds to it, so that the message's tokens are counted once
// however many entries it makes, and an entry, once built, does not
// change when a later part of its message is appended to the file.
func (a *clAssistant) message(counted *anthropic.Usage) (*session.Message, anthropic.Usage) {
	get := func(k string) []byte { return clField(a.last, k) }
	resp := &anthropic.Response{
		ID: a.msgID, Model: clStr(get("model")), StopReason: clStr(get("stop_reason")),
		StopSequence: clStr(get("stop_sequence")),
	}
	if d := clObject(get("stop_details")); d != nil {
		resp.StopDetails = &anthropic.StopDetails{Type: clStr(clField(d, "type")), Category: clStr(clField(d, "category")), Explanation: clStr(clField(d, "explanation"))}
	}
	usage := clObject(get("usage"))
	u := func(k string) int64 { return clInt(clField(usage, k)) }
	total := anthropic.Usage{
		InputTokens: u("input_tokens"), OutputTokens: u("output_tokens"),
		CacheCreationInputTokens: u("cache_creation_input_tokens"), CacheReadInputTokens: u("cache_read_input_tokens"),
	}
	resp.Usage = total
	if counted != nil {
		d := func(x, y int64) int64 { return max(x-y, 0) }
		resp.Usage = anthropic.Usage{
			InputTokens: d(total.InputTokens, counted.InputTokens), OutputTokens: d(total.OutputTokens, counted.OutputTokens),
			CacheCreationInputTokens: d(total.CacheCreationInputTokens, counted.CacheCreationInputTokens),
			CacheReadInputTokens:     d(total.CacheReadInputTokens, counted.CacheReadInputTokens),
		}
		total = anthropic.Usage{
			InputTokens: max(total.InputTokens, counted.InputTokens), OutputTokens: max(total.OutputTokens, counted.OutputTokens),
			CacheCreationInputTokens: max(total.CacheCreationInputTokens, counted.CacheCreationInputTokens),
			CacheReadInputTokens:     max(total.CacheReadInputTokens, counted.CacheReadInputTokens),
		}
	}
	known := make([]bool, len(a.blocks))
	calls := false
	for i, raw := range a.blocks {
		obj := clObject(raw)
		s := func(k string) string { return clStr(clField(obj, k)) }
		b := anthropic.ResponseBlock{Type: s("type")}
		switch b.Type {
		case "text":
			b.Text = s("text")
		case "thinking":
			b.Thinking, b.Signature = s("thinking"), s("signature")
		case "redacted_thinking":
			b.Data = s("data")
		case "tool_use":
			b.ID, b.Name, b.Input = s("id"), s("name"), clField(obj, "input")
			if k := jsonx.KindOf(b.Input); k != jsonx.KindObject && k != jsonx.KindNull && k != jsonx.KindInvalid {
				b.Input = clJSON(map[string]json.RawMessage{"input": b.Input}) // arguments must be an object
			}
			calls = true
		default:
			continue
		}
		known[i] = true
		resp.Content = append(resp.Content, b)
	}
	inferred := resp.StopReason == ""
	if inferred { // a null stop_reason: Claude Code writes many
		resp.StopReason = "end_turn"
		if calls {
			resp.StopReason = "tool_use"
		}
	}
	m, _ := anthropic.MessageFromResponse(resp, nil)
	conv := m.Content
	m.Content = make([]session.Block, 0, len(a.blocks))
	for i, raw := range a.blocks {
		if known[i] {
			m.Content = append(m.Content, conv[0])
			conv = conv[1:]
		} else {
			m.Content = append(m.Content, clBlock(raw))
		}
	}
	if m.Usage != nil {
		m.Usage.Extra = clExtra(usage, "input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
	}
	m.Timestamp = a.first.t.UnixMilli()
	if a.apiErr {
		m.StopReason = session.StopError
		if m.ErrorMessage == "" {
			m.ErrorMessage = m.Text()
		}
	}
	meta := clObject(clLineMeta(a.first))
	if rest := clWithout(a.last, "type", "role", "content", "model", "usage", "id", "stop_reason", "stop_sequence", "stop_details"); rest != nil {
		meta.Set("message", rest)
	}
	if inferred {
		meta.Set("stopReasonInferred", json.RawMessage("true"))
	}
	if len(a.uuids) > 1 {
		meta.Set("uuids", clJSON(a.uuids))
	}
	if counted != nil {
		meta.Set("usageAdded", json.RawMessage("true")) // the usage is what this part adds
	}
	if len(meta) > 0 {
		m.Extra.Set("claude", clFieldsJSON(meta))
	}
	return m, total
}

// clFieldsJSON encodes f as a JSON object.
func clFieldsJSON(f session.Fields) json.RawMessage {
	if len(f) == 0 {
		return json.RawMessage("{}")
	}
	return clWithout(f)
}
