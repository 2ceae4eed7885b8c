package anthropic_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/anthropic"
)

// A session's messages, turned into the body of a Messages API request.
func ExampleMessages() {
	ctx := context.Background()
	s := session.New()
	_ = s.SaveTurn(ctx, []*session.Message{
		session.UserText("List the files."),
		session.Assistant(session.ToolCall("toolu_1", "ls", json.RawMessage(`{"dir":"."}`))).
			WithModel(anthropic.API, "anthropic", "claude-sonnet-4-5"),
		session.ToolResult("toolu_1", "ls", "go.mod main.go"),
	}, nil)

	msgs, _ := s.Messages(ctx)
	req := anthropic.Request{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 1024,
		System:    []anthropic.Content{anthropic.Text("You are a coding agent.")},
		Messages:  anthropic.Messages(msgs, &anthropic.Options{Model: "claude-sonnet-4-5"}),
	}
	body, _ := json.Marshal(req) // POST it to https://api.anthropic.com/v1/messages
	fmt.Println(string(body))
	// Output:
	// {"model":"claude-sonnet-4-5","max_tokens":1024,"system":[{"type":"text","text":"You are a coding agent."}],"messages":[{"role":"user","content":[{"type":"text","text":"List the files."}]},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"ls","input":{"dir":"."}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"go.mod main.go"}]}]}]}
}

// The system prompt of a request: the host's, then the session's system
// messages, which Messages leaves out.
func ExampleSystem() {
	msgs := []*session.Message{
		session.UserText("Hi."),
		{Role: "system", Content: []session.Block{session.Text("Answer in French.")}},
		session.UserText("How are you?"),
	}
	opts := &anthropic.Options{Model: "claude-sonnet-4-5", System: "You are a coding agent."}
	req := anthropic.Request{
		Model:     opts.Model,
		MaxTokens: 1024,
		System:    anthropic.System(msgs, opts),
		Messages:  anthropic.Messages(msgs, opts),
	}
	body, _ := json.Marshal(req)
	fmt.Println(string(body))
	// Output:
	// {"model":"claude-sonnet-4-5","max_tokens":1024,"system":[{"type":"text","text":"You are a coding agent."},{"type":"text","text":"Answer in French."}],"messages":[{"role":"user","content":[{"type":"text","text":"Hi."},{"type":"text","text":"How are you?"}]}]}
}

// A Messages API response, converted to the assistant message a session
// saves.
func ExampleMessageFromResponse() {
	body := []byte(`{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",
		"content":[{"type":"text","text":"Listing."},{"type":"tool_use","id":"toolu_1","name":"ls","input":{"dir":"."}}],
		"stop_reason":"tool_use","stop_sequence":null,
		"usage":{"input_tokens":120,"output_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":2000}}`)
	var resp anthropic.Response
	if err := json.Unmarshal(body, &resp); err != nil {
		panic(err)
	}
	msg, err := anthropic.MessageFromResponse(&resp, &anthropic.ResponseOptions{
		Model:  "claude-sonnet-4-5", // the model asked for
		Prices: &anthropic.Prices{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(msg.StopReason, msg.Text(), msg.ToolCalls()[0].Name)
	fmt.Printf("%+v $%.6f\n", []int64{msg.Usage.Input, msg.Usage.Output, msg.Usage.CacheRead, msg.Usage.TotalTokens}, msg.Usage.Cost.Total)

	s := session.New()
	_ = s.SaveTurn(context.Background(), []*session.Message{session.UserText("List the files."), msg}, nil)
	line, _ := json.Marshal(msg)
	fmt.Println(string(line))
	// Output:
	// toolUse Listing. ls
	// [120 30 2000 2150] $0.001410
	// {"role":"assistant","content":[{"type":"text","text":"Listing."},{"type":"toolCall","id":"toolu_1","name":"ls","arguments":{"dir":"."}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":120,"output":30,"cacheRead":2000,"cacheWrite":0,"totalTokens":2150,"cost":{"input":0.00036,"output":0.00045,"cacheRead":0.0006,"cacheWrite":0,"total":0.0014099999999999998}},"stopReason":"toolUse","timestamp":0,"responseId":"msg_01","responseModel":"claude-sonnet-4-5-20250929"}
}

// A streamed response: each server-sent event is added as it arrives,
// and the message is taken at the end.
func ExampleStream() {
	body := strings.NewReader(`event: message_start
data: {"type":"message_start","message":{"id":"msg_02","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":40,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type":"ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, "}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"world."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}

event: message_stop
data: {"type":"message_stop"}
`)
	st := anthropic.NewStream()
	// A minimal SSE reader (each event's data is one line here).
	var name string
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			name = v
		} else if v, ok := strings.CutPrefix(line, "data: "); ok {
			if err := st.Add(name, []byte(v)); err != nil {
				break // the message says what went wrong
			}
		}
	}
	msg, err := st.Message(nil)
	fmt.Println(msg.Text(), msg.StopReason, msg.Usage.Input, msg.Usage.Output, err)
	// Output:
	// Hello, world. stop 40 5 <nil>
}

// A request written with AppendJSON into a buffer reused from one
// request to the next; a tool schema that is not valid JSON is a
// *MarshalError, as encoding/json fails on it.
func ExampleRequest_AppendJSON() {
	req := anthropic.Request{Model: "claude-sonnet-4-5", MaxTokens: 1024,
		Messages: anthropic.Messages([]*session.Message{session.UserText("Hi.")}, nil),
		Tools:    []anthropic.Tool{{Name: "ls", InputSchema: json.RawMessage(`{ "type": "object" }`)}},
	}
	var buf []byte
	buf, err := req.AppendJSON(buf[:0])
	fmt.Println(string(buf), err)

	req.Tools[0].InputSchema = json.RawMessage(`{"type":`)
	_, err = req.AppendJSON(buf[:0])
	var me *anthropic.MarshalError
	fmt.Println(errors.As(err, &me), me.Member)
	// Output:
	// {"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":[{"type":"text","text":"Hi."}]}],"tools":[{"name":"ls","input_schema":{"type":"object"}}]} <nil>
	// true input_schema
}
