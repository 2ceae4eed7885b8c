package openai_test

import (
	"context"
	"encoding/json"
	"fmt"

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
			WithModel("openai-completions", "openai", "gpt-5"),
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
