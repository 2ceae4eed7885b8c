package session_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// seedMessages are agent messages as the seed agents write them, one per
// role and block type, with fields this package does not know.
var seedMessages = map[string]string{
	"user text":         `{"role":"user","content":[{"type":"text","text":"List the files in src"}],"timestamp":1768471204000}`,
	"user string":       `{"role":"user","content":"plain string content","timestamp":1}`,
	"user image":        `{"role":"user","content":[{"type":"text","text":"What is in this image?"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}],"timestamp":1768471221000}`,
	"assistant":         `{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","thinkingSignature":"sig=="},{"type":"text","text":"I'll list them.","textSignature":"x"},{"type":"toolCall","id":"toolu_0001","name":"bash","arguments":{"command":"ls src"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":100,"output":20,"cacheRead":0,"cacheWrite":0,"totalTokens":120,"cost":{"input":0.00030000000000000003,"output":0.00030000000000000003,"cacheRead":0,"cacheWrite":0,"total":0.0006000000000000001}},"stopReason":"toolUse","timestamp":1768471206000,"responseId":"resp_1"}`,
	"assistant empty":   `{"role":"assistant","content":[],"api":"","provider":"","model":"","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1}`,
	"assistant aborted": `{"role":"assistant","content":[],"api":"openai-responses","provider":"openai","model":"gpt-5.1-codex","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"aborted","timestamp":1763681581545,"errorMessage":"Request was aborted"}`,
	"redacted thinking": `{"role":"assistant","content":[{"type":"thinking","thinking":"","thinkingSignature":"opaque","redacted":true}],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}`,
	"tool result":       `{"role":"toolResult","toolCallId":"toolu_0001","toolName":"bash","content":[{"type":"text","text":"index.ts\nutil.ts\n"}],"details":{"diff":"--- a\n+++ b"},"isError":false,"timestamp":1768471208000}`,
	"bash":              `{"role":"bashExecution","command":"git status","output":"clean\n","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1768471217000}`,
	"bash excluded":     `{"role":"bashExecution","command":"env","output":"SECRET=1\n","cancelled":true,"truncated":true,"fullOutputPath":"/tmp/out","timestamp":1768471219000,"excludeFromContext":true}`,
	"custom":            `{"role":"custom","customType":"my-extension","content":"Injected","display":true,"details":{"debug":false},"timestamp":1}`,
	"content kinds":     `{"role":"user","content":[{"type":"document","data":"JVBERi0=","mimeType":"application/pdf","filename":"a.pdf","title":"A","context":"spec","citations":{"enabled":true}},{"type":"document","text":"notes","mimeType":"text/plain"},{"type":"document","url":"https://example.com/a.pdf"},{"type":"document","fileId":"file_1"},{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}],"timestamp":3}`,
	"cited reply":       `{"role":"assistant","content":[{"type":"redactedThinking","data":"Eq0K"},{"type":"text","text":"pi is minimal.","citations":[{"type":"char_location","cited_text":"pi is minimal","document_index":0,"document_title":"A","start_char_index":0,"end_char_index":13}]},{"type":"refusal","text":"no"}],"api":"anthropic-messages","provider":"anthropic","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":4}`,
	"future role":       `{"role":"reasoningTrace","steps":[1,2,3],"content":[{"type":"newBlockKind","payload":{"a":1}}],"timestamp":5}`,
	"odd types":         `{"role":"user","content":5,"timestamp":"yesterday","usage":[],"isError":"no","exitCode":1.5}`,
}

// jsonEqual compares two JSON texts as values.
func jsonEqual(t *testing.T, want, got []byte) {
	t.Helper()
	var a, b any
	require.NoError(t, json.Unmarshal(want, &a))
	require.NoError(t, json.Unmarshal(got, &b), "%s", got)
	assert.Equal(t, a, b)
}

func TestMessageRoundTrip(t *testing.T) {
	for name, raw := range seedMessages {
		t.Run(name, func(t *testing.T) {
			var m session.Message
			require.NoError(t, json.Unmarshal([]byte(raw), &m))
			out, err := json.Marshal(&m)
			require.NoError(t, err)
			jsonEqual(t, []byte(raw), out)
			// Same members in the same order for what the seed agents wrote.
			if name != "odd types" && name != "future role" {
				assert.Equal(t, raw, string(out))
			}
			var again session.Message
			require.NoError(t, json.Unmarshal(out, &again))
			assert.Equal(t, m, again)
		})
	}
}

func TestMessageAccessors(t *testing.T) {
	var m session.Message
	require.NoError(t, json.Unmarshal([]byte(seedMessages["assistant"]), &m))
	assert.Equal(t, "I'll list them.", m.Text())
	require.Len(t, m.ToolCalls(), 1)
	call := m.ToolCalls()[0]
	assert.Equal(t, "toolu_0001", call.ID)
	assert.Equal(t, "bash", call.Name)
	assert.JSONEq(t, `{"command":"ls src"}`, string(call.Arguments))
	assert.True(t, m.HasToolCalls())
	assert.Equal(t, int64(120), m.Usage.TotalTokens)
	assert.InDelta(t, 0.0006, m.Usage.Cost.Total, 1e-12)
	v, ok := m.Extra.Get("responseId")
	assert.True(t, ok)
	assert.Equal(t, `"resp_1"`, string(v))
	sig, ok := m.Content[1].Extra.Get("textSignature")
	assert.True(t, ok)
	assert.Equal(t, `"x"`, string(sig))

	var odd session.Message
	require.NoError(t, json.Unmarshal([]byte(seedMessages["odd types"]), &odd))
	assert.Nil(t, odd.Content, "a content of the wrong type is kept raw, not guessed")
	c, _ := odd.Extra.Get("content")
	assert.Equal(t, "5", string(c))
	assert.Nil(t, odd.ExitCode)

	var s session.Message
	require.NoError(t, json.Unmarshal([]byte(seedMessages["user string"]), &s))
	assert.True(t, s.ContentIsString())
	assert.Equal(t, "plain string content", s.Text())
}

func TestMessageConstructors(t *testing.T) {
	exit := 2
	cases := []struct {
		name string
		m    *session.Message
		want string
	}{
		{"user text", session.UserText("hi"), `{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":0}`},
		{"user image", session.User(session.Text("look"), session.Image("image/png", []byte{1, 2, 3})),
			`{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","data":"AQID","mimeType":"image/png"}],"timestamp":0}`},
		{"assistant with call", session.Assistant(session.Thinking("think", "sig"), session.Text("ok"), session.ToolCall("c1", "bash", json.RawMessage(` {"command": "ls"} `))).
			WithModel("anthropic-messages", "anthropic", "claude").WithUsage(session.Usage{Input: 3, Output: 4, TotalTokens: 7, Cost: session.Cost{Total: 0.5}}).WithTimestamp(9),
			`{"role":"assistant","content":[{"type":"thinking","thinking":"think","thinkingSignature":"sig"},{"type":"text","text":"ok"},{"type":"toolCall","id":"c1","name":"bash","arguments":{"command": "ls"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude","usage":{"input":3,"output":4,"cacheRead":0,"cacheWrite":0,"totalTokens":7,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.5}},"stopReason":"toolUse","timestamp":9}`},
		{"assistant text", session.AssistantText("done"),
			`{"role":"assistant","content":[{"type":"text","text":"done"}],"usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":0}`},
		{"tool result", session.ToolResult("c1", "bash", "out"), `{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"out"}],"isError":false,"timestamp":0}`},
		{"tool error", session.ToolError("c1", "bash", "boom"), `{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"boom"}],"isError":true,"timestamp":0}`},
		{"bash", session.BashExecution("ls", "a\n", exit), `{"role":"bashExecution","command":"ls","output":"a\n","exitCode":2,"cancelled":false,"truncated":false,"timestamp":0}`},
		{"custom", session.CustomMessage("ext", "note", false), `{"role":"custom","customType":"ext","content":"note","display":false,"timestamp":0}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := c.m.MarshalJSON() // json.Marshal would compact the arguments
			require.NoError(t, err)
			assert.Equal(t, c.want, string(out))
		})
	}
}

func TestMessageCloneIsDeep(t *testing.T) {
	var m session.Message
	require.NoError(t, json.Unmarshal([]byte(seedMessages["assistant"]), &m))
	before, _ := json.Marshal(&m)
	c := m.Clone()
	c.Content[2].Arguments[2] = 'X'
	c.Content[0].Thinking = "changed"
	c.Usage.Input = 999
	c.Extra[0].Value[1] = 'Z'
	after, _ := json.Marshal(&m)
	assert.Equal(t, string(before), string(after))
}

func TestMessageInvalidRaw(t *testing.T) {
	m := session.ToolResult("c", "t", "x")
	m.Details = json.RawMessage(`{not json`)
	_, err := json.Marshal(m)
	assert.Error(t, err, "invalid raw JSON is refused, not written")
	b := session.ToolCall("c", "n", json.RawMessage(`[1,`))
	_, err = json.Marshal(session.Assistant(b))
	assert.Error(t, err)
}

// jsonValue decodes b as encoding/json does. JSON sets no range on
// numbers and unknown members are kept verbatim, so a number beyond
// float64 (1e700) is compared by its text; every other number by its
// float64 value, wherever it sits, so that one huge number does not
// change how the document's other numbers compare.
func jsonValue(b []byte) (any, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil && !json.Valid(b) {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	v = nil
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return numbersAsFloats(v), nil
}

func numbersAsFloats(v any) any {
	switch x := v.(type) {
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x
	case []any:
		for i := range x {
			x[i] = numbersAsFloats(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = numbersAsFloats(x[k])
		}
	}
	return v
}

// FuzzMessageRoundTrip decodes arbitrary JSON as a message: whatever it
// accepts, it writes back as the same JSON value, and decoding that gives
// the same message.
func FuzzMessageRoundTrip(f *testing.F) {
	for _, raw := range seedMessages {
		f.Add([]byte(raw))
	}
	f.Add([]byte(usageCounters))
	f.Add([]byte(`{"role":"user","role":5,"content":[{"type":"text","text":"a","text":1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m session.Message
		if err := m.UnmarshalJSON(data); err != nil {
			return
		}
		out, err := m.MarshalJSON()
		if err != nil {
			t.Fatalf("cannot encode what was decoded from %q: %v", data, err)
		}
		a, err := jsonValue(data)
		if err != nil {
			t.Fatalf("decoded %q, which encoding/json rejects: %v", data, err)
		}
		b, err := jsonValue(out)
		if err != nil {
			t.Fatalf("wrote invalid JSON %q: %v", out, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("value changed:\n in %s\nout %s", data, out)
		}
		var again session.Message
		if err := again.UnmarshalJSON(out); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(m, again) {
			t.Fatalf("decode(encode(m)) != m for %s", data)
		}
		out2, _ := again.MarshalJSON()
		if string(out2) != string(out) {
			t.Fatalf("encoding not stable: %s then %s", out, out2)
		}
	})
}

// FuzzCanonical builds messages in Go and checks that a session indexes
// an appended message exactly as a reopen decodes it.
func FuzzCanonical(f *testing.F) {
	f.Add(uint8(0), "hello", "call_1", `{"a":1}`, int64(5), 0.5, true)
	f.Add(uint8(1), "with \"quotes\"\n\t", "", ``, int64(0), 0.0, false)
	f.Add(uint8(2), "\xff invalid", "x", `[1]`, int64(-3), 1e300, true)
	f.Add(uint8(6), "a <doc>", "page_location", ``, int64(2), 0.0, false)
	f.Add(uint8(6), "cited", "char_location", ``, int64(0), 0.0, true)
	f.Fuzz(func(t *testing.T, kind uint8, text, id, args string, n int64, cost float64, flag bool) {
		var m *session.Message
		switch kind % 7 {
		case 0:
			m = session.UserText(text)
		case 1:
			m = session.Assistant(session.Thinking(text, id), session.Text(text), session.ToolCall(id, text, json.RawMessage(args))).
				WithModel(text, id, text).WithUsage(session.Usage{Input: n, Cost: session.Cost{Total: cost}})
			if flag {
				m.Usage = nil
			}
		case 2:
			m = session.ToolResult(id, text, text)
			m.IsError = flag
			if args != "" {
				m.Details = json.RawMessage(args)
			}
		case 3:
			m = session.BashExecution(text, id, int(n))
			m.ExcludeFromContext = flag
		case 4:
			m = session.CustomMessage(id, text, flag)
		case 6:
			m = session.User(session.TextDocument(text).WithTitle(id), session.DocumentBase64("application/pdf", id).WithCitations(),
				session.DocumentURL(text), session.Audio("audio/wav", []byte(text)))
			if flag {
				m = session.Assistant(session.CitedText(text, session.Citation{Type: id, CitedText: text, DocumentIndex: int(n)}),
					session.RedactedThinking(id), session.Refusal(text))
			}
		case 5:
			m = &session.Message{Role: text, Timestamp: n}
			if flag {
				m.Content = []session.Block{}
			}
		}
		if m.Role == "" || m.Role == session.RoleBranchSummary || m.Role == session.RoleCompactionSummary {
			return
		}
		m.Timestamp = max(n, 1)
		s := session.New()
		if _, err := s.Append(t.Context(), m); err != nil {
			return // refused (invalid raw JSON, unpaired result): nothing to compare
		}
		got := s.Context().Messages
		e, _ := s.Entry(s.LeafID())
		want, err := e.Message()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Fatalf("indexed %#v\n decoded %#v", got[0], want)
		}
	})
}

func TestToolCallArgumentsKeptVerbatim(t *testing.T) {
	// Arguments are the model's JSON: spacing and key order are kept.
	args := `{"z": 1, "a": [ "x" ]}`
	m := session.Assistant(session.ToolCall("c", "t", json.RawMessage(args)))
	out, err := m.MarshalJSON()
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(out), `"arguments":{"z": 1, "a": [ "x" ]}`), string(out))
}

// usageCounters is an assistant message whose usage has every counter
// beyond pi's, under the member names oh-my-pi writes where it writes
// them (reasoningTokens, cttl, server), in oh-my-pi's order: after cost.
const usageCounters = `{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"m","usage":{"input":1,"output":20,"cacheRead":3,"cacheWrite":4,"totalTokens":28,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0},"reasoningTokens":7,"cttl":{"ephemeral5m":1,"ephemeral1h":3},"server":{"webSearch":2,"webFetch":1},"inputAudioTokens":5,"outputAudioTokens":6,"acceptedPredictionTokens":8,"rejectedPredictionTokens":9,"serviceTier":"priority"},"stopReason":"stop","timestamp":1}`

// TestUsageCounters: the counters providers report beyond pi's five have
// typed fields, read and written back byte for byte; a usage built in Go
// writes them only when they are not zero; Add sums them.
func TestUsageCounters(t *testing.T) {
	var m session.Message
	require.NoError(t, json.Unmarshal([]byte(usageCounters), &m))
	u := m.Usage
	require.NotNil(t, u)
	assert.Empty(t, u.Extra, "every member has its field")
	assert.Equal(t, [9]int64{7, 1, 3, 2, 1, 5, 6, 8, 9}, counters(u))
	assert.Equal(t, "priority", u.ServiceTier)
	out, err := m.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, usageCounters, string(out))

	// Built in Go: zero counters are left out, others written after cost.
	zero, err := json.Marshal(session.Usage{Input: 1, TotalTokens: 1})
	require.NoError(t, err)
	assert.Equal(t, `{"input":1,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":1,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}`, string(zero))
	some, err := json.Marshal(session.Usage{Input: 1, ReasoningTokens: 2, CacheTTL: session.CacheTTL{Ephemeral1h: 3}, Server: session.ServerToolUse{WebFetch: 4}, ServiceTier: "standard"})
	require.NoError(t, err)
	assert.Equal(t, `{"input":1,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0},"reasoningTokens":2,"cttl":{"ephemeral1h":3},"server":{"webFetch":4},"serviceTier":"standard"}`, string(some))

	sum := u.Add(*u)
	assert.Equal(t, [9]int64{14, 2, 6, 4, 2, 10, 12, 16, 18}, counters(&sum))
	assert.Equal(t, "priority", sum.ServiceTier, "one tier throughout is kept")
	assert.Empty(t, sum.Add(session.Usage{ServiceTier: "batch"}).ServiceTier, "mixed tiers are none")
	assert.Equal(t, "batch", session.Usage{}.Add(session.Usage{ServiceTier: "batch"}).ServiceTier)

	// Clone copies the nested members' unknown members too.
	m.Usage.CacheTTL.Extra.Set("x", json.RawMessage(`1`))
	c := m.Clone()
	c.Usage.CacheTTL.Extra[0].Value[0] = '2'
	v, _ := m.Usage.CacheTTL.Extra.Get("x")
	assert.Equal(t, `1`, string(v))
}

// counters are the counters of u beyond pi's, in the order they are
// written.
func counters(u *session.Usage) [9]int64 {
	return [9]int64{u.ReasoningTokens, u.CacheTTL.Ephemeral5m, u.CacheTTL.Ephemeral1h, u.Server.WebSearch, u.Server.WebFetch,
		u.InputAudioTokens, u.OutputAudioTokens, u.AcceptedPredictionTokens, u.RejectedPredictionTokens}
}

// TestToolResultWithoutName: a tool result's tool name is optional (other
// frameworks' results name only the call): one without is written
// without a toolName member, and pairs with its call by id.
func TestToolResultWithoutName(t *testing.T) {
	m := session.ToolResult("c1", "", "out")
	out, err := m.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, `{"role":"toolResult","toolCallId":"c1","content":[{"type":"text","text":"out"}],"isError":false,"timestamp":0}`, string(out))

	s := session.New()
	entries := appendAll(t, s, session.UserText("q"), session.Assistant(session.ToolCall("c1", "ls", nil)), m, session.AssistantText("done"))
	assert.NotContains(t, string(entries[2].JSON()), `toolName`)
	msgs, err := s.Messages(t.Context())
	require.NoError(t, err)
	require.Len(t, msgs, 4)
	assert.Equal(t, "out", msgs[2].Text())
	assert.False(t, msgs[2].Synthetic(), "the result pairs with its call")

	// Decoded without one, it stays without; an empty one read stays.
	for _, raw := range []string{
		`{"role":"toolResult","toolCallId":"c1","content":[],"isError":true,"timestamp":1}`,
		`{"role":"toolResult","toolCallId":"c1","toolName":"","content":[],"isError":true,"timestamp":1}`,
	} {
		var d session.Message
		require.NoError(t, json.Unmarshal([]byte(raw), &d))
		again, err := d.MarshalJSON()
		require.NoError(t, err)
		assert.Equal(t, raw, string(again))
	}
}
