package openai

import (
	"encoding/json"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/internal/wire"
)

// ResponsesAPI is the value of Message.API for messages produced by
// OpenAI's Responses API, as pi writes it. A reply saved with it (as
// MessageFromResponses saves one) has its reasoning items sent back by
// Input.
const ResponsesAPI = "openai-responses"

// IncludeReasoning is the include value that makes the Responses API
// return each reasoning item's encrypted_content, which Input sends back
// so that a stateless conversation (store false) keeps the model's
// reasoning from one turn to the next.
const IncludeReasoning = "reasoning.encrypted_content"

// maxCallIDLen is the longest call_id the Responses API accepts.
const maxCallIDLen = 64

// ResponsesRequest is the body of a Responses API request (POST
// /v1/responses). Fields the host does not set are left out of the JSON.
// For a stateless conversation, whose reasoning Input sends back, set
// Store to false and Include to IncludeReasoning. AppendJSON writes it
// (and MarshalJSON, so json.Marshal, through it); members this type does
// not have go in Extra.
type ResponsesRequest struct {
	Model             string           `json:"model"`
	Instructions      string           `json:"instructions,omitempty"` // a system (developer) message ahead of Input
	Input             []InputItem      `json:"input"`
	Tools             []ResponsesTool  `json:"tools,omitempty"`
	ToolChoice        any              `json:"tool_choice,omitempty"` // "auto", "none", "required" or an object
	ParallelToolCalls *bool            `json:"parallel_tool_calls,omitempty"`
	MaxOutputTokens   int              `json:"max_output_tokens,omitempty"`
	Reasoning         *ReasoningConfig `json:"reasoning,omitempty"`
	Include           []string         `json:"include,omitempty"`
	Store             *bool            `json:"store,omitempty"` // the API stores responses unless this is false
	Temperature       *float64         `json:"temperature,omitempty"`
	Stream            bool             `json:"stream,omitempty"`
	PromptCacheKey    string           `json:"prompt_cache_key,omitempty"`
	// Extra is a JSON object whose members are written after the
	// request's own (text, service_tier, metadata, ...). Give a member of
	// the request in its field, not here.
	Extra json.RawMessage `json:"-"`
}

// ReasoningConfig configures a reasoning model's reasoning.
type ReasoningConfig struct {
	Effort  string `json:"effort,omitempty"`  // "minimal", "low", "medium", "high"
	Summary string `json:"summary,omitempty"` // "auto", "concise", "detailed"
}

// ResponsesTool is a function tool of a Responses request (the API's
// function tools are flat: no nested function object).
type ResponsesTool struct {
	Type        string          `json:"type"` // "function"
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // a JSON Schema object
	Strict      *bool           `json:"strict,omitempty"`
}

// InputItem is one item of ResponsesRequest.Input. Type says which fields
// apply; MarshalJSON writes exactly the members of that type:
//
//   - "message": Role ("user", "assistant", "system", "developer") and
//     Content, its parts;
//   - "function_call": CallID, Name and Arguments, a JSON object as a
//     string;
//   - "function_call_output": CallID and Output, or OutputParts (text
//     and images) instead when set;
//   - "reasoning": Summary (always written, [] when empty) and
//     EncryptedContent;
//   - any other type: every member that is set.
//
// ID, the item's own id (msg_..., fc_..., rs_...), is written when set;
// Input never sets it (see Input).
type InputItem struct {
	Type string
	ID   string

	Role    string         // message
	Content []InputContent // message

	CallID    string // function_call, function_call_output
	Name      string // function_call
	Arguments string // function_call

	Output      string         // function_call_output
	OutputParts []InputContent // function_call_output, instead of Output

	Summary          []SummaryText // reasoning
	EncryptedContent string        // reasoning
}

// InputContent is one part of a message's content, or of a function
// call's output: "input_text" (Text), "input_image" (ImageURL, a data:
// URL here, and Detail), "input_file" (FileID, or FileData, a data: URL,
// with Filename, or FileURL) or, in an assistant message, "output_text"
// (Text) and "refusal" (Refusal).
type InputContent struct {
	Type     string
	Text     string
	ImageURL string
	Detail   string // "auto", "low", "high"
	FileID   string
	FileData string
	FileURL  string
	Filename string
	Refusal  string
}

// SummaryText is one part of a reasoning item's summary.
type SummaryText struct {
	Type string `json:"type"` // "summary_text"
	Text string `json:"text"`
}

// ResponsesOptions configures a conversion to Responses input items. The
// zero value (or nil) converts with the defaults described in the package
// documentation.
type ResponsesOptions struct {
	// System is the system prompt, sent first as a message of
	// SystemRole. Empty sends none (ResponsesRequest.Instructions is the
	// other place for it).
	System string
	// SystemRole is the role of the system prompt and of the session's
	// system messages: "system" (the default) or "developer".
	SystemRole string
	// Model is the model the request goes to. When set, the reasoning
	// items of replies of other models are not sent back (their
	// encrypted content is the other model's).
	Model string
	// ThinkingAsText sends thinking that cannot go back as a reasoning
	// item (another API's or model's, or without encrypted content) as
	// output_text in <thinking> tags instead of dropping it.
	ThinkingAsText bool
	// UserContent renders the roles the API has no place for; nil means
	// session.UserContent.
	UserContent func(*session.Message) ([]session.Block, bool)
}

// Input converts msgs, as Session.Messages returns them, to the input
// items of a Responses request, preceded by the system prompt if one is
// set (see the package documentation, "Responses API requests").
func Input(msgs []*session.Message, opts *ResponsesOptions) []InputItem {
	return AppendInput(make([]InputItem, 0, len(msgs)+len(msgs)/2+1), msgs, opts)
}

// AppendInput is Input appending to dst, for a host that reuses a slice
// from one request to the next.
func AppendInput(dst []InputItem, msgs []*session.Message, opts *ResponsesOptions) []InputItem {
	var o ResponsesOptions
	if opts != nil {
		o = *opts
	}
	systemRole := o.SystemRole
	if systemRole == "" {
		systemRole = "system"
	}
	if o.System != "" {
		dst = append(dst, textMessage(systemRole, o.System))
	}
	calls := wire.NewCalls(maxCallIDLen, len(msgs)/2)
	wire.Walk(msgs, calls, wire.Handlers{
		Unanswered: func(c wire.Call) {
			dst = append(dst, InputItem{Type: "function_call_output", CallID: c.ID, Output: errorPrefix + session.SyntheticResultText})
		},
		User: func(m *session.Message) { dst = appendInputMessage(dst, m.Content) },
		System: func(m *session.Message) {
			if text := joinText(m.Content); strings.TrimSpace(text) != "" {
				dst = append(dst, textMessage(systemRole, text))
			}
		},
		Assistant:   func(m *session.Message) { dst = appendAssistantItems(dst, m, &o, calls) },
		ToolResult:  func(m *session.Message, id string) { dst = append(dst, functionOutput(m, id)) },
		Other:       func(blocks []session.Block) { dst = appendInputMessage(dst, blocks) },
		UserContent: o.UserContent,
	})
	return dst
}

func textMessage(role, text string) InputItem {
	return InputItem{Type: "message", Role: role, Content: []InputContent{{Type: "input_text", Text: text}}}
}

// appendInputMessage adds a user message of the text, image and
// document blocks of blocks; content with nothing to send is left out.
func appendInputMessage(dst []InputItem, blocks []session.Block) []InputItem {
	var parts []InputContent
	for i := range blocks {
		switch b := &blocks[i]; b.Type {
		case session.BlockText:
			if b.Text != "" {
				parts = append(parts, InputContent{Type: "input_text", Text: b.Text})
			}
		default:
			if p, ok := inputMedia(b); ok {
				parts = append(parts, p)
			}
		}
	}
	if len(parts) == 0 {
		return dst
	}
	return append(dst, InputItem{Type: "message", Role: "user", Content: parts})
}

// inputMedia returns the part of an image or document block; false for
// other blocks (audio, which Responses input does not take) and for a
// document with nothing to send. A text document goes as input_text.
func inputMedia(b *session.Block) (InputContent, bool) {
	switch b.Type {
	case session.BlockImage:
		return inputImage(b), true
	case session.BlockDocument:
		switch {
		case b.FileID != "":
			return InputContent{Type: "input_file", FileID: b.FileID}, true
		case b.Data != "":
			return InputContent{Type: "input_file", FileData: "data:" + b.MimeType + ";base64," + b.Data, Filename: b.Filename}, true
		case b.URL != "":
			return InputContent{Type: "input_file", FileURL: b.URL}, true
		case b.Text != "":
			return InputContent{Type: "input_text", Text: b.Text}, true
		}
	}
	return InputContent{}, false
}

func inputImage(b *session.Block) InputContent {
	if b.Unresolved() {
		return InputContent{Type: "input_text", Text: session.UnresolvedImageText} // a blob reference is no image
	}
	return InputContent{Type: "input_image", ImageURL: "data:" + b.MimeType + ";base64," + b.Data, Detail: "auto"}
}

// appendAssistantItems adds the items of an assistant reply, in the order
// of its blocks: runs of text as one assistant message each, reasoning
// items, function calls.
func appendAssistantItems(dst []InputItem, m *session.Message, o *ResponsesOptions, calls *wire.Calls) []InputItem {
	calls.Turn()
	own := m.API == ResponsesAPI && sameOpenAIModel(m.Model, o.Model)
	// Reasoning that nothing of the reply follows (a reply cut short, or
	// followed by blank text only) is not sent: the API rejects a
	// reasoning item without the item that followed it.
	end := 0
	for i := range m.Content {
		if b := &m.Content[i]; b.Type == session.BlockToolCall || b.Type == session.BlockText && strings.TrimSpace(b.Text) != "" {
			end = i + 1
		}
	}
	open := -1 // the index in dst of the message that text goes to
	add := func(part InputContent) {
		if open < 0 {
			dst = append(dst, InputItem{Type: "message", Role: "assistant"})
			open = len(dst) - 1
		}
		dst[open].Content = append(dst[open].Content, part)
	}
	addText := func(text string) { add(InputContent{Type: "output_text", Text: text}) }
	for i := range m.Content {
		switch b := &m.Content[i]; b.Type {
		case session.BlockText:
			if b.Text != "" {
				addText(b.Text)
			}
		case session.BlockRefusal:
			if b.Text != "" {
				add(InputContent{Type: "refusal", Refusal: b.Text})
			}
		case session.BlockThinking:
			if i >= end {
				continue
			}
			if own {
				if item, ok := reasoningItem(b.ThinkingSignature); ok {
					dst, open = append(dst, item), -1
					continue
				}
			}
			if o.ThinkingAsText && !b.Redacted && strings.TrimSpace(b.Thinking) != "" {
				addText("<thinking>\n" + b.Thinking + "\n</thinking>")
			}
		case session.BlockToolCall:
			base, _, _ := strings.Cut(b.ID, "|") // pi's "call_id|item_id"
			if base == "" {
				base = b.ID
			}
			dst = append(dst, InputItem{
				Type: "function_call", CallID: calls.CallAs(b.ID, base, b.Name), Name: b.Name,
				Arguments: arguments(b.Arguments),
			})
			open = -1
		}
	}
	return dst
}

// reasoningItem returns the reasoning item a thinking block's signature
// holds (the JSON of the reasoning output item, as MessageFromResponses
// and pi keep it), to send back: its summary and encrypted content,
// without its id. ok is false when the signature is no reasoning item or
// the item has no encrypted content, which a stateless request needs.
func reasoningItem(sig string) (InputItem, bool) {
	if len(sig) < 2 || sig[0] != '{' {
		return InputItem{}, false
	}
	var v struct {
		Type             string        `json:"type"`
		Summary          []SummaryText `json:"summary"`
		EncryptedContent string        `json:"encrypted_content"`
	}
	if json.Unmarshal([]byte(sig), &v) != nil || v.Type != "reasoning" || v.EncryptedContent == "" {
		return InputItem{}, false
	}
	if v.Summary == nil {
		v.Summary = []SummaryText{}
	}
	for i := range v.Summary {
		if v.Summary[i].Type == "" {
			v.Summary[i].Type = "summary_text"
		}
	}
	return InputItem{Type: "reasoning", Summary: v.Summary, EncryptedContent: v.EncryptedContent}, true
}

// sameOpenAIModel reports whether a reply of model may send its reasoning
// back to a request for want: the same model, or any model when want is
// "". The API reports dated ids ("gpt-5-2025-08-07") for a request made
// with the alias, so an alias matches its dated forms.
func sameOpenAIModel(model, want string) bool {
	if want == "" || model == want {
		return true
	}
	short, long := model, want
	if len(short) > len(long) {
		short, long = long, short
	}
	if !strings.HasPrefix(long, short+"-") {
		return false
	}
	date := long[len(short)+1:]
	if len(date) != 10 || date[4] != '-' || date[7] != '-' {
		return false
	}
	return isDigits(date[:4]) && isDigits(date[5:7]) && isDigits(date[8:])
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// functionOutput returns the function_call_output item of m, answering
// the call sent as id. Its output is the result's text; a result with
// images or documents has its text and those as parts instead, which the
// API takes in a function call's output.
func functionOutput(m *session.Message, id string) InputItem {
	text := joinText(m.Content)
	if m.IsError {
		text = errorPrefix + text
	}
	var parts []InputContent
	for i := range m.Content {
		if p, ok := inputMedia(&m.Content[i]); ok {
			if parts == nil && text != "" {
				parts = append(parts, InputContent{Type: "input_text", Text: text})
			}
			parts = append(parts, p)
		}
	}
	if parts == nil {
		return InputItem{Type: "function_call_output", CallID: id, Output: text}
	}
	return InputItem{Type: "function_call_output", CallID: id, OutputParts: parts}
}
