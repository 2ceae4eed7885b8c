package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/anthropic"
)

// scriptedModel stands in for Claude, with no network: it reads the
// request as the API would (the JSON on the wire) and answers by rule. It
// calls tools, two at once when asked about files, and reports usage the
// way the API does, so that auto-compaction sees real token counts.
type scriptedModel struct {
	name  string
	calls int
	sent  int // bytes of JSON sent, over all requests
}

func (m *scriptedModel) Generate(ctx context.Context, req *anthropic.Request) (*session.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	wire, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	m.calls++
	m.sent += len(wire)
	if len(req.Messages) == 0 {
		return nil, errors.New("model: no messages")
	}
	last := req.Messages[len(req.Messages)-1]
	var results []string
	var text string
	for _, b := range last.Content {
		switch b.Type {
		case "tool_result":
			for _, c := range b.Content {
				results = append(results, firstLine(c.Text))
			}
		case "text":
			text = b.Text
		}
	}
	var reply *session.Message
	id := func(n int) string { return fmt.Sprintf("toolu_%02d_%d", m.calls, n) }
	lower := strings.ToLower(text)
	switch {
	case len(results) > 0:
		reply = session.Assistant(session.Text("Here is what the tools said: " + strings.Join(results, "; ") + "."))
	case strings.Contains(lower, "files"):
		reply = session.Assistant(
			session.Thinking("Two independent lookups: list the directory and read go.mod at once.", fmt.Sprintf("sig-%d", m.calls)),
			session.Text("Let me look."),
			session.ToolCall(id(1), "ls", json.RawMessage(`{"dir":"."}`)),
			session.ToolCall(id(2), "cat", json.RawMessage(`{"path":"go.mod"}`)),
		)
	case strings.HasPrefix(lower, "read "):
		path, _ := json.Marshal(map[string]string{"path": strings.TrimSpace(text[len("read "):])})
		reply = session.Assistant(session.ToolCall(id(1), "cat", path))
	case strings.HasPrefix(lower, "add "):
		nums, _ := json.Marshal(map[string][]string{"terms": strings.Fields(text[len("add "):])})
		reply = session.Assistant(session.ToolCall(id(1), "add", nums))
	default:
		reply = session.AssistantText(fmt.Sprintf("You said %q. (This request held %d message(s).)", text, len(req.Messages)))
	}
	out := 10
	for _, b := range reply.Content {
		out += (len(b.Text) + len(b.Thinking) + len(b.Arguments)) / 4
	}
	return reply.WithModel(anthropic.API, "anthropic", m.name).WithUsage(session.Usage{
		Input: int64(len(wire) / 4), Output: int64(out), TotalTokens: int64(len(wire)/4 + out),
	}), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// tools work on a small in-memory project.
func tools(files map[string]string) []Tool {
	return []Tool{
		{
			Name: "ls", Description: "List the files of a directory.",
			Schema: `{"type":"object","properties":{"dir":{"type":"string"}},"required":["dir"]}`,
			Run: func(_ context.Context, _ json.RawMessage) (string, error) {
				var names []string
				for name := range files {
					names = append(names, name)
				}
				slices.Sort(names)
				return strings.Join(names, "  "), nil
			},
		},
		{
			Name: "cat", Description: "Read a file.",
			Schema: `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`,
			Run: func(_ context.Context, args json.RawMessage) (string, error) {
				var a struct{ Path string }
				if err := json.Unmarshal(args, &a); err != nil {
					return "", err
				}
				body, ok := files[a.Path]
				if !ok {
					return "", fmt.Errorf("%s: no such file", a.Path)
				}
				return body, nil
			},
		},
		{
			Name: "add", Description: "Add numbers.",
			Schema: `{"type":"object","properties":{"terms":{"type":"array","items":{"type":"string"}}}}`,
			Run: func(_ context.Context, args json.RawMessage) (string, error) {
				var a struct{ Terms []string }
				if err := json.Unmarshal(args, &a); err != nil {
					return "", err
				}
				sum := 0
				for _, t := range a.Terms {
					var n int
					if _, err := fmt.Sscan(t, &n); err != nil {
						return "", fmt.Errorf("%q is not a number", t)
					}
					sum += n
				}
				return fmt.Sprint(sum), nil
			},
		},
	}
}
