// Codex rollout files: format notes and the mapping.
//
// The OpenAI Codex CLI writes one JSONL "rollout" per session under
// ~/.codex/sessions/YYYY/MM/DD/rollout-<local time>-<uuid>.jsonl (the
// RolloutLine and RolloutItem types of codex-rs/protocol). Since about
// September 2025 every line is an envelope
//
//	{"timestamp": RFC 3339, "type": T, "payload": {...}}
//
// with T one of:
//
//   - session_meta: the first line. payload: id (a UUID), timestamp, cwd,
//     originator, cli_version, source, model_provider, instructions or
//     base_instructions {text}, git {commit_hash, branch, repository_url},
//     forked_from_id, and for a subagent source.subagent.thread_spawn
//     .parent_thread_id. A forked rollout repeats its parent's
//     session_meta on line 2.
//   - turn_context: once per user turn (and after a compaction): cwd,
//     approval_policy, sandbox_policy, model, effort, summary, ...
//   - response_item: the model-visible history, a Responses API item
//     tagged by payload.type: message {role user|assistant|developer|
//     system, content [{type input_text|output_text, text} | {type
//     input_image, image_url}]}, reasoning {summary [{type summary_text,
//     text}], content?, encrypted_content}, function_call {name,
//     arguments (a JSON string), call_id}, function_call_output {call_id,
//     output: a string, an array of input_text/input_image items, or in
//     old files {content, success}}, custom_tool_call {call_id, name,
//     input (free text)}, custom_tool_call_output {call_id, output},
//     local_shell_call {call_id, status, action {type exec, command
//     [...]}}, web_search_call {status, action}, and rarer ones
//     (ghost_snapshot, compaction with encrypted_content, tool_search_*,
//     image_generation_call).
//   - event_msg: what the UI was told, tagged by payload.type; only some
//     kinds are persisted: user_message, agent_message, agent_reasoning
//     and agent_reasoning_raw_content (which repeat response items),
//     token_count {info {total_token_usage, last_token_usage
//     {input_tokens, cached_input_tokens, output_tokens,
//     reasoning_output_tokens, total_tokens}, model_context_window},
//     rate_limits} (info may be null; files of mid 2025 put the usage
//     members on the payload itself), task_started / task_complete
//     (turn_started / turn_complete), turn_aborted, context_compacted,
//     patch_apply_end, exec_command_end, thread_name_updated, ...
//   - compacted: {message: the summary, replacement_history?: the items
//     that replaced the history}.
//
// Older rollouts have no envelope: line 1 is a bare {id, timestamp,
// instructions, git}, then bare response items ({"type":"message",...}),
// with {"record_type":"state"} bookkeeping lines among them, and no
// per-line time (every entry then takes the session's time).
//
// Mapping (the tree is linear: each entry's parent is the one before;
// entry ids are derived from the session id, line and part, so that a
// re-import builds the same entries):
//
//   - Header: id = session_meta.id (else the UUID of the file name, else
//     one derived from the path, the original kept as Extra "codexId"),
//     timestamp (else the file name's), cwd (an old rollout's from its
//     first <environment_context>); forked_from_id or the spawning thread
//     becomes ParentSession. A line without a time takes the time of the
//     line before (the session's for the first). The session_meta payload itself is kept as a custom
//     entry "codex.session_meta" (a repeated one too).
//   - Consecutive assistant-side items (assistant message text, reasoning,
//     function/custom/local-shell calls) form one assistant message:
//     text, thinking (the reasoning summary, or its raw content when it
//     has none; the raw content beside a summary and the encrypted
//     content are kept in the block's Extra as "reasoningContent" and
//     "encryptedContent"; one with no text is a redacted thinking block) and toolCall blocks (arguments parsed
//     from the JSON string; free text as {"input": ...}). Model and
//     provider come from the latest turn_context and the session's
//     model_provider (default "openai"); API "openai-responses".
//   - function_call_output and custom_tool_call_output become toolResult
//     messages, named after their call; isError when an old-style output
//     says success:false or a JSON output's metadata.exit_code is not 0.
//   - token_count: its last_token_usage becomes the usage of the latest
//     assistant message without one (input less cached input = Input,
//     cached = CacheRead, output = Output, total = TotalTokens,
//     reasoning tokens in Usage.Extra "reasoning"). One with nothing to
//     attach to (info null, a repeat) is kept as custom "codex.token_count".
//   - user messages become user messages (text and images), but for the
//     blocks Codex writes into the user's turn itself (a whole
//     <environment_context> or <user_instructions> message), which become
//     custom_message entries "codex.environment_context" /
//     "codex.user_instructions", so that a session is not titled after
//     them; developer and system messages become custom_message entries
//     "codex.developer" / "codex.system" (not displayed). All of them
//     stay in the context.
//   - turn_context: a model_change when the model changes, a
//     thinking_level_change when the effort does, and the payload kept as
//     custom "codex.turn_context".
//   - thread_name_updated: a session_info entry naming the session.
//   - compacted: a compaction entry (summary = message, or the text of
//     the replacement history when message is empty; the replacement
//     history kept in Details; tokensBefore = the last turn's context).
//     One with no readable summary (an encrypted remote compaction) is
//     kept as custom "codex.compacted" instead: a compaction entry would
//     leave the context empty.
//   - Kept as custom entries "codex.<type>" and counted in
//     Parsed.Unknown: every other event_msg kind, web_search_call and
//     other response items without a message form, top-level types this
//     reader does not know.
//   - Counted in Parsed.Unknown but not kept, with the reason in the key:
//     event_msg user_message, agent_message, agent_reasoning and
//     agent_reasoning_raw_content ("(duplicate)": the response items hold
//     the same text), and {"record_type":"state"} ("(bookkeeping)").
//   - A line that is not a JSON object, or longer than MaxLineBytes, is
//     reported in Parsed.Malformed with its number; the rest imports. A
//     file over MaxFileBytes is refused.

package importer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"time"

	session "github.com/agentsession/session"
)

// Caps of the Codex reader, so that a hostile file cannot take unbounded
// memory: a line is at most CodexMaxLineBytes (the store's own line cap),
// a file at most CodexMaxFileBytes and CodexMaxLines lines.
const (
	CodexMaxLineBytes = session.DefaultMaxLineBytes
	CodexMaxFileBytes = session.DefaultMaxLogBytes
	CodexMaxLines     = session.DefaultMaxEntries
)

// sniffCodex recognises a rollout by its first line: a session_meta
// envelope, or the bare meta of an old rollout.
func sniffCodex(head []byte) bool {
	first, _, _ := firstLineOf(head)
	if o := jsonObject(first); o != nil {
		if o.str("type") == "session_meta" && o.jsonObj("payload") != nil {
			return true
		}
		return !o.has("type") && o.str("id") != "" && o.str("timestamp") != "" &&
			(o.has("instructions") || o.has("git"))
	}
	// A first line longer than the head: its opening is enough.
	return len(first) == len(head) && jsonPrefix(first, `{"timestamp":`) && containsStr(first, `"type":"session_meta"`)
}

func readCodex(ctx context.Context, rt *root, rel string) ([]*Parsed, error) {
	f, err := rt.open(rel, CodexMaxFileBytes, false)
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	defer f.Close()
	p, err := parseCodex(ctx, io.LimitReader(f, CodexMaxFileBytes), rt.path(rel))
	if err != nil {
		return nil, err
	}
	return []*Parsed{p}, nil
}

// codexConv is the state of reading one rollout.
type codexConv struct {
	p        *Parsed
	ids      *idAlloc
	nodes    []*convNode
	cur      *convNode // the assistant message being assembled
	unbilled *convNode // the latest assistant message without usage
	last     *convNode // the latest assistant message
	calls    map[string]string
	line     int
	part     int
	t        time.Time // the time of the current line

	provider, model, effort string
	lastInput               int64 // the context size of the last turn
}

var rolloutName = regexp.MustCompile(`^rollout-(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d)-([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$`)

// parseCodex reads a rollout from r; source names it in reports.
func parseCodex(ctx context.Context, r io.Reader, source string) (*Parsed, error) {
	c := &codexConv{p: &Parsed{Format: Codex, Source: source}, calls: map[string]string{}, provider: "openai"}
	type rec struct {
		line int
		raw  []byte
	}
	var recs []rec
	lr := newBoundedReader(r, CodexMaxLineBytes)
	for {
		b, err := lr.next()
		if err == io.EOF {
			break
		}
		if err == errLineTooLong {
			c.malformed(lr.line, fmt.Errorf("%w: over %d bytes", session.ErrTooLarge, CodexMaxLineBytes))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("importer: %s: %w", source, err)
		}
		if lr.line > CodexMaxLines {
			return nil, fmt.Errorf("importer: %s: %w (over %d lines)", source, session.ErrTooLarge, CodexMaxLines)
		}
		if len(b) == 0 || isBlank(b) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		recs = append(recs, rec{lr.line, append([]byte(nil), b...)})
		if len(recs) == 1 {
			c.header(b) // the first record: a session_meta, or an old rollout's bare meta
		}
	}
	c.finishHeader(source)
	c.ids = newIDAlloc(c.p.Header.ID)
	c.t = c.p.Header.Timestamp
	if c.t.IsZero() {
		c.t = time.Unix(0, 0).UTC() // entries need a time; none is known
	}
	for _, r := range recs {
		c.line, c.part = r.line, 0
		c.record(r.raw)
	}
	entries, err := chainEntries(c.nodes)
	if err != nil {
		return nil, err
	}
	c.p.Entries = entries
	return c.p, nil
}

// header reads the header from the first session_meta (envelope or bare).
func (c *codexConv) header(b []byte) {
	o := jsonObject(b)
	if o == nil {
		return
	}
	meta := o.jsonObj("payload")
	if o.str("type") != "session_meta" || meta == nil {
		if o.has("type") || o.str("id") == "" {
			return
		}
		meta = o // an old rollout's bare first line
	}
	h := &c.p.Header
	h.ID = meta.str("id")
	h.Cwd = meta.str("cwd")
	if t, ok := parseRFC3339(meta.str("timestamp")); ok {
		h.Timestamp = t
	} else if t, ok := parseRFC3339(o.str("timestamp")); ok {
		h.Timestamp = t
	}
	if p := meta.str("model_provider"); p != "" {
		c.provider = p
	}
	parent := meta.str("forked_from_id")
	for _, k := range []string{"subagent", "sub_agent"} {
		if sp := meta.jsonObj("source").jsonObj(k).jsonObj("thread_spawn"); parent == "" && sp != nil {
			parent = sp.str("parent_thread_id")
		}
	}
	if session.ValidateID(parent) == nil {
		h.ParentSession = parent
	}
}

// finishHeader completes the header from the file name (rollout-<local
// time>-<uuid>.jsonl) where the meta did not give it: its time, and an
// id when the meta's is missing or invalid.
func (c *codexConv) finishHeader(source string) {
	h := &c.p.Header
	m := rolloutName.FindStringSubmatch(filepath.Base(source))
	if h.Timestamp.IsZero() && m != nil {
		if t, err := time.Parse("2006-01-02T15-04-05", m[1]); err == nil {
			h.Timestamp = t // local time in the name, taken as UTC
		}
	}
	if session.ValidateID(h.ID) == nil {
		return
	}
	orig := h.ID
	if m != nil {
		h.ID = m[2]
	} else {
		h.ID = "codex-" + derivedID(source, 0, 0)
	}
	if orig != "" {
		v, _ := json.Marshal(orig)
		h.Extra.Set("codexId", v)
	}
}

// record converts one line.
func (c *codexConv) record(b []byte) {
	o := jsonObject(b)
	if o == nil {
		c.malformed(c.line, whyNotObject(b))
		return
	}
	if t, ok := parseRFC3339(o.str("timestamp")); ok {
		c.t = t
	}
	typ := o.str("type")
	payload := o.jsonObj("payload")
	if payload == nil || typ == "" {
		// An old rollout: bare meta, bare items, state markers.
		switch {
		case o.has("record_type"):
			countUnknown(c.p, "codex.state (bookkeeping)")
		case typ == "" && o.str("id") != "" && o.has("timestamp"):
			c.custom("codex.session_meta", b, false)
		case typ != "" && !o.has("payload"):
			c.item(o, b)
		default:
			c.custom("codex."+orDefault(typ, "unknown"), b, true)
		}
		return
	}
	raw := o.raw("payload")
	switch typ {
	case "session_meta":
		c.close()
		c.custom("codex.session_meta", raw, false)
	case "turn_context":
		c.close()
		c.turnContext(payload, raw)
	case "response_item":
		c.item(payload, raw)
	case "event_msg":
		c.event(payload, raw)
	case "compacted":
		c.close()
		c.compacted(payload, raw)
	default:
		c.custom("codex."+typ, raw, true)
	}
}

func (c *codexConv) malformed(line int, err error) {
	c.p.Malformed = append(c.p.Malformed, LineError{Path: c.p.Source, Line: line, Err: err})
}

// add places a node for the current line.
func (c *codexConv) add(n *convNode, own string) *convNode {
	n.id = c.ids.id(own, c.line, c.part)
	c.part++
	if n.t.IsZero() {
		n.t = c.t
	}
	c.nodes = append(c.nodes, n)
	return n
}

// custom keeps a record as a custom entry; counted says whether it goes
// in Parsed.Unknown (records the reader does not model).
func (c *codexConv) custom(typ string, raw json.RawMessage, counted bool) {
	if !json.Valid(raw) {
		raw, _ = json.Marshal(string(raw))
	}
	c.add(&convNode{typ: session.TypeCustom, pl: customPayload{CustomType: typ, Data: raw}}, "")
	if counted {
		countUnknown(c.p, typ)
	}
}

// close ends the assistant message being assembled.
func (c *codexConv) close() { c.cur = nil }

// assistant returns the open assistant message, opening one.
func (c *codexConv) assistant() *session.Message {
	if c.cur == nil {
		m := &session.Message{Role: session.RoleAssistant, StopReason: session.StopEnd,
			API: "openai-responses", Provider: c.provider, Model: c.model, Timestamp: c.t.UnixMilli()}
		c.cur = c.add(&convNode{msg: m}, "")
		c.unbilled, c.last = c.cur, c.cur
	}
	return c.cur.msg
}
