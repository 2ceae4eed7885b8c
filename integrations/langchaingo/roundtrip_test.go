package langchaingo_test

import (
	"context"
	"fmt"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/integrations/langchaingo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
)

func call(id, name, args string) llms.ToolCall {
	return llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: name, Arguments: args}}
}

// ownMessage is an llms.ChatMessage of a type langchaingo does not know.
type ownMessage struct {
	typ     llms.ChatMessageType
	content string
	name    string
}

func (m ownMessage) GetType() llms.ChatMessageType { return m.typ }
func (m ownMessage) GetContent() string            { return m.content }
func (m ownMessage) GetName() string               { return m.name }

// roundTrips lists message sequences and what Messages gives back for
// them (want nil: the messages themselves), with the roles they are
// stored as.
var roundTrips = []struct {
	name  string
	msgs  []llms.ChatMessage
	want  []llms.ChatMessage
	roles []string
}{
	{
		name:  "human",
		msgs:  []llms.ChatMessage{llms.HumanChatMessage{Content: "hi"}, llms.HumanChatMessage{}, llms.HumanChatMessage{Content: "multi\nline \"quoted\" \u00e9\u4e16 \U0001F600 \x01"}},
		roles: []string{session.RoleUser, session.RoleUser, session.RoleUser},
	},
	{
		name: "invalid UTF-8",
		msgs: []llms.ChatMessage{
			llms.HumanChatMessage{Content: "a\xffb"},
			llms.AIChatMessage{Content: "c\xfe", ReasoningContent: "\xff", ToolCalls: []llms.ToolCall{call("i\xff", "n\xff", "{\"a\":\"\xff\"}")}},
			llms.ToolChatMessage{ID: "i\xff", Content: "\xff"},
			llms.GenericChatMessage{Role: "r\xff", Name: "n\xff", Content: "g\xff"},
		},
		want: []llms.ChatMessage{
			llms.HumanChatMessage{Content: "a\uFFFDb"},
			llms.AIChatMessage{Content: "c\uFFFD", ReasoningContent: "\uFFFD", ToolCalls: []llms.ToolCall{call("i\uFFFD", "n\uFFFD", "{\"a\":\"\uFFFD\"}")}},
			llms.ToolChatMessage{ID: "i\uFFFD", Content: "\uFFFD"},
			llms.GenericChatMessage{Role: "r\uFFFD", Name: "n\uFFFD", Content: "g\uFFFD"},
		},
		roles: []string{session.RoleUser, session.RoleAssistant, session.RoleToolResult, session.RoleCustom},
	},
	{
		name: "ai",
		msgs: []llms.ChatMessage{
			llms.AIChatMessage{Content: "answer"},
			llms.AIChatMessage{},
			llms.AIChatMessage{Content: "answer", ReasoningContent: "because\nof this"},
			llms.AIChatMessage{ReasoningContent: "only thinking"},
		},
		roles: []string{session.RoleAssistant, session.RoleAssistant, session.RoleAssistant, session.RoleAssistant},
	},
	{
		name: "ai tool calls and their results",
		msgs: []llms.ChatMessage{
			llms.HumanChatMessage{Content: "weather?"},
			llms.AIChatMessage{Content: "let me look", ToolCalls: []llms.ToolCall{
				call("c1", "weather", `{"city":"Paris"}`),
				call("c2", "time", `{}`),
			}},
			llms.ToolChatMessage{ID: "c2", Content: "noon"}, // out of order
			llms.ToolChatMessage{ID: "c1", Content: "sunny"},
			llms.AIChatMessage{Content: "sunny at noon"},
		},
		roles: []string{session.RoleUser, session.RoleAssistant, session.RoleToolResult, session.RoleToolResult, session.RoleAssistant},
	},
	{
		name: "tool calls that do not fit a block as they are",
		msgs: []llms.ChatMessage{
			llms.AIChatMessage{ToolCalls: []llms.ToolCall{
				call("s", "spaced", `{"a": 1, "b" : [1, 2]}`),
				call("n", "newlines", "{\n  \"a\": \"x\\ny\"\n}"),
				call("arr", "array", `[1,2]`),
				call("bad", "invalid", `{"a":`),
				call("empty", "empty", ``),
				call("str", "string", `"text"`),
				{ID: "t", Type: "", FunctionCall: &llms.FunctionCall{Name: "untyped", Arguments: `{}`}},
				{ID: "o", Type: "other", FunctionCall: &llms.FunctionCall{Name: "other", Arguments: `{"x":true}`}},
				{ID: "nofn", Type: "function"},
				{},
			}},
		},
		roles: []string{session.RoleAssistant},
	},
	{
		name: "duplicate call ids",
		msgs: []llms.ChatMessage{
			llms.AIChatMessage{ToolCalls: []llms.ToolCall{call("d", "a", `{}`), call("d", "b", `{}`)}},
			llms.ToolChatMessage{ID: "d", Content: "first"},
			llms.ToolChatMessage{ID: "d", Content: "second"},
			llms.ToolChatMessage{ID: "d", Content: "third, unpaired"},
		},
		roles: []string{session.RoleAssistant, session.RoleToolResult, session.RoleToolResult, session.RoleCustom},
	},
	{
		name: "deprecated function call and function result",
		msgs: []llms.ChatMessage{
			llms.AIChatMessage{Content: "calling", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: `{"x": 1}`}},
			llms.FunctionChatMessage{Name: "f", Content: "42"},
			llms.FunctionChatMessage{Content: "nameless"},
		},
		roles: []string{session.RoleAssistant, session.RoleCustom, session.RoleCustom},
	},
	{
		name: "tool results whose call is unknown",
		msgs: []llms.ChatMessage{
			llms.ToolChatMessage{ID: "nobody", Content: "orphan"},
			llms.ToolChatMessage{Content: "no id"},
			llms.HumanChatMessage{Content: "hi"},
			llms.ToolChatMessage{ID: "nobody", Content: "orphan again"},
		},
		roles: []string{session.RoleCustom, session.RoleCustom, session.RoleUser, session.RoleCustom},
	},
	{
		name: "a result after the conversation moved on",
		msgs: []llms.ChatMessage{
			llms.AIChatMessage{ToolCalls: []llms.ToolCall{call("c", "late", `{}`)}},
			llms.HumanChatMessage{Content: "never mind"},
			llms.ToolChatMessage{ID: "c", Content: "too late"},
		},
		roles: []string{session.RoleAssistant, session.RoleUser, session.RoleCustom},
	},
	{
		name: "a result answered already",
		msgs: []llms.ChatMessage{
			llms.AIChatMessage{ToolCalls: []llms.ToolCall{call("c", "once", `{}`)}},
			llms.ToolChatMessage{ID: "c", Content: "done"},
			llms.ToolChatMessage{ID: "c", Content: "done again"},
		},
		roles: []string{session.RoleAssistant, session.RoleToolResult, session.RoleCustom},
	},
	{
		name: "a system message between a call and its result",
		msgs: []llms.ChatMessage{
			llms.AIChatMessage{ToolCalls: []llms.ToolCall{call("c", "slow", `{}`)}},
			llms.SystemChatMessage{Content: "note"},
			llms.ToolChatMessage{ID: "c", Content: "result"},
		},
		roles: []string{session.RoleAssistant, session.RoleCustom, session.RoleToolResult},
	},
	{
		name: "system, generic, function",
		msgs: []llms.ChatMessage{
			llms.SystemChatMessage{Content: "be brief"},
			llms.SystemChatMessage{},
			llms.GenericChatMessage{Role: "critic", Name: "bob", Content: "meh"},
			llms.GenericChatMessage{Content: "no role"},
			llms.GenericChatMessage{Role: "user", Content: "a generic user"},
			llms.FunctionChatMessage{Name: "f", Content: "{}"},
		},
		roles: []string{session.RoleCustom, session.RoleCustom, session.RoleCustom, session.RoleCustom, session.RoleCustom, session.RoleCustom},
	},
	{
		name: "pointers and other implementations",
		msgs: []llms.ChatMessage{
			&llms.HumanChatMessage{Content: "h"},
			&llms.AIChatMessage{Content: "a", ToolCalls: []llms.ToolCall{}},
			&llms.SystemChatMessage{Content: "s"},
			&llms.GenericChatMessage{Role: "r", Content: "g"},
			&llms.FunctionChatMessage{Name: "f", Content: "fn"},
			&llms.ToolChatMessage{ID: "x", Content: "t"},
			ownMessage{typ: llms.ChatMessageTypeHuman, content: "own human"},
			ownMessage{typ: llms.ChatMessageTypeGeneric, content: "own generic", name: "n"},
			ownMessage{typ: "weird", content: "own weird", name: "w"},
		},
		want: []llms.ChatMessage{
			llms.HumanChatMessage{Content: "h"},
			llms.AIChatMessage{Content: "a"},
			llms.SystemChatMessage{Content: "s"},
			llms.GenericChatMessage{Role: "r", Content: "g"},
			llms.FunctionChatMessage{Name: "f", Content: "fn"},
			llms.ToolChatMessage{ID: "x", Content: "t"},
			llms.HumanChatMessage{Content: "own human"},
			llms.GenericChatMessage{Content: "own generic", Name: "n"},
			llms.GenericChatMessage{Role: "weird", Content: "own weird", Name: "w"},
		},
		roles: []string{session.RoleUser, session.RoleAssistant, session.RoleCustom, session.RoleCustom, session.RoleCustom, session.RoleCustom, session.RoleUser, session.RoleCustom, session.RoleCustom},
	},
}

// TestRoundTrip adds each sequence one message at a time and with
// SetMessages, and checks what Messages gives back: at once, after a
// reopen of the store, and as the roles the session holds.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		for i, rt := range roundTrips {
			want := rt.want
			if want == nil {
				want = rt.msgs
			}
			added := e.history(fmt.Sprintf("added-%d", i))
			for _, m := range rt.msgs {
				require.NoError(t, added.AddMessage(ctx, m), rt.name)
			}
			assert.Equal(t, want, messagesOf(t, added), rt.name+": added")
			assert.Equal(t, rt.roles, roles(added.Session()), rt.name+": added")

			set := e.history(fmt.Sprintf("set-%d", i))
			require.NoError(t, set.SetMessages(ctx, rt.msgs), rt.name)
			assert.Equal(t, want, messagesOf(t, set), rt.name+": set")
			assert.Equal(t, rt.roles, roles(set.Session()), rt.name+": set")
		}
		e.reopen()
		for i, rt := range roundTrips {
			want := rt.want
			if want == nil {
				want = rt.msgs
			}
			for _, id := range []string{fmt.Sprintf("added-%d", i), fmt.Sprintf("set-%d", i)} {
				h := e.history(id)
				assert.Equal(t, want, messagesOf(t, h), rt.name+": reopened "+id)
				assert.Equal(t, rt.roles, roles(h.Session()), rt.name+": reopened "+id)
				for _, f := range h.Session().Verify() {
					// Calls without results are warnings (pi's sessions hold them too).
					assert.NotEqual(t, session.SeverityError, f.Severity(), "%s: %s", rt.name, f)
				}
			}
		}
	})
}

func roles(s *session.Session) []string {
	var out []string
	for _, m := range s.Context().Messages {
		out = append(out, m.Role)
	}
	return out
}

// TestStoredForm checks the documented shape of what is stored: tool
// results paired with the name of their call, custom messages with
// their details, and the ExtraKey members.
func TestStoredForm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := langchaingo.New(ctx, session.NewMemoryStore(), "form")
	require.NoError(t, err)
	defer h.Close()
	for _, m := range []llms.ChatMessage{
		llms.SystemChatMessage{Content: "sys"},
		llms.AIChatMessage{
			FunctionCall: &llms.FunctionCall{Name: "f", Arguments: "{}"},
			ToolCalls:    []llms.ToolCall{call("c1", "weather", `{"city": "Paris"}`), call("c2", "time", `{}`)},
		},
		llms.ToolChatMessage{ID: "c1", Content: "sunny"},
		llms.ToolChatMessage{ID: "zz", Content: "orphan"},
		llms.GenericChatMessage{Role: "critic", Name: "bob", Content: "meh"},
	} {
		require.NoError(t, h.AddMessage(ctx, m))
	}
	msgs := h.Session().Context().Messages
	require.Len(t, msgs, 5)

	assert.Equal(t, langchaingo.CustomType, msgs[0].CustomType)
	assert.JSONEq(t, `{"type":"system"}`, string(msgs[0].Details))

	ai := msgs[1]
	fc, ok := ai.Extra.Get(langchaingo.ExtraKey)
	require.True(t, ok)
	assert.JSONEq(t, `{"function_call":{"name":"f","arguments":"{}"}}`, string(fc))
	calls := ai.ToolCalls()
	require.Len(t, calls, 2)
	assert.Equal(t, `{"city":"Paris"}`, string(calls[0].Arguments), "compacted")
	kept, ok := calls[0].Extra.Get(langchaingo.ExtraKey)
	require.True(t, ok, "arguments that were not compact: the call is kept whole")
	assert.JSONEq(t, `{"id":"c1","type":"function","function":{"name":"weather","arguments":"{\"city\": \"Paris\"}"}}`, string(kept))
	_, ok = calls[1].Extra.Get(langchaingo.ExtraKey)
	assert.False(t, ok, "a call that fits the block as it is")
	assert.Equal(t, session.StopToolUse, ai.StopReason)

	assert.Equal(t, session.RoleToolResult, msgs[2].Role)
	assert.Equal(t, "c1", msgs[2].ToolCallID)
	assert.Equal(t, "weather", msgs[2].ToolName)

	assert.Equal(t, session.RoleCustom, msgs[3].Role)
	assert.JSONEq(t, `{"type":"tool","tool_call_id":"zz"}`, string(msgs[3].Details))
	assert.JSONEq(t, `{"type":"generic","role":"critic","name":"bob"}`, string(msgs[4].Details))

	// What goes to a model: the orphan is no tool result, and the call
	// without its result (c2) gets the session's synthetic one.
	model, err := h.Session().Messages(ctx)
	require.NoError(t, err)
	var results []string
	for _, m := range model {
		if m.Role == session.RoleToolResult {
			results = append(results, m.ToolCallID)
		}
	}
	assert.Equal(t, []string{"c1", "c2"}, results)
}

// TestForeignMessages reads a session an agent wrote: roles and blocks
// this package never writes come back as text.
func TestForeignMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := session.New()
	img := session.Image("image/png", []byte("png"))
	ts := session.Thinking("hidden", "sig")
	ts.Redacted = true
	for _, m := range []*session.Message{
		session.User(session.Text("look"), img, session.Text("at this")),
		session.Assistant(session.Thinking("a", ""), ts, session.Text("one"), session.Text("two"), session.ToolCall("c", "ls", nil)),
		session.ToolError("c", "ls", "failed"),
		session.BashExecution("ls", "a b", 0),
		session.CustomMessage("other-extension", "injected", false),
	} {
		_, err := s.Append(ctx, m)
		require.NoError(t, err)
	}
	_, err := s.BranchWithSummary(ctx, "", "what happened before", nil)
	require.NoError(t, err)
	_, err = s.Append(ctx, session.UserText("again"))
	require.NoError(t, err)

	h := langchaingo.FromSession(s)
	assert.Equal(t, []llms.ChatMessage{
		llms.GenericChatMessage{Role: session.RoleBranchSummary, Content: "what happened before"},
		llms.HumanChatMessage{Content: "again"},
	}, messagesOf(t, h))

	leaves := s.Leaves()
	require.NoError(t, s.Branch(ctx, leaves[0].ID()))
	assert.Equal(t, []llms.ChatMessage{
		llms.HumanChatMessage{Content: "look\nat this"},
		llms.AIChatMessage{Content: "one\ntwo", ReasoningContent: "a", ToolCalls: []llms.ToolCall{call("c", "ls", "{}")}},
		llms.ToolChatMessage{ID: "c", Content: "failed"},
		llms.GenericChatMessage{Role: session.RoleBashExecution, Content: "$ ls\na b"},
		llms.GenericChatMessage{Role: session.RoleCustom, Name: "other-extension", Content: "injected"},
	}, messagesOf(t, h))
}
