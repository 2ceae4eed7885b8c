package session_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// suspendedTurn writes a turn whose assistant message calls two tools:
// "ls" answered, "deploy" suspended for a person's approval.
func suspendedTurn(t *testing.T, s *session.Session) session.Entry {
	t.Helper()
	ctx := context.Background()
	appendAll(t, s, session.UserText("first"), session.AssistantText("ok"))
	es := appendAll(t, s, session.UserText("deploy it"),
		session.Assistant(session.ToolCall("c1", "ls", json.RawMessage(`{}`)), session.ToolCall("c2", "deploy", json.RawMessage(`{"env":"prod"}`))),
		session.ToolResult("c1", "ls", "main.go"))
	_, err := s.Suspend(ctx, &session.Suspension{
		Calls:  []session.SuspendedCall{{CallID: "c2", Prompt: "Deploy to prod?", Approval: true}},
		Reason: "approval",
		State:  json.RawMessage(`{"host":"state"}`),
	})
	require.NoError(t, err)
	return es[0]
}

func roles(msgs []*session.Message) []string {
	var out []string
	for _, m := range msgs {
		r := m.Role
		if m.Role == session.RoleToolResult {
			r += ":" + m.ToolCallID
			if m.Synthetic() {
				r += "(synthetic)"
			}
			if m.IsError {
				r += "(error)"
			}
		}
		out = append(out, r)
	}
	return out
}

// TestSuspendKeepsCallPending: a suspended call is not answered with a
// failure, whatever follows it, and its result pairs when it comes.
func TestSuspendKeepsCallPending(t *testing.T) {
	ctx := context.Background()
	s := newMem(t)
	suspendedTurn(t, s)
	msgs, err := s.Messages(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"user", "assistant", "user", "assistant", "toolResult:c1"}, roles(msgs))
	c := s.Context()
	require.Len(t, c.Suspended, 1)
	assert.Equal(t, "c2", c.Suspended[0].CallID)
	assert.Empty(t, c.Dangling)

	// A person answers in the chat while the call waits: the message is
	// held after the call's place, which a placeholder (not an error)
	// fills until the result comes.
	appendAll(t, s, session.UserText("yes, go ahead"))
	msgs, err = s.Messages(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"user", "assistant", "user", "assistant", "toolResult:c1", "toolResult:c2(synthetic)", "user"}, roles(msgs))
	assert.Equal(t, session.SuspendedResultText, msgs[5].Text())
	assert.Empty(t, s.Context().Dangling)
	assert.Equal(t, roles(msgs), roles(s.Context().ForModel()), "ForModel rebuilds the same list")

	// The result comes: it takes the call's place, the held message after it.
	appendAll(t, s, session.ToolResult("c2", "deploy", "deployed"))
	msgs, err = s.Messages(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"user", "assistant", "user", "assistant", "toolResult:c1", "toolResult:c2", "user"}, roles(msgs))
	assert.Equal(t, roles(msgs), roles(s.Context().ForModel()))
	assert.Nil(t, s.Suspended())
	assertNoFindings(t, s)
}

func assertNoFindings(t *testing.T, s *session.Session) {
	t.Helper()
	for _, f := range s.Verify() {
		assert.Less(t, f.Kind.Severity(), session.SeverityWarning, "finding %v", f)
	}
}

// TestSuspendResumeAcrossReopen: another process (a store opened afresh)
// sees the suspension, its state and decisions, and resumes it.
func TestSuspendResumeAcrossReopen(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "sus"})
	require.NoError(t, err)
	start := suspendedTurn(t, s)
	require.NoError(t, s.Close())
	require.NoError(t, store.Close())

	store = openFS(t, root, nil)
	s, err = session.Open(ctx, store, "sus")
	require.NoError(t, err)
	v := s.Suspended()
	require.NotNil(t, v)
	assert.Equal(t, "approval", v.Reason)
	assert.JSONEq(t, `{"host":"state"}`, string(v.State))
	require.Len(t, v.Calls, 1)
	assert.Equal(t, "deploy", v.Calls[0].Name, "the name is taken from the call")
	assert.Equal(t, "Deploy to prod?", v.Calls[0].Prompt)
	require.Len(t, v.Pending, 1)
	assert.Equal(t, "c2", v.Pending[0].CallID)
	assert.Equal(t, start.ID(), v.TurnStart)
	_, err = s.Decide(ctx, session.Decision{CallID: "c2", Approved: true, By: "alice"})
	require.NoError(t, err)
	_, err = s.Decide(ctx, session.Decision{CallID: "c9", Approved: true})
	assert.Error(t, err, "a decision for a call not suspended")
	require.NoError(t, s.Close())

	s, err = session.Open(ctx, openFS(t, root, nil), "sus")
	require.NoError(t, err)
	v = s.Suspended()
	require.NotNil(t, v)
	require.Len(t, v.Decisions, 1)
	assert.Equal(t, session.Decision{CallID: "c2", Approved: true, By: "alice"}, v.Decisions[0])
	appendAll(t, s, session.ToolResult("c2", "deploy", "deployed"), session.AssistantText("done"))
	assert.Nil(t, s.Suspended())
	assertNoFindings(t, s)
}

// TestEndSuspension: cancelling answers the calls with errors and goes
// on; replacing (Rewind) leaves the attempt on a branch verify accepts
// and puts the leaf where the turn began, also after a reopen.
func TestEndSuspension(t *testing.T) {
	ctx := context.Background()
	t.Run("cancel", func(t *testing.T) {
		s := newMem(t)
		suspendedTurn(t, s)
		require.NoError(t, s.EndSuspension(ctx, &session.EndSuspensionOptions{Outcome: session.SuspensionCancelled, Reason: "denied"}))
		msgs, err := s.Messages(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{"user", "assistant", "user", "assistant", "toolResult:c1", "toolResult:c2(error)"}, roles(msgs))
		assert.Contains(t, msgs[5].Text(), "denied")
		assert.Nil(t, s.Suspended())
		assert.ErrorIs(t, s.EndSuspension(ctx, nil), session.ErrNotSuspended)
		assertNoFindings(t, s)
	})
	for _, outcome := range []string{session.SuspensionCancelled, session.SuspensionReplaced} {
		t.Run("rewind "+outcome, func(t *testing.T) {
			root := t.TempDir()
			store := openFS(t, root, nil)
			s, err := session.Create(ctx, store, &session.CreateOptions{ID: "r"})
			require.NoError(t, err)
			start := suspendedTurn(t, s)
			require.NoError(t, s.EndSuspension(ctx, &session.EndSuspensionOptions{Outcome: outcome, Rewind: true}))
			assert.Equal(t, start.ParentID(), s.LeafID(), "the leaf is where the turn began")
			assert.Nil(t, s.Suspended())
			if outcome == session.SuspensionReplaced {
				appendAll(t, s, session.UserText("deploy it"), session.AssistantText("deployed"))
			}
			assertNoFindings(t, s)
			leaf := s.LeafID()
			require.NoError(t, s.Close())
			s, err = session.Open(ctx, openFS(t, root, nil), "r")
			require.NoError(t, err)
			assert.Equal(t, leaf, s.LeafID())
			assertNoFindings(t, s)
		})
	}
}

func TestSuspendRefused(t *testing.T) {
	ctx := context.Background()
	s := newMem(t)
	appendAll(t, s, session.UserText("hi"), session.AssistantText("hello"))
	_, err := s.Suspend(ctx, &session.Suspension{})
	assert.ErrorIs(t, err, session.ErrNotSuspended, "no call to suspend")
	appendAll(t, s, session.UserText("run"), session.Assistant(session.ToolCall("c1", "ls", json.RawMessage(`{}`))))
	_, err = s.Suspend(ctx, &session.Suspension{Calls: []session.SuspendedCall{{CallID: "nope"}}})
	assert.Error(t, err, "a call that is not pending")
	_, err = s.Suspend(ctx, &session.Suspension{}) // every pending call
	require.NoError(t, err)
	require.NotNil(t, s.Suspended())
	assert.Equal(t, "c1", s.Suspended().Calls[0].CallID)
}

func newMem(t *testing.T) *session.Session {
	t.Helper()
	s, err := session.Create(context.Background(), session.NewMemoryStore(), nil)
	require.NoError(t, err)
	return s
}

// TestSuspendedTurnOneWrite: a turn and its suspension are one write,
// the suspension right after the results, before what follows them; and
// EndSuspension goes back to the turn's start the host names.
func TestSuspendedTurnOneWrite(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "one"})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("hi"), session.AssistantText("hello"))
	before := s.LeafID()
	var appends int
	obs := session.Observe(store, session.ObserverFunc(func(_ context.Context, e session.Event) {
		if e.Op == session.OpAppend {
			appends++
		}
	}))
	s, err = session.Open(ctx, obs, "one")
	require.NoError(t, err)
	turn := []*session.Message{
		session.UserText("deploy"), session.UserText("to prod"),
		session.Assistant(session.ToolCall("c1", "lookup", json.RawMessage(`{}`)), session.ToolCall("c2", "deploy", json.RawMessage(`{}`))),
		session.ToolResult("c1", "lookup", "v2"),
		session.UserText("(hook) remember the freeze"),
	}
	require.NoError(t, s.SaveTurnWith(ctx, turn, &session.TurnOptions{ID: "t1", Suspension: &session.Suspension{Reason: "approval"}}))
	assert.Equal(t, 1, appends, "one write")
	v := s.Suspended()
	require.NotNil(t, v)
	require.Len(t, v.Calls, 1)
	assert.Equal(t, "c2", v.Calls[0].CallID)
	assert.Equal(t, "deploy", v.Calls[0].Name)
	msgs, err := s.Messages(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"user", "assistant", "user", "user", "assistant", "toolResult:c1", "toolResult:c2(synthetic)", "user"}, roles(msgs))
	assertNoFindings(t, s)

	rec := s.TurnRecords()
	require.Len(t, rec, 1)
	require.NoError(t, s.EndSuspension(ctx, &session.EndSuspensionOptions{Outcome: session.SuspensionReplaced, Rewind: true, TurnStart: rec[0].FirstEntryID}))
	assert.Equal(t, before, s.LeafID(), "back to before the turn's first message")
	assert.Empty(t, s.Verify())
	assert.Error(t, s.EndSuspension(ctx, &session.EndSuspensionOptions{Rewind: true, TurnStart: "nope"}))

	// Refused: nothing left unanswered, or a call that is not the turn's.
	err = s.SaveTurnWith(ctx, []*session.Message{session.UserText("q"), session.AssistantText("a")}, &session.TurnOptions{Suspension: &session.Suspension{}})
	assert.ErrorIs(t, err, session.ErrNotSuspended)
	err = s.SaveTurnWith(ctx, turn[2:4], &session.TurnOptions{Suspension: &session.Suspension{Calls: []session.SuspendedCall{{CallID: "c1"}}}})
	assert.Error(t, err, "c1 is answered in the turn")
}
