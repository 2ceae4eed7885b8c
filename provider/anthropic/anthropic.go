// Package anthropic converts a session's messages to the request body of
// Anthropic's Messages API (POST /v1/messages), as plain Go structs that
// marshal to the wire JSON, and the API's responses back to the message a
// session saves (see Responses below). It has no SDK dependency and makes
// no network calls: the host sends the request however it likes
// (net/http, an SDK's raw-body option, a proxy).
//
// Give it what Session.Messages returns, which is pairing-safe: every tool
// result follows its call and every call has a result. The conversion then
// follows the API's rules:
//
//   - Roles: user and assistant messages keep their role; tool results
//     become tool_result blocks of a user message, all the results of one
//     assistant turn in a single message, ahead of any text. Compaction and
//     branch summaries, bash executions and custom messages become user
//     text (see session.UserContent). Consecutive messages of one role are
//     merged into one message, as the API would do.
//   - System messages (Message.Role "system") have no place among the
//     messages: Messages leaves them out, and System returns the request's
//     system prompt, Options.System followed by the text of each system
//     message in order. Set Request.System to it, or they are lost.
//   - Replies that ended in an error or were aborted (StopReason "error"
//     or "aborted", as the pi agent writes them) are not sent, as pi's own
//     converter does not send them: they may stop anywhere, and the retry
//     that usually follows is the reply that counts. The results of their
//     calls are left out with them. More generally, a tool result that
//     answers no call awaiting one (of a reply not sent, answered already,
//     or of no call) is left out.
//   - Thinking: a thinking block is sent back, with its signature, only if
//     the Anthropic Messages API produced it (Message.API is API, or the
//     provider is "anthropic" when API is empty) for the model of the
//     request (Options.Model, when set; an alias matches its dated ids);
//     redacted thinking goes back as
//     redacted_thinking. Signatures are only valid there. Other thinking is
//     dropped, or sent as plain text with Options.ThinkingAsText.
//   - The API takes thinking only at the start of an assistant message and
//     never as its last block. Thinking blocks that nothing of their reply
//     follows (a reply cut short, or followed by blank text only) are left
//     out, and so is a reply left with nothing. Thinking blocks that follow
//     other content, in one reply or in replies merged into one message,
//     are moved ahead of it, unchanged (signatures stay valid), the
//     thinking blocks and the other blocks each keeping their order.
//   - Tool call ids are kept when the API accepts them (1 to 64 bytes of
//     [A-Za-z0-9_-]) and not used by an earlier call of the request;
//     others, such as the "call|item" ids of OpenAI's Responses API, are
//     rewritten, the same way in the call and its result.
//   - Calls that Session.Messages leaves pending at the end (the agent is
//     about to run them) but that the host followed with another message
//     get an error result, as Messages gives to calls of aborted turns.
//   - Content beyond pi's: a document block (session.Document and its
//     kin) becomes a document block, its source base64, text, url or file
//     as the block holds data, text, a URL or a file id, with its title,
//     context and citations setting, in user content and tool results; a
//     text block's citations go with it; redacted thinking in oh-my-pi's
//     form (session.BlockRedactedThinking) goes back as redacted_thinking
//     as pi's form does. Audio and refusal blocks, which the API has no
//     block for, are left out.
//   - Blank text blocks, which the API rejects, are left out, and so is a
//     message left with no content. Images in assistant messages, which the
//     API does not take, are left out. Tool arguments that are not a JSON
//     object are sent as {}.
//
// # Responses
//
// MessageFromResponse converts a response (Response decodes its JSON) to
// the assistant message a session saves; a Stream accumulates the
// server-sent events of a streamed response (Add each, then Message).
// Both map it as pi's own Anthropic provider does, so that a session
// reads the same whichever of them wrote it:
//
//   - Content, in order: text becomes a text block; thinking a thinking
//     block with its signature (thinkingSignature; in a stream, the
//     thinking_delta and signature_delta pieces joined); redacted_thinking
//     a thinking block "[Reasoning redacted]" (RedactedThinkingText) marked
//     redacted, its data kept as the signature (Messages sends it back as
//     redacted_thinking); tool_use a toolCall with its id, name and input
//     as the arguments, a JSON object (in a stream, the partial_json
//     pieces joined and parsed at content_block_stop). Server tools and
//     their results are left out, as pi leaves them. The citations of a
//     text block are kept on it (Block.Citations, the API's array as it
//     came; in a stream, the citations_delta events joined), a member pi
//     ignores and Messages sends back.
//   - Usage: Input is input_tokens, the input neither read from the cache
//     nor written to it; Output output_tokens (thinking included);
//     CacheRead cache_read_input_tokens; CacheWrite
//     cache_creation_input_tokens; TotalTokens the sum of the four. In a
//     stream, message_start gives them and each message_delta replaces
//     those it reports: its counts are cumulative, and one it leaves out
//     (proxies drop input_tokens) keeps its value. Cost is zero unless
//     ResponseOptions.Prices is set; it is then computed as pi computes
//     it. Besides pi's counters, which pi keeps alone: CacheTTL splits
//     CacheWrite as cache_creation does (ephemeral_5m_input_tokens,
//     ephemeral_1h_input_tokens), Server counts server_tool_use's
//     web_search_requests and web_fetch_requests, and ServiceTier is
//     service_tier; each is written only when not zero, under
//     oh-my-pi's member names where it has them.
//   - Stop reason: end_turn, stop_sequence and pause_turn become "stop";
//     max_tokens "length";
//     tool_use "toolUse"; refusal "error", with stop_details.explanation
//     (or "The model refused to complete the request") as ErrorMessage;
//     any other "error", with "Unhandled stop reason: <reason>".
//   - API is "anthropic-messages" (API), Provider ResponseOptions.Provider
//     or "anthropic", Model the model the host asked for
//     (ResponseOptions.Model) or else the one the response names. The
//     response's id is kept in the message's member responseId, and a
//     served model that differs from the one asked for in responseModel,
//     where pi keeps them (Message.Extra). Timestamp stays zero: the
//     session sets it when the message is saved (pi records the request's
//     start: set it for that).
//
// model_context_window_exceeded ("the response filled the model's context
// window") becomes "error", as pi's provider makes it, and not "length",
// deliberately: such a reply cannot go back in the next request, which
// would be over the window before the model wrote anything, and the
// request side leaves "error" replies out where it sends "length" ones;
// and the stop reason's name in ErrorMessage is what pi's check for a
// context overflow looks for, so an agent that follows pi compacts the
// session and retries.
//
// A response the conversion cannot take whole gives an error and, still,
// a message: a failed reply, StopReason "error" and the error's text as
// ErrorMessage, holding what came, which the host may save as pi saves
// its failed replies (Messages never sends them back) or drop before it
// retries. The errors are an *APIError for an error event (overloaded,
// ...), ErrTruncated for a stream that ended before message_stop (with
// pi's text, "Anthropic stream ended before message_stop"), and
// ErrMalformed for data the API does not send (JSON that does not decode,
// events out of order, tool input that is not a JSON object, no stop
// reason).
//
// # Marshalling
//
// Request.AppendJSON writes the request's body into a buffer the host
// reuses, about ten times as fast as encoding/json, and byte for byte
// what encoding/json writes with HTML escaping off (<, > and & as they
// are, which the API reads the same). Request.MarshalJSON returns the
// same bytes, so json.Marshal of a request gives exactly encoding/json's
// bytes (it escapes <, > and & as it checks them), faster. Raw members
// are validated and compacted as a json.RawMessage is; one that is not
// valid JSON is a *MarshalError. Members the Request does not have go in
// Request.Extra (embedding a Request in a struct no longer adds that
// struct's fields: MarshalJSON is promoted).
//
// It imports the session package and provider/internal/wire, never
// another provider package.
package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/internal/wire"
)

// API is the value of Message.API for messages produced by the Anthropic
// Messages API, as the seed agents write it. Hosts that save Claude's
// replies should set it (Message.WithModel), so that their thinking blocks
// can be sent back.
const API = "anthropic-messages"

// maxToolIDLen is the longest tool_use id the API accepts.
const maxToolIDLen = 64

// Request is the body of a Messages API request. Fields the host does not
// set are left out of the JSON. AppendJSON writes it (and MarshalJSON,
// so json.Marshal, through it); members this type does not have go in
// Extra. Embedding a Request in a struct of one's own no longer adds that
// struct's fields: the promoted MarshalJSON writes the Request alone.
type Request struct {
	Model         string      `json:"model"`
	MaxTokens     int         `json:"max_tokens"`
	System        []Content   `json:"system,omitempty"` // text blocks
	Messages      []Message   `json:"messages"`
	Tools         []Tool      `json:"tools,omitempty"`
	ToolChoice    *ToolChoice `json:"tool_choice,omitempty"`
	Thinking      *Thinking   `json:"thinking,omitempty"`
	Temperature   *float64    `json:"temperature,omitempty"`
	StopSequences []string    `json:"stop_sequences,omitempty"`
	Stream        bool        `json:"stream,omitempty"`
	// Extra is a JSON object whose members are written after the
	// request's own (metadata, top_k, service_tier, ...). Give a member
	// of the request in its field, not here: the API rejects a member
	// written twice.
	Extra json.RawMessage `json:"-"`
}

// Message is one entry of Request.Messages.
type Message struct {
	Role    string    `json:"role"` // "user" or "assistant"
	Content []Content `json:"content"`
}

// Content is one content block. Type says which fields apply; MarshalJSON
// writes exactly the members of that type.
type Content struct {
	Type string // "text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking"

	Text string // text

	Source *ImageSource // image

	Document *DocumentSource // document
	Title    string          // document
	Context  string          // document
	// Citations is, for text, the citations of the text (an array of
	// citation objects) and, for a document, whether the model may cite
	// it ({"enabled":true}).
	Citations json.RawMessage

	ID    string          // tool_use
	Name  string          // tool_use
	Input json.RawMessage // tool_use: a JSON object

	ToolUseID string    // tool_result
	Content   []Content // tool_result: text and image blocks
	IsError   bool      // tool_result

	Thinking  string // thinking
	Signature string // thinking
	Data      string // redacted_thinking

	CacheControl *CacheControl // any type but thinking
}

// ImageSource is the source of an image block.
type ImageSource struct {
	Type      string `json:"type"`       // "base64"
	MediaType string `json:"media_type"` // "image/png", "image/jpeg", "image/gif", "image/webp"
	Data      string `json:"data"`       // base64
}

// DocumentSource is the source of a document block. Type says which
// fields apply: "base64" (MediaType, Data in base64), "text" (MediaType
// "text/plain", Data the text), "url" (URL) or "file" (FileID, a Files
// API id).
type DocumentSource struct {
	Type      string
	MediaType string
	Data      string
	URL       string
	FileID    string
}

// CacheControl marks a prompt-caching breakpoint.
type CacheControl struct {
	Type string `json:"type"`          // "ephemeral"
	TTL  string `json:"ttl,omitempty"` // "5m" or "1h"; empty means the API's default
}

// Tool describes a tool the model may call.
type Tool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"` // a JSON Schema object
	CacheControl *CacheControl   `json:"cache_control,omitempty"`
}

// ToolChoice says how the model should use the tools.
type ToolChoice struct {
	Type                   string `json:"type"` // "auto", "any", "tool", "none"
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

// Thinking turns extended thinking on or off.
type Thinking struct {
	Type         string `json:"type"` // "enabled" or "disabled"
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

// Text returns a text block, for Request.System and hand-built messages.
func Text(text string) Content { return Content{Type: "text", Text: text} }

// Ephemeral is the cache_control of a default prompt-caching breakpoint.
var Ephemeral = &CacheControl{Type: "ephemeral"}

// Options configures a conversion. The zero value (or nil) converts with
// the defaults described in the package documentation.
type Options struct {
	// System is the system prompt, the first block of what System
	// returns. Messages does not use it.
	System string
	// Model is the model the request goes to. When set, thinking blocks
	// of other Claude models are treated as foreign.
	Model string
	// ThinkingAsText sends foreign thinking (see the package doc) as a
	// text block wrapped in <thinking> tags instead of dropping it.
	// Redacted foreign thinking is always dropped: it is unreadable.
	ThinkingAsText bool
	// CacheLast puts an ephemeral cache_control on the last block of the
	// last message, the usual prompt-caching breakpoint of an agent loop:
	// each request then reads the previous one's prefix from the cache.
	CacheLast bool
	// UserContent renders the roles the API has no place for; nil means
	// session.UserContent.
	UserContent func(*session.Message) ([]session.Block, bool)
}

// System returns the system prompt of a request for msgs: opts.System,
// then the text of each system message of msgs (Message.Role "system"),
// in order, a text block each. Blank text is left out, and so are the
// images of a system message: the system prompt takes text only. It
// returns nil when there is nothing to send. Set Request.System to it
// (and put a cache_control on its last block to cache it).
func System(msgs []*session.Message, opts *Options) []Content {
	var out []Content
	if opts != nil && !blank(opts.System) {
		out = append(out, Text(opts.System))
	}
	for _, m := range msgs {
		if m.Role != wire.RoleSystem {
			continue
		}
		for i := range m.Content {
			if b := &m.Content[i]; b.Type == session.BlockText && !blank(b.Text) {
				out = append(out, Text(b.Text))
			}
		}
	}
	return out
}

// Messages converts msgs, as Session.Messages returns them, to the
// messages of a request. System messages are left out: System returns
// them.
func Messages(msgs []*session.Message, opts *Options) []Message {
	return AppendMessages(make([]Message, 0, len(msgs)), msgs, opts)
}

// AppendMessages is Messages appending to dst, for a host that reuses a
// slice from one request to the next.
func AppendMessages(dst []Message, msgs []*session.Message, opts *Options) []Message {
	var o Options
	if opts != nil {
		o = *opts
	}
	first := len(dst)
	calls := wire.NewCalls(maxToolIDLen, len(msgs)/2)
	wire.Walk(msgs, calls, wire.Handlers{
		Unanswered: func(c wire.Call) {
			dst = appendTo(dst, first, "user", []Content{{
				Type: "tool_result", ToolUseID: c.ID, IsError: true,
				Content: []Content{Text(session.SyntheticResultText)},
			}})
		},
		User:      func(m *session.Message) { dst = appendTo(dst, first, "user", userBlocks(m.Content)) },
		Assistant: func(m *session.Message) { dst = appendTo(dst, first, "assistant", assistantBlocks(m, &o, calls)) },
		ToolResult: func(m *session.Message, id string) {
			dst = appendTo(dst, first, "user", []Content{toolResult(m, id)})
		},
		Other:       func(blocks []session.Block) { dst = appendTo(dst, first, "user", userBlocks(blocks)) },
		UserContent: o.UserContent,
	})
	if o.CacheLast && len(dst) > first {
		markLast(&dst[len(dst)-1])
	}
	return dst
}

// appendTo adds content as a message of role, merged into the previous
// message (at or after first) when that has the same role. Merged
// assistant content keeps its thinking blocks first (see thinkingFirst).
func appendTo(dst []Message, first int, role string, content []Content) []Message {
	if len(content) == 0 {
		return dst
	}
	if n := len(dst); n > first && dst[n-1].Role == role {
		dst[n-1].Content = append(dst[n-1].Content, content...)
		if role == "assistant" {
			thinkingFirst(dst[n-1].Content)
		}
		return dst
	}
	return append(dst, Message{Role: role, Content: content})
}

func isThinking(c *Content) bool { return c.Type == "thinking" || c.Type == "redacted_thinking" }

// thinkingFirst moves the thinking blocks of an assistant message's
// content ahead of its other blocks, each kind keeping its order. The API
// rejects an assistant message with thinking anywhere but at its start
// ("If an assistant message contains any thinking blocks, the first block
// must be thinking or redacted_thinking"); the blocks themselves, and so
// their signatures, are unchanged. Content already in that order, the
// usual case, is left as it is without allocating.
func thinkingFirst(content []Content) {
	other := -1 // the first non-thinking block
	for i := range content {
		switch {
		case !isThinking(&content[i]):
			if other < 0 {
				other = i
			}
		case other >= 0:
			// A thinking block after other content: rotate the blocks
			// from other on so that the thinking ones lead.
			rest := make([]Content, 0, len(content)-other)
			k := other
			for j := other; j < len(content); j++ {
				if isThinking(&content[j]) {
					content[k] = content[j]
					k++
				} else {
					rest = append(rest, content[j])
				}
			}
			copy(content[k:], rest)
			return
		}
	}
}

// userBlocks converts the text and image blocks of user content; other
// blocks (thinking or tool calls in a custom message) have no meaning in a
// user turn and are left out.
func userBlocks(blocks []session.Block) []Content {
	dst := make([]Content, 0, len(blocks))
	for i := range blocks {
		b := &blocks[i]
		switch b.Type {
		case session.BlockText:
			if !blank(b.Text) {
				dst = append(dst, Content{Type: "text", Text: b.Text})
			}
		case session.BlockImage:
			dst = append(dst, image(b))
		case session.BlockDocument:
			if d, ok := document(b); ok {
				dst = append(dst, d)
			}
		}
	}
	return dst
}

// document returns the document block of b; false when b names no source.
func document(b *session.Block) (Content, bool) {
	var src DocumentSource
	switch {
	case b.FileID != "":
		src = DocumentSource{Type: "file", FileID: b.FileID}
	case b.URL != "":
		src = DocumentSource{Type: "url", URL: b.URL}
	case b.Data != "":
		src = DocumentSource{Type: "base64", MediaType: b.MimeType, Data: b.Data}
	case b.Text != "" || b.MimeType == "text/plain":
		src = DocumentSource{Type: "text", MediaType: "text/plain", Data: b.Text}
	default:
		return Content{}, false
	}
	c := Content{Type: "document", Document: &src, Title: b.Title, Context: b.Context}
	if b.CitationsEnabled() {
		c.Citations = citationsOn
	}
	return c, true
}

var citationsOn = json.RawMessage(`{"enabled":true}`)

// citations returns the citations of a text block to send: the array
// the block holds, nil for anything else.
func citations(b *session.Block) json.RawMessage {
	if t := bytes.TrimSpace(b.Citations); len(t) > 0 && t[0] == '[' && json.Valid(t) {
		return t
	}
	return nil
}

// blank reports whether s has nothing but white space, which the API
// rejects as a text block.
func blank(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
		default:
			return false
		}
	}
	return true
}

func image(b *session.Block) Content {
	if b.Unresolved() {
		return Text(session.UnresolvedImageText) // a blob reference is no image
	}
	return Content{Type: "image", Source: &ImageSource{Type: "base64", MediaType: b.MimeType, Data: b.Data}}
}

func assistantBlocks(m *session.Message, o *Options, calls *wire.Calls) []Content {
	calls.Turn()
	own := (m.API == API || m.API == "" && m.Provider == "anthropic") && sameModel(m.Model, o.Model)
	out := make([]Content, 0, len(m.Content))
	for i := range m.Content {
		b := &m.Content[i]
		switch b.Type {
		case session.BlockText:
			if !blank(b.Text) {
				out = append(out, Content{Type: "text", Text: b.Text, Citations: citations(b)})
			}
		case session.BlockRedactedThinking:
			if own && b.Data != "" {
				out = append(out, Content{Type: "redacted_thinking", Data: b.Data})
			}
		case session.BlockThinking:
			switch {
			case own && b.Redacted && b.ThinkingSignature != "":
				out = append(out, Content{Type: "redacted_thinking", Data: b.ThinkingSignature})
			case own && b.ThinkingSignature != "":
				out = append(out, Content{Type: "thinking", Thinking: b.Thinking, Signature: b.ThinkingSignature})
			case o.ThinkingAsText && !b.Redacted && !blank(b.Thinking):
				out = append(out, Content{Type: "text", Text: "<thinking>\n" + b.Thinking + "\n</thinking>"})
			}
		case session.BlockToolCall:
			out = append(out, Content{
				Type: "tool_use", ID: calls.Call(b.ID, b.Name), Name: b.Name,
				Input: object(b.Arguments),
			})
		}
	}
	// Thinking that nothing of the reply follows (a reply cut short, or
	// followed only by blank text) is left out: the API rejects an
	// assistant message whose final block is thinking.
	for len(out) > 0 && isThinking(&out[len(out)-1]) {
		out = out[:len(out)-1]
	}
	thinkingFirst(out)
	return out
}

// sameModel reports whether a message of model may send its thinking back
// to a request for want: the same model, or any model when want is "".
// The API reports dated ids ("claude-sonnet-4-5-20250929") for a request
// made with the alias, so an alias matches its dated forms.
func sameModel(model, want string) bool {
	if want == "" || model == want {
		return true
	}
	short, long := model, want
	if len(short) > len(long) {
		short, long = long, short
	}
	return strings.HasPrefix(long, short+"-") && isDate(long[len(short)+1:])
}

func isDate(s string) bool {
	if len(s) != 8 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

var emptyObject = json.RawMessage("{}")

// object returns args if it is a JSON object and {} otherwise: the API
// takes nothing else as a tool_use input.
func object(args json.RawMessage) json.RawMessage {
	if wire.Object(args) {
		return args
	}
	return emptyObject
}

// toolResult returns the tool_result block of m, for the call sent as id.
func toolResult(m *session.Message, id string) Content {
	// No content at all leaves the member out (omitempty).
	return Content{Type: "tool_result", ToolUseID: id, IsError: m.IsError, Content: userBlocks(m.Content)}
}

// markLast puts the default cache_control on the last block of msg that
// can carry one (not thinking).
func markLast(msg *Message) {
	for i := len(msg.Content) - 1; i >= 0; i-- {
		switch msg.Content[i].Type {
		case "thinking", "redacted_thinking":
			continue
		}
		msg.Content[i].CacheControl = Ephemeral
		return
	}
}
