package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/anthropic"
)

// This file is the agent a host would write: a loop that sends the
// session's messages to a model, runs the tools the model calls, and
// saves each step. The session is all it needs of agentsession; the
// request goes through provider/anthropic.

// Model generates the next assistant message for a request. A real one
// POSTs the request to https://api.anthropic.com/v1/messages and turns the
// reply into a session.Message (with its usage).
type Model interface {
	Generate(ctx context.Context, req *anthropic.Request) (*session.Message, error)
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	Schema      string // JSON Schema of the arguments
	Run         func(ctx context.Context, args json.RawMessage) (string, error)
}

// Options configures an Agent.
type Options struct {
	Model  Model
	Name   string // the model name sent in requests
	System string
	Tools  []Tool
	// Session is where calls keep their history unless WithSession names
	// another. Nil makes the agent stateless: each call sees only itself.
	Session session.Conversation
	// ContextWindow, when set, compacts a *session.Session before a
	// request whose context would not fit (with ReserveTokens to spare).
	ContextWindow int64
	ReserveTokens int64
	// MaxSteps bounds the model calls of one Run; default 8.
	MaxSteps int
}

// Agent runs conversations with a model and tools.
type Agent struct{ opts Options }

// NewAgent returns an agent.
func NewAgent(opts Options) *Agent {
	if opts.MaxSteps == 0 {
		opts.MaxSteps = 8
	}
	return &Agent{opts: opts}
}

// CallOption changes one call of Run.
type CallOption func(*call)

type call struct{ session session.Conversation }

// WithSession makes one call use s, whatever Options.Session says.
func WithSession(s session.Conversation) CallOption {
	return func(c *call) { c.session = s }
}

// Result is what one Run did.
type Result struct {
	Text      string             // the model's last text
	Messages  []*session.Message // the turn: the user's message, replies, tool results
	Compacted int                // messages summarized by an auto-compaction, if one ran
}

// Run sends input to the model with the session's history and loops
// through tool calls until the model answers without one.
func (a *Agent) Run(ctx context.Context, input string, opts ...CallOption) (*Result, error) {
	c := call{session: a.opts.Session}
	for _, o := range opts {
		o(&c)
	}
	res := &Result{}
	if s := c.session; s != nil && a.opts.ContextWindow > 0 {
		copts := &session.CompactionOptions{ContextWindow: a.opts.ContextWindow, ReserveTokens: a.opts.ReserveTokens, KeepRecentTokens: a.opts.ContextWindow / 4}
		if s.NeedsCompaction(copts) {
			// The offline summarizer keeps the example free of a network;
			// a real agent passes a Summarizer that calls its model.
			r, err := s.Compact(ctx, session.ExtractiveSummarizer{}, copts)
			switch {
			case err == nil:
				res.Compacted = len(r.Plan.Summarize)
			case errors.Is(err, session.ErrNothingToCompact), errors.Is(err, session.ErrCompactionDoesNotFit):
				// The latest turn is most of the context: a summary of
				// what comes before it would save nothing. Send it as it
				// is, into the reserve; a real agent would trim a long
				// tool output here if the model refuses the request.
			default:
				return nil, err // ErrCompactionSettings: the options cannot work
			}
		}
	}
	var history []*session.Message
	if c.session != nil {
		var err error
		if history, err = c.session.Messages(ctx); err != nil {
			return nil, err
		}
	}
	step := []*session.Message{session.UserText(input)}
	for range a.opts.MaxSteps {
		req := a.request(append(history, step...))
		reply, err := a.opts.Model.Generate(ctx, req)
		if err != nil {
			return nil, err
		}
		step = append(step, reply)
		// Run the calls of one reply (the model may make several at once);
		// one after another here, concurrently in an agent whose tools
		// allow it.
		for _, tc := range reply.ToolCalls() {
			step = append(step, a.runTool(ctx, tc.ID, tc.Name, tc.Arguments))
		}
		// Save each step as it completes, so a crash mid-turn keeps what
		// was done (Messages pairs up any call left without its result).
		if c.session != nil {
			if err := c.session.SaveTurn(ctx, step, nil); err != nil {
				return nil, err
			}
		}
		history = append(history, step...)
		res.Messages = append(res.Messages, step...)
		step = nil
		if len(reply.ToolCalls()) == 0 {
			res.Text = reply.Text()
			// The turn is over: make it durable (a FileStore's default
			// SyncOnFlush syncs only on Flush).
			if c.session != nil {
				if err := c.session.Flush(ctx); err != nil {
					return nil, err
				}
			}
			return res, nil
		}
	}
	return res, fmt.Errorf("agent: no answer after %d steps", a.opts.MaxSteps)
}

func (a *Agent) request(msgs []*session.Message) *anthropic.Request {
	req := &anthropic.Request{
		Model:     a.opts.Name,
		MaxTokens: 1024,
		Messages:  anthropic.Messages(msgs, &anthropic.Options{Model: a.opts.Name, CacheLast: true}),
	}
	// The system prompt: the agent's own, then any system messages of the
	// session, which have no place among the request's messages.
	req.System = anthropic.System(msgs, &anthropic.Options{System: a.opts.System})
	for _, t := range a.opts.Tools {
		req.Tools = append(req.Tools, anthropic.Tool{Name: t.Name, Description: t.Description, InputSchema: json.RawMessage(t.Schema)})
	}
	return req
}

func (a *Agent) runTool(ctx context.Context, id, name string, args json.RawMessage) *session.Message {
	for _, t := range a.opts.Tools {
		if t.Name == name {
			out, err := t.Run(ctx, args)
			if err != nil {
				return session.ToolError(id, name, err.Error())
			}
			return session.ToolResult(id, name, out)
		}
	}
	return session.ToolError(id, name, "no tool named "+name)
}
