// OpenCode exports: format notes and the mapping.
//
// `opencode export <sessionID>` (sst/opencode, packages/opencode/src/cli/
// cmd/export.ts) writes JSON.stringify({info, messages}, null, 2):
//
//   - info is the Session.Info: id ("ses_..."), slug, projectID,
//     directory, parentID (set on a subagent's session), title, version,
//     time {created, updated, compacting?, archived?} in Unix ms,
//     summary {additions, deletions, files, diffs?}, share {url},
//     revert {messageID, partID?, snapshot?, diff?}, permission ...
//   - messages: [{info, parts}], oldest first (MessageV2.WithParts of
//     packages/opencode/src/session/message-v2.ts). A message info is a
//     user message {id "msg_...", sessionID, role "user", time {created},
//     agent, model {providerID, modelID}, system?, tools?} or an
//     assistant message {id, role "assistant", parentID (the user
//     message it answers), time {created, completed?}, modelID,
//     providerID, mode, agent, path {cwd, root}, summary? (true on a
//     compaction summary), cost, tokens {total?, input, output,
//     reasoning, cache {read, write}}, finish?, error? {name, data
//     {message}}}.
//   - parts, each {id "prt_...", sessionID, messageID, type, ...}: text
//     {text, synthetic?, ignored?, time?}, reasoning {text, metadata?,
//     time}, file {mime, filename?, url (a data: URL or file://),
//     source?}, tool {callID, tool, state {status pending|running|
//     completed|error, input (object), output, title, metadata, error,
//     time {start, end, compacted?}, attachments? (file parts)}},
//     step-start {snapshot?}, step-finish {reason, snapshot?, cost,
//     tokens}, snapshot {snapshot}, patch {hash, files}, agent {name},
//     subtask {prompt, description, agent, model?, command?}, retry
//     {attempt, error}, compaction {auto, overflow?, tail_start_id?}.
//
// A compaction is a user message holding a compaction part, answered by
// an assistant message with summary: true whose text is the summary;
// tail_start_id names the oldest message kept after it.
//
// Mapping (the tree is linear; entry ids are OpenCode's own message and
// part ids, so a re-import builds the same entries):
//
//   - Header: id = info.id (a derived one, the original kept as Extra
//     "opencodeId", when it is not a valid session id), timestamp =
//     time.created, cwd = directory, title = title, ParentSession =
//     parentID; the whole info is kept as Extra "opencode". A file holding
//     a JSON array of exports imports each; one whose parentID is another
//     of the file is imported as its child.
//   - A user message: text parts (not ignored ones) and file parts (an
//     image data: URL as an image block, another file as a text block
//     naming it) make one user message.
//   - An assistant message is split at its steps (step-start ...
//     step-finish), each one model call: an assistant message of its
//     reasoning (thinking), text and tool parts (toolCall: callID, tool,
//     state.input), with the step-finish tokens and cost as its usage
//     (input, output, cache read/write, cost total; reasoning tokens in
//     Usage.Extra "reasoning") and its reason as stop reason; each
//     completed or failed tool part then gives a toolResult message
//     (output or error, attachments as images, title/metadata/time in
//     Details) right after its step, so calls and results pair. A pending
//     or running tool has no result. A message without step-finish parts
//     takes its own tokens and cost; its error becomes the stop reason
//     "error" ("aborted" for MessageAbortedError) and error message.
//   - A summary assistant message becomes a compaction entry: its text
//     the summary, firstKeptEntryId the tail_start_id message when it is
//     in the file, tokensBefore its input tokens; its model, tokens and
//     cost kept in Details. The user message that asked for it keeps its
//     compaction part as a custom entry "opencode.compaction".
//   - Kept as custom entries "opencode.<type>" and counted in
//     Parsed.Unknown: agent, subtask, snapshot, patch and retry parts, and
//     part or message types this reader does not know; ignored text parts
//     (which OpenCode does not send to the model) too, counted as
//     "opencode.text (ignored)".
//   - A message without a creation time takes the time of the one
//     before (the session's for the first).
//   - A message that is not a JSON object is reported in Parsed.Malformed
//     (Line 0, its index in the error); the rest imports. A file that is
//     not JSON, or is over OpenCodeMaxFileBytes, is refused.

package importer

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	session "github.com/agentsession/session"
)

// OpenCodeMaxFileBytes caps the size of an OpenCode export, which is read
// whole.
const OpenCodeMaxFileBytes = 256 << 20

var openCodeHead = regexp.MustCompile(`^\s*\[?\s*\{\s*"info"\s*:\s*\{`)

// sniffOpenCode recognises an export by its opening: an object whose
// first member is info, an object.
func sniffOpenCode(head []byte) bool {
	return openCodeHead.Match(head) && (containsStr(head, `"messages"`) || containsStr(head, `"ses_`))
}

func readOpenCode(ctx context.Context, rt *root, rel string) ([]*Parsed, error) {
	data, err := rt.readFile(rel, OpenCodeMaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	return parseOpenCode(ctx, data, rt.path(rel))
}

// parseOpenCode reads an export (or a JSON array of them) from data.
func parseOpenCode(ctx context.Context, data []byte, source string) ([]*Parsed, error) {
	var exports []json.RawMessage
	if a := jsonArray(data); a != nil {
		exports = a
	} else if jsonObject(data) != nil {
		exports = []json.RawMessage{data}
	} else {
		return nil, fmt.Errorf("importer: %s: not an OpenCode export: %w", source, whyNotObject(data))
	}
	var all []*Parsed
	byID := map[string]*Parsed{}
	var top []*Parsed
	for i, raw := range exports {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, err := parseExport(jsonObject(raw), source)
		if err != nil {
			if len(exports) == 1 {
				return nil, err
			}
			return nil, fmt.Errorf("importer: %s: export %d: %w", source, i, err)
		}
		all = append(all, p)
		// A child follows its parent in the file: link it under it.
		if parent := byID[p.Header.ParentSession]; parent != nil {
			parent.Children = append(parent.Children, p)
		} else {
			top = append(top, p)
		}
		if byID[p.Header.ID] == nil {
			byID[p.Header.ID] = p
		}
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("importer: %s: an empty list of OpenCode exports", source)
	}
	return top, nil
}

// ocConv is the state of reading one export.
type ocConv struct {
	p       *Parsed
	ids     *idAlloc
	nodes   []*convNode
	entryOf map[string]string // OpenCode message id -> the entry id of its first entry
	tail    string            // tail_start_id of the latest compaction request
	msg     int               // index of the message being read
	last    time.Time         // the time of the latest message
}

// when is the creation time of a message, or when it has none the time
// of the message before (the session's for the first; the Unix epoch
// when that is missing too).
func (c *ocConv) when(info jsonObj) time.Time {
	if t := unixMillis(info.jsonObj("time").int("created")); !t.IsZero() {
		c.last = t
	}
	return c.last
}

func parseExport(o jsonObj, source string) (*Parsed, error) {
	info := o.jsonObj("info")
	if info == nil {
		return nil, fmt.Errorf("importer: %s: not an OpenCode export (no info object)", source)
	}
	p := &Parsed{Format: OpenCode, Source: source}
	h := &p.Header
	h.ID = info.str("id")
	if session.ValidateID(h.ID) != nil {
		if h.ID != "" {
			v, _ := json.Marshal(h.ID)
			h.Extra.Set("opencodeId", v)
		}
		h.ID = "opencode-" + derivedID(source+"\x00"+h.ID, 0, 0)
	}
	h.Timestamp = unixMillis(info.jsonObj("time").int("created"))
	h.Cwd = info.str("directory")
	h.Title = info.str("title")
	if parent := info.str("parentID"); session.ValidateID(parent) == nil {
		h.ParentSession = parent
	}
	h.Extra.Set("opencode", compactRaw(o.raw("info")))

	c := &ocConv{p: p, ids: newIDAlloc(h.ID), entryOf: map[string]string{}, last: h.Timestamp}
	if c.last.IsZero() {
		c.last = time.Unix(0, 0).UTC()
	}
	msgs := o.arr("messages")
	if msgs == nil && o.has("messages") && string(o.raw("messages")) != "null" {
		c.malformed(fmt.Errorf("messages: not a list"))
	}
	for i, raw := range msgs {
		c.msg = i
		m := jsonObject(raw)
		if m == nil {
			c.malformed(fmt.Errorf("message %d: %w", i, whyNotObject(raw)))
			continue
		}
		c.message(m, raw)
	}
	entries, err := chainEntries(c.nodes)
	if err != nil {
		return nil, err
	}
	p.Entries = entries
	return p, nil
}

func (c *ocConv) malformed(err error) {
	c.p.Malformed = append(c.p.Malformed, LineError{Path: c.p.Source, Err: err})
}

// add places a convNode with the source id own (or a derived one) for part
// k of the current message.
func (c *ocConv) add(n *convNode, own string, k int) *convNode {
	n.id = c.ids.id(own, c.msg+1, k)
	c.nodes = append(c.nodes, n)
	return n
}

// custom keeps a part (or message) whole as a custom entry.
func (c *ocConv) custom(typ string, raw json.RawMessage, own string, k int, counted bool, n *convNode) *convNode {
	if !json.Valid(raw) {
		raw, _ = json.Marshal(string(raw))
	}
	e := &convNode{t: n.t, typ: session.TypeCustom, pl: customPayload{CustomType: "opencode." + typ, Data: raw}}
	e.id = c.ids.id(own, c.msg+1, k)
	if counted {
		countUnknown(c.p, "opencode."+typ)
	}
	return e
}

func (c *ocConv) message(m jsonObj, raw json.RawMessage) {
	info := m.jsonObj("info")
	parts := m.arr("parts")
	switch info.str("role") {
	case session.RoleUser:
		c.user(info, parts)
	case session.RoleAssistant:
		if info.bool("summary") && c.summary(info, parts) {
			return
		}
		c.assistant(info, parts)
	default:
		c.nodes = append(c.nodes, c.custom("message", raw, info.str("id"), -1, true, &convNode{t: c.when(info)}))
	}
}

func (c *ocConv) user(info jsonObj, parts []json.RawMessage) {
	t := c.when(info)
	m := &session.Message{Role: session.RoleUser, Timestamp: t.UnixMilli()}
	var after []*convNode
	for k, raw := range parts {
		pt := jsonObject(raw)
		switch typ := pt.str("type"); {
		case typ == "text" && !pt.bool("ignored"):
			m.Content = append(m.Content, session.Text(pt.str("text")))
		case typ == "file":
			m.Content = append(m.Content, fileBlock(pt))
		case typ == "text": // ignored: not sent to the model
			after = append(after, c.custom(typ, raw, pt.str("id"), k, false, &convNode{t: t}))
			countUnknown(c.p, "opencode.text (ignored)")
		case typ == "compaction":
			c.tail = pt.str("tail_start_id")
			after = append(after, c.custom(typ, raw, pt.str("id"), k, false, &convNode{t: t}))
		default:
			after = append(after, c.custom(orDefault(typ, "part"), raw, pt.str("id"), k, true, &convNode{t: t}))
		}
	}
	if len(m.Content) > 0 {
		n := c.add(&convNode{t: t, msg: m}, info.str("id"), -1)
		c.entryOf[info.str("id")] = n.id
	} else if len(after) > 0 {
		c.entryOf[info.str("id")] = after[0].id
	}
	c.nodes = append(c.nodes, after...)
}

// fileBlock is an image block for an image given inline, else a text
// block naming the file.
func fileBlock(pt jsonObj) session.Block {
	mime, url := pt.str("mime"), pt.str("url")
	if b, ok := dataImage(url, mime); ok {
		return b
	}
	name := orDefault(pt.str("filename"), url)
	return session.Text(fmt.Sprintf("[file: %s (%s)]", name, mime))
}

// ocUsage reads an OpenCode tokens object and cost.
func ocUsage(tokens jsonObj, cost float64) *session.Usage {
	cache := tokens.jsonObj("cache")
	u := &session.Usage{Input: tokens.int("input"), Output: tokens.int("output"),
		CacheRead: cache.int("read"), CacheWrite: cache.int("write"), TotalTokens: tokens.int("total")}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.Input + u.Output + u.CacheRead + u.CacheWrite + tokens.int("reasoning")
	}
	setIntField(&u.Extra, tokens, "reasoning", "reasoning")
	u.Cost.Total = cost
	return u
}

// stopReason maps an AI SDK finish reason; "" when it has no equivalent.
func stopReason(reason string) string {
	switch reason {
	case "stop":
		return session.StopEnd
	case "tool-calls":
		return session.StopToolUse
	case "length":
		return session.StopLength
	case "error":
		return session.StopError
	}
	return ""
}
