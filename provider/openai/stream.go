package openai

import (
	"bytes"
	"encoding/json"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/internal/wire"
)

// Stream accumulates the chunks of a streamed Chat Completions response
// (stream: true) into the Response they describe, and converts it to a
// message. Feed it the data of every server-sent event, in order, then
// call Message:
//
//	st := openai.NewStream()
//	for each SSE event { if err := st.Add(ev.Name, ev.Data); err != nil { break } }
//	msg, err := st.Message(nil)
//
// Ask for the usage with stream_options.include_usage: it comes in a
// last chunk of its own, after the finish_reason. A Stream is not safe
// for concurrent use.
type Stream struct {
	resp    Response // all but the choices
	choices []*choice
	done    bool        // [DONE] seen
	fail    wire.Sticky // the first error of Add
}

// choice is a choice as its chunks build it; what they add is kept in
// builders, so that a long reply is accumulated in linear time.
type choice struct {
	index     int
	finish    string
	content   strings.Builder
	refusal   strings.Builder
	reasoning [3]strings.Builder // reasoning_content, reasoning, reasoning_text
	calls     []*call
}

type call struct {
	at            int // the index it streams under, -1 for none
	id, typ, name string
	args          strings.Builder
}

// NewStream returns an empty Stream.
func NewStream() *Stream { return &Stream{} }

// chunk is the data of a server-sent event: a Response whose choices
// carry deltas, or an error.
type chunk struct {
	Response
	Choices []chunkChoice `json:"choices"`
	Error   *APIError     `json:"error"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason string     `json:"finish_reason"`
	Usage        *Usage     `json:"usage"` // some servers (Moonshot) put it here
}

type chunkDelta struct {
	Content          string          `json:"content"`
	Refusal          string          `json:"refusal"`
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
	ReasoningText    json.RawMessage `json:"reasoning_text"`
	ToolCalls        []toolCallDelta `json:"tool_calls"`
}

type toolCallDelta struct {
	Index    *int         `json:"index"`
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// Add adds one server-sent event: data is a chunk of JSON, or "[DONE]",
// which ends the stream. eventType is the SSE event's name: OpenAI
// sends none, and only "error" means something (data is then an error).
// Blank data is ignored.
//
// A chunk with an "error" member returns its *APIError. Data that does
// not decode, or a chunk after [DONE], returns an error wrapping
// ErrMalformed. After an error the stream has failed: Add returns that
// error again and adds nothing more, and Message reports it.
func (s *Stream) Add(eventType string, data []byte) error {
	return s.fail.Do(func() error { return s.add(eventType, data) })
}

func (s *Stream) add(eventType string, data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case len(data) == 0:
		return nil
	case s.done:
		return wire.Malformed(nil, "openai: a chunk after [DONE]")
	case string(data) == "[DONE]":
		s.done = true
		return nil
	}
	var c chunk
	err := json.Unmarshal(data, &c)
	switch {
	case err == nil && c.Error != nil:
		return c.Error
	case eventType == "error": // the error itself, or text
		var e APIError
		if json.Unmarshal(data, &e) != nil || e == (APIError{}) {
			e = APIError{Message: string(data)}
		}
		return &e
	case err != nil:
		return wire.Malformed(err, "openai: chunk")
	}
	r := &s.resp
	// Every chunk repeats these; the first that has one gives it.
	fill(&r.ID, c.ID)
	fill(&r.Object, c.Object)
	fill(&r.Model, c.Model)
	fill(&r.SystemFingerprint, c.SystemFingerprint)
	fill(&r.ServiceTier, c.ServiceTier)
	if r.Created == 0 {
		r.Created = c.Created
	}
	if c.Usage != nil {
		r.Usage = c.Usage
	}
	for i := range c.Choices {
		s.add1(&c.Choices[i], c.Usage == nil)
	}
	return nil
}

func fill(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

// add1 adds the delta of ch to the choice of its index.
func (s *Stream) add1(ch *chunkChoice, usage bool) {
	var c *choice
	for _, x := range s.choices {
		if x.index == ch.Index {
			c = x
			break
		}
	}
	if c == nil {
		c = &choice{index: ch.Index}
		s.choices = append(s.choices, c)
	}
	if usage && ch.Usage != nil {
		s.resp.Usage = ch.Usage
	}
	if ch.FinishReason != "" {
		c.finish = ch.FinishReason
	}
	d := &ch.Delta
	c.content.WriteString(d.Content)
	c.refusal.WriteString(d.Refusal)
	// Each member on its own: a server that sends the same text in two
	// of them (chutes.ai) does not have it twice.
	for i, raw := range [...]json.RawMessage{d.ReasoningContent, d.Reasoning, d.ReasoningText} {
		c.reasoning[i].WriteString(loose(raw))
	}
	for i := range d.ToolCalls {
		c.toolCall(&d.ToolCalls[i])
	}
}

// toolCall adds a piece of a tool call to choice k. The pieces of a call
// share its index; its first piece has its id and name, the others more
// of its arguments. A piece whose index is that of a call with another id
// starts a new call (servers that stream each call whole under index 0);
// one with no index goes to the call of its id, else to the last call.
func (ch *choice) toolCall(d *toolCallDelta) {
	var c *call
	switch {
	case d.Index != nil:
		for i := len(ch.calls) - 1; i >= 0; i-- {
			if ch.calls[i].at == *d.Index {
				c = ch.calls[i]
				break
			}
		}
		if c != nil && d.ID != "" && c.id != "" && c.id != d.ID {
			c = nil
		}
	case d.ID != "":
		for _, x := range ch.calls {
			if x.id == d.ID {
				c = x
			}
		}
	case len(ch.calls) > 0:
		c = ch.calls[len(ch.calls)-1]
	}
	if c == nil {
		c = &call{at: -1, typ: "function"}
		if d.Index != nil {
			c.at = *d.Index
		}
		ch.calls = append(ch.calls, c)
	}
	fill(&c.id, d.ID)
	fill(&c.name, d.Function.Name)
	if d.Type != "" {
		c.typ = d.Type
	}
	c.args.WriteString(d.Function.Arguments)
}

// Done reports whether the stream is complete: [DONE] came, and no
// error.
func (s *Stream) Done() bool { return s.done && s.fail.Err() == nil }

// Response returns what the chunks added so far describe: each choice's
// message with its content, reasoning and tool calls as far as they
// came, its finish_reason if it came, and the usage if it came (nil
// otherwise). It shares nothing with the stream that later chunks
// change.
func (s *Stream) Response() *Response {
	r := s.resp
	if u := r.Usage; u != nil {
		uu := *u
		r.Usage = &uu
	}
	r.Choices = make([]Choice, len(s.choices))
	for i, c := range s.choices {
		m := ResponseMessage{
			Role: "assistant", Content: c.content.String(), Refusal: c.refusal.String(),
			ReasoningContent: c.reasoning[0].String(), Reasoning: c.reasoning[1].String(), ReasoningText: c.reasoning[2].String(),
		}
		if len(c.calls) > 0 {
			m.ToolCalls = make([]ToolCall, len(c.calls))
			for j, x := range c.calls {
				m.ToolCalls[j] = ToolCall{ID: x.id, Type: x.typ, Function: FunctionCall{Name: x.name, Arguments: x.args.String()}}
			}
		}
		r.Choices[i] = Choice{Index: c.index, Message: m, FinishReason: c.finish}
	}
	return &r
}

// Message converts what the stream holds to a message, as
// MessageFromResponse does. The message is never nil: when the stream
// failed (Add returned an error) or is incomplete, it holds what came
// and is a failed reply, with StopReason "error" and the error's text as
// its ErrorMessage, and Message returns that error: the *APIError a
// server sent, the ErrMalformed error Add returned, or an ErrTruncated
// error ("Stream ended without finish_reason", pi's text) when neither
// the finish_reason of choice 0 nor [DONE] came. A stream that ends
// with [DONE] but no finish_reason (some servers send none) is complete:
// its stop reason is then "toolUse" if it has tool calls, else "stop".
//
// A stream cut after the finish_reason but before the usage chunk is
// complete too, with zero usage: Response().Usage is nil then.
func (s *Stream) Message(opts *ResponseOptions) (*session.Message, error) {
	resp := s.Response()
	err := s.fail.Err()
	if c := first(resp.Choices); err == nil && !s.done && (c == nil || c.FinishReason == "") {
		err = wire.Truncated("Stream ended without finish_reason")
	}
	r, rerr := reply(resp, opts)
	if err == nil {
		err = rerr
	}
	return r.Message(err), err
}
