package openai

import (
	"cmp"
	"encoding/json"
	"errors"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/internal/wire"
)

// API is the value of Message.API for messages produced by the Chat
// Completions API (and the servers that speak it), as pi writes it.
const API = "openai-completions"

// Response is the body of a Chat Completions response, and what a Stream
// accumulates from the chunks of a streamed one. Decoding the JSON
// ignores members this type does not model, and a null decodes as the
// zero value.
type Response struct {
	ID                string   `json:"id"`     // "chatcmpl-..."
	Object            string   `json:"object"` // "chat.completion"
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	Choices           []Choice `json:"choices"`
	Usage             *Usage   `json:"usage,omitempty"`
	SystemFingerprint string   `json:"system_fingerprint,omitempty"`
	ServiceTier       string   `json:"service_tier,omitempty"`
}

// Choice is one completion of a response.
type Choice struct {
	Index        int             `json:"index"`
	Message      ResponseMessage `json:"message"`
	FinishReason string          `json:"finish_reason"` // "stop", "length", "tool_calls", "content_filter", ...
}

// ResponseMessage is the assistant message of a choice. The reasoning
// members are not OpenAI's: compatible servers return the model's
// reasoning in one of them (DeepSeek and llama.cpp in
// reasoning_content, others in reasoning or reasoning_text). A
// reasoning member that is not a string is ignored.
type ResponseMessage struct {
	Role             string     `json:"role"`
	Content          string     `json:"content"`
	Refusal          string     `json:"refusal,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	Reasoning        string     `json:"reasoning,omitempty"`
	ReasoningText    string     `json:"reasoning_text,omitempty"`
}

// UnmarshalJSON decodes the message, ignoring reasoning members that are
// not strings.
func (m *ResponseMessage) UnmarshalJSON(data []byte) error {
	type plain ResponseMessage // without this method
	var v struct {
		plain
		ReasoningContent json.RawMessage `json:"reasoning_content"`
		Reasoning        json.RawMessage `json:"reasoning"`
		ReasoningText    json.RawMessage `json:"reasoning_text"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*m = ResponseMessage(v.plain)
	m.ReasoningContent, m.Reasoning, m.ReasoningText = loose(v.ReasoningContent), loose(v.Reasoning), loose(v.ReasoningText)
	return nil
}

// loose returns the string raw holds, or "" when it holds anything else.
func loose(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// Usage is the token usage of a response. PromptTokens includes the
// cached tokens, and CompletionTokens the reasoning tokens. The pointer
// members are the ones whose absence matters (see the package doc).
type Usage struct {
	PromptTokens            int64                    `json:"prompt_tokens"`
	CompletionTokens        int64                    `json:"completion_tokens"`
	TotalTokens             int64                    `json:"total_tokens"`
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`

	PromptCacheHitTokens  *int64 `json:"prompt_cache_hit_tokens,omitempty"`  // DeepSeek
	PromptCacheMissTokens *int64 `json:"prompt_cache_miss_tokens,omitempty"` // DeepSeek
	CachedTokens          *int64 `json:"cached_tokens,omitempty"`            // Kimi
}

// PromptTokensDetails breaks down the prompt tokens.
type PromptTokensDetails struct {
	CachedTokens     *int64 `json:"cached_tokens,omitempty"`
	AudioTokens      int64  `json:"audio_tokens,omitempty"`
	CacheWriteTokens int64  `json:"cache_write_tokens,omitempty"` // OpenRouter
}

// CompletionTokensDetails breaks down the completion tokens.
type CompletionTokensDetails struct {
	ReasoningTokens          int64 `json:"reasoning_tokens"`
	AudioTokens              int64 `json:"audio_tokens,omitempty"`
	AcceptedPredictionTokens int64 `json:"accepted_prediction_tokens,omitempty"`
	RejectedPredictionTokens int64 `json:"rejected_prediction_tokens,omitempty"`
}

// ResponseOptions configures the conversion of a response to a message.
// The zero value (or nil) converts with the defaults.
type ResponseOptions struct {
	// Provider is the message's provider, as pi names it ("openai",
	// "deepseek", "openrouter", ...); "" means "openai".
	Provider string
	// Model is the model the request asked for (pi's model id). ""
	// keeps the model the response names. When both are known and
	// differ, the response's is kept too, as pi keeps it
	// (responseModel).
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
	CacheWrite float64
}

// The kinds of error MessageFromResponse and Stream report; errors.Is
// tells them apart. An error a server sends in a stream is an *APIError.
var (
	// ErrTruncated: the stream ended before the finish_reason.
	ErrTruncated = wire.ErrTruncated
	// ErrMalformed: data that is not what the API sends (JSON that does
	// not decode, a response without choices, tool arguments that are
	// not a JSON object).
	ErrMalformed = wire.ErrMalformed
)

// APIError is an error a server sent in a stream, as a chunk with an
// "error" member (or an SSE event named error).
type APIError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   string `json:"param"`
	Code    string `json:"code"`
}

// UnmarshalJSON decodes the error; a code or param that is not a string
// (a number, for some servers) is kept as its JSON text.
func (e *APIError) UnmarshalJSON(data []byte) error {
	var v struct {
		Message, Type json.RawMessage
		Param, Code   json.RawMessage
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*e = APIError{Message: text(v.Message), Type: text(v.Type), Param: text(v.Param), Code: text(v.Code)}
	return nil
}

// text returns the string raw holds, or raw's JSON text when it holds
// something else ("" for null).
func text(raw json.RawMessage) string {
	if s := loose(raw); s != "" || len(raw) == 0 || string(raw) == "null" {
		return s
	}
	return string(raw)
}

func (e *APIError) Error() string {
	s := "openai: "
	if e.Code != "" {
		s += e.Code + ": "
	} else if e.Type != "" {
		s += e.Type + ": "
	}
	if e.Message == "" {
		return s + "error"
	}
	return s + e.Message
}

// MessageFromResponse converts a Chat Completions response to the
// assistant message a session saves, as pi maps it (see the package
// documentation). It converts the choice of index 0. The message is not
// nil whenever resp is not: when MessageFromResponse also returns an
// error (no choices, tool arguments that are not a JSON object), the
// message is a failed reply, with StopReason "error" and the error's
// text as its ErrorMessage, which a host may save as pi does. A
// content_filter stop or a refusal is not an error of the conversion:
// its message has StopReason "error" and a nil error.
func MessageFromResponse(resp *Response, opts *ResponseOptions) (*session.Message, error) {
	if resp == nil {
		return nil, errors.New("openai: MessageFromResponse of a nil response")
	}
	r, err := reply(resp, opts)
	return r.Message(err), err
}

// first returns the choice of index 0 (or the first choice), nil when
// there is none.
func first(choices []Choice) *Choice {
	for i := range choices {
		if choices[i].Index == 0 {
			return &choices[i]
		}
	}
	if len(choices) > 0 {
		return &choices[0]
	}
	return nil
}

// newReply is a reply of api to fill in, from the host's options and
// the response's model and id.
func newReply(api string, opts *ResponseOptions, served, id string) *wire.Reply {
	var o ResponseOptions
	if opts != nil {
		o = *opts
	}
	r := &wire.Reply{API: api, Provider: cmp.Or(o.Provider, "openai"), Requested: o.Model, Served: served, ID: id}
	if p := o.Prices; p != nil {
		r.Prices = &wire.Prices{Input: p.Input, Output: p.Output, CacheRead: p.CacheRead, CacheWrite: p.CacheWrite}
	}
	return r
}

func reply(resp *Response, opts *ResponseOptions) (*wire.Reply, error) {
	r := newReply(API, opts, resp.Model, resp.ID)
	if u := resp.Usage; u != nil {
		r.Usage = usage(u)
	}
	r.Usage.ServiceTier = resp.ServiceTier
	c := first(resp.Choices)
	if c == nil {
		r.StopReason = session.StopError
		return r, wire.Malformed(nil, "openai: the response has no choices")
	}
	var err error
	m := &c.Message
	r.Content = make([]session.Block, 0, 2+len(m.ToolCalls))
	// The first reasoning member that is not empty, as pi reads it; its
	// name is the block's signature, as pi writes it, so that a
	// conversion sends the text back in the same member.
	for _, f := range [...]struct{ name, text string }{
		{"reasoning_content", m.ReasoningContent}, {"reasoning", m.Reasoning}, {"reasoning_text", m.ReasoningText},
	} {
		if f.text != "" {
			r.Content = append(r.Content, session.Thinking(f.text, f.name))
			break
		}
	}
	if m.Content != "" {
		r.Content = append(r.Content, session.Text(m.Content))
	}
	if m.Refusal != "" {
		r.Content = append(r.Content, session.Refusal(m.Refusal))
	}
	calls := 0
	for _, tc := range m.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // a custom tool's call: its input is no JSON object
		}
		args, ok := wire.Arguments([]byte(tc.Function.Arguments))
		if !ok && err == nil {
			err = wire.Malformed(nil, "openai: the arguments of tool call %s (%s) are not a JSON object", tc.ID, tc.Function.Name)
		}
		r.Content = append(r.Content, session.ToolCall(tc.ID, tc.Function.Name, args))
		calls++
	}
	r.StopReason, r.ErrorMessage = stopReason(c.FinishReason, calls > 0)
	if m.Refusal != "" {
		r.StopReason, r.ErrorMessage = session.StopError, m.Refusal
	}
	return r, err
}

// usage maps u as pi's parseChunkUsage does: the input is what was
// neither read from the cache nor written to it. The details pi does not
// keep (reasoning, audio and predicted output tokens) go in the fields
// of their own.
func usage(u *Usage) session.Usage {
	var read int64
	switch d := u.PromptTokensDetails; {
	case d != nil && d.CachedTokens != nil:
		read = *d.CachedTokens
	case u.PromptCacheHitTokens != nil:
		read = *u.PromptCacheHitTokens
	case u.CachedTokens != nil:
		read = *u.CachedTokens
	}
	v := session.Usage{Output: u.CompletionTokens, CacheRead: read}
	if d := u.PromptTokensDetails; d != nil {
		v.CacheWrite = d.CacheWriteTokens
		v.InputAudioTokens = d.AudioTokens
	}
	v.Input = max(0, u.PromptTokens-read-v.CacheWrite)
	if d := u.CompletionTokensDetails; d != nil {
		v.ReasoningTokens = d.ReasoningTokens
		v.OutputAudioTokens = d.AudioTokens
		v.AcceptedPredictionTokens = d.AcceptedPredictionTokens
		v.RejectedPredictionTokens = d.RejectedPredictionTokens
	}
	return v
}

// stopReason maps a finish_reason as pi does. A reply with tool calls
// that says "stop", or says nothing, stops for its calls (some servers
// never say "tool_calls").
func stopReason(finish string, calls bool) (reason, message string) {
	switch finish {
	case "stop", "end", "":
		if calls {
			return session.StopToolUse, ""
		}
		return session.StopEnd, ""
	case "length":
		return session.StopLength, ""
	case "tool_calls", "function_call":
		return session.StopToolUse, ""
	}
	// content_filter, network_error, model_context_window_exceeded ...
	return session.StopError, "Provider finish_reason: " + finish
}
