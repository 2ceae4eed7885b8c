package openai_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/openai"
)

// A session's messages, turned into the body of a Chat Completions request.
func ExampleMessages() {
	ctx := context.Background()
	s := session.New()
	_ = s.SaveTurn(ctx, []*session.Message{
		session.UserText("List the files."),
		session.Assistant(session.ToolCall("call_1", "ls", json.RawMessage(`{"dir":"."}`))).
			WithModel(openai.API, "openai", "gpt-5"),
		session.ToolResult("call_1", "ls", "go.mod main.go"),
	}, nil)

	msgs, _ := s.Messages(ctx)
	req := openai.Request{
		Model:    "gpt-5",
		Messages: openai.Messages(msgs, &openai.Options{System: "You are a coding agent."}),
	}
	body, _ := json.Marshal(req) // POST it to https://api.openai.com/v1/chat/completions
	fmt.Println(string(body))
	// Output:
	// {"model":"gpt-5","messages":[{"role":"system","content":"You are a coding agent."},{"role":"user","content":"List the files."},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"dir\":\".\"}"}}]},{"role":"tool","content":"go.mod main.go","tool_call_id":"call_1"}]}
}

// A Chat Completions response, converted to the assistant message a
// session saves.
func ExampleMessageFromResponse() {
	body := []byte(`{"id":"chatcmpl-01","object":"chat.completion","created":1758884644,"model":"gpt-4o-2024-08-06",
		"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,
			"tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"dir\":\".\"}"}}]},
			"finish_reason":"tool_calls"}],
		"usage":{"prompt_tokens":2120,"completion_tokens":30,"total_tokens":2150,"prompt_tokens_details":{"cached_tokens":2000}}}`)
	var resp openai.Response
	if err := json.Unmarshal(body, &resp); err != nil {
		panic(err)
	}
	msg, err := openai.MessageFromResponse(&resp, &openai.ResponseOptions{
		Model:  "gpt-4o", // the model asked for
		Prices: &openai.Prices{Input: 2.5, Output: 10, CacheRead: 1.25},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(msg.StopReason, msg.ToolCalls()[0].Name, string(msg.ToolCalls()[0].Arguments))
	fmt.Printf("%+v $%.6f\n", []int64{msg.Usage.Input, msg.Usage.Output, msg.Usage.CacheRead, msg.Usage.TotalTokens}, msg.Usage.Cost.Total)

	s := session.New()
	_ = s.SaveTurn(context.Background(), []*session.Message{session.UserText("List the files."), msg}, nil)
	// Output:
	// toolUse ls {"dir":"."}
	// [120 30 2000 2150] $0.003100
}

// A streamed response: the data of each server-sent event is added as it
// arrives, and the message is taken at the end.
func ExampleStream() {
	body := strings.NewReader(`data: {"id":"chatcmpl-02","object":"chat.completion.chunk","model":"deepseek-reasoner","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"Greet back."}}]}

data: {"id":"chatcmpl-02","object":"chat.completion.chunk","model":"deepseek-reasoner","choices":[{"index":0,"delta":{"content":"Hello, "}}]}

data: {"id":"chatcmpl-02","object":"chat.completion.chunk","model":"deepseek-reasoner","choices":[{"index":0,"delta":{"content":"world."},"finish_reason":"stop"}]}

data: {"id":"chatcmpl-02","object":"chat.completion.chunk","model":"deepseek-reasoner","choices":[],"usage":{"prompt_tokens":40,"completion_tokens":9,"total_tokens":49}}

data: [DONE]
`)
	st := openai.NewStream()
	sc := bufio.NewScanner(body) // a minimal SSE reader
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if err := st.Add("", []byte(data)); err != nil {
				break // the message says what went wrong
			}
		}
	}
	msg, err := st.Message(&openai.ResponseOptions{Provider: "deepseek"})
	fmt.Println(msg.Content[0].Type, msg.Content[0].Thinking, msg.Content[0].ThinkingSignature)
	fmt.Println(msg.Text(), msg.StopReason, msg.Usage.Input, msg.Usage.Output, err)
	// Output:
	// thinking Greet back. reasoning_content
	// Hello, world. stop 40 9 <nil>
}

// A request written with AppendJSON into a buffer reused from one
// request to the next; json.Marshal gives the same bytes, with <, > and &
// escaped as encoding/json escapes them.
func ExampleRequest_AppendJSON() {
	req := openai.Request{Model: "gpt-5", Messages: openai.Messages([]*session.Message{session.UserText("Is 1 < 2 & 3 > 2?")}, nil)}
	var buf []byte
	buf, err := req.AppendJSON(buf[:0])
	if err != nil {
		panic(err)
	}
	fmt.Println(string(buf))
	std, _ := json.Marshal(req)
	fmt.Println(string(std))
	// Output:
	// {"model":"gpt-5","messages":[{"role":"user","content":"Is 1 < 2 & 3 > 2?"}]}
	// {"model":"gpt-5","messages":[{"role":"user","content":"Is 1 \u003c 2 \u0026 3 \u003e 2?"}]}
}
