package anthropic

import (
	"encoding/json"

	"github.com/agentsession/session/provider/internal/convtest"
)

// The reference the append-style marshaller is tested against: the same
// request in types that encoding/json writes by reflection, as this
// package wrote requests before it had AppendJSON (struct tags, and a
// MarshalJSON for Content that writes the members of its type through
// encoding/json).

type refRequest struct {
	Model         string       `json:"model"`
	MaxTokens     int          `json:"max_tokens"`
	System        []refContent `json:"system,omitempty"`
	Messages      []refMessage `json:"messages"`
	Tools         []Tool       `json:"tools,omitempty"` // Tool has no methods
	ToolChoice    *ToolChoice  `json:"tool_choice,omitempty"`
	Thinking      *Thinking    `json:"thinking,omitempty"`
	Temperature   *float64     `json:"temperature,omitempty"`
	StopSequences []string     `json:"stop_sequences,omitempty"`
	Stream        bool         `json:"stream,omitempty"`
}

type refMessage struct {
	Role    string       `json:"role"`
	Content []refContent `json:"content"`
}

type refContent struct{ c Content }

func refContents(cs []Content) []refContent {
	if cs == nil {
		return nil
	}
	out := make([]refContent, len(cs))
	for i, c := range cs {
		out[i] = refContent{c}
	}
	return out
}

// Reference returns r in the reference types (see above), for
// convtest.CheckAppendJSON.
func Reference(r Request) any {
	ref := refRequest{r.Model, r.MaxTokens, refContents(r.System), nil, r.Tools, r.ToolChoice, r.Thinking, r.Temperature, r.StopSequences, r.Stream}
	if r.Messages != nil {
		ref.Messages = make([]refMessage, len(r.Messages))
		for i, m := range r.Messages {
			ref.Messages[i] = refMessage{m.Role, refContents(m.Content)}
		}
	}
	return ref
}

// MarshalJSON is the Content.MarshalJSON this package had before
// AppendJSON, through encoding/json.
func (rc refContent) MarshalJSON() ([]byte, error) {
	c := rc.c
	content := refContents(c.Content)
	switch c.Type {
	case "text":
		return convtest.Encode(struct {
			Type         string          `json:"type"`
			Text         string          `json:"text"`
			Citations    json.RawMessage `json:"citations,omitempty"`
			CacheControl *CacheControl   `json:"cache_control,omitempty"`
		}{c.Type, c.Text, c.Citations, c.CacheControl}, false)
	case "document":
		return convtest.Encode(struct {
			Type         string          `json:"type"`
			Source       refDocument     `json:"source"`
			Title        string          `json:"title,omitempty"`
			Context      string          `json:"context,omitempty"`
			Citations    json.RawMessage `json:"citations,omitempty"`
			CacheControl *CacheControl   `json:"cache_control,omitempty"`
		}{c.Type, refDocument{c.Document}, c.Title, c.Context, c.Citations, c.CacheControl}, false)
	case "image":
		return convtest.Encode(struct {
			Type         string        `json:"type"`
			Source       *ImageSource  `json:"source"`
			CacheControl *CacheControl `json:"cache_control,omitempty"`
		}{c.Type, c.Source, c.CacheControl}, false)
	case "tool_use":
		input := c.Input
		if input == nil {
			input = json.RawMessage("{}")
		}
		return convtest.Encode(struct {
			Type         string          `json:"type"`
			ID           string          `json:"id"`
			Name         string          `json:"name"`
			Input        json.RawMessage `json:"input"`
			CacheControl *CacheControl   `json:"cache_control,omitempty"`
		}{c.Type, c.ID, c.Name, input, c.CacheControl}, false)
	case "tool_result":
		return convtest.Encode(struct {
			Type         string        `json:"type"`
			ToolUseID    string        `json:"tool_use_id"`
			Content      []refContent  `json:"content,omitempty"`
			IsError      bool          `json:"is_error,omitempty"`
			CacheControl *CacheControl `json:"cache_control,omitempty"`
		}{c.Type, c.ToolUseID, content, c.IsError, c.CacheControl}, false)
	case "thinking":
		return convtest.Encode(struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature"`
		}{c.Type, c.Thinking, c.Signature}, false)
	case "redacted_thinking":
		return convtest.Encode(struct {
			Type string `json:"type"`
			Data string `json:"data"`
		}{c.Type, c.Data}, false)
	}
	var source any // an image's, else a document's
	switch {
	case c.Source != nil:
		source = c.Source
	case c.Document != nil:
		source = refDocument{c.Document}
	}
	return convtest.Encode(struct {
		Type         string          `json:"type"`
		Text         string          `json:"text,omitempty"`
		Source       any             `json:"source,omitempty"`
		ID           string          `json:"id,omitempty"`
		Name         string          `json:"name,omitempty"`
		Input        json.RawMessage `json:"input,omitempty"`
		ToolUseID    string          `json:"tool_use_id,omitempty"`
		Content      []refContent    `json:"content,omitempty"`
		IsError      bool            `json:"is_error,omitempty"`
		Thinking     string          `json:"thinking,omitempty"`
		Signature    string          `json:"signature,omitempty"`
		Data         string          `json:"data,omitempty"`
		Title        string          `json:"title,omitempty"`
		Context      string          `json:"context,omitempty"`
		Citations    json.RawMessage `json:"citations,omitempty"`
		CacheControl *CacheControl   `json:"cache_control,omitempty"`
	}{c.Type, c.Text, source, c.ID, c.Name, c.Input, c.ToolUseID,
		content, c.IsError, c.Thinking, c.Signature, c.Data, c.Title, c.Context, c.Citations, c.CacheControl}, false)
}

// refDocument writes a document source as the members of its type,
// through encoding/json.
type refDocument struct{ s *DocumentSource }

func (r refDocument) MarshalJSON() ([]byte, error) {
	s := r.s
	if s == nil {
		return []byte("null"), nil
	}
	switch s.Type {
	case "base64", "text":
		return convtest.Encode(struct {
			Type      string `json:"type"`
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
		}{s.Type, s.MediaType, s.Data}, false)
	case "url":
		return convtest.Encode(struct {
			Type string `json:"type"`
			URL  string `json:"url"`
		}{s.Type, s.URL}, false)
	case "file":
		return convtest.Encode(struct {
			Type   string `json:"type"`
			FileID string `json:"file_id"`
		}{s.Type, s.FileID}, false)
	}
	return convtest.Encode(struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type,omitempty"`
		Data      string `json:"data,omitempty"`
		URL       string `json:"url,omitempty"`
		FileID    string `json:"file_id,omitempty"`
	}{s.Type, s.MediaType, s.Data, s.URL, s.FileID}, false)
}
