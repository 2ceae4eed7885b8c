package openai_test

import (
	"context"
	"encoding/json"
	"fmt"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/openai"
)

// A stateless Responses API conversation: the reply's reasoning item
// (with its encrypted content) is saved in the session and sent back in
// the next request, with store false.
func ExampleInput() {
	ctx := context.Background()
	s := session.New()

	// The reply to "List the files.", as the API returned it.
	body := []byte(`{"id":"resp_1","object":"response","status":"completed","model":"gpt-5-2025-08-07",
		"output":[
			{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"List the directory."}],"encrypted_content":"gAAAA..."},
			{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"ls","arguments":"{\"dir\":\".\"}"}],
		"usage":{"input_tokens":900,"input_tokens_details":{"cached_tokens":0},"output_tokens":40,"output_tokens_details":{"reasoning_tokens":20},"total_tokens":940}}`)
	var resp openai.ResponsesResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		panic(err)
	}
	reply, _ := openai.MessageFromResponses(&resp, &openai.ResponseOptions{Model: "gpt-5"})
	_ = s.SaveTurn(ctx, []*session.Message{session.UserText("List the files."), reply, session.ToolResult(reply.ToolCalls()[0].ID, "ls", "go.mod main.go")}, nil)

	msgs, _ := s.Messages(ctx)
	store := false
	req := openai.ResponsesRequest{
		Model:   "gpt-5",
		Input:   openai.Input(msgs, &openai.ResponsesOptions{System: "You are a coding agent.", SystemRole: "developer", Model: "gpt-5"}),
		Store:   &store,
		Include: []string{openai.IncludeReasoning},
	}
	out, _ := req.AppendJSON(nil) // POST it to https://api.openai.com/v1/responses
	fmt.Println(string(out))
	// Output:
	// {"model":"gpt-5","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are a coding agent."}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"List the files."}]},{"type":"reasoning","summary":[{"type":"summary_text","text":"List the directory."}],"encrypted_content":"gAAAA..."},{"type":"function_call","call_id":"call_1","name":"ls","arguments":"{\"dir\":\".\"}"},{"type":"function_call_output","call_id":"call_1","output":"go.mod main.go"}],"include":["reasoning.encrypted_content"],"store":false}
}

// A Responses API response converted to the message a session saves: the
// reasoning item is a thinking block whose signature is the item, the
// call's id pi's "call_id|id".
func ExampleMessageFromResponses() {
	body := []byte(`{"id":"resp_2","object":"response","status":"completed","model":"gpt-5-2025-08-07",
		"output":[
			{"id":"rs_2","type":"reasoning","summary":[{"type":"summary_text","text":"Read main.go."}],"encrypted_content":"gAAAA..."},
			{"id":"msg_2","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Reading it.","annotations":[]}]},
			{"id":"fc_2","type":"function_call","status":"completed","call_id":"call_2","name":"read","arguments":"{\"path\":\"main.go\"}"}],
		"usage":{"input_tokens":1200,"input_tokens_details":{"cached_tokens":1024},"output_tokens":60,"output_tokens_details":{"reasoning_tokens":30},"total_tokens":1260}}`)
	var resp openai.ResponsesResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		panic(err)
	}
	msg, err := openai.MessageFromResponses(&resp, &openai.ResponseOptions{Model: "gpt-5", Prices: &openai.Prices{Input: 1.25, Output: 10, CacheRead: 0.125}})
	if err != nil {
		panic(err)
	}
	for _, b := range msg.Content {
		switch b.Type {
		case session.BlockThinking:
			fmt.Println("thinking:", b.Thinking, b.ThinkingSignature)
		case session.BlockText:
			fmt.Println("text:", b.Text)
		case session.BlockToolCall:
			fmt.Println("call:", b.ID, b.Name, string(b.Arguments))
		}
	}
	u := msg.Usage
	fmt.Println(msg.StopReason, u.Input, u.CacheRead, u.Output, u.TotalTokens, fmt.Sprintf("$%.6f", u.Cost.Total))
	// Output:
	// thinking: Read main.go. {"id":"rs_2","type":"reasoning","summary":[{"type":"summary_text","text":"Read main.go."}],"encrypted_content":"gAAAA..."}
	// text: Reading it.
	// call: call_2|fc_2 read {"path":"main.go"}
	// toolUse 176 1024 60 1260 $0.000948
}
