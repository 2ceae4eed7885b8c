package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"

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
