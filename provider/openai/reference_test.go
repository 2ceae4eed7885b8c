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
		Refusal          string     `json:"refusal,omitempty"`
		ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
		ToolCallID       string     `json:"tool_call_id,omitempty"`
		Name             string     `json:"name,omitempty"`
	}{m.Role, content, m.ReasoningContent, m.Refusal, m.ToolCalls, m.ToolCallID, m.Name}, false)
}

// The reference of ResponsesRequest: the same request in types that
// encoding/json writes by reflection, each item and part written as the
// members of its type (see InputItem), through encoding/json.

type refResponsesRequest struct {
	Model             string           `json:"model"`
	Instructions      string           `json:"instructions,omitempty"`
	Input             []refItem        `json:"input"`
	Tools             []ResponsesTool  `json:"tools,omitempty"` // ResponsesTool has no methods
	ToolChoice        any              `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool            `json:"parallel_tool_calls,omitempty"`
	MaxOutputTokens   int              `json:"max_output_tokens,omitempty"`
	Reasoning         *ReasoningConfig `json:"reasoning,omitempty"`
	Include           []string         `json:"include,omitempty"`
	Store             *bool            `json:"store,omitempty"`
	Temperature       *float64         `json:"temperature,omitempty"`
	Stream            bool             `json:"stream,omitempty"`
	PromptCacheKey    string           `json:"prompt_cache_key,omitempty"`
}

type refItem struct{ it InputItem }

type refPart struct{ c InputContent }

func refParts(cs []InputContent) []refPart {
	out := make([]refPart, len(cs)) // never nil: content is [] when empty
	for i, c := range cs {
		out[i] = refPart{c}
	}
	return out
}

// ReferenceResponses returns r in the reference types (see above), for
// convtest.CheckAppendJSON.
func ReferenceResponses(r ResponsesRequest) any {
	ref := refResponsesRequest{r.Model, r.Instructions, nil, r.Tools, r.ToolChoice, r.ParallelToolCalls,
		r.MaxOutputTokens, r.Reasoning, r.Include, r.Store, r.Temperature, r.Stream, r.PromptCacheKey}
	if r.Input != nil {
		ref.Input = make([]refItem, len(r.Input))
		for i, it := range r.Input {
			ref.Input[i] = refItem{it}
		}
	}
	return ref
}

func (ri refItem) MarshalJSON() ([]byte, error) {
	it := ri.it
	summary := it.Summary
	if summary == nil {
		summary = []SummaryText{}
	}
	switch it.Type {
	case "message":
		return convtest.Encode(struct {
			Type    string    `json:"type"`
			ID      string    `json:"id,omitempty"`
			Role    string    `json:"role"`
			Content []refPart `json:"content"`
		}{it.Type, it.ID, it.Role, refParts(it.Content)}, false)
	case "function_call":
		return convtest.Encode(struct {
			Type      string `json:"type"`
			ID        string `json:"id,omitempty"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}{it.Type, it.ID, it.CallID, it.Name, it.Arguments}, false)
	case "function_call_output":
		var output any = it.Output
		if it.OutputParts != nil {
			output = refParts(it.OutputParts)
		}
		return convtest.Encode(struct {
			Type   string `json:"type"`
			ID     string `json:"id,omitempty"`
			CallID string `json:"call_id"`
			Output any    `json:"output"`
		}{it.Type, it.ID, it.CallID, output}, false)
	case "reasoning":
		return convtest.Encode(struct {
			Type             string        `json:"type"`
			ID               string        `json:"id,omitempty"`
			Summary          []SummaryText `json:"summary"`
			EncryptedContent string        `json:"encrypted_content,omitempty"`
		}{it.Type, it.ID, summary, it.EncryptedContent}, false)
	}
	var output any
	switch {
	case len(it.OutputParts) > 0:
		output = refParts(it.OutputParts)
	case it.Output != "":
		output = it.Output
	}
	var content []refPart
	if len(it.Content) > 0 {
		content = refParts(it.Content)
	}
	return convtest.Encode(struct {
		Type             string        `json:"type"`
		ID               string        `json:"id,omitempty"`
		Role             string        `json:"role,omitempty"`
		Content          []refPart     `json:"content,omitempty"`
		CallID           string        `json:"call_id,omitempty"`
		Name             string        `json:"name,omitempty"`
		Arguments        string        `json:"arguments,omitempty"`
		Output           any           `json:"output,omitempty"`
		Summary          []SummaryText `json:"summary,omitempty"`
		EncryptedContent string        `json:"encrypted_content,omitempty"`
	}{it.Type, it.ID, it.Role, content, it.CallID, it.Name, it.Arguments, output, it.Summary, it.EncryptedContent}, false)
}

func (rp refPart) MarshalJSON() ([]byte, error) {
	c := rp.c
	switch c.Type {
	case "input_text", "output_text":
		return convtest.Encode(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{c.Type, c.Text}, false)
	case "input_image":
		return convtest.Encode(struct {
			Type     string `json:"type"`
			ImageURL string `json:"image_url"`
			Detail   string `json:"detail,omitempty"`
		}{c.Type, c.ImageURL, c.Detail}, false)
	case "input_file":
		return convtest.Encode(struct {
			Type     string `json:"type"`
			FileID   string `json:"file_id,omitempty"`
			FileData string `json:"file_data,omitempty"`
			FileURL  string `json:"file_url,omitempty"`
			Filename string `json:"filename,omitempty"`
		}{c.Type, c.FileID, c.FileData, c.FileURL, c.Filename}, false)
	case "refusal":
		return convtest.Encode(struct {
			Type    string `json:"type"`
			Refusal string `json:"refusal"`
		}{c.Type, c.Refusal}, false)
	}
	return convtest.Encode(struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		ImageURL string `json:"image_url,omitempty"`
		Detail   string `json:"detail,omitempty"`
		FileID   string `json:"file_id,omitempty"`
		FileData string `json:"file_data,omitempty"`
		FileURL  string `json:"file_url,omitempty"`
		Filename string `json:"filename,omitempty"`
		Refusal  string `json:"refusal,omitempty"`
	}{c.Type, c.Text, c.ImageURL, c.Detail, c.FileID, c.FileData, c.FileURL, c.Filename, c.Refusal}, false)
}
