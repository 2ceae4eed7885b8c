// Dive session files: format notes and the mapping.
//
// Dive (github.com/deepnoodle-ai/dive; read at v1.26.0, session/
// file_store.go and session.go, llm/content.go) keeps a session as
// <dir>/<id>.jsonl, each line {"line_type": T, "data": {...}}:
//
//   - line 1, T "header": the session, {id, title?, created_at,
//     updated_at, metadata? (any JSON object), forked_from? (the id of
//     the session it was forked from), suspended?, pending_tool_calls?
//     [{id, name, input, prompt?, reason? ("input_required",
//     "auth_required"), metadata?}], completed_tool_calls? [{id, name,
//     input, result? {content, display?, isError?}, error?}]}. Dive
//     rewrites the whole file (a temporary file renamed) when a session
//     is Put (after a title or metadata is set, or a fork), compacted,
//     or a turn suspends or resumes; lines keep their places.
//   - then T "event", one a turn: {id ("evt-<ns>-<n>"), type "turn" or
//     "compaction", timestamp (RFC 3339), messages [llm.Message],
//     usage? (llm.Usage: the turn's total over its model calls),
//     metadata?}. A message is {id? (the provider's response id), role
//     "user" | "assistant" | "system" | "developer", content [blocks]};
//     blocks are Anthropic-shaped: text {text, citations?, metadata?},
//     image {source {type "base64"|"url"|"file", media_type, data, url,
//     file_id}}, document {source, title?, context?}, tool_use {id,
//     name, input, metadata?}, tool_result {tool_use_id, content (what the
//     tool returned: a list of {type "text"|"image"|"audio", text, data,
//     mimeType, annotations?}, a string, or null), is_error?}, thinking
//     {thinking, signature?, id?, metadata?}, redacted_thinking {data},
//     refusal {text}, summary {summary}, reminder {name, tier, content},
//     and provider tools' server_tool_use, web_search_tool_result,
//     mcp_*, *_code_execution_tool_result. Tool results come back in user
//     messages, without the tool's name; a hook's added context follows
//     them in the same message as text blocks.
//   - A compaction event holds the messages the summarizer returned
//     (with Dive's experimental/compaction, one user message "Your
//     conversation history was compacted ... <summary>") and metadata
//     {original_event_count, original_message_count}; the context is
//     then the latest compaction's messages and every event after it.
//   - A suspended turn (a tool asked to wait for a result from outside)
//     is the last event, with metadata {"suspended": true}: the user's
//     input, the assistant's tool calls and a tool_result message holding
//     the results of the calls that did complete; the header lists the
//     calls still pending.
//
// Dive appends an event without a rename, so a crash can leave the last
// line cut short; Dive's reader drops it (and any other unreadable line
// is fatal to it). Other line types after the header are skipped by Dive
// for forward compatibility. A rewrite goes through <id>.jsonl.tmp-<n>,
// which a crash can leave behind: a directory import skips those files.
//
// Importing again: the lines of a session keep their places as it grows
// in Dive (turns and compactions are added at the end; a title or
// metadata changes only the header, which is not compared), so a
// session imported before imports as the rest appended, and a torn line
// Dive healed and wrote again comes in then. Resuming or cancelling a
// suspended turn, however, rewrites the last event (its usage, its tool
// results, the suspension gone): a session imported while suspended is
// then a conflict, left as it is in the store (delete it there to
// import it again).
//
// Mapping (the tree is linear; the first entry of an event takes the
// event's id, the others ids derived from the session id, line and
// part, so that a re-import builds the same entries):
//
//   - Header: id = the header's id (else the file name's stem, else one
//     derived from the path; the original kept as Extra "diveId" when it
//     is not a valid session id), timestamp = created_at, title = title,
//     ParentSession = forked_from; the header's other members
//     (updated_at, metadata, forked_from, ...), but for the suspension,
//     kept as Extra "dive".
//   - A user message: its blocks but tool_result become a user message;
//     each tool_result a toolResult message (its tool's name from the
//     call, "" when no call has its id; is_error; the tool's text as
//     text blocks and its images as image blocks). Blocks before, between
//     and after the results keep their order: the text a hook added after
//     the results is a user message after them.
//   - An assistant message: text, thinking (signature kept),
//     redacted_thinking (a thinking block "[Reasoning redacted]" marked
//     Redacted, its data as the signature, as the Anthropic provider
//     reads one) and tool_use (toolCall; input that is no JSON object is
//     wrapped as {"input": ...}) blocks; stop reason toolUse when it
//     calls a tool, else stop. Dive records no provider, model or API:
//     they stay empty. A message's id is kept in Extra ("responseId" for
//     an assistant message, "diveId" for others).
//   - Both: a base64 image is an image block; a refusal a refusal block;
//     a document (base64, text, URL or file source) a document block with
//     its title, context and citations setting; a text's citations its
//     Citations; other blocks (an image by URL or file id as
//     "dive.image", a document of content blocks as "dive.document",
//     reminder, summary, provider tools' blocks) are kept in place as
//     they are, their members in the block's Extra. Members of a mapped
//     block that the block does not model (cache_control, a thinking
//     block's id and metadata, a tool_use's metadata) are kept in its
//     Extra.
//   - system and developer messages become custom_message entries
//     "dive.system" / "dive.developer" (not displayed): in the context,
//     not turns (the message's id in details). A message of another
//     role, or one with no text or with other blocks, is kept as a
//     custom entry "dive.<role>".
//   - The event's usage goes to the last assistant message of its turn
//     (input_tokens = Input, output_tokens = Output,
//     cache_read_input_tokens = CacheRead, cache_creation_input_tokens =
//     CacheWrite, TotalTokens their sum; the cost's input, output,
//     cache_read, cache_write and total; reasoning_tokens in Usage.Extra
//     "reasoning", other members under their own names). It is the
//     turn's total, so the session's sum is Dive's TotalUsage; a turn
//     without an assistant message keeps it as a custom entry
//     "dive.usage".
//   - A turn's metadata is kept as a custom entry "dive.turn_metadata",
//     but the {"suspended": true} of the suspended turn, which the
//     suspension entry stands for.
//   - A compaction event is a compaction entry: summary = the text of its
//     messages (text and summary blocks), firstKeptEntryId empty (nothing before it stays in the
//     context), tokensBefore 0 (Dive does not record it), details the
//     event's other members (metadata), and its messages too when the
//     summary does not hold them whole (several messages, another role,
//     blocks other than text). One with no text is kept as a custom entry
//     "dive.compaction" instead: a compaction entry would empty the
//     context.
//   - A suspended session: after its last turn, a suspension entry
//     (session.CustomSuspension, read by Session.Suspended): its calls
//     are Dive's pending_tool_calls (id, name, prompt, metadata), its
//     State the header's suspension members verbatim ({"suspended",
//     "pending_tool_calls", "completed_tool_calls"}). The pending calls
//     stay unanswered and suspended: Context.Suspended.
//   - Kept as custom entries "dive.<type>" and counted in Parsed.Unknown:
//     line types other than header and event (and a second header),
//     turn metadata, usage without an assistant message, unreadable
//     compactions, messages of other roles or that are no object
//     ("dive.message"), a messages member that is no list
//     ("dive.messages"). An event of a type this reader does not know is
//     read as a turn, as Dive's reader does, and counted as
//     "dive.<type> (read as a turn)".
//   - A line that is not a JSON object, or longer than DiveMaxLineBytes,
//     is reported in Parsed.Malformed with its number, the last line
//     cut short with ErrDiveTorn; the rest imports. A file over
//     DiveMaxFileBytes is refused, and so is one whose first line is a
//     Dive header of another version ("header_v2", which Dive v1.26
//     itself refuses): ErrDiveVersion.

package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/jsonx"
)

// Caps of the Dive reader, so that a hostile file cannot take unbounded
// memory: a line is at most DiveMaxLineBytes (the store's own line
// cap), a file at most DiveMaxFileBytes and DiveMaxLines lines.
const (
	DiveMaxLineBytes = session.DefaultMaxLineBytes
	DiveMaxFileBytes = session.DefaultMaxLogBytes
	DiveMaxLines     = session.DefaultMaxEntries
)

var (
	// ErrDiveTorn reports the last line of a Dive file cut short: a
	// write Dive did not finish (it drops such a line when it reads the
	// file).
	ErrDiveTorn = errors.New("importer: dive: the last line is cut short (a write interrupted)")
	// ErrDiveVersion is the error of a file whose first line is a Dive
	// header of a version this reader does not know.
	ErrDiveVersion = errors.New("importer: dive: a header of another version")
)

// diveTemp reports a temporary file of Dive's FileStore
// (<id>.jsonl.tmp-<n>, the rewrite of a session, left behind when the
// process died before renaming it): a directory walk leaves it aside, as
// Dive's List does; named alone, it imports.
func diveTemp(_ *root, rel string) error {
	if strings.Contains(filepath.Base(rel), ".jsonl.tmp-") {
		return ErrDiveTemp
	}
	return nil
}

// ErrDiveTemp is the reason, in Report.NotImported, of a temporary file
// Dive's FileStore left behind (see diveTemp).
var ErrDiveTemp = errors.New("importer: a temporary file of Dive's FileStore, left aside as Dive does (import it on its own to read it)")

// sniffDive recognises a Dive file by its first line: a header line
// ({"line_type":"header","data":{...}}), or one of another version
// ("header_v2"), which the reader then refuses with ErrDiveVersion.
func sniffDive(head []byte) bool {
	first, _, _ := firstLineOf(head)
	if o := jsonObject(first); o != nil {
		return strings.HasPrefix(o.str("line_type"), "header") && o.jsonObj("data") != nil
	}
	// A first line longer than the head: its opening is enough.
	return len(first) == len(head) && jsonPrefix(first, `{"line_type":"header`) && containsStr(first, `"data":{`)
}

func readDive(ctx context.Context, rt *root, rel string) ([]*Parsed, error) {
	f, err := rt.open(rel, DiveMaxFileBytes, false)
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	defer f.Close()
	p, err := parseDive(ctx, io.LimitReader(f, DiveMaxFileBytes), rt.path(rel))
	if err != nil {
		return nil, err
	}
	return []*Parsed{p}, nil
}

// diveConv is the state of reading one Dive file.
type diveConv struct {
	p     *Parsed
	ids   *idAlloc
	nodes []*convNode
	calls map[string]string // tool call id -> tool name
	line  int
	part  int
	own   string    // the id the next entry of the line takes
	t     time.Time // the time of the current line

	suspension json.RawMessage // the header's suspension members, when suspended
	lastEvent  int             // the line of the last event line
}

// parseDive reads a Dive session file from r; source names it in reports
// (and gives the id when the header has none).
func parseDive(ctx context.Context, r io.Reader, source string) (*Parsed, error) {
	c := &diveConv{p: &Parsed{Format: Dive, Source: source}, calls: map[string]string{}}
	type rec struct {
		line int
		raw  []byte
	}
	var recs []rec
	lr := newBoundedReader(r, DiveMaxLineBytes)
	header := false
	for {
		b, err := lr.next()
		if err == io.EOF {
			break
		}
		if err == errLineTooLong {
			c.malformed(lr.line, fmt.Errorf("%w: over %d bytes", session.ErrTooLarge, DiveMaxLineBytes))
			header = true // the first line, if it is this one, is no header
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("importer: %s: %w", source, err)
		}
		if lr.line > DiveMaxLines {
			return nil, fmt.Errorf("importer: %s: %w (over %d lines)", source, session.ErrTooLarge, DiveMaxLines)
		}
		if isBlank(b) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !header {
			header = true
			if o, err := diveObject(b); err == nil && strings.HasPrefix(clStr(clField(o, "line_type")), "header") {
				if lt := clStr(clField(o, "line_type")); lt != "header" {
					return nil, fmt.Errorf("%w: line_type %q (Dive v1.26 writes \"header\", and refuses this one too)", ErrDiveVersion, lt)
				}
				c.header(clField(o, "data"))
				continue
			}
		}
		recs = append(recs, rec{lr.line, append([]byte(nil), b...)})
	}
	c.finishHeader(source)
	for i := len(recs) - 1; i >= 0; i-- {
		if o, err := diveObject(recs[i].raw); err == nil && clStr(clField(o, "line_type")) == "event" {
			c.lastEvent = recs[i].line
			break
		}
	}
	c.ids = newIDAlloc(c.p.Header.ID)
	c.t = c.p.Header.Timestamp
	if c.t.IsZero() {
		c.t = time.Unix(0, 0).UTC() // entries need a time; none is known
	}
	for i, r := range recs {
		c.line, c.part, c.own = r.line, 0, ""
		c.record(r.raw, i == len(recs)-1)
	}
	if c.suspension != nil {
		c.line, c.part, c.own = 1, 0, ""
		c.add(&convNode{typ: session.TypeCustom, pl: customPayload{CustomType: session.CustomSuspension, Data: diveSuspensionData(c.suspension)}})
	}
	entries, err := chainEntries(c.nodes)
	if err != nil {
		return nil, err
	}
	c.p.Entries = entries
	return c.p, nil
}

// diveSuspensionData makes the session.Suspension of a suspended Dive
// session from its header's suspension members: each pending tool call
// with its prompt and metadata (an approval when Dive's reason says so),
// and the members verbatim as the host's State, which a Dive adapter
// resumes from.
func diveSuspensionData(members json.RawMessage) json.RawMessage {
	var d struct {
		Pending []struct {
			ID       string          `json:"id"`
			Name     string          `json:"name"`
			Prompt   string          `json:"prompt"`
			Reason   string          `json:"reason"`
			Metadata json.RawMessage `json:"metadata"`
		} `json:"pending_tool_calls"`
	}
	_ = json.Unmarshal(members, &d)
	sp := session.Suspension{Calls: []session.SuspendedCall{}, Reason: "dive", State: members}
	for _, p := range d.Pending {
		if p.ID == "" {
			continue
		}
		sp.Calls = append(sp.Calls, session.SuspendedCall{CallID: p.ID, Name: p.Name, Prompt: p.Prompt,
			Approval: strings.Contains(p.Reason, "approv"), Metadata: p.Metadata})
	}
	raw, err := json.Marshal(sp)
	if err != nil {
		return members
	}
	return raw
}

// diveSuspension are the header members of a suspended turn.
var diveSuspension = []string{"suspended", "pending_tool_calls", "completed_tool_calls"}

// header reads the header's data.
func (c *diveConv) header(raw json.RawMessage) {
	h := &c.p.Header
	data := jsonObject(raw)
	if data == nil {
		return
	}
	h.ID = data.str("id")
	h.Title = data.str("title")
	if t, ok := parseRFC3339(data.str("created_at")); ok {
		h.Timestamp = t
	}
	if parent := data.str("forked_from"); session.ValidateID(parent) == nil {
		h.ParentSession = parent
	}
	if data.bool("suspended") {
		susp := session.Fields{}
		for _, k := range diveSuspension {
			if v := data.raw(k); len(v) > 0 {
				susp.Set(k, compactRaw(v))
			}
		}
		c.suspension = fieldsJSON(susp)
	}
	// The rest, but what the header and the suspension entry hold.
	rest := session.Fields{}
	for _, f := range clObject(raw) {
		switch f.Key {
		case "id", "title", "created_at", "suspended", "pending_tool_calls", "completed_tool_calls":
		default:
			rest = append(rest, session.Field{Key: f.Key, Value: compactRaw(f.Value)})
		}
	}
	if len(rest) > 0 {
		h.Extra.Set("dive", fieldsJSON(rest))
	}
}

// finishHeader gives the session an id when the header's is missing or
// not a valid one: the file name's stem (Dive names a file after its
// session), else one derived from the path.
func (c *diveConv) finishHeader(source string) {
	h := &c.p.Header
	if session.ValidateID(h.ID) == nil {
		return
	}
	orig := h.ID
	if stem := strings.TrimSuffix(filepath.Base(source), ".jsonl"); stem != orig && session.ValidateID(stem) == nil {
		h.ID = stem
	} else {
		h.ID = "dive-" + derivedID(source, 0, 0)
	}
	if orig != "" {
		v, _ := json.Marshal(orig)
		h.Extra.Set("diveId", v)
	}
}

func (c *diveConv) malformed(line int, err error) {
	c.p.Malformed = append(c.p.Malformed, LineError{Path: c.p.Source, Line: line, Err: err})
}

// add places a node for the current line: the first takes c.own, the
// event's id, when it is free.
func (c *diveConv) add(n *convNode) *convNode {
	n.id = c.ids.id(c.own, c.line, c.part)
	c.own = ""
	c.part++
	if n.t.IsZero() {
		n.t = c.t
	}
	c.nodes = append(c.nodes, n)
	return n
}

// custom keeps a record as a custom entry; counted says whether it goes
// in Parsed.Unknown (records the reader does not model).
func (c *diveConv) custom(typ string, raw json.RawMessage, counted bool) {
	if !json.Valid(raw) {
		raw, _ = json.Marshal(string(raw))
	}
	c.add(&convNode{typ: session.TypeCustom, pl: customPayload{CustomType: typ, Data: compactRaw(raw)}})
	if counted {
		countUnknown(c.p, typ)
	}
}

// record converts one line after the header; last says it is the last
// line of the file.
func (c *diveConv) record(b []byte, last bool) {
	o, err := diveObject(b)
	if err != nil {
		err := whyNotObject(b)
		if last && c.line > 1 {
			err = fmt.Errorf("%w: %v", ErrDiveTorn, err)
		}
		c.malformed(c.line, err)
		return
	}
	lt := clStr(clField(o, "line_type"))
	data := clField(o, "data")
	ev := clObject(data)
	if lt != "event" || jsonx.KindOf(data) != jsonx.KindObject {
		// Another line type (Dive skips them), a second header, or an
		// event without data: kept whole.
		c.custom("dive."+orDefault(diveName(lt), "line"), b, true)
		return
	}
	if t, ok := parseRFC3339(clStr(clField(ev, "timestamp"))); ok {
		c.t = t
	}
	c.own = clStr(clField(ev, "id"))
	switch typ := clStr(clField(ev, "type")); typ {
	case "compaction":
		c.compaction(ev, data)
	case "turn":
		c.turn(ev)
	default:
		countUnknown(c.p, "dive."+orDefault(diveName(typ), "event")+" (read as a turn)")
		c.turn(ev)
	}
}

// diveName makes a type read from a file fit a custom type: at most 64
// bytes of letters, digits, '_', '-' and '.'.
func diveName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < 64; i++ {
		ch := s[i]
		switch {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9', ch == '_', ch == '-', ch == '.':
			b.WriteByte(ch)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// diveObject reads a line that must be one JSON object, its members in
// order as views of b; the values are validated once here, so that what
// is read from them later need not be.
func diveObject(b []byte) (session.Fields, error) {
	b = bytes.TrimSpace(b)
	it, err := jsonx.Object(b)
	if err != nil {
		return nil, err
	}
	f := session.Fields{}
	for it.Next() {
		f = append(f, session.Field{Key: it.Key(), Value: it.Value()})
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	if jsonx.SkipSpace(b, it.End()) != len(b) {
		return nil, errors.New("data after the object")
	}
	return f, nil
}

// diveArray returns the elements of v when it is a JSON array (as views
// of v), else nil.
func diveArray(v []byte) []json.RawMessage {
	var out []json.RawMessage
	if jsonx.KindOf(v) != jsonx.KindArray || jsonx.EachElement(v, func(e []byte) error {
		out = append(out, e)
		return nil
	}) != nil {
		return nil
	}
	return out
}

// fieldsJSON encodes f as a JSON object ({} when empty).
func fieldsJSON(f session.Fields) json.RawMessage {
	if len(f) == 0 {
		return json.RawMessage("{}")
	}
	return clWithout(f)
}
