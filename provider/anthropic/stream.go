package anthropic

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/internal/wire"
)

// Stream accumulates the server-sent events of a streamed Messages API
// response (stream: true) into the Response they describe, and converts
// it to a message. Feed it every event, in order, then call Message:
//
//	st := anthropic.NewStream()
//	for each SSE event { if err := st.Add(ev.Name, ev.Data); err != nil { break } }
//	msg, err := st.Message(nil)
//
// A Stream is not safe for concurrent use.
type Stream struct {
	resp    Response // all but the content
	blocks  []*block
	started bool        // message_start seen
	stopped bool        // message_stop seen
	fail    wire.Sticky // the first error of Add
}

// block is a content block as its events build it: the head as it
// started, and what the deltas add, kept in builders so that a long
// reply is accumulated in linear time.
type block struct {
	head      ResponseBlock
	text      strings.Builder // text, or thinking
	signature strings.Builder
	input     strings.Builder // partial_json
	citations []json.RawMessage
	open      bool
}

// NewStream returns an empty Stream.
func NewStream() *Stream { return &Stream{} }

// event is the data of any event; each type uses some of its members.
type event struct {
	Type         string         `json:"type"`
	Index        *int           `json:"index"`
	Message      *Response      `json:"message"`
	ContentBlock *ResponseBlock `json:"content_block"`
	Delta        *delta         `json:"delta"`
	Usage        *deltaUsage    `json:"usage"`
	Error        *APIError      `json:"error"`
	RequestID    string         `json:"request_id"`
}

type delta struct {
	Type        string          `json:"type"`
	Text        string          `json:"text"`
	PartialJSON string          `json:"partial_json"`
	Thinking    string          `json:"thinking"`
	Signature   string          `json:"signature"`
	Citation    json.RawMessage `json:"citation"` // citations_delta

	// message_delta
	StopReason   *string      `json:"stop_reason"`
	StopSequence *string      `json:"stop_sequence"`
	StopDetails  *StopDetails `json:"stop_details"`
}

// deltaUsage is the usage of a message_delta: cumulative counts, each
// absent or null when the event does not report it.
type deltaUsage struct {
	InputTokens              *int64         `json:"input_tokens"`
	OutputTokens             *int64         `json:"output_tokens"`
	CacheCreationInputTokens *int64         `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64         `json:"cache_read_input_tokens"`
	CacheCreation            *CacheCreation `json:"cache_creation"`
	ServerToolUse            *ServerToolUse `json:"server_tool_use"`
}

// Add adds one event: eventType is the SSE event's name and data its
// data. The type the data names (its "type" member) takes precedence;
// eventType is used when the data has none. Events of types this package
// does not know are ignored, and so are pings.
//
// An error event returns its *APIError. Data that does not decode, or
// that breaks the order of the events (a delta for a block not started,
// anything after message_stop), returns an error wrapping ErrMalformed,
// and so does a tool_use block whose input, parsed at its
// content_block_stop, is not a JSON object. After an error the stream
// has failed: Add returns that error again and adds nothing more, and
// Message reports it.
func (s *Stream) Add(eventType string, data []byte) error {
	return s.fail.Do(func() error { return s.add(eventType, data) })
}

func (s *Stream) add(eventType string, data []byte) error {
	var ev event
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &ev); err != nil {
			if eventType == "error" { // an error all the same
				return &APIError{Type: "error", Message: strings.TrimSpace(string(data))}
			}
			return wire.Malformed(err, "anthropic: %s event", name(eventType))
		}
	}
	t := ev.Type
	if t == "" {
		t = eventType
	}
	switch t {
	case "ping":
		return nil
	case "error":
		e := ev.Error
		if e == nil { // not the API's shape: its data says what it is
			e = &APIError{Type: "error", Message: strings.TrimSpace(string(data))}
		}
		e.RequestID = ev.RequestID
		return e
	case "message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop":
	default:
		return nil // a type added since: nothing this package needs
	}
	switch {
	case s.stopped:
		return wire.Malformed(nil, "anthropic: %s event after message_stop", t)
	case t == "message_start" && s.started:
		return wire.Malformed(nil, "anthropic: a second message_start event")
	case t != "message_start" && !s.started:
		return wire.Malformed(nil, "anthropic: %s event before message_start", t)
	}
	switch t {
	case "message_start":
		if ev.Message == nil {
			return wire.Malformed(nil, "anthropic: message_start event without a message")
		}
		s.resp, s.started = *ev.Message, true
		s.resp.Content = nil   // blocks come in their own events
		s.resp.Usage.unshare() // not shared with the Responses handed out
	case "content_block_start":
		return s.start(&ev)
	case "content_block_delta":
		return s.delta(&ev)
	case "content_block_stop":
		return s.stop(&ev)
	case "message_delta":
		if d := ev.Delta; d != nil {
			if d.StopReason != nil {
				s.resp.StopReason = *d.StopReason
			}
			if d.StopSequence != nil {
				s.resp.StopSequence = *d.StopSequence
			}
			if d.StopDetails != nil {
				s.resp.StopDetails = d.StopDetails
			}
		}
		// The counts are cumulative: each replaces the one before, and
		// one the event leaves out keeps its value (proxies drop
		// input_tokens), as pi reads them.
		if u := ev.Usage; u != nil {
			set(&s.resp.Usage.InputTokens, u.InputTokens)
			set(&s.resp.Usage.OutputTokens, u.OutputTokens)
			set(&s.resp.Usage.CacheCreationInputTokens, u.CacheCreationInputTokens)
			set(&s.resp.Usage.CacheReadInputTokens, u.CacheReadInputTokens)
			if u.CacheCreation != nil {
				c := *u.CacheCreation
				s.resp.Usage.CacheCreation = &c
			}
			if u.ServerToolUse != nil {
				v := *u.ServerToolUse
				s.resp.Usage.ServerToolUse = &v
			}
		}
	case "message_stop":
		for i, b := range s.blocks {
			if b.open {
				return wire.Malformed(nil, "anthropic: message_stop event with content block %d not stopped", i)
			}
		}
		s.stopped = true
	}
	return nil
}

func name(eventType string) string {
	if eventType == "" {
		return "an"
	}
	return eventType
}

// joinArray returns the JSON array of values.
func joinArray(values []json.RawMessage) json.RawMessage {
	out := json.RawMessage{'['}
	for i, v := range values {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, v...)
	}
	return append(out, ']')
}

// unshare gives u copies of its nested counts of its own.
func (u *Usage) unshare() {
	if c := u.CacheCreation; c != nil {
		cc := *c
		u.CacheCreation = &cc
	}
	if v := u.ServerToolUse; v != nil {
		vv := *v
		u.ServerToolUse = &vv
	}
}

func set(dst *int64, v *int64) {
	if v != nil {
		*dst = *v
	}
}

func (s *Stream) start(ev *event) error {
	if ev.Index == nil || *ev.Index != len(s.blocks) || ev.ContentBlock == nil {
		return wire.Malformed(nil, "anthropic: content_block_start event for block %s, want block %d with its content_block", index(ev), len(s.blocks))
	}
	if b := ev.ContentBlock; b.Type == "tool_use" {
		if _, ok := wire.Arguments(b.Input); !ok {
			return wire.Malformed(nil, "anthropic: the input of tool_use %s (%s) is not a JSON object", b.ID, b.Name)
		}
	}
	b := &block{head: *ev.ContentBlock, open: true}
	switch b.head.Type {
	case "text":
		b.text.WriteString(b.head.Text)
	case "thinking":
		b.text.WriteString(b.head.Thinking)
		b.signature.WriteString(b.head.Signature)
	}
	s.blocks = append(s.blocks, b)
	return nil
}

func index(ev *event) string {
	if ev.Index == nil {
		return "(no index)"
	}
	return strconv.Itoa(*ev.Index)
}

// block returns the open block ev is about.
func (s *Stream) block(ev *event) (*block, error) {
	if ev.Index == nil || *ev.Index < 0 || *ev.Index >= len(s.blocks) || !s.blocks[*ev.Index].open {
		return nil, wire.Malformed(nil, "anthropic: %s event for block %s, which is not open", ev.Type, index(ev))
	}
	return s.blocks[*ev.Index], nil
}

func (s *Stream) delta(ev *event) error {
	b, err := s.block(ev)
	if err != nil {
		return err
	}
	d := ev.Delta
	if d == nil {
		return wire.Malformed(nil, "anthropic: content_block_delta event without a delta")
	}
	var want string // the block type the delta applies to
	switch d.Type {
	case "text_delta":
		want = "text"
	case "thinking_delta", "signature_delta":
		want = "thinking"
	case "input_json_delta":
		want = "tool_use"
		if b.head.Type == "server_tool_use" {
			return nil // a server tool's input: not kept
		}
	case "citations_delta":
		want = "text"
	default:
		return nil // a delta added since
	}
	if b.head.Type != want {
		switch b.head.Type {
		case "text", "thinking", "redacted_thinking", "tool_use":
			return wire.Malformed(nil, "anthropic: %s for block %d, a %s block", d.Type, *ev.Index, b.head.Type)
		}
		return nil // a block type added since, which this package ignores
	}
	switch d.Type {
	case "text_delta":
		b.text.WriteString(d.Text)
	case "thinking_delta":
		b.text.WriteString(d.Thinking)
	case "signature_delta":
		b.signature.WriteString(d.Signature)
	case "input_json_delta":
		b.input.WriteString(d.PartialJSON)
	case "citations_delta":
		if c := bytes.TrimSpace(d.Citation); len(c) > 0 && c[0] == '{' {
			b.citations = append(b.citations, c)
		}
	}
	return nil
}

func (s *Stream) stop(ev *event) error {
	b, err := s.block(ev)
	if err != nil {
		return err
	}
	b.open = false
	if b.head.Type == "tool_use" {
		// The input is parsed once complete; the start event's (an
		// empty object) stands when no delta came.
		if in := b.input.String(); strings.TrimSpace(in) != "" {
			if !wire.Object([]byte(in)) {
				return wire.Malformed(nil, "anthropic: the input of tool_use %s (%s) is not a JSON object", b.head.ID, b.head.Name)
			}
			b.head.Input = json.RawMessage(in)
		}
		b.input.Reset()
	}
	return nil
}

// Done reports whether the stream came to its end: message_stop came,
// and Add returned no error.
func (s *Stream) Done() bool { return s.stopped && s.fail.Err() == nil }

// Response returns what the events added so far describe. Its content
// holds every block started, the text and thinking of each as far as
// it came, and the input of each tool_use block stopped. It shares
// nothing with the stream that later events change.
func (s *Stream) Response() *Response {
	r := s.response()
	if d := r.StopDetails; d != nil {
		c := *d
		r.StopDetails = &c
	}
	r.Usage.unshare()
	return r
}

// response returns the response with its content as it stands, sharing
// the rest with the stream.
func (s *Stream) response() *Response {
	r := s.resp
	r.Content = make([]ResponseBlock, len(s.blocks))
	for i, b := range s.blocks {
		r.Content[i] = b.head
		switch c := &r.Content[i]; c.Type {
		case "text":
			c.Text = b.text.String()
			if len(b.citations) > 0 {
				c.Citations = joinArray(b.citations)
			}
		case "thinking":
			c.Thinking, c.Signature = b.text.String(), b.signature.String()
		}
	}
	return &r
}

// Message converts what the stream holds to a message, as
// MessageFromResponse does. The message is never nil: when the stream
// failed (Add returned an error) or is incomplete, it holds what came
// (a tool_use block not stopped has {} as its arguments) and is a
// failed reply, with StopReason "error" and the error's text as its
// ErrorMessage, and Message returns that error: the *APIError of an
// error event, the ErrMalformed error Add returned, an ErrTruncated
// error when message_stop did not come ("Anthropic stream ended before
// message_stop", pi's text), or an ErrMalformed one when no stop reason
// came before it ("Anthropic stream ended without a stop reason"). A
// host saves such a message as pi does, or drops it and retries.
func (s *Stream) Message(opts *ResponseOptions) (*session.Message, error) {
	err := s.fail.Err()
	switch {
	case err != nil:
	case !s.stopped:
		err = wire.Truncated("Anthropic stream ended before message_stop")
	case s.resp.StopReason == "":
		err = wire.Malformed(nil, "Anthropic stream ended without a stop reason")
	}
	r, ierr := reply(s.response(), opts)
	if err == nil {
		err = ierr // not reached: Add checks each input
	}
	return r.Message(err), err
}
