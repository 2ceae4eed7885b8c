package session_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestResumeView: one call gives the last user and assistant messages,
// the state and settings at the leaf, and the counts; a compaction does
// not hide the last user message; the view is the same after a reopen,
// and its messages are the caller's.
func TestResumeView(t *testing.T) {
	ctx := context.Background()
	store, err := session.OpenFileStore(t.TempDir(), nil)
	require.NoError(t, err)
	s, err := session.Create(ctx, store, &session.CreateOptions{Title: "resumable"})
	require.NoError(t, err)

	empty, err := s.Resume(ctx)
	require.NoError(t, err)
	assert.Nil(t, empty.LastUser)
	assert.Nil(t, empty.LastAssistant)
	assert.Zero(t, empty.Turns)

	_, err = s.AppendThinkingLevel(ctx, "high")
	require.NoError(t, err)
	appendAll(t, s, session.UserText("first"), reply("one"))
	require.NoError(t, s.UpdateState(ctx, map[string]any{"step": 2}))
	appendAll(t, s, session.UserText("second"), reply("two"))
	// A third turn whose reply is a tool call still to run.
	appendAll(t, s, session.UserText("third"), session.Assistant(session.ToolCall("c1", "read", json.RawMessage(`{}`))).WithModel(api, provider, model))

	check := func(t *testing.T, s *session.Session) {
		t.Helper()
		v, err := s.Resume(ctx)
		require.NoError(t, err)
		assert.Equal(t, "resumable", v.Title)
		assert.Equal(t, s.LeafID(), v.LeafID)
		require.NotNil(t, v.LastUser)
		assert.Equal(t, "third", v.LastUser.Text())
		require.NotNil(t, v.LastAssistant)
		assert.Equal(t, "c1", v.LastAssistant.Content[0].ID)
		assert.True(t, v.AssistantAfterUser)
		assert.Equal(t, []session.ToolCallRef{{CallID: "c1", Name: "read", EntryID: v.LastAssistantID}}, v.Pending)
		assert.JSONEq(t, `2`, string(v.State["step"]))
		assert.Equal(t, "high", v.ThinkingLevel)
		assert.Equal(t, &session.ModelRef{Provider: provider, ModelID: model}, v.Model)
		assert.Equal(t, 3, v.Turns)
		assert.Equal(t, s.Len(), v.Entries)
		assert.Equal(t, len(s.Context().Messages), v.Messages)

		v.LastUser.Content[0].Text = "changed"
		again, err := s.Resume(ctx)
		require.NoError(t, err)
		assert.Equal(t, "third", again.LastUser.Text(), "the view's messages are copies")
	}
	check(t, s)

	// A user turn still unanswered.
	appendAll(t, s, session.ToolResult("c1", "read", "data"), session.UserText("fourth"))
	v, err := s.Resume(ctx)
	require.NoError(t, err)
	assert.Equal(t, "fourth", v.LastUser.Text())
	assert.False(t, v.AssistantAfterUser, "the last reply came before the last user message")

	// Compacted away, the last user message is still found.
	_, err = s.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{KeepRecentTokens: 1})
	require.NoError(t, err)
	v, err = s.Resume(ctx)
	require.NoError(t, err)
	assert.Equal(t, "fourth", v.LastUser.Text())
	assert.Equal(t, 4, v.Turns)
	require.NoError(t, s.Close())

	r, err := session.Open(ctx, store, s.ID())
	require.NoError(t, err)
	defer r.Close()
	v2, err := r.Resume(ctx)
	require.NoError(t, err)
	assert.Equal(t, v.LastUserID, v2.LastUserID)
	assert.Equal(t, v.LastAssistantID, v2.LastAssistantID)
	assert.Equal(t, v.Turns, v2.Turns)
	assert.Equal(t, v.Messages, v2.Messages)
}

// TestTurns: the turn count follows the leaf: appends add to it, a move
// to another branch counts that branch, a reload starts over.
func TestTurns(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	assert.Zero(t, s.Turns())
	es := appendAll(t, s, session.UserText("a"), reply("1"), session.UserText("b"), reply("2"))
	assert.Equal(t, 2, s.Turns())
	appendAll(t, s, session.UserText("c"), reply("3"))
	assert.Equal(t, 3, s.Turns())
	require.NoError(t, s.Branch(ctx, es[1].ID()))
	assert.Equal(t, 1, s.Turns())
	appendAll(t, s, session.UserText("b'"))
	assert.Equal(t, 2, s.Turns())
	assert.Equal(t, 2, reopen(t, s).Turns(), "the same count from a fresh read")
	require.NoError(t, s.Reload(ctx))
	assert.Equal(t, 2, s.Turns())
}

// TestReplayLastTurn: the leaf goes back to the last user message, which
// is handed back; the old reply stays on a branch; a new reply follows
// the same user message.
func TestReplayLastTurn(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	_, err := s.ReplayLastTurn(ctx)
	assert.ErrorIs(t, err, session.ErrNotFound)
	es := appendAll(t, s, session.UserText("q1"), reply("a1"), session.UserText("q2"),
		session.Assistant(session.ToolCall("c", "read", json.RawMessage(`{}`))).WithModel(api, provider, model),
		session.ToolResult("c", "read", "out"), reply("a2"))
	old := s.LeafID()

	rp, err := s.ReplayLastTurn(ctx)
	require.NoError(t, err)
	assert.Equal(t, "q2", rp.User.Text())
	assert.Equal(t, es[2].ID(), rp.UserID)
	assert.Equal(t, rp.UserID, s.LeafID())
	assert.Equal(t, old, rp.Rewind.From)
	assert.Equal(t, 3, rp.Rewind.Left)
	msgs, err := s.Messages(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"user:q1", "assistant:a1", "user:q2"}, texts(msgs))

	appendAll(t, s, reply("a2 again"))
	assert.Equal(t, []string{"user:q1", "assistant:a1", "user:q2", "assistant:a2 again"}, texts(s.Context().Messages))
	_, ok := s.Entry(old)
	assert.True(t, ok, "the replaced reply is kept")
	rp.User.Content[0].Text = "edited"
	assert.Equal(t, "q2", s.Context().Messages[2].Text(), "the replayed message is the caller's copy")
}

// TestNewWithIDAndOpenOrCreate: Dive's ways of getting a session by a
// host's id: a memory session with that id, and an open that creates
// the session when it is not there.
func TestNewWithIDAndOpenOrCreate(t *testing.T) {
	ctx := context.Background()
	s, err := session.NewWithID("chat-42")
	require.NoError(t, err)
	assert.Equal(t, "chat-42", s.ID())
	_, err = session.NewWithID("a\x00b")
	assert.ErrorIs(t, err, session.ErrInvalidID)

	store, err := session.OpenFileStore(t.TempDir(), nil)
	require.NoError(t, err)
	a, created, err := session.OpenOrCreate(ctx, store, &session.CreateOptions{ID: "s1"})
	require.NoError(t, err)
	assert.True(t, created)
	appendAll(t, a, session.UserText("hello"))
	require.NoError(t, a.Close())
	b, created, err := session.OpenOrCreate(ctx, store, &session.CreateOptions{ID: "s1"})
	require.NoError(t, err)
	defer b.Close()
	assert.False(t, created)
	assert.Equal(t, 1, b.Turns())
}

// TestForkToAnotherStore: one call copies the path into another store
// (a file session forked into memory, and back), with the same context.
func TestForkToAnotherStore(t *testing.T) {
	ctx := context.Background()
	files, err := session.OpenFileStore(t.TempDir(), nil)
	require.NoError(t, err)
	s, err := session.Create(ctx, files, nil)
	require.NoError(t, err)
	defer s.Close()
	appendAll(t, s, session.UserText("q"), reply("a"), session.UserText("q2"), reply("a2"))
	_, err = s.Checkpoint(ctx, "done")
	require.NoError(t, err)

	mem := session.NewMemoryStore()
	f, err := s.Fork(ctx, &session.ForkOptions{Store: mem, ID: "copy", CopyLabels: true})
	require.NoError(t, err)
	assert.Equal(t, texts(s.Context().Messages), texts(f.Context().Messages))
	back, err := f.Fork(ctx, &session.ForkOptions{Store: files, At: "done"})
	require.NoError(t, err)
	require.NoError(t, back.Close())
	r, err := session.Open(ctx, files, back.ID())
	require.NoError(t, err)
	defer r.Close()
	assert.Equal(t, texts(s.Context().Messages), texts(r.Context().Messages))
	assert.Equal(t, "copy", r.Header().ParentSession)
}
