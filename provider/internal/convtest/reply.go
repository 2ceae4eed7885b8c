package convtest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// Event is one server-sent event: its name ("" when it has none) and
// its data.
type Event struct {
	Name string
	Data []byte
}

// SSE reads the server-sent events of a file as the SSE format defines
// them: "event:" and "data:" lines (several data lines joined by
// newlines), comments (":") ignored, a blank line ending each event.
func SSE(t testing.TB, path string) []Event {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return ParseSSE(raw)
}

// ParseSSE parses server-sent events; see SSE.
func ParseSSE(raw []byte) []Event {
	var out []Event
	var ev Event
	var data [][]byte
	flush := func() {
		if ev.Name != "" || data != nil {
			ev.Data = bytes.Join(data, []byte("\n"))
			out = append(out, ev)
		}
		ev, data = Event{}, nil
	}
	for _, line := range bytes.Split(raw, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch {
		case len(line) == 0:
			flush()
		case len(field) == 0: // a comment
		case string(field) == "event":
			ev.Name = string(value)
		case string(field) == "data":
			data = append(data, value)
		}
	}
	flush()
	return out
}

// Files returns the names (without dir and ext) of the files of dir
// that end in ext, sorted.
func Files(t testing.TB, dir, ext string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no %s files in %s", ext, dir)
	}
	var names []string
	for _, p := range paths {
		names = append(names, strings.TrimSuffix(filepath.Base(p), ext))
	}
	sort.Strings(names)
	return names
}

// Turn saves reply in a new session as the answer to a prompt, with a
// result for each of its calls, then the user's next prompt, and returns
// what Session.Messages gives then: the context of the next request.
func Turn(t testing.TB, reply *session.Message) []*session.Message {
	t.Helper()
	ctx := context.Background()
	s := session.New()
	turn := []*session.Message{session.UserText("Go on."), reply}
	for _, c := range reply.ToolCalls() {
		turn = append(turn, session.ToolResult(c.ID, c.Name, "ok"))
	}
	if err := s.SaveTurn(ctx, turn, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveTurn(ctx, []*session.Message{session.UserText("Thanks.")}, nil); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// CheckReply fails t unless msg is what a response conversion promises
// for api, with err the error it returned: a message always, a failed
// reply (StopReason "error", the error's text as ErrorMessage) when err
// is not nil, a stop reason of the seed format, usage, tool arguments
// that are JSON objects, and JSON that the session reads back.
func CheckReply(t testing.TB, msg *session.Message, err error, api string) {
	t.Helper()
	if msg == nil {
		t.Fatalf("no message, error %v", err)
	}
	switch {
	case err != nil && (msg.StopReason != session.StopError || msg.ErrorMessage != err.Error()):
		t.Fatalf("error %v, but stop %q, message %q", err, msg.StopReason, msg.ErrorMessage)
	case msg.StopReason != session.StopEnd && msg.StopReason != session.StopLength &&
		msg.StopReason != session.StopToolUse && msg.StopReason != session.StopError:
		t.Fatalf("stop reason %q", msg.StopReason)
	case msg.Role != session.RoleAssistant || msg.API != api || msg.Usage == nil:
		t.Fatalf("message %+v", msg)
	}
	for _, b := range msg.Content {
		if b.Type == session.BlockToolCall && (len(b.Arguments) == 0 || b.Arguments[0] != '{' || !json.Valid(b.Arguments)) {
			t.Fatalf("tool call arguments %q", b.Arguments)
		}
	}
	raw, jerr := json.Marshal(msg)
	if jerr != nil {
		t.Fatalf("the message does not marshal: %v", jerr)
	}
	var back session.Message
	if jerr := json.Unmarshal(raw, &back); jerr != nil {
		t.Fatalf("the session does not read the message back: %v\n%s", jerr, raw)
	}
}

// Stream is what the Stream type of each provider package has, R its
// Response type.
type Stream[R any] interface {
	Add(eventType string, data []byte) error
	Response() *R
}

// Replies runs the tests the provider packages share on their response
// conversions: the responses of testdata/response (JSON) and the streams
// of testdata/stream (SSE), each converted, checked (CheckReply) and
// compared with its golden file in testdata/message, then saved in a
// session, whose next request RoundTrip checks.
type Replies[R any, S Stream[R]] struct {
	API string
	// FromResponse converts the response of the case name, with the
	// options of that case; Message converts a stream the same way.
	FromResponse func(resp *R, name string) (*session.Message, error)
	NewStream    func() S
	Message      func(st S, name string) (*session.Message, error)
	// RoundTrip checks the request built from what Turn gives for msg.
	RoundTrip func(t *testing.T, msg *session.Message)
}

// Converted is what a golden file of testdata/message holds.
type Converted struct {
	Response any              `json:"response,omitempty"` // streams: what the events added up to
	AddError string           `json:"addError,omitempty"` // streams: the first error Add returned
	Message  *session.Message `json:"message"`
	Error    string           `json:"error,omitempty"`
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Response reads testdata/response/name.json.
func (c Replies[R, S]) Response(t testing.TB, name string) *R {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata/response", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var resp R
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatal(err)
	}
	return &resp
}

// Stream feeds the events of testdata/stream/name.sse to a new stream,
// as a host does: it stops at the first error Add returns, and returns
// it.
func (c Replies[R, S]) Stream(t testing.TB, name string) (S, error) {
	t.Helper()
	st := c.NewStream()
	for _, ev := range SSE(t, filepath.Join("testdata/stream", name+".sse")) {
		if err := st.Add(ev.Name, ev.Data); err != nil {
			return st, err
		}
	}
	return st, nil
}

// TestResponses converts each response of testdata/response.
func (c Replies[R, S]) TestResponses(t *testing.T) {
	for _, name := range Files(t, "testdata/response", ".json") {
		t.Run(name, func(t *testing.T) {
			msg, err := c.FromResponse(c.Response(t, name), name)
			CheckReply(t, msg, err, c.API)
			Golden(t, "message/"+name, Converted{Message: msg, Error: errText(err)})
			c.RoundTrip(t, msg)
		})
	}
}

// TestStreams accumulates each stream of testdata/stream. A stream of the
// same name as a response of testdata/response is that response
// streamed: its message must be the same.
func (c Replies[R, S]) TestStreams(t *testing.T) {
	for _, name := range Files(t, "testdata/stream", ".sse") {
		t.Run(name, func(t *testing.T) {
			st, addErr := c.Stream(t, name)
			msg, err := c.Message(st, name)
			CheckReply(t, msg, err, c.API)
			if addErr != nil && err != addErr {
				t.Errorf("Message returned %v, not the error of Add %v", err, addErr)
			}
			Golden(t, "message/stream_"+name, Converted{Response: st.Response(), AddError: errText(addErr), Message: msg, Error: errText(err)})
			if _, statErr := os.Stat(filepath.Join("testdata/response", name+".json")); statErr == nil {
				want, _ := c.FromResponse(c.Response(t, name), name)
				if got, want := marshal(t, msg), marshal(t, want); got != want {
					t.Errorf("streamed message differs from the response's:\n%s\n%s", got, want)
				}
			}
			c.RoundTrip(t, msg)
		})
	}
}

func marshal(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Fuzz feeds a stream any sequence of events, one a line of the input,
// which parse splits into the event's name and data; the streams of
// testdata/stream, each event written as a line by line, are the seeds.
// Whatever comes, the stream must not panic, Add must keep returning its
// first error, Message must return that error and what CheckReply
// promises, and the response must marshal.
func (c Replies[R, S]) Fuzz(f *testing.F, line func(Event) []byte, parse func([]byte) (string, []byte)) {
	for _, name := range Files(f, "testdata/stream", ".sse") {
		var b bytes.Buffer
		for _, ev := range SSE(f, filepath.Join("testdata/stream", name+".sse")) {
			b.Write(line(ev))
			b.WriteByte('\n')
		}
		f.Add(b.Bytes())
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		st := c.NewStream()
		var first error
		for _, l := range bytes.Split(in, []byte("\n")) {
			err := st.Add(parse(l))
			if first != nil && err != first {
				t.Fatalf("after %v, Add returned %v", first, err)
			}
			if first == nil {
				first = err
			}
		}
		msg, err := c.Message(st, "")
		CheckReply(t, msg, err, c.API)
		if first != nil && err != first {
			t.Fatalf("Add failed with %v, Message with %v", first, err)
		}
		marshal(t, st.Response())
	})
}
