package openai

import (
	"github.com/agentsession/session/provider/internal/wire"
)

// MarshalError reports a member of a request that has no JSON encoding:
// raw JSON (a tool's parameters, Extra, a tool_choice that does not
// marshal) that is not valid JSON, or a temperature that is NaN or
// infinite. encoding/json fails on the same values.
type MarshalError = wire.MarshalError

// AppendJSON appends the request's JSON body to dst and returns the
// extended buffer. The bytes are those encoding/json writes for the
// request's fields with HTML escaping off (an Encoder after
// SetEscapeHTML(false)): '<', '>' and '&' are written as they are, which
// the API reads the same; json.Marshal, which escapes them, gives
// encoding/json's bytes exactly (MarshalJSON returns these, and
// json.Marshal escapes them as it checks them). Raw members (tool
// parameters) are validated and compacted as encoding/json does a
// json.RawMessage; one that is not valid JSON is a *MarshalError, and dst
// is then returned as it was given. ToolChoice, when it is neither a
// string nor a json.RawMessage, goes through encoding/json. Extra comes
// last.
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
	b = wire.Array(wire.Key(b, "messages"), r.Messages, (*Message).appendJSON)
	if len(r.Tools) > 0 {
		if b, err = wire.ArrayErr(wire.Key(b, "tools"), r.Tools, (*Tool).appendJSON); err != nil {
			return b, err
		}
	}
	if b, err = wire.Any(b, "tool_choice", r.ToolChoice); err != nil {
		return b, err
	}
	if r.ParallelToolCalls != nil {
		b = wire.Bool(b, "parallel_tool_calls", *r.ParallelToolCalls)
	}
	if r.MaxCompletionTokens != 0 {
		b = wire.Int(b, "max_completion_tokens", int64(r.MaxCompletionTokens))
	}
	b = wire.OptString(b, "reasoning_effort", r.ReasoningEffort)
	if r.Temperature != nil {
		if b, err = wire.Float(b, "temperature", *r.Temperature); err != nil {
			return b, err
		}
	}
	if len(r.Stop) > 0 {
		b = append(wire.Key(b, "stop"), '[')
		for _, s := range r.Stop {
			b = wire.AppendString(wire.Sep(b), s)
		}
		b = append(b, ']')
	}
	if r.Stream {
		b = wire.Bool(b, "stream", true)
	}
	if o := r.StreamOptions; o != nil {
		b = append(wire.Key(b, "stream_options"), '{')
		b = append(wire.Bool(b, "include_usage", o.IncludeUsage), '}')
	}
	if b, err = wire.Extra(b, r.Extra); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

// MarshalJSON writes the message's members; see Message.
func (m Message) MarshalJSON() ([]byte, error) { return m.appendJSON(nil), nil }

func (m *Message) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = wire.String(b, "role", m.Role)
	switch {
	case m.Parts != nil:
		b = wire.Array(wire.Key(b, "content"), m.Parts, (*Part).appendJSON)
	case m.Content != "" || m.Role != "assistant" || len(m.ToolCalls) == 0:
		b = wire.String(b, "content", m.Content)
	}
	b = wire.OptString(b, "reasoning_content", m.ReasoningContent)
	b = wire.OptString(b, "refusal", m.Refusal)
	if len(m.ToolCalls) > 0 {
		b = append(wire.Key(b, "tool_calls"), '[')
		for i := range m.ToolCalls {
			c := &m.ToolCalls[i]
			b = append(wire.Sep(b), '{')
			b = wire.String(b, "id", c.ID)
			b = wire.String(b, "type", c.Type)
			b = append(wire.Key(b, "function"), '{')
			b = wire.String(b, "name", c.Function.Name)
			b = wire.String(b, "arguments", c.Function.Arguments)
			b = append(b, '}', '}')
		}
		b = append(b, ']')
	}
	b = wire.OptString(b, "tool_call_id", m.ToolCallID)
	b = wire.OptString(b, "name", m.Name)
	return append(b, '}')
}

func (p *Part) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = wire.String(b, "type", p.Type)
	b = wire.OptString(b, "text", p.Text)
	if u := p.ImageURL; u != nil {
		b = append(wire.Key(b, "image_url"), '{')
		b = wire.String(b, "url", u.URL)
		b = append(wire.OptString(b, "detail", u.Detail), '}')
	}
	if f := p.File; f != nil {
		b = append(wire.Key(b, "file"), '{')
		b = wire.OptString(b, "file_id", f.FileID)
		b = wire.OptString(b, "file_data", f.FileData)
		b = append(wire.OptString(b, "filename", f.Filename), '}')
	}
	if a := p.InputAudio; a != nil {
		b = append(wire.Key(b, "input_audio"), '{')
		b = wire.String(b, "data", a.Data)
		b = append(wire.String(b, "format", a.Format), '}')
	}
	return append(b, '}')
}

func (t *Tool) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	b = wire.String(b, "type", t.Type)
	f := &t.Function
	b = append(wire.Key(b, "function"), '{')
	b = wire.String(b, "name", f.Name)
	b = wire.OptString(b, "description", f.Description)
	b, err := wire.OptRaw(b, "parameters", f.Parameters)
	if err != nil {
		return b, err
	}
	if f.Strict != nil {
		b = wire.Bool(b, "strict", *f.Strict)
	}
	return append(b, '}', '}'), nil
}
