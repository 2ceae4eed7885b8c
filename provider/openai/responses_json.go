package openai

import (
	"github.com/agentsession/session/provider/internal/wire"
)

// AppendJSON appends the request's JSON body to dst and returns the
// extended buffer, as Request.AppendJSON does for Chat Completions: the
// bytes encoding/json writes for the request's fields (and the members
// of each item's type) with HTML escaping off; json.Marshal gives
// encoding/json's own bytes. Tool parameters are validated and compacted
// as a json.RawMessage; one that is not valid JSON is a *MarshalError,
// and dst is then returned as it was given.
func (r ResponsesRequest) AppendJSON(dst []byte) ([]byte, error) {
	b, err := r.appendJSON(dst)
	return wire.Keep(dst, b, err)
}

// MarshalJSON returns AppendJSON(nil).
func (r ResponsesRequest) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil) }

func (r *ResponsesRequest) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, '{')
	b = wire.String(b, "model", r.Model)
	b = wire.OptString(b, "instructions", r.Instructions)
	b = wire.Array(wire.Key(b, "input"), r.Input, (*InputItem).appendJSON)
	if len(r.Tools) > 0 {
		b = append(wire.Key(b, "tools"), '[')
		for i := range r.Tools {
			t := &r.Tools[i]
			b = append(wire.Sep(b), '{')
			b = wire.String(b, "type", t.Type)
			b = wire.String(b, "name", t.Name)
			b = wire.OptString(b, "description", t.Description)
			if b, err = wire.OptRaw(b, "parameters", t.Parameters); err != nil {
				return b, err
			}
			if t.Strict != nil {
				b = wire.Bool(b, "strict", *t.Strict)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if b, err = wire.Any(b, "tool_choice", r.ToolChoice); err != nil {
		return b, err
	}
	if r.ParallelToolCalls != nil {
		b = wire.Bool(b, "parallel_tool_calls", *r.ParallelToolCalls)
	}
	if r.MaxOutputTokens != 0 {
		b = wire.Int(b, "max_output_tokens", int64(r.MaxOutputTokens))
	}
	if c := r.Reasoning; c != nil {
		b = append(wire.Key(b, "reasoning"), '{')
		b = wire.OptString(b, "effort", c.Effort)
		b = append(wire.OptString(b, "summary", c.Summary), '}')
	}
	if len(r.Include) > 0 {
		b = append(wire.Key(b, "include"), '[')
		for _, s := range r.Include {
			b = wire.AppendString(wire.Sep(b), s)
		}
		b = append(b, ']')
	}
	if r.Store != nil {
		b = wire.Bool(b, "store", *r.Store)
	}
	if r.Temperature != nil {
		if b, err = wire.Float(b, "temperature", *r.Temperature); err != nil {
			return b, err
		}
	}
	if r.Stream {
		b = wire.Bool(b, "stream", true)
	}
	b = wire.OptString(b, "prompt_cache_key", r.PromptCacheKey)
	if b, err = wire.Extra(b, r.Extra); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

// MarshalJSON writes the members of the item's type; see InputItem.
func (it InputItem) MarshalJSON() ([]byte, error) { return it.appendJSON(nil), nil }

func (it *InputItem) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = wire.String(b, "type", it.Type)
	b = wire.OptString(b, "id", it.ID)
	switch it.Type {
	case "message":
		b = wire.String(b, "role", it.Role)
		b = appendInputContents(wire.Key(b, "content"), it.Content)
	case "function_call":
		b = wire.String(b, "call_id", it.CallID)
		b = wire.String(b, "name", it.Name)
		b = wire.String(b, "arguments", it.Arguments)
	case "function_call_output":
		b = wire.String(b, "call_id", it.CallID)
		if it.OutputParts != nil {
			b = appendInputContents(wire.Key(b, "output"), it.OutputParts)
		} else {
			b = wire.String(b, "output", it.Output)
		}
	case "reasoning":
		b = appendSummary(wire.Key(b, "summary"), it.Summary)
		b = wire.OptString(b, "encrypted_content", it.EncryptedContent)
	default:
		b = wire.OptString(b, "role", it.Role)
		if len(it.Content) > 0 {
			b = appendInputContents(wire.Key(b, "content"), it.Content)
		}
		b = wire.OptString(b, "call_id", it.CallID)
		b = wire.OptString(b, "name", it.Name)
		b = wire.OptString(b, "arguments", it.Arguments)
		if len(it.OutputParts) > 0 {
			b = appendInputContents(wire.Key(b, "output"), it.OutputParts)
		} else {
			b = wire.OptString(b, "output", it.Output)
		}
		if len(it.Summary) > 0 {
			b = appendSummary(wire.Key(b, "summary"), it.Summary)
		}
		b = wire.OptString(b, "encrypted_content", it.EncryptedContent)
	}
	return append(b, '}')
}

func appendInputContents(b []byte, cs []InputContent) []byte {
	b = append(b, '[')
	for i := range cs {
		b = cs[i].appendJSON(wire.Sep(b))
	}
	return append(b, ']')
}

func appendSummary(b []byte, s []SummaryText) []byte {
	b = append(b, '[')
	for i := range s {
		b = append(wire.Sep(b), '{')
		b = wire.String(b, "type", s[i].Type)
		b = append(wire.String(b, "text", s[i].Text), '}')
	}
	return append(b, ']')
}

// MarshalJSON writes the members of the part's type: type and text for
// text parts, type, image_url and detail (when set) for images, every
// member that is set for other types.
func (c InputContent) MarshalJSON() ([]byte, error) { return c.appendJSON(nil), nil }

func (c *InputContent) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = wire.String(b, "type", c.Type)
	switch c.Type {
	case "input_text", "output_text":
		b = wire.String(b, "text", c.Text)
	case "input_image":
		b = wire.String(b, "image_url", c.ImageURL)
		b = wire.OptString(b, "detail", c.Detail)
	case "input_file":
		b = c.appendFile(b)
	case "refusal":
		b = wire.String(b, "refusal", c.Refusal)
	default:
		b = wire.OptString(b, "text", c.Text)
		b = wire.OptString(b, "image_url", c.ImageURL)
		b = wire.OptString(b, "detail", c.Detail)
		b = c.appendFile(b)
		b = wire.OptString(b, "refusal", c.Refusal)
	}
	return append(b, '}')
}

// appendFile writes the members of an input_file that are set.
func (c *InputContent) appendFile(b []byte) []byte {
	b = wire.OptString(b, "file_id", c.FileID)
	b = wire.OptString(b, "file_data", c.FileData)
	b = wire.OptString(b, "file_url", c.FileURL)
	return wire.OptString(b, "filename", c.Filename)
}
