package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	session "github.com/agentsession/session"
)

// The kinds of error a response conversion reports; the provider
// packages export them as their ErrTruncated and ErrMalformed.
var (
	ErrTruncated = errors.New("stream ended early")
	ErrMalformed = errors.New("malformed response")
)

// Error is an error of one of the kinds above, with its own text and,
// when it has one, the error it comes from (a JSON decoding error).
type Error struct {
	Kind  error
	Text  string
	Cause error
}

func (e *Error) Error() string { return e.Text }

// Unwrap gives the kind, then the cause: errors.Is(err, ErrTruncated)
// and errors.As(err, &syntaxErr) both work.
func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Kind, e.Cause}
	}
	return []error{e.Kind}
}

// Truncated returns an ErrTruncated error whose text is text.
func Truncated(text string) error { return &Error{Kind: ErrTruncated, Text: text} }

// Malformed returns an ErrMalformed error; cause may be nil.
func Malformed(cause error, format string, args ...any) error {
	text := fmt.Sprintf(format, args...)
	if cause != nil {
		text += ": " + cause.Error()
	}
	return &Error{Kind: ErrMalformed, Text: text, Cause: cause}
}

// Prices are a model's prices per million tokens.
type Prices struct {
	Input, Output, CacheRead, CacheWrite float64
	// CacheWrite1h prices the part of the cache writes made for an hour
	// (Anthropic); 0 prices it at CacheWrite.
	CacheWrite1h float64
}

// Cost returns what u costs at p, computed as pi's calculateCost does
// (price / 1e6 * tokens, each part, then their sum in the same order),
// so that the figures match pi's to the last bit. long is the part of
// u.CacheWrite written for an hour.
func Cost(u *session.Usage, p *Prices, long int64) session.Cost {
	c := session.Cost{
		Input:      p.Input / 1e6 * float64(u.Input),
		Output:     p.Output / 1e6 * float64(u.Output),
		CacheRead:  p.CacheRead / 1e6 * float64(u.CacheRead),
		CacheWrite: p.CacheWrite / 1e6 * float64(u.CacheWrite),
	}
	if long = min(max(long, 0), u.CacheWrite); long > 0 && p.CacheWrite1h != 0 {
		// The conversions round each product, as JavaScript does.
		c.CacheWrite = float64(p.CacheWrite/1e6*float64(u.CacheWrite-long)) + float64(p.CacheWrite1h/1e6*float64(long))
	}
	c.Total = c.Input + c.Output + c.CacheRead + c.CacheWrite
	return c
}

// Reply is a response mapped to the seed format: what a provider
// package fills in, and Message turns into a message.
type Reply struct {
	API      string
	Provider string // ResponseOptions.Provider, or the provider's default
	// Requested is ResponseOptions.Model, the model the host asked for;
	// Served is the model the response names.
	Requested, Served string
	ID                string // the response's id
	Content           []session.Block
	Usage             session.Usage
	Prices            *Prices
	StopReason        string
	ErrorMessage      string
}

// Message returns the assistant message of r. Its model is the requested
// one when the host gave it, else the served one; a served model that
// differs from the requested one is kept as responseId is, in a member of
// that name (responseModel), as pi does. err, when not nil, makes the
// message a failed reply (StopReason "error", its text the error
// message).
func (r *Reply) Message(err error) *session.Message {
	model := r.Requested
	if model == "" {
		model = r.Served
	}
	u := r.Usage
	u.TotalTokens = u.Input + u.Output + u.CacheRead + u.CacheWrite
	if r.Prices != nil {
		u.Cost = Cost(&u, r.Prices, u.CacheTTL.Ephemeral1h)
	}
	m := &session.Message{Role: session.RoleAssistant, Content: r.Content, StopReason: r.StopReason, ErrorMessage: r.ErrorMessage}
	if m.Content == nil {
		m.Content = []session.Block{}
	}
	m.WithModel(r.API, r.Provider, model).WithUsage(u)
	if err != nil {
		m.StopReason, m.ErrorMessage = session.StopError, err.Error()
	}
	if r.ID != "" {
		m.Extra.Set("responseId", jsonString(r.ID))
	}
	if r.Requested != "" && r.Served != "" && r.Served != r.Requested {
		m.Extra.Set("responseModel", jsonString(r.Served))
	}
	return m
}

func jsonString(s string) json.RawMessage {
	b, _ := Marshal(s) // a string always marshals
	return b
}

// Arguments returns the tool arguments raw as a message keeps them: raw
// itself when it is a JSON object, {} when it is empty (no arguments) or
// null, and ok false for anything else.
func Arguments(raw []byte) (args json.RawMessage, ok bool) {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) == 0 || string(t) == "null":
		return json.RawMessage("{}"), true
	case Object(t):
		return json.RawMessage(bytes.Clone(t)), true
	}
	return json.RawMessage("{}"), false
}

// Sticky keeps the first error of a stream: once a stream failed, it
// stays failed.
type Sticky struct{ err error }

// Do runs add unless an earlier call failed, and returns the first error.
func (s *Sticky) Do(add func() error) error {
	if s.err == nil {
		s.err = add()
	}
	return s.err
}

// Err returns the first error, nil if none.
func (s *Sticky) Err() error { return s.err }
