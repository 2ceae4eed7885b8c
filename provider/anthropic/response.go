package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/internal/wire"
)

// Response is the body of a Messages API response, and what a Stream
// accumulates from the events of a streamed one. Decoding the JSON
// ignores members this type does not model (citations, containers,
// server-tool details), and a null stop_reason or stop_sequence decodes
// as "".
type Response struct {
	ID           string          `json:"id"`   // "msg_..."
	Type         string          `json:"type"` // "message"
	Role         string          `json:"role"` // "assistant"
	Model        string          `json:"model"`
	Content      []ResponseBlock `json:"content"`
	StopReason   string          `json:"stop_reason"` // "end_turn", "max_tokens", "tool_use", "refusal", ...
	StopSequence string          `json:"stop_sequence,omitempty"`
	StopDetails  *StopDetails    `json:"stop_details,omitempty"`
	Usage        Usage           `json:"usage"`
}

// ResponseBlock is one content block of a response. Type says which
// fields apply. Blocks of other types (server_tool_use,
// web_search_tool_result, ...) decode with their Type and, for
// server_tool_use, their ID, Name and Input.
type ResponseBlock struct {
	Type string `json:"type"` // "text", "thinking", "redacted_thinking", "tool_use", ...

	Text      string          `json:"text,omitempty"`      // text
	Citations json.RawMessage `json:"citations,omitempty"` // text: an array of citation objects, or null

	Thinking  string `json:"thinking,omitempty"`  // thinking
	Signature string `json:"signature,omitempty"` // thinking
	Data      string `json:"data,omitempty"`      // redacted_thinking

	ID    string          `json:"id,omitempty"`    // tool_use
	Name  string          `json:"name,omitempty"`  // tool_use
	Input json.RawMessage `json:"input,omitempty"` // tool_use: a JSON object
}

// StopDetails says more about a stop: why the model refused.
type StopDetails struct {
	Type        string `json:"type"`               // "refusal"
	Category    string `json:"category,omitempty"` // "cyber", "bio", ...
	Explanation string `json:"explanation,omitempty"`
}

// Usage is the token usage of a response. InputTokens counts the input
// that was neither read from the cache nor written to it: the whole
// prompt is InputTokens + CacheCreationInputTokens +
// CacheReadInputTokens. OutputTokens includes thinking.
type Usage struct {
	InputTokens              int64          `json:"input_tokens"`
	OutputTokens             int64          `json:"output_tokens"`
	CacheCreationInputTokens int64          `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64          `json:"cache_read_input_tokens"`
	CacheCreation            *CacheCreation `json:"cache_creation,omitempty"`
	ServerToolUse            *ServerToolUse `json:"server_tool_use,omitempty"`
	ServiceTier              string         `json:"service_tier,omitempty"`
}

// ServerToolUse counts the requests of server-side tools.
type ServerToolUse struct {
	WebSearchRequests int64 `json:"web_search_requests"`
	WebFetchRequests  int64 `json:"web_fetch_requests"`
}

// CacheCreation splits the cache writes by how long they last.
type CacheCreation struct {
	Ephemeral5mInputTokens int64 `json:"ephemeral_5m_input_tokens"`
	Ephemeral1hInputTokens int64 `json:"ephemeral_1h_input_tokens"`
}

// ResponseOptions configures the conversion of a response to a message.
// The zero value (or nil) converts with the defaults.
type ResponseOptions struct {
	// Provider is the message's provider, as pi names it; "" means
	// "anthropic". Set it when the API is reached through another
	// provider's endpoint.
	Provider string
	// Model is the model the request asked for (pi's model id, often an
	// alias). "" keeps the model the response names, a dated id. When
	// both are known and differ, the response's is kept too, as pi keeps
	// it (responseModel).
	Model string
	// Prices, when set, gives the message's Usage.Cost; nil leaves the
	// cost zero, for the host to fill in.
	Prices *Prices
}

// Prices are a model's prices per million tokens, as pi's model
// registry gives them (Model.cost). The cost is computed as pi's
// calculateCost does, each part price / 1e6 * tokens, so that it matches
// what pi writes.
type Prices struct {
	Input      float64
	Output     float64
	CacheRead  float64
	CacheWrite float64 // cache writes that last five minutes
	// CacheWrite1h prices the cache writes that last an hour (the
	// response's usage.cache_creation says how many); 0 prices them at
	// CacheWrite, as pi's model registry does. Anthropic charges twice
	// the input price for them: set it to 2 * Input for that.
	CacheWrite1h float64
}

// RedactedThinkingText is the thinking text of a block made from a
// redacted_thinking block, as pi writes it; the block's data is kept as
// its signature, and it is marked Redacted (session.RedactedThinking).
const RedactedThinkingText = session.RedactedThinkingText

// The kinds of error MessageFromResponse and Stream report; errors.Is
// tells them apart. An error event of a stream is an *APIError.
var (
	// ErrTruncated: the stream ended before message_stop.
	ErrTruncated = wire.ErrTruncated
	// ErrMalformed: data that is not what the API sends (JSON that does
	// not decode, events out of order, tool input that is not a JSON
	// object, no stop reason).
	ErrMalformed = wire.ErrMalformed
)

// APIError is an error the API reported in a stream (an error event),
// such as an overloaded_error after the response had started.
type APIError struct {
	Type      string `json:"type"` // "overloaded_error", "api_error", ...
	Message   string `json:"message"`
	RequestID string `json:"-"`
}

func (e *APIError) Error() string {
	s := "anthropic: " + e.Type
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RequestID != "" {
		s += " (request " + e.RequestID + ")"
	}
	return s
}

// MessageFromResponse converts a Messages API response to the assistant
// message a session saves, as pi maps it (see the package
// documentation). The message is not nil whenever resp is not: when
// MessageFromResponse also returns an error (tool input that is not a
// JSON object, no stop reason), the message is a failed reply, with
// StopReason "error" and the error's text as its ErrorMessage, which a
// host may save as pi does. A refusal is not an error of the conversion:
// its message has StopReason "error" and a nil error.
func MessageFromResponse(resp *Response, opts *ResponseOptions) (*session.Message, error) {
	if resp == nil {
		return nil, errors.New("anthropic: MessageFromResponse of a nil response")
	}
	r, err := reply(resp, opts)
	if err == nil && resp.StopReason == "" {
		err = wire.Malformed(nil, "anthropic: the response has no stop_reason")
	}
	return r.Message(err), err
}

// reply maps resp; err reports tool input that is not a JSON object (the
// first such block; its arguments become {}).
func reply(resp *Response, opts *ResponseOptions) (*wire.Reply, error) {
	var o ResponseOptions
	if opts != nil {
		o = *opts
	}
	r := &wire.Reply{
		API: API, Provider: o.Provider, Requested: o.Model, Served: resp.Model, ID: resp.ID,
		Content: make([]session.Block, 0, len(resp.Content)),
	}
	if r.Provider == "" {
		r.Provider = "anthropic"
	}
	if p := o.Prices; p != nil {
		r.Prices = &wire.Prices{Input: p.Input, Output: p.Output, CacheRead: p.CacheRead, CacheWrite: p.CacheWrite, CacheWrite1h: p.CacheWrite1h}
	}
	var err error
	for i := range resp.Content {
		switch b := &resp.Content[i]; b.Type {
		case "text":
			t := session.Text(b.Text)
			t.Citations = citationList(b.Citations)
			r.Content = append(r.Content, t)
		case "thinking":
			r.Content = append(r.Content, session.Thinking(b.Thinking, b.Signature))
		case "redacted_thinking":
			r.Content = append(r.Content, session.RedactedThinking(b.Data))
		case "tool_use":
			args, ok := wire.Arguments(b.Input)
			if !ok && err == nil {
				err = wire.Malformed(nil, "anthropic: the input of tool_use %s (%s) is not a JSON object", b.ID, b.Name)
			}
			r.Content = append(r.Content, session.ToolCall(b.ID, b.Name, args))
		}
	}
	u := &resp.Usage
	r.Usage = session.Usage{
		Input: u.InputTokens, Output: u.OutputTokens,
		CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens,
		ServiceTier: u.ServiceTier,
	}
	if c := u.CacheCreation; c != nil {
		r.Usage.CacheTTL = session.CacheTTL{Ephemeral5m: c.Ephemeral5mInputTokens, Ephemeral1h: c.Ephemeral1hInputTokens}
	}
	if s := u.ServerToolUse; s != nil {
		r.Usage.Server = session.ServerToolUse{WebSearch: s.WebSearchRequests, WebFetch: s.WebFetchRequests}
	}
	r.StopReason, r.ErrorMessage = stopReason(resp)
	return r, err
}

// citationList returns the citations of a text block as a message keeps
// them: the array, compacted; nil for none (absent, null, empty) or for
// anything that is not an array.
func citationList(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil || buf.Len() < 3 || buf.Bytes()[0] != '[' {
		return nil
	}
	return buf.Bytes()
}

// stopReason maps the response's stop reason as pi does.
func stopReason(resp *Response) (reason, message string) {
	switch resp.StopReason {
	case "end_turn", "stop_sequence", "pause_turn":
		return session.StopEnd, ""
	case "max_tokens":
		return session.StopLength, ""
	case "tool_use":
		return session.StopToolUse, ""
	case "refusal":
		if d := resp.StopDetails; d != nil && d.Explanation != "" {
			return session.StopError, d.Explanation
		}
		return session.StopError, "The model refused to complete the request"
	case "sensitive":
		return session.StopError, "Provider stopped with: sensitive"
	case "":
		return session.StopError, "" // the callers report it
	}
	// model_context_window_exceeded among them: see the package doc.
	return session.StopError, "Unhandled stop reason: " + resp.StopReason
}
