package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"

	"github.com/deepnoodle-ai/dive"
	"github.com/deepnoodle-ai/dive/llm"

	as "github.com/agentsession/session"
)

// The mapping between Dive's llm.Message and agentsession's Message.
//
// Dive's content blocks that agentsession models become typed blocks:
//
//	text               text (Text, Citations: Dive's citations JSON)
//	thinking           thinking (Thinking, ThinkingSignature)
//	redacted_thinking  agentsession's RedactedThinking (pi's form)
//	refusal            refusal (Text)
//	image (base64)     image (Data, MimeType)
//	document           document: base64 (Data), text (Text), URL or file
//	                   id, with MimeType, Title, Context and Citations
//	                   (Dive's citation settings)
//	tool_use           toolCall (ID, Name, Arguments)
//
// A Dive user message holding tool_result blocks is split: each tool_result
// becomes a toolResult message (so that agentsession pairs it with its
// call), and the blocks after the last result one user message. Every piece
// is marked (the message member "dive", see below) so that reading puts the
// Dive message back together, block for block.
//
// What has no typed home is kept under the member "dive": of a block
// (Block.Extra), the members of Dive's block JSON the typed fields do not
// hold (cache_control; a text's or thinking's provider metadata; a
// thinking's id; a tool_use's metadata; the rest of an image's source); of
// a message (Message.Extra), an object with
//
//	id        the Dive message's ID
//	role      its role, when it is neither user nor assistant (the
//	          message is stored as a user message)
//	part      [i, n]: the message is piece i of the n a Dive message was
//	          split into
//	before    (a tool result) the Dive blocks that came before it in its
//	          message, after the previous result: they stay in place
//	form      (a tool result) "string" when Dive's content was a JSON
//	          string (the message has one text block), "null" when it had
//	          none
//	content   (a tool result) Dive's content when it is neither a string,
//	          null nor a list of text, image and audio items; the message's
//	          blocks then hold its JSON as text, for readers other than Dive
//	cache_control  (a tool result) the tool_result's cache_control
//
// A Dive block of any other type (server_tool_use, mcp_*, summary,
// reminder ...), an image whose source is not base64 data, or a document
// the typed block does not give back as it was (content chunks), is stored
// as a block of type "dive.<its type>" holding the other members of Dive's
// JSON: agentsession keeps blocks of unknown types whole.
//
// A tool result's items (Dive's dive.ToolResultContent) of type text,
// image and audio have the shape of agentsession's text, image and audio
// blocks; their annotations go under the block's "dive" member. Items of
// other types are blocks of type "dive.<type>".

// diveKey is the member that holds, on messages and blocks, what Dive has
// and agentsession does not model.
const diveKey = "dive"

// diveBlockPrefix starts the type of a block kept in Dive's own JSON.
const diveBlockPrefix = "dive."

// msgInfo is the "dive" member of a message.
type msgInfo struct {
	ID           string            `json:"id,omitempty"`
	Role         string            `json:"role,omitempty"`
	Part         *[2]int           `json:"part,omitempty"`
	Before       []json.RawMessage `json:"before,omitempty"`
	Form         string            `json:"form,omitempty"`
	Content      json.RawMessage   `json:"content,omitempty"`
	CacheControl *llm.CacheControl `json:"cache_control,omitempty"`
}

func (d *msgInfo) empty() bool {
	return d.ID == "" && d.Role == "" && d.Part == nil && len(d.Before) == 0 &&
		d.Form == "" && d.Content == nil && d.CacheControl == nil
}

func setInfo(m *as.Message, d *msgInfo) error {
	if d.empty() {
		return nil
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return err
	}
	m.Extra.Set(diveKey, raw)
	return nil
}

func infoOf(m *as.Message) (msgInfo, error) {
	var d msgInfo
	raw, ok := m.Extra.Get(diveKey)
	if !ok {
		return d, nil
	}
	err := json.Unmarshal(raw, &d)
	return d, err
}

// ---- Dive → agentsession ----

// toAgent converts the messages of a Dive turn. names gives the tool name
// of a call id, for the tool results whose call is not in msgs (a call of
// an earlier turn); nil when there are none.
func toAgent(msgs []*llm.Message, names func(callID string) string) ([]*as.Message, error) {
	out := make([]*as.Message, 0, len(msgs))
	var calls map[string]string // call id -> tool name, of the turn's assistant messages
	for i, m := range msgs {
		if m == nil {
			return nil, fmt.Errorf("dive session: message %d is nil", i)
		}
		if m.Role == llm.Assistant {
			for _, c := range m.Content {
				if tu, ok := c.(*llm.ToolUseContent); ok {
					if calls == nil {
						calls = map[string]string{}
					}
					calls[tu.ID] = tu.Name
				}
			}
		}
		name := func(id string) string {
			if n, ok := calls[id]; ok {
				return n
			}
			if names != nil {
				return names(id)
			}
			return ""
		}
		var err error
		if out, err = appendAgent(out, m, name); err != nil {
			return nil, fmt.Errorf("dive session: message %d: %w", i, err)
		}
	}
	return out, nil
}

// appendAgent appends the agentsession messages one Dive message becomes.
func appendAgent(out []*as.Message, m *llm.Message, name func(string) string) ([]*as.Message, error) {
	d := msgInfo{ID: m.ID}
	role := as.RoleUser
	switch m.Role {
	case llm.Assistant:
		role = as.RoleAssistant
	case llm.User:
	default:
		d.Role = string(m.Role)
	}
	if role == as.RoleUser {
		results := 0
		for _, c := range m.Content {
			if _, ok := c.(*llm.ToolResultContent); ok {
				results++
			}
		}
		if results > 0 {
			return appendSplit(out, m, d, results, name)
		}
	}
	blocks, err := toBlocks(m.Content)
	if err != nil {
		return nil, err
	}
	var am *as.Message
	if role == as.RoleAssistant {
		am = as.Assistant(blocks...)
	} else {
		am = as.User(blocks...)
	}
	if err := setInfo(am, &d); err != nil {
		return nil, err
	}
	return append(out, am), nil
}

// appendSplit appends the pieces of a Dive user message holding tool
// results: a toolResult message per result, and a user message with the
// blocks after the last one.
func appendSplit(out []*as.Message, m *llm.Message, d msgInfo, results int, name func(string) string) ([]*as.Message, error) {
	last := 0 // index after the last tool result
	for k, c := range m.Content {
		if _, ok := c.(*llm.ToolResultContent); ok {
			last = k + 1
		}
	}
	n := results
	if last < len(m.Content) {
		n++
	}
	part := 0
	var before []json.RawMessage
	for _, c := range m.Content[:last] {
		tr, ok := c.(*llm.ToolResultContent)
		if !ok {
			raw, err := json.Marshal(c)
			if err != nil {
				return nil, err
			}
			before = append(before, raw)
			continue
		}
		rm, err := toolResultMessage(tr, name(tr.ToolUseID))
		if err != nil {
			return nil, err
		}
		info, err := infoOf(rm)
		if err != nil {
			return nil, err
		}
		info.Part = &[2]int{part, n}
		info.Before, before = before, nil
		if part == 0 {
			info.ID, info.Role = d.ID, d.Role
		}
		if err := setInfo(rm, &info); err != nil {
			return nil, err
		}
		out = append(out, rm)
		part++
	}
	if last < len(m.Content) {
		blocks, err := toBlocks(m.Content[last:])
		if err != nil {
			return nil, err
		}
		um := as.User(blocks...)
		if err := setInfo(um, &msgInfo{Part: &[2]int{part, n}}); err != nil {
			return nil, err
		}
		out = append(out, um)
	}
	return out, nil
}

// toolResultMessage converts one tool_result block.
func toolResultMessage(tr *llm.ToolResultContent, toolName string) (*as.Message, error) {
	m := &as.Message{Role: as.RoleToolResult, ToolCallID: tr.ToolUseID, ToolName: toolName, IsError: tr.IsError}
	d := msgInfo{CacheControl: tr.CacheControl}
	switch c := tr.Content.(type) {
	case nil:
		d.Form, m.Content = "null", []as.Block{}
	case string:
		d.Form, m.Content = "string", []as.Block{as.Text(c)}
	case []*dive.ToolResultContent:
		blocks, ok, err := typedItems(c)
		if err != nil {
			return nil, err
		}
		if ok {
			m.Content = blocks
			break
		}
		if err := genericContent(m, &d, c); err != nil {
			return nil, err
		}
	default:
		if err := genericContent(m, &d, c); err != nil {
			return nil, err
		}
	}
	if err := setInfo(m, &d); err != nil {
		return nil, err
	}
	return m, nil
}

// typedItems converts Dive's tool result items when they are all text and
// base64 image items (the usual case, a tool's ToolResult.Content).
func typedItems(items []*dive.ToolResultContent) ([]as.Block, bool, error) {
	blocks := make([]as.Block, 0, len(items))
	for _, it := range items {
		if it == nil {
			return nil, false, nil
		}
		var b as.Block
		switch it.Type {
		case dive.ToolResultContentTypeText:
			if it.Data != "" || it.MimeType != "" {
				return nil, false, nil
			}
			b = as.Text(it.Text)
		case dive.ToolResultContentTypeImage:
			if it.Text != "" {
				return nil, false, nil
			}
			b = as.ImageBase64(it.MimeType, it.Data)
		case dive.ToolResultContentTypeAudio:
			if it.Text != "" {
				return nil, false, nil
			}
			b = as.Block{Type: as.BlockAudio, Data: it.Data, MimeType: it.MimeType}
		default:
			return nil, false, nil
		}
		if it.Annotations != nil {
			raw, err := json.Marshal(map[string]any{"annotations": it.Annotations})
			if err != nil {
				return nil, false, err
			}
			b.Extra.Set(diveKey, raw)
		}
		blocks = append(blocks, b)
	}
	return blocks, true, nil
}

// genericContent converts tool result content of any other Go type by its
// JSON.
func genericContent(m *as.Message, d *msgInfo, content any) error {
	raw, err := json.Marshal(content)
	if err != nil {
		return err
	}
	switch {
	case bytes.Equal(raw, []byte("null")):
		d.Form, m.Content = "null", []as.Block{}
		return nil
	case len(raw) > 0 && raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		d.Form, m.Content = "string", []as.Block{as.Text(s)}
		return nil
	case len(raw) > 0 && raw[0] == '[':
		if blocks, ok := itemBlocks(raw); ok {
			m.Content = blocks
			return nil
		}
	}
	d.Content = raw
	m.Content = []as.Block{as.Text(string(raw))}
	return nil
}

// itemBlocks converts a JSON list of Dive tool result items, when each is
// an object with a type. Text and image items with only their own members
// (and annotations) become text and image blocks; others blocks of type
// "dive.<type>".
func itemBlocks(raw []byte) ([]as.Block, bool) {
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, false
	}
	blocks := make([]as.Block, 0, len(items))
	for _, it := range items {
		var typ string
		if t, ok := it["type"]; !ok || json.Unmarshal(t, &typ) != nil || typ == "" {
			return nil, false
		}
		b, ok := itemBlock(typ, it)
		if !ok {
			b = as.Block{Type: diveBlockPrefix + typ}
			for k, v := range sortedMembers(it) {
				if k != "type" {
					b.Extra.Set(k, v)
				}
			}
		}
		blocks = append(blocks, b)
	}
	return blocks, true
}

func itemBlock(typ string, it map[string]json.RawMessage) (as.Block, bool) {
	str := func(k string) (string, bool) {
		v, ok := it[k]
		if !ok {
			return "", true
		}
		var s string
		return s, json.Unmarshal(v, &s) == nil
	}
	var b as.Block
	allowed := map[string]bool{"type": true, "annotations": true}
	switch typ {
	case "text":
		s, ok := str("text")
		if !ok {
			return b, false
		}
		b, allowed["text"] = as.Text(s), true
	case "image", "audio":
		data, ok1 := str("data")
		mime, ok2 := str("mimeType")
		if !ok1 || !ok2 {
			return b, false
		}
		b, allowed["data"], allowed["mimeType"] = as.ImageBase64(mime, data), true, true
		if typ == "audio" {
			b.Type = as.BlockAudio
		}
	default:
		return b, false
	}
	for k := range it {
		if !allowed[k] {
			return b, false
		}
	}
	if a, ok := it["annotations"]; ok {
		b.Extra.Set(diveKey, append(append([]byte(`{"annotations":`), a...), '}'))
	}
	return b, true
}

// toBlocks converts Dive content blocks other than tool results.
func toBlocks(content []llm.Content) ([]as.Block, error) {
	blocks := make([]as.Block, 0, len(content))
	for _, c := range content {
		b, err := toBlock(c)
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

func toBlock(c llm.Content) (as.Block, error) {
	switch c := c.(type) {
	case nil:
		return as.Block{}, fmt.Errorf("nil content block")
	case *llm.TextContent:
		b := as.Text(c.Text)
		if len(c.Citations) > 0 {
			raw, err := json.Marshal(c.Citations)
			if err != nil {
				return as.Block{}, err
			}
			b.Citations = raw
		}
		if c.CacheControl == nil && c.Metadata == nil {
			return b, nil
		}
		return withRest(b, c, "type", "text", "citations")
	case *llm.RefusalContent:
		b := as.Refusal(c.Text)
		if c.CacheControl == nil {
			return b, nil
		}
		return withRest(b, c, "type", "text")
	case *llm.DocumentContent:
		if b, ok, err := documentBlock(c); ok || err != nil {
			return b, err
		}
	case *llm.ThinkingContent:
		b := as.Thinking(c.Thinking, c.Signature)
		if c.ID == "" && c.Metadata == nil {
			return b, nil
		}
		return withRest(b, c, "type", "thinking", "signature")
	case *llm.RedactedThinkingContent:
		return as.RedactedThinking(c.Data), nil
	case *llm.ToolUseContent:
		args := c.Input
		if len(args) == 0 {
			args = json.RawMessage("{}") // as Dive writes it
		} else if !json.Valid(args) {
			return as.Block{}, fmt.Errorf("tool_use %s (%s): input is not JSON", c.ID, c.Name)
		}
		b := as.ToolCall(c.ID, c.Name, append(json.RawMessage(nil), args...))
		if c.CacheControl == nil && c.Metadata == nil {
			return b, nil
		}
		return withRest(b, c, "type", "id", "name", "input")
	case *llm.ImageContent:
		if c.Source != nil && c.Source.Type == llm.ContentSourceTypeBase64 {
			b := as.ImageBase64(c.Source.MediaType, c.Source.Data)
			src := *c.Source
			src.Type, src.MediaType, src.Data = llm.ContentSourceTypeBase64, "", ""
			if c.CacheControl == nil && reflect.DeepEqual(src, llm.ContentSource{Type: llm.ContentSourceTypeBase64}) {
				return b, nil
			}
			return withRest(b, &llm.ImageContent{Source: &src, CacheControl: c.CacheControl}, "type")
		}
	}
	return opaqueBlock(c)
}

// documentBlock converts a document to agentsession's document block,
// when the block gives it back as it is (false: it is kept whole as
// "dive.document").
func documentBlock(c *llm.DocumentContent) (as.Block, bool, error) {
	src := c.Source
	if src == nil || len(src.Content) > 0 || src.GenerationID != "" || src.GenerationStatus != "" {
		return as.Block{}, false, nil
	}
	var b as.Block
	switch src.Type {
	case llm.ContentSourceTypeBase64:
		b = as.DocumentBase64(src.MediaType, src.Data)
	case llm.ContentSourceTypeText:
		b = as.TextDocument(src.Data)
		b.MimeType = src.MediaType
	case llm.ContentSourceTypeURL:
		b = as.DocumentURL(src.URL)
		b.MimeType = src.MediaType
	case llm.ContentSourceTypeFile:
		b = as.DocumentFile(src.FileID)
		b.MimeType = src.MediaType
	default:
		return as.Block{}, false, nil
	}
	b = b.WithTitle(c.Title).WithContext(c.Context)
	if c.Citations != nil {
		raw, err := json.Marshal(c.Citations)
		if err != nil {
			return as.Block{}, false, err
		}
		b.Citations = raw
	}
	if c.CacheControl != nil {
		raw, err := json.Marshal(map[string]any{"cache_control": c.CacheControl})
		if err != nil {
			return as.Block{}, false, err
		}
		b.Extra.Set(diveKey, raw)
	}
	// Only what comes back as it was (a base64 source without data, or a
	// text source with data in it and another field, would not).
	back, err := documentContent(&b)
	if err != nil {
		return as.Block{}, false, nil
	}
	orig, err1 := json.Marshal(c)
	again, err2 := json.Marshal(back)
	if err1 != nil || err2 != nil || !bytes.Equal(orig, again) {
		return as.Block{}, false, nil
	}
	return b, true, nil
}

// documentContent converts a document block back.
func documentContent(b *as.Block) (llm.Content, error) {
	src := &llm.ContentSource{MediaType: b.MimeType}
	switch {
	case b.URL != "":
		src.Type, src.URL = llm.ContentSourceTypeURL, b.URL
	case b.FileID != "":
		src.Type, src.FileID = llm.ContentSourceTypeFile, b.FileID
	case b.Data != "":
		src.Type, src.Data = llm.ContentSourceTypeBase64, b.Data
	default:
		src.Type, src.Data = llm.ContentSourceTypeText, b.Text
	}
	d := &llm.DocumentContent{Source: src, Title: b.Title, Context: b.Context}
	if b.Citations != nil {
		d.Citations = new(llm.CitationSettings)
		if err := json.Unmarshal(b.Citations, d.Citations); err != nil {
			return nil, err
		}
	}
	if rest, ok := b.Extra.Get(diveKey); ok {
		var r struct {
			CacheControl *llm.CacheControl `json:"cache_control"`
		}
		if err := json.Unmarshal(rest, &r); err != nil {
			return nil, err
		}
		d.CacheControl = r.CacheControl
	}
	return d, nil
}

// withRest puts the members of c's JSON other than skip under the block's
// "dive" member.
func withRest(b as.Block, c llm.Content, skip ...string) (as.Block, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return as.Block{}, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return as.Block{}, err
	}
	for _, k := range skip {
		delete(members, k)
	}
	if len(members) == 0 {
		return b, nil
	}
	rest, err := json.Marshal(members)
	if err != nil {
		return as.Block{}, err
	}
	b.Extra.Set(diveKey, rest)
	return b, nil
}

// opaqueBlock keeps a block in Dive's own JSON, as a block of type
// "dive.<type>".
func opaqueBlock(c llm.Content) (as.Block, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return as.Block{}, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return as.Block{}, fmt.Errorf("content block %T is not a JSON object: %w", c, err)
	}
	b := as.Block{Type: diveBlockPrefix + string(c.Type())}
	for k, v := range sortedMembers(members) {
		if k != "type" {
			b.Extra.Set(k, v)
		}
	}
	return b, nil
}

// ---- agentsession → Dive ----

// piece is what one agentsession message becomes in Dive's view,
// converted once (see pieceCache): a message or its part, a tool result
// with the blocks before it, a compaction summary's messages, or nothing
// (a suspended call's placeholder). A piece is never changed once made:
// the reader hands out copies of its messages and content blocks.
type piece struct {
	kind    pieceKind
	info    msgInfo
	role    llm.Role       // pieceMessage, pieceOther
	content []llm.Content  // pieceMessage, pieceOther, pieceResult (before, then the tool_result)
	msgs    []*llm.Message // pieceSummary
}

type pieceKind uint8

const (
	pieceSkip    pieceKind = iota // left out of Dive's view
	pieceMessage                  // a user or assistant message, or a part of one
	pieceResult                   // a tool result
	pieceSummary                  // a compaction summary, as Dive messages
	pieceOther                    // any other role: a user message of its content
)

// convertPiece converts m. summary converts compaction summaries (nil:
// as text, like any other role).
func convertPiece(m *as.Message, summary func(*as.Message) ([]*llm.Message, error)) (*piece, error) {
	switch m.Role {
	case as.RoleCompactionSummary:
		if summary != nil {
			msgs, err := summary(m)
			if err != nil {
				return nil, err
			}
			return &piece{kind: pieceSummary, msgs: msgs}, nil
		}
	case as.RoleToolResult:
		if m.Synthetic() && !m.IsError && joinText(m.Content) == as.SuspendedResultText {
			// The placeholder agentsession's model view gives a suspended
			// call that messages follow: Dive keeps the turn as it was
			// saved, and merges the results itself when it resumes.
			return &piece{kind: pieceSkip}, nil
		}
		return resultPiece(m)
	case as.RoleUser, as.RoleAssistant:
		d, err := infoOf(m)
		if err != nil {
			return nil, err
		}
		content, err := fromBlocks(m.Content)
		if err != nil {
			return nil, err
		}
		role := llm.User
		if m.Role == as.RoleAssistant {
			role = llm.Assistant
		}
		if d.Role != "" {
			role = llm.Role(d.Role)
		}
		return &piece{kind: pieceMessage, info: d, role: role, content: content}, nil
	}
	blocks, ok := as.UserContent(m)
	if !ok {
		blocks = m.Content
	}
	content, err := fromBlocks(blocks)
	if err != nil {
		return nil, err
	}
	return &piece{kind: pieceOther, role: llm.User, content: content}, nil
}

func resultPiece(m *as.Message) (*piece, error) {
	d, err := infoOf(m)
	if err != nil {
		return nil, err
	}
	content := make([]llm.Content, 0, 1+len(d.Before))
	for _, raw := range d.Before {
		c, err := llm.UnmarshalContent(raw)
		if err != nil {
			return nil, err
		}
		content = append(content, c)
	}
	tr, err := toolResultContent(m, &d)
	if err != nil {
		return nil, err
	}
	content = append(content, tr)
	role := llm.User
	if d.Role != "" {
		role = llm.Role(d.Role)
	}
	return &piece{kind: pieceResult, info: d, role: role, content: content}, nil
}

// reader turns a list of agentsession messages back into Dive messages,
// putting split messages back together. What it returns is the caller's:
// new messages, content lists and content blocks (copies of the pieces').
type reader struct {
	out []*llm.Message
	// open is the Dive message the pieces being read belong to (nil when
	// none is open), next the piece expected and of the count n.
	open    *llm.Message
	next, n int
	// results tells that the last message of out ends with tool results
	// read from toolResult messages, which a result without a piece mark
	// joins.
	results bool
}

func (r *reader) add(p *piece) {
	switch p.kind {
	case pieceSkip:
	case pieceSummary:
		for _, m := range p.msgs {
			r.push(copyMessage(m))
		}
	case pieceResult:
		r.addResult(p)
	case pieceMessage:
		r.addMessage(p)
	case pieceOther:
		r.push(&llm.Message{Role: p.role, Content: copyContents(p.content)})
	}
}

func (r *reader) push(msgs ...*llm.Message) {
	r.out = append(r.out, msgs...)
	r.open, r.results = nil, false
}

func (r *reader) addMessage(p *piece) {
	d := &p.info
	if d.Part != nil && r.continues(d.Part) {
		r.open.Content = appendContents(r.open.Content, p.content)
		r.advance(d.Part)
		r.results = false
		return
	}
	dm := &llm.Message{ID: d.ID, Role: p.role, Content: copyContents(p.content)}
	r.push(dm)
	if d.Part != nil {
		r.open = dm
		r.advance(d.Part)
	}
}

func (r *reader) addResult(p *piece) {
	d := &p.info
	switch {
	case d.Part != nil && r.continues(d.Part):
		r.open.Content = appendContents(r.open.Content, p.content)
		r.advance(d.Part)
	case d.Part != nil:
		dm := &llm.Message{ID: d.ID, Role: p.role, Content: copyContents(p.content)}
		r.push(dm)
		r.open = dm
		r.advance(d.Part)
	case r.open != nil || r.results:
		// A result without a mark (another agent's, or one Messages
		// synthesized for a call left unanswered) joins the tool results
		// before it: Dive sends the results of one reply in one message.
		last := r.out[len(r.out)-1]
		last.Content = appendContents(last.Content, p.content)
	default:
		r.push(&llm.Message{Role: llm.User, Content: copyContents(p.content)})
	}
	r.results = true
}

// continues tells whether piece part continues the open message.
func (r *reader) continues(part *[2]int) bool {
	return r.open != nil && part[0] > 0 && part[0] == r.next && part[1] == r.n
}

func (r *reader) advance(part *[2]int) {
	r.next, r.n = part[0]+1, part[1]
	if r.next >= r.n {
		r.open = nil
	}
}

// toolResultContent rebuilds the tool_result block of a toolResult
// message, through Dive's JSON decoder, as Dive's own stores read it back.
func toolResultContent(m *as.Message, d *msgInfo) (llm.Content, error) {
	var content json.RawMessage
	switch {
	case d.Content != nil:
		content = d.Content
	case d.Form == "null":
		content = nil
	case d.Form == "string":
		raw, err := json.Marshal(joinText(m.Content))
		if err != nil {
			return nil, err
		}
		content = raw
	default:
		raw, err := itemsJSON(m.Content)
		if err != nil {
			return nil, err
		}
		content = raw
	}
	obj := struct {
		Type         string            `json:"type"`
		ToolUseID    string            `json:"tool_use_id"`
		Content      json.RawMessage   `json:"content,omitempty"`
		IsError      bool              `json:"is_error,omitempty"`
		CacheControl *llm.CacheControl `json:"cache_control,omitempty"`
	}{"tool_result", m.ToolCallID, content, m.IsError, d.CacheControl}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return llm.UnmarshalContent(raw)
}

func joinText(blocks []as.Block) string {
	var sb strings.Builder
	for _, b := range blocks {
		if b.Type == as.BlockText {
			sb.WriteString(b.Text)
		}
	}
	return sb.String()
}

// itemsJSON writes a toolResult message's blocks as the items of Dive's
// tool result content.
func itemsJSON(blocks []as.Block) (json.RawMessage, error) {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for k, b := range blocks {
		if k > 0 {
			buf.WriteByte(',')
		}
		var members []member
		switch b.Type {
		case as.BlockText:
			members = []member{{"type", jsonString("text")}, {"text", jsonString(b.Text)}}
		case as.BlockImage, as.BlockAudio:
			members = []member{{"type", jsonString(b.Type)}, {"data", jsonString(b.Data)}, {"mimeType", jsonString(b.MimeType)}}
		case as.BlockThinking:
			members = []member{{"type", jsonString("text")}, {"text", jsonString(b.Thinking)}}
		default:
			if !strings.HasPrefix(b.Type, diveBlockPrefix) {
				// A block Dive has no item for: its JSON as text.
				raw, err := json.Marshal(b)
				if err != nil {
					return nil, err
				}
				members = []member{{"type", jsonString("text")}, {"text", jsonString(string(raw))}}
				break
			}
			ms, err := opaqueMembers(&b)
			if err != nil {
				return nil, err
			}
			members = ms
		}
		if rest, ok := b.Extra.Get(diveKey); ok && (b.Type == as.BlockText || b.Type == as.BlockImage || b.Type == as.BlockAudio) {
			var more map[string]json.RawMessage
			if err := json.Unmarshal(rest, &more); err != nil {
				return nil, err
			}
			for k, v := range sortedMembers(more) {
				members = append(members, member{k, v})
			}
		}
		writeObject(&buf, members)
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

// fromBlocks converts agentsession blocks to Dive content.
func fromBlocks(blocks []as.Block) ([]llm.Content, error) {
	out := make([]llm.Content, 0, len(blocks))
	for k := range blocks {
		c, err := fromBlock(&blocks[k])
		if err != nil {
			return nil, err
		}
		if c != nil {
			out = append(out, c)
		}
	}
	return out, nil
}

func fromBlock(b *as.Block) (llm.Content, error) {
	rest, hasRest := b.Extra.Get(diveKey)
	switch b.Type {
	case as.BlockText:
		if !hasRest && b.Citations == nil {
			return &llm.TextContent{Text: b.Text}, nil
		}
		ms := []member{{"type", jsonString("text")}, {"text", jsonString(b.Text)}}
		if b.Citations != nil {
			ms = append(ms, member{"citations", b.Citations})
		}
		return decodeWith(rest, ms...)
	case as.BlockRefusal:
		if !hasRest {
			return &llm.RefusalContent{Text: b.Text}, nil
		}
		return decodeWith(rest, member{"type", jsonString("refusal")}, member{"text", jsonString(b.Text)})
	case as.BlockDocument:
		return documentContent(b)
	case as.BlockRedactedThinking:
		data, _ := b.RedactedData()
		return &llm.RedactedThinkingContent{Data: data}, nil
	case as.BlockThinking:
		if data, ok := b.RedactedData(); ok {
			return &llm.RedactedThinkingContent{Data: data}, nil
		}
		if !hasRest {
			return &llm.ThinkingContent{Thinking: b.Thinking, Signature: b.ThinkingSignature}, nil
		}
		ms := []member{{"type", jsonString("thinking")}, {"thinking", jsonString(b.Thinking)}}
		if b.ThinkingSignature != "" {
			ms = append(ms, member{"signature", jsonString(b.ThinkingSignature)})
		}
		return decodeWith(rest, ms...)
	case as.BlockToolCall:
		args := b.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		if !hasRest {
			return &llm.ToolUseContent{ID: b.ID, Name: b.Name, Input: append(json.RawMessage(nil), args...)}, nil
		}
		return decodeWith(rest, member{"type", jsonString("tool_use")}, member{"id", jsonString(b.ID)},
			member{"name", jsonString(b.Name)}, member{"input", args})
	case as.BlockImage:
		src := &llm.ContentSource{Type: llm.ContentSourceTypeBase64, MediaType: b.MimeType, Data: b.Data}
		img := &llm.ImageContent{Source: src}
		if hasRest {
			var r struct {
				Source       json.RawMessage   `json:"source"`
				CacheControl *llm.CacheControl `json:"cache_control"`
			}
			if err := json.Unmarshal(rest, &r); err != nil {
				return nil, err
			}
			if r.Source != nil {
				if err := json.Unmarshal(r.Source, src); err != nil {
					return nil, err
				}
				src.Type, src.MediaType, src.Data = llm.ContentSourceTypeBase64, b.MimeType, b.Data
			}
			img.CacheControl = r.CacheControl
		}
		return img, nil
	}
	if strings.HasPrefix(b.Type, diveBlockPrefix) {
		ms, err := opaqueMembers(b)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		writeObject(&buf, ms)
		return llm.UnmarshalContent(buf.Bytes())
	}
	// A block of a type neither agentsession nor this package writes
	// (another agent's): Dive's decoder, if it knows the type.
	raw, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	if c, err := llm.UnmarshalContent(raw); err == nil {
		return c, nil
	}
	return nil, nil // a block Dive cannot hold is left out
}

// opaqueMembers returns the members of Dive's JSON of a block kept as
// "dive.<type>": its members as agentsession writes them (a decoded block
// holds those of them it models in its typed fields), with Dive's type.
func opaqueMembers(b *as.Block) ([]member, error) {
	raw, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, err
	}
	ms := make([]member, 0, len(all))
	ms = append(ms, member{"type", jsonString(strings.TrimPrefix(b.Type, diveBlockPrefix))})
	for k, v := range sortedMembers(all) {
		if k != "type" {
			ms = append(ms, member{k, v})
		}
	}
	return ms, nil
}

// decodeWith decodes the Dive block made of ms and the members of rest.
func decodeWith(rest json.RawMessage, ms ...member) (llm.Content, error) {
	var more map[string]json.RawMessage
	if rest != nil {
		if err := json.Unmarshal(rest, &more); err != nil {
			return nil, err
		}
	}
	for k, v := range sortedMembers(more) {
		ms = append(ms, member{k, v})
	}
	var buf bytes.Buffer
	writeObject(&buf, ms)
	return llm.UnmarshalContent(buf.Bytes())
}

// fromAgent converts agentsession messages (written by this package or
// any other agent) to Dive messages. summary converts compaction
// summaries (nil: as text).
func fromAgent(msgs []*as.Message, summary func(*as.Message) ([]*llm.Message, error)) ([]*llm.Message, error) {
	pieces := make([]*piece, len(msgs))
	for i, m := range msgs {
		p, err := convertPiece(m, summary)
		if err != nil {
			return nil, err
		}
		pieces[i] = p
	}
	return fromPieces(pieces), nil
}

// fromPieces puts converted pieces together as Dive messages, new ones
// the caller owns.
func fromPieces(pieces []*piece) []*llm.Message {
	r := reader{out: make([]*llm.Message, 0, len(pieces))}
	for _, p := range pieces {
		r.add(p)
	}
	return r.out
}

// ---- usage ----

// toUsage converts Dive's usage of a turn. What agentsession's Usage does
// not model (reasoning and tool-use tokens, modalities, service tier,
// speed, the flags, the cost's currency and source) is kept whole: Dive's
// usage JSON under the member "dive".
func toUsage(u *llm.Usage) (*as.Usage, error) {
	if u == nil {
		return nil, nil
	}
	au := &as.Usage{
		Input:      int64(u.InputTokens),
		Output:     int64(u.OutputTokens),
		CacheRead:  int64(u.CacheReadInputTokens),
		CacheWrite: int64(u.CacheCreationInputTokens),
	}
	au.TotalTokens = au.Input + au.Output + au.CacheRead + au.CacheWrite
	au.ReasoningTokens, au.ServiceTier = int64(u.ReasoningTokens), u.ServiceTier
	if c := u.Cost; c != nil {
		au.Cost = as.Cost{Input: c.Input, Output: c.Output, CacheRead: c.CacheRead, CacheWrite: c.CacheWrite, Total: c.Total}
	}
	if !reflect.DeepEqual(fromUsage(au), u) {
		raw, err := json.Marshal(u)
		if err != nil {
			return nil, err
		}
		au.Extra.Set(diveKey, raw)
	}
	return au, nil
}

// fromUsage converts a usage back (nil for nil).
func fromUsage(au *as.Usage) *llm.Usage {
	if au == nil {
		return nil
	}
	if raw, ok := au.Extra.Get(diveKey); ok {
		var u llm.Usage
		if json.Unmarshal(raw, &u) == nil {
			return &u
		}
	}
	u := &llm.Usage{
		InputTokens:              int(au.Input),
		OutputTokens:             int(au.Output),
		CacheReadInputTokens:     int(au.CacheRead),
		CacheCreationInputTokens: int(au.CacheWrite),
		ReasoningTokens:          int(au.ReasoningTokens),
		ServiceTier:              au.ServiceTier,
	}
	if c := au.Cost; c.Input != 0 || c.Output != 0 || c.CacheRead != 0 || c.CacheWrite != 0 || c.Total != 0 {
		u.Cost = &llm.Cost{Input: c.Input, Output: c.Output, CacheRead: c.CacheRead, CacheWrite: c.CacheWrite, Total: c.Total}
	}
	return u
}

// ---- JSON helpers ----

type member struct {
	key   string
	value json.RawMessage
}

func jsonString(s string) json.RawMessage {
	raw, _ := json.Marshal(s)
	return raw
}

func writeObject(buf *bytes.Buffer, ms []member) {
	buf.WriteByte('{')
	for k, m := range ms {
		if k > 0 {
			buf.WriteByte(',')
		}
		buf.Write(jsonString(m.key))
		buf.WriteByte(':')
		buf.Write(m.value)
	}
	buf.WriteByte('}')
}

// sortedMembers yields the members of an object in key order, so that
// what is written does not depend on map order.
func sortedMembers(m map[string]json.RawMessage) iter.Seq2[string, json.RawMessage] {
	return func(yield func(string, json.RawMessage) bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}
