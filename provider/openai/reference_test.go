package openai

import (
	"github.com/agentsession/session/provider/internal/convtest"
)

// The reference the append-style marshaller is tested against: the same
// request in types that encoding/json writes by reflection, as this
// package wrote requests before it had AppendJSON (struct tags, and the
// MarshalJSON Message had, through encoding/json).

type refRequest struct {
	Model               string         `json:"model"`
	Messages            []refMessage   `json:"messages"`
	Tools               []Tool         `json:"tools,omitempty"` // Tool has no methods
	ToolChoice          any            `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool          `json:"parallel_tool_calls,omitempty"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	ReasoningEffort     string         `json:"reasoning_effort,omitempty"`
	Temperature         *float64       `json:"temperature,omitempty"`
	Stop                []string       `json:"stop,omitempty"`
	Stream              bool           `json:"stream,omitempty"`
	StreamOptions       *StreamOptions `json:"stream_options,omitempty"`
}

type refMessage struct{ m Message }

// Reference returns r in the reference types (see above), for
// convtest.CheckAppendJSON.
func Reference(r Request) any {
	ref := refRequest{r.Model, nil, r.Tools, r.ToolChoice, r.ParallelToolCalls, r.MaxCompletionTokens,
		r.ReasoningEffort, r.Temperature, r.Stop, r.Stream, r.StreamOptions}
	if r.Messages != nil {
		ref.Messages = make([]refMessage, len(r.Messages))
		for i, m := range r.Messages {
			ref.Messages[i] = refMessage{m}
		}
	}
	return ref
}

// MarshalJSON is the Message.MarshalJSON this package had before
// AppendJSON, through encoding/json.
func (rm refMessage) MarshalJSON() ([]byte, error) {
	m := rm.m
	var content any
	switch {
	case m.Parts != nil:
		content = m.Parts
	case m.Content != "" || m.Role != "assistant" || len(m.ToolCalls) == 0:
		content = m.Content
	}
	return convtest.Encode(struct {
		Role             string     `json:"role"`
		Content          any        `json:"content,omitempty"`
		ReasoningContent string     `json:"reasoning_content,omitempty"`
		ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
		ToolCallID       string     `json:"tool_call_id,omitempty"`
		Name             string     `json:"name,omitempty"`
	}{m.Role, content, m.ReasoningContent, m.ToolCalls, m.ToolCallID, m.Name}, false)
}
