package anthropic

import (
	"github.com/agentsession/session/provider/internal/wire"
)

// MarshalError reports a member of a request that has no JSON encoding:
// raw JSON (a tool's input_schema, a tool_use input, Request.Extra) that
// is not valid JSON, or a temperature that is NaN or infinite.
// encoding/json fails on the same values.
type MarshalError = wire.MarshalError

// AppendJSON appends the request's JSON body to dst and returns the
// extended buffer. The bytes are those encoding/json writes for the
// request's fields with HTML escaping off (an Encoder after
// SetEscapeHTML(false)): '<', '>' and '&' are written as they are, which
// the API reads the same; json.Marshal, which escapes them, gives
// encoding/json's bytes exactly (MarshalJSON returns these, and
// json.Marshal escapes them as it checks them). Raw members (tool input
// schemas and tool_use inputs) are validated and compacted as
// encoding/json does a json.RawMessage; one that is not valid JSON is a
// *MarshalError, and dst is then returned as it was given. Request.Extra
// comes last.
//
// It writes about ten times as fast as encoding/json, and allocates only
// to grow dst: reuse dst from one request to the next.
func (r Request) AppendJSON(dst []byte) ([]byte, error) {
	b, err := r.appendJSON(dst)
	return wire.Keep(dst, b, err)
}

// MarshalJSON returns AppendJSON(nil).
func (r Request) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil) }

func (r *Request) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, '{')
	b = wire.String(b, "model", r.Model)
	b = wire.Int(b, "max_tokens", int64(r.MaxTokens))
	if len(r.System) > 0 {
		if b, err = appendContents(wire.Key(b, "system"), r.System); err != nil {
			return b, err
		}
	}
	if b, err = wire.ArrayErr(wire.Key(b, "messages"), r.Messages, (*Message).appendJSON); err != nil {
		return b, err
	}
	if len(r.Tools) > 0 {
		if b, err = wire.ArrayErr(wire.Key(b, "tools"), r.Tools, (*Tool).appendJSON); err != nil {
			return b, err
		}
	}
	if c := r.ToolChoice; c != nil {
		b = append(wire.Key(b, "tool_choice"), '{')
		b = wire.String(b, "type", c.Type)
		b = wire.OptString(b, "name", c.Name)
		if c.DisableParallelToolUse {
			b = wire.Bool(b, "disable_parallel_tool_use", true)
		}
		b = append(b, '}')
	}
	if t := r.Thinking; t != nil {
		b = append(wire.Key(b, "thinking"), '{')
		b = wire.String(b, "type", t.Type)
		if t.BudgetTokens != 0 {
			b = wire.Int(b, "budget_tokens", int64(t.BudgetTokens))
		}
		b = append(b, '}')
	}
	if r.Temperature != nil {
		if b, err = wire.Float(b, "temperature", *r.Temperature); err != nil {
			return b, err
		}
	}
	if len(r.StopSequences) > 0 {
		b = append(wire.Key(b, "stop_sequences"), '[')
		for _, s := range r.StopSequences {
			b = wire.AppendString(wire.Sep(b), s)
		}
		b = append(b, ']')
	}
	if r.Stream {
		b = wire.Bool(b, "stream", true)
	}
	if b, err = wire.Extra(b, r.Extra); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

// MarshalJSON writes the message as encoding/json writes its fields (see
// Request.AppendJSON).
func (m Message) MarshalJSON() ([]byte, error) { return m.appendJSON(nil) }

func (m *Message) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	b = wire.String(b, "role", m.Role)
	b = wire.Key(b, "content")
	if m.Content == nil {
		return append(b, "null}"...), nil
	}
	b, err := appendContents(b, m.Content)
	return append(b, '}'), err
}

func appendContents(b []byte, cs []Content) ([]byte, error) {
	var err error
	b = append(b, '[')
	for i := range cs {
		if b, err = cs[i].appendJSON(wire.Sep(b)); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// MarshalJSON writes the members of c's type.
func (c Content) MarshalJSON() ([]byte, error) { return c.appendJSON(nil) }

// appendJSON writes the members of c's type: those of the API's block of
// that type, or, for a type this package does not know, every member
// that is set.
func (c *Content) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, '{')
	b = wire.String(b, "type", c.Type)
	switch c.Type {
	case "text":
		b = wire.String(b, "text", c.Text)
		if b, err = wire.OptRaw(b, "citations", c.Citations); err != nil {
			return b, err
		}
	case "image":
		b = appendSource(wire.Key(b, "source"), c.Source)
	case "document":
		b = appendDocument(wire.Key(b, "source"), c.Document)
		b = wire.OptString(b, "title", c.Title)
		b = wire.OptString(b, "context", c.Context)
		if b, err = wire.OptRaw(b, "citations", c.Citations); err != nil {
			return b, err
		}
	case "tool_use":
		b = wire.String(b, "id", c.ID)
		b = wire.String(b, "name", c.Name)
		input := c.Input
		if input == nil {
			input = emptyObject
		}
		if b, err = wire.Raw(b, "input", input); err != nil {
			return b, err
		}
	case "tool_result":
		b = wire.String(b, "tool_use_id", c.ToolUseID)
		if len(c.Content) > 0 {
			if b, err = appendContents(wire.Key(b, "content"), c.Content); err != nil {
				return b, err
			}
		}
		if c.IsError {
			b = wire.Bool(b, "is_error", true)
		}
	case "thinking":
		b = wire.String(b, "thinking", c.Thinking)
		b = wire.String(b, "signature", c.Signature)
		return append(b, '}'), nil // no cache_control
	case "redacted_thinking":
		b = wire.String(b, "data", c.Data)
		return append(b, '}'), nil
	default:
		b = wire.OptString(b, "text", c.Text)
		switch { // an image's source, else a document's
		case c.Source != nil:
			b = appendSource(wire.Key(b, "source"), c.Source)
		case c.Document != nil:
			b = appendDocument(wire.Key(b, "source"), c.Document)
		}
		b = wire.OptString(b, "id", c.ID)
		b = wire.OptString(b, "name", c.Name)
		if b, err = wire.OptRaw(b, "input", c.Input); err != nil {
			return b, err
		}
		b = wire.OptString(b, "tool_use_id", c.ToolUseID)
		if len(c.Content) > 0 {
			if b, err = appendContents(wire.Key(b, "content"), c.Content); err != nil {
				return b, err
			}
		}
		if c.IsError {
			b = wire.Bool(b, "is_error", true)
		}
		b = wire.OptString(b, "thinking", c.Thinking)
		b = wire.OptString(b, "signature", c.Signature)
		b = wire.OptString(b, "data", c.Data)
		b = wire.OptString(b, "title", c.Title)
		b = wire.OptString(b, "context", c.Context)
		if b, err = wire.OptRaw(b, "citations", c.Citations); err != nil {
			return b, err
		}
	}
	if c.CacheControl != nil {
		b = appendCacheControl(wire.Key(b, "cache_control"), c.CacheControl)
	}
	return append(b, '}'), nil
}

func appendSource(b []byte, s *ImageSource) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	b = wire.String(b, "type", s.Type)
	b = wire.String(b, "media_type", s.MediaType)
	b = wire.String(b, "data", s.Data)
	return append(b, '}')
}

// appendDocument writes a document's source: the members of its type.
func appendDocument(b []byte, s *DocumentSource) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	b = wire.String(b, "type", s.Type)
	switch s.Type {
	case "base64", "text":
		b = wire.String(b, "media_type", s.MediaType)
		b = wire.String(b, "data", s.Data)
	case "url":
		b = wire.String(b, "url", s.URL)
	case "file":
		b = wire.String(b, "file_id", s.FileID)
	default:
		b = wire.OptString(b, "media_type", s.MediaType)
		b = wire.OptString(b, "data", s.Data)
		b = wire.OptString(b, "url", s.URL)
		b = wire.OptString(b, "file_id", s.FileID)
	}
	return append(b, '}')
}

func appendCacheControl(b []byte, c *CacheControl) []byte {
	b = append(b, '{')
	b = wire.String(b, "type", c.Type)
	b = wire.OptString(b, "ttl", c.TTL)
	return append(b, '}')
}

func (t *Tool) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	b = wire.String(b, "name", t.Name)
	b = wire.OptString(b, "description", t.Description)
	b, err := wire.Raw(b, "input_schema", t.InputSchema)
	if err != nil {
		return b, err
	}
	if t.CacheControl != nil {
		b = appendCacheControl(wire.Key(b, "cache_control"), t.CacheControl)
	}
	return append(b, '}'), nil
}
