package session_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestCompactionKeepsSuspendedCall: a compaction never summarizes a
// suspended call away: its result still pairs afterwards.
func TestCompactionKeepsSuspendedCall(t *testing.T) {
	ctx := context.Background()
	s := newMem(t)
	appendAll(t, s, session.UserText("deploy"),
		session.Assistant(session.ToolCall("c1", "deploy", json.RawMessage(`{}`))))
	_, err := s.Suspend(ctx, nil)
	require.NoError(t, err)
	big := strings.Repeat("word ", 4000)
	for i := 0; i < 4; i++ {
		appendAll(t, s, session.UserText("meanwhile "+big), session.AssistantText("ok "+big))
	}
	require.NotNil(t, s.Suspended())
	_, err = s.Compact(ctx, session.SummarizerFunc(func(ctx context.Context, r *session.SummaryRequest) (string, error) { return "sum", nil }),
		&session.CompactionOptions{KeepRecentTokens: 3000})
	require.NoError(t, err)
	assert.NotNil(t, s.Suspended(), "the suspended call is still awaited after compaction")
	_, err = s.Append(ctx, session.ToolResult("c1", "deploy", "done"))
	assert.NoError(t, err, "the suspended call's result after compaction")
}

// TestSuspendReusedCallID: with a call id used twice, the suspension
// marks the call it was made for, and ForModel rebuilds Messages.
func TestSuspendReusedCallID(t *testing.T) {
	ctx := context.Background()
	s := newMem(t)
	appendAll(t, s, session.UserText("a"),
		session.Assistant(session.ToolCall("call_0", "ls", json.RawMessage(`{}`))),
		session.UserText("b"), // call_0 of the first message dangles
		session.Assistant(session.ToolCall("call_0", "deploy", json.RawMessage(`{}`))))
	_, err := s.Suspend(ctx, nil)
	require.NoError(t, err)
	appendAll(t, s, session.UserText("meanwhile"))
	msgs, err := s.Messages(ctx)
	require.NoError(t, err)
	assert.Equal(t, roles(msgs), roles(s.Context().ForModel()), "ForModel rebuilds Messages")
	// The late result pairs with the suspended call, not the earlier one.
	appendAll(t, s, session.ToolResult("call_0", "deploy", "done"))
	msgs, _ = s.Messages(ctx)
	assert.Equal(t, roles(msgs), roles(s.Context().ForModel()), "ForModel rebuilds Messages")
	t.Log(roles(msgs))
	t.Log(roles(s.Context().ForModel()))
}

// TestEndSuspensionTornWrite: EndSuspension with Rewind is one append: a
// torn write leaves both of its entries or neither.
func TestEndSuspensionTornWrite(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "r"})
	require.NoError(t, err)
	start := suspendedTurn(t, s)
	require.NoError(t, s.EndSuspension(ctx, &session.EndSuspensionOptions{Rewind: true}))
	require.NoError(t, s.Close())
	require.NoError(t, store.Close())
	p := sessionFile(t, root)
	data, _ := os.ReadFile(p)
	require.NoError(t, os.WriteFile(p, data[:len(data)-20], 0o600)) // the marker torn
	s, err = session.Open(ctx, openFS(t, root, nil), "r")
	require.NoError(t, err)
	msgs, _ := s.Messages(ctx)
	t.Log("leaf", s.LeafID(), "want", start.ParentID(), "suspended", s.Suspended() != nil, roles(msgs), s.Verify())
	assert.True(t, s.LeafID() == start.ParentID() || s.Suspended() != nil, "either both entries or neither")
}

// TestSuspendedLatest: with two suspensions pending, Suspended is the
// latest one's.
func TestSuspendedLatest(t *testing.T) {
	ctx := context.Background()
	s := newMem(t)
	appendAll(t, s, session.UserText("a"), session.Assistant(session.ToolCall("c1", "deploy", json.RawMessage(`{}`))))
	_, err := s.Suspend(ctx, &session.Suspension{State: json.RawMessage(`{"turn":1}`)})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("b"), session.Assistant(session.ToolCall("c2", "rm", json.RawMessage(`{}`))))
	_, err = s.Suspend(ctx, &session.Suspension{State: json.RawMessage(`{"turn":2}`)})
	require.NoError(t, err)
	v := s.Suspended()
	require.NotNil(t, v)
	t.Logf("EntryID=%s State=%s Calls=%v Pending=%v TurnStart=%s", v.EntryID, v.State, v.Calls, v.Pending, v.TurnStart)
	assert.JSONEq(t, `{"turn":2}`, string(v.State), "the suspension in force at the leaf")
}

// TestEndSuspensionConcurrent: two EndSuspension calls on one handle,
// pairing lenient or not, answer a call once.
func TestEndSuspensionConcurrent(t *testing.T) {
	ctx := context.Background()
	bad := 0
	for i := 0; i < 300; i++ {
		s := newMem(t)
		appendAll(t, s, session.UserText("a"), session.Assistant(session.ToolCall("c1", "deploy", json.RawMessage(`{}`))))
		_, err := s.Suspend(ctx, nil)
		require.NoError(t, err)
		s.SetStrictPairing(false)
		done := make(chan error, 2)
		for g := 0; g < 2; g++ {
			go func() { done <- s.EndSuspension(ctx, nil) }()
		}
		<-done
		<-done
		if len(s.Context().Orphans) > 0 {
			bad++
		}
	}
	assert.Zero(t, bad, "runs where the call was answered twice (an orphaned error result stored)")
}
