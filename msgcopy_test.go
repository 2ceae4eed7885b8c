package session_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentsession/session"
)

// copyRuleSession holds every kind of member a copy must not share:
// blocks, tool-call arguments, details, usage and cost with unknown
// members, an exit code, unknown message members.
func copyRuleSession(t *testing.T) *session.Session {
	t.Helper()
	ctx := context.Background()
	s := session.New()
	u := session.UserText("list the files")
	u.Extra = session.Fields{{Key: "x-host", Value: json.RawMessage(`{"a":1}`)}}
	a := session.Assistant(session.Text("reading"), session.ToolCall("c1", "ls", json.RawMessage(`{"path":"."}`)))
	a.Usage = &session.Usage{Input: 10, Output: 5, Cost: session.Cost{Total: 0.5, Extra: session.Fields{{Key: "k", Value: json.RawMessage(`1`)}}},
		CacheTTL: session.CacheTTL{Ephemeral1h: 4, Extra: session.Fields{{Key: "k", Value: json.RawMessage(`2`)}}},
		Server:   session.ServerToolUse{WebSearch: 1, Extra: session.Fields{{Key: "k", Value: json.RawMessage(`3`)}}}}
	r := session.ToolResult("c1", "ls", "a.go b.go")
	r.Details = json.RawMessage(`{"lines":2}`)
	b := session.BashExecution("ls", "a.go", 0)
	for _, m := range []*session.Message{u, a, r, b, session.AssistantText("two files")} {
		_, err := s.Append(ctx, m)
		require.NoError(t, err)
	}
	return s
}

// vandalize changes everything a host could change in what it was given.
func vandalize(msgs []*session.Message) {
	for _, m := range msgs {
		m.Role = "vandal"
		for i := range m.Content {
			m.Content[i].Text = "changed"
			for j := range m.Content[i].Arguments {
				m.Content[i].Arguments[j] = ' '
			}
		}
		m.Content = append(m.Content, session.Text("appended"))
		for j := range m.Details {
			m.Details[j] = ' '
		}
		if m.Usage != nil {
			m.Usage.Input = -1
			for _, f := range []session.Fields{m.Usage.Cost.Extra, m.Usage.CacheTTL.Extra, m.Usage.Server.Extra} {
				for i := range f {
					f[i].Value[0] = '9'
				}
			}
		}
		if m.ExitCode != nil {
			*m.ExitCode = 99
		}
		for i := range m.Extra {
			m.Extra[i].Value[0] = ' '
		}
	}
}

func encodeAll(t *testing.T, msgs []*session.Message) string {
	t.Helper()
	b, err := json.Marshal(msgs)
	require.NoError(t, err)
	return string(b)
}

// TestReturnedMessagesAreCopies: whatever a host does to the messages it
// got from Messages, Context or ContextAt, the session, its later answers
// and what it writes stay as they were.
func TestReturnedMessagesAreCopies(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		get  func(s *session.Session) []*session.Message
	}{
		{"Messages", func(s *session.Session) []*session.Message {
			m, err := s.Messages(ctx)
			require.NoError(t, err)
			return m
		}},
		{"Context", func(s *session.Session) []*session.Message { return s.Context().Messages }},
		{"ContextAt", func(s *session.Session) []*session.Message {
			c, err := s.ContextAt(s.LeafID())
			require.NoError(t, err)
			return c.Messages
		}},
		{"ForModel", func(s *session.Session) []*session.Message { return s.Context().ForModel() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := copyRuleSession(t)
			before := encodeAll(t, tc.get(s))
			var log []string
			for e := range s.Entries() {
				log = append(log, string(e.JSON()))
			}

			vandalize(tc.get(s))

			assert.Equal(t, before, encodeAll(t, tc.get(s)), "the session's answer is unchanged")
			m, err := s.Messages(ctx)
			require.NoError(t, err)
			assert.Equal(t, "user", m[0].Role)
			var after []string
			for e := range s.Entries() {
				after = append(after, string(e.JSON()))
			}
			assert.Equal(t, log, after, "the entries are unchanged")
			f, err := s.Fork(ctx, nil)
			require.NoError(t, err)
			assert.Equal(t, before, encodeAll(t, tc.get(f)), "a fork copies what was written")
		})
	}
}

// TestCopiesAreIndependent: an edit to one answer never shows in the
// next (the edited copy is not handed out again), and appending to one
// copy's content does not reach the next message.
func TestCopiesAreIndependent(t *testing.T) {
	s := copyRuleSession(t)
	want := encodeAll(t, s.Context().Messages)
	a := s.Context().Messages
	first := encodeAll(t, a[1:])
	a[0].Content = append(a[0].Content, session.Text("x"))
	a[0].Content[len(a[0].Content)-1].Text = "y"
	assert.Equal(t, first, encodeAll(t, a[1:]), "an append to one copy's blocks stays in it")
	b := s.Context().Messages
	assert.NotSame(t, a[0], b[0], "the edited copy is not handed out again")
	assert.Equal(t, want, encodeAll(t, b))
}

// TestSharedMessages: the shared list is the session's own (the same
// messages as Messages copies), has no spare capacity, and appends to
// the session never change a list handed out.
func TestSharedMessages(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	appendAll(t, s, session.UserText("q1"), reply("a1"))
	shared, err := s.SharedMessages(ctx)
	require.NoError(t, err)
	copied, err := s.Messages(ctx)
	require.NoError(t, err)
	require.Equal(t, texts(copied), texts(shared))
	again, err := s.SharedMessages(ctx)
	require.NoError(t, err)
	assert.Same(t, shared[0], again[0], "no copy: the session's own messages")
	assert.NotSame(t, copied[0], shared[0])
	assert.Equal(t, len(shared), cap(shared), "appending to it copies")

	appendAll(t, s, session.UserText("q2"), reply("a2"))
	assert.Equal(t, []string{"user:q1", "assistant:a1"}, texts(shared), "a list handed out does not change")
	grown := append(shared, session.UserText("host's own"))
	now, _ := s.SharedMessages(ctx)
	assert.Equal(t, []string{"user:q1", "assistant:a1", "user:q2", "assistant:a2"}, texts(now))
	assert.Len(t, grown, 3)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.SharedMessages(cctx)
	assert.ErrorIs(t, err, context.Canceled)
}
