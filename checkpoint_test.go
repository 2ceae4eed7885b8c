package session_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestCheckpointAtAnyEntry: a checkpoint names any entry, not only the
// leaf, and keeps the host's metadata through a close and reopen; naming
// again is idempotent with the same metadata and records new metadata
// otherwise; another name on a named entry is refused.
func TestCheckpointAtAnyEntry(t *testing.T) {
	ctx := context.Background()
	store, err := session.OpenFileStore(t.TempDir(), nil)
	require.NoError(t, err)
	s, err := session.Create(ctx, store, nil)
	require.NoError(t, err)
	es := appendAll(t, s, session.UserText("one"), reply("a1"), session.UserText("two"), reply("a2"))
	mid := es[1].ID()

	cp, err := s.CheckpointWith(ctx, "before-two", &session.CheckpointOptions{At: mid, Metadata: map[string]any{"commit": "abc123", "files": []string{"a.go"}}})
	require.NoError(t, err)
	assert.Equal(t, mid, cp.EntryID)
	assert.JSONEq(t, `{"commit":"abc123","files":["a.go"]}`, string(cp.Metadata))
	assert.Equal(t, es[3].ID(), s.Context().EntryIDs[len(s.Context().EntryIDs)-1], "the leaf did not move")

	n := s.Len()
	again, err := s.CheckpointWith(ctx, "before-two", &session.CheckpointOptions{At: mid, Metadata: json.RawMessage(`{"files":["a.go"],"commit":"abc123"}`)})
	require.NoError(t, err)
	assert.Equal(t, n, s.Len(), "same name, entry and metadata: nothing appended")
	assert.Equal(t, cp.Time, again.Time)

	updated, err := s.CheckpointWith(ctx, "before-two", &session.CheckpointOptions{At: "before-two", Metadata: map[string]string{"commit": "def456"}})
	require.NoError(t, err, "At may name the checkpoint itself")
	assert.Equal(t, mid, updated.EntryID)
	assert.JSONEq(t, `{"commit":"def456"}`, string(updated.Metadata))
	assert.Equal(t, n+1, s.Len())

	_, err = s.CheckpointWith(ctx, "other", &session.CheckpointOptions{At: mid})
	assert.ErrorIs(t, err, session.ErrExists)
	_, err = s.CheckpointWith(ctx, "nowhere", &session.CheckpointOptions{At: "no-such-entry"})
	assert.ErrorIs(t, err, session.ErrNotFound)

	leaf, err := s.Checkpoint(ctx, "end")
	require.NoError(t, err)
	assert.Equal(t, es[3].ID(), leaf.EntryID, "without At, the current point")
	assert.Nil(t, leaf.Metadata)
	require.NoError(t, s.Close())

	r, err := session.Open(ctx, store, s.ID())
	require.NoError(t, err)
	defer r.Close()
	cps := r.Checkpoints()
	require.Len(t, cps, 2)
	assert.Equal(t, "before-two", cps[0].Name)
	assert.JSONEq(t, `{"commit":"def456"}`, string(cps[0].Metadata))
	assert.Equal(t, "end", cps[1].Name)

	// The label entry is still pi's: targetId and label, metadata beside.
	e, err := r.Resolve("before-two")
	require.NoError(t, err)
	assert.Equal(t, mid, e.ID())
	_, err = r.Resolve("nope")
	assert.ErrorIs(t, err, session.ErrNotFound)
	assert.Equal(t, "before-two", r.LabelOf(mid))
}

// TestForkAtCheckpoint: ForkOptions.At takes a checkpoint name wherever
// it takes an entry id, as Rewind does.
func TestForkAtCheckpoint(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	es := appendAll(t, s, session.UserText("one"), reply("a1"), session.UserText("two"), reply("a2"))
	_, err := s.CheckpointWith(ctx, "after-one", &session.CheckpointOptions{At: es[1].ID()})
	require.NoError(t, err)

	for _, at := range []string{"after-one", es[1].ID()} {
		f, err := s.Fork(ctx, &session.ForkOptions{At: at, CopyLabels: true})
		require.NoError(t, err, at)
		assert.Equal(t, []string{"user:one", "assistant:a1"}, texts(f.Context().Messages), at)
		assert.Equal(t, "after-one", f.LabelOf(es[1].ID()))
		require.NoError(t, f.Close())
	}
	_, err = s.Fork(ctx, &session.ForkOptions{At: "no-such-checkpoint"})
	assert.ErrorIs(t, err, session.ErrNotFound)

	res, err := s.Rewind(ctx, "after-one")
	require.NoError(t, err)
	assert.Equal(t, es[1].ID(), res.To, "Rewind resolves the same way")
}
