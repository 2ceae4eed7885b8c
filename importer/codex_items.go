package importer

import (
	"encoding/json"
	"strings"

	session "github.com/agentsession/session"
)

// The response items and events of a Codex rollout (see codex.go).

// item converts one response item.
func (c *codexConv) item(it jsonObj, raw json.RawMessage) {
	typ := it.str("type")
	switch typ {
	case "message":
		c.message(it, raw)
	case "reasoning":
		c.reasoning(it)
	case "function_call":
		name := it.str("name")
		id := orDefault(it.str("call_id"), it.str("id"))
		c.call(id, name, argsObject(it.raw("arguments")))
	case "custom_tool_call":
		id := orDefault(it.str("call_id"), it.str("id"))
		c.call(id, it.str("name"), argsObject(it.raw("input")))
	case "local_shell_call":
		id := orDefault(it.str("call_id"), it.str("id"))
		c.call(id, "local_shell", argsObject(it.raw("action")))
	case "function_call_output", "custom_tool_call_output":
		c.close()
		c.output(it)
	default:
		// web_search_call, ghost_snapshot, compaction (encrypted),
		// tool_search_*, image_generation_call and types to come: kept
		// whole. An open assistant message stays open: these sit among
		// its items.
		c.custom("codex."+orDefault(typ, "response_item"), raw, true)
	}
}

func (c *codexConv) message(it jsonObj, raw json.RawMessage) {
	role := it.str("role")
	switch role {
	case session.RoleAssistant:
		m := c.assistant()
		m.Content = append(m.Content, c.blocks(it.arr("content"))...)
		if s := it.str("content"); s != "" {
			m.Content = append(m.Content, session.Text(s))
		}
	case session.RoleUser:
		c.close()
		m := &session.Message{Role: session.RoleUser, Content: c.blocks(it.arr("content")), Timestamp: c.t.UnixMilli()}
		if s := it.str("content"); s != "" {
			m.Content = []session.Block{session.Text(s)}
		}
		if m.Content == nil {
			m.Content = []session.Block{}
		}
		if c.p.Header.Cwd == "" {
			c.p.Header.Cwd = envCwd(m.Text())
		}
		if tag := injectedTag(m.Text()); tag != "" {
			// What Codex itself puts in the user's turn (the environment,
			// AGENTS.md instructions): context the model sees, as a
			// developer message is, not a prompt to title the session by.
			c.add(&convNode{typ: session.TypeCustomMessage, pl: customMessagePayload{CustomType: "codex." + tag, Content: m.Text()}}, "")
			return
		}
		c.add(&convNode{msg: m}, "")
	default:
		// developer and system instructions: context, not a turn.
		c.close()
		text := contentText(it.arr("content"))
		typ := "codex." + orDefault(role, "message")
		if text == "" && len(it.arr("content")) > 0 {
			c.custom(typ, raw, true)
			return
		}
		c.add(&convNode{typ: session.TypeCustomMessage, pl: customMessagePayload{CustomType: typ, Content: text}}, "")
	}
}

// injectedTags are the blocks Codex writes into a user message itself.
var injectedTags = []string{"environment_context", "user_instructions"}

// injectedTag returns the tag of text when it is one whole block Codex
// injects ("<environment_context>...</environment_context>"), else "".
func injectedTag(text string) string {
	t := strings.TrimSpace(text)
	for _, tag := range injectedTags {
		if strings.HasPrefix(t, "<"+tag+">") && strings.HasSuffix(t, "</"+tag+">") {
			return tag
		}
	}
	return ""
}

// blocks converts message content items: text, and images given as data:
// URLs (another URL becomes a text block naming it).
func (c *codexConv) blocks(items []json.RawMessage) []session.Block {
	var out []session.Block
	for _, raw := range items {
		it := jsonObject(raw)
		if it == nil {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				out = append(out, session.Text(s))
			}
			continue
		}
		switch it.str("type") {
		case "input_image", "image":
			url := it.str("image_url")
			if b, ok := dataImage(url, ""); ok {
				out = append(out, b)
			} else {
				out = append(out, session.Text("[image: "+url+"]"))
			}
		default: // input_text, output_text, text, refusal ...
			t := it.str("text")
			if t == "" {
				t = it.str("refusal")
			}
			out = append(out, session.Text(t))
		}
	}
	return out
}

// contentText joins the text of content items.
func contentText(items []json.RawMessage) string {
	var parts []string
	for _, raw := range items {
		if t := jsonObject(raw).str("text"); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

func (c *codexConv) reasoning(it jsonObj) {
	var texts []string
	for _, raw := range it.arr("summary") {
		if t := jsonObject(raw).str("text"); t != "" {
			texts = append(texts, t)
		}
	}
	summarized := len(texts) > 0
	if !summarized {
		for _, raw := range it.arr("content") {
			if t := jsonObject(raw).str("text"); t != "" {
				texts = append(texts, t)
			}
		}
	}
	b := session.Thinking(strings.Join(texts, "\n\n"), "")
	if content := it.raw("content"); summarized && len(it.arr("content")) > 0 {
		b.Extra.Set("reasoningContent", compactRaw(content)) // the raw reasoning beside its summary
	}
	if enc := it.raw("encrypted_content"); len(enc) > 0 && string(enc) != "null" && json.Valid(enc) {
		b.Extra.Set("encryptedContent", compactRaw(enc))
	}
	if b.Thinking == "" {
		b.Redacted = true
	}
	m := c.assistant()
	m.Content = append(m.Content, b)
}

func (c *codexConv) call(id, name string, args json.RawMessage) {
	m := c.assistant()
	if id == "" {
		id = "call_" + derivedID(c.ids.source, c.line, c.part+1<<30)
	}
	c.calls[id] = name
	m.Content = append(m.Content, session.ToolCall(id, name, args))
	m.StopReason = session.StopToolUse
}

// output converts a tool's output into a toolResult message.
func (c *codexConv) output(it jsonObj) {
	id := it.str("call_id")
	m := &session.Message{Role: session.RoleToolResult, ToolCallID: id, ToolName: c.calls[id], Timestamp: c.t.UnixMilli()}
	raw := it.raw("output")
	var s string
	switch {
	case json.Unmarshal(raw, &s) == nil:
		m.Content = []session.Block{session.Text(s)}
		if meta := jsonObject(json.RawMessage(s)).jsonObj("metadata"); meta != nil && meta.has("exit_code") && meta.int("exit_code") != 0 {
			m.IsError = true
		}
	case jsonArray(raw) != nil:
		m.Content = c.blocks(jsonArray(raw))
	case jsonObject(raw) != nil:
		o := jsonObject(raw)
		m.Content = []session.Block{session.Text(o.str("content"))}
		if items := o.arr("content_items"); items != nil {
			m.Content = c.blocks(items)
		}
		m.IsError = o.has("success") && !o.bool("success")
	default:
		m.Content = []session.Block{session.Text(string(raw))}
	}
	if m.Content == nil {
		m.Content = []session.Block{}
	}
	c.add(&convNode{msg: m}, "")
}

// event converts one event_msg.
func (c *codexConv) event(ev jsonObj, raw json.RawMessage) {
	typ := ev.str("type")
	switch typ {
	case "user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content":
		countUnknown(c.p, "codex."+typ+" (duplicate)")
		return
	case "token_count":
		if c.usage(ev) {
			c.close()
			return
		}
	case "thread_name_updated":
		if name := orDefault(ev.str("thread_name"), ev.str("name")); name != "" {
			c.add(&convNode{typ: session.TypeSessionInfo, pl: session.SessionInfoEntry{Name: name}}, "")
			return
		}
	case "task_started", "task_complete", "turn_started", "turn_complete", "turn_aborted":
		c.close()
		if typ == "turn_aborted" && c.last != nil && c.last.msg.StopReason != session.StopToolUse {
			c.last.msg.StopReason = session.StopAborted
		}
	}
	c.custom("codex."+orDefault(typ, "event_msg"), raw, true)
}

// usage gives a token_count's usage to the latest assistant message
// without one; false when there is none, or the event has no usage.
func (c *codexConv) usage(ev jsonObj) bool {
	last := ev.jsonObj("info").jsonObj("last_token_usage")
	if last == nil && ev.has("input_tokens") {
		last = ev // mid-2025 files: the usage members on the event
	}
	if last == nil {
		return false
	}
	in, cached, out := last.int("input_tokens"), last.int("cached_input_tokens"), last.int("output_tokens")
	c.lastInput = in + out
	if c.unbilled == nil {
		return false
	}
	u := session.Usage{Input: max(in-cached, 0), CacheRead: cached, Output: out, TotalTokens: last.int("total_tokens")}
	if u.TotalTokens == 0 {
		u.TotalTokens = in + out
	}
	setIntField(&u.Extra, last, "reasoning_output_tokens", "reasoning")
	c.unbilled.msg.Usage = &u
	c.unbilled = nil
	return true
}

// envCwd is the working directory an <environment_context> names: old
// rollouts have no cwd of their own.
func envCwd(text string) string {
	_, rest, ok := strings.Cut(text, "<environment_context>")
	if !ok {
		return ""
	}
	_, rest, ok = strings.Cut(rest, "<cwd>")
	if !ok {
		return ""
	}
	cwd, _, ok := strings.Cut(rest, "</cwd>")
	if !ok {
		return ""
	}
	return strings.TrimSpace(cwd)
}

func (c *codexConv) turnContext(tc jsonObj, raw json.RawMessage) {
	if m := tc.str("model"); m != "" && m != c.model {
		c.model = m
		c.add(&convNode{typ: session.TypeModelChange, pl: session.ModelChange{Provider: c.provider, ModelID: m}}, "")
	}
	if e := tc.str("effort"); e != "" && e != c.effort {
		c.effort = e
		c.add(&convNode{typ: session.TypeThinkingLevelChange, pl: session.ThinkingLevelChange{ThinkingLevel: e}}, "")
	}
	c.custom("codex.turn_context", raw, false)
}

func (c *codexConv) compacted(p jsonObj, raw json.RawMessage) {
	summary := p.str("message")
	if summary == "" {
		for _, it := range p.arr("replacement_history") {
			if o := jsonObject(it); o.str("type") == "message" {
				if t := contentText(o.arr("content")); t != "" {
					summary += t + "\n\n"
				}
			}
		}
	}
	summary = strings.TrimSpace(summary)
	if summary == "" {
		// Nothing readable to resume from (an encrypted remote
		// compaction): a compaction entry would empty the context.
		c.custom("codex.compacted", raw, true)
		return
	}
	var details json.RawMessage
	if h := p.raw("replacement_history"); len(h) > 0 && json.Valid(h) {
		details = json.RawMessage(`{"replacement_history":` + string(h) + `}`)
	}
	c.add(&convNode{typ: session.TypeCompaction, pl: session.Compaction{
		Summary: summary, TokensBefore: c.lastInput, Details: details}}, "")
}
