package session_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestCompactionMessageCountTrigger: with MaxMessages, compaction is due
// once the context holds more messages than that, with or without a
// window; a compaction keeps at most KeepRecentMessages (whole turns
// where it can, never a call without its result) and leaves the context
// no longer due; the compacted session reopens with the same context.
func TestCompactionMessageCountTrigger(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		opts      session.CompactionOptions
		wantKeep  int // at most this many messages kept by a compaction
		longTurns bool
	}{
		{"count only", session.CompactionOptions{MaxMessages: 20}, 10, false},
		{"count, kept given", session.CompactionOptions{MaxMessages: 20, KeepRecentMessages: 6}, 6, false},
		{"count beside a window", session.CompactionOptions{MaxMessages: 30, ContextWindow: 1 << 20}, 15, false},
		{"turns longer than what is kept", session.CompactionOptions{MaxMessages: 12, KeepRecentMessages: 4}, 4, true},
		{"opencode-like", session.CompactionOptions{MaxMessages: 100}, 50, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, err := session.OpenFileStore(t.TempDir(), nil)
			require.NoError(t, err)
			s, err := session.Create(ctx, store, nil)
			require.NoError(t, err)
			compactions := 0
			for k := range 120 {
				msgs := []*session.Message{session.UserText(fmt.Sprintf("question %d", k))}
				steps := 1
				if tc.longTurns && k%5 == 0 {
					steps = 4 // a turn of 1 + 2×4 + 1 messages
				}
				for j := range steps {
					call := fmt.Sprintf("call_%d_%d", k, j)
					msgs = append(msgs,
						session.Assistant(session.ToolCall(call, "read", []byte(`{"path":"a.go"}`))).WithModel(api, provider, model),
						session.ToolResult(call, "read", "package a"))
				}
				msgs = append(msgs, reply(fmt.Sprintf("answer %d", k)))
				require.NoError(t, s.SaveTurn(ctx, msgs, nil))

				n := len(s.Context().Messages)
				if n <= tc.opts.MaxMessages {
					require.False(t, s.NeedsCompaction(&tc.opts), "turn %d: %d messages", k, n)
					continue
				}
				require.True(t, s.NeedsCompaction(&tc.opts), "turn %d: %d messages, over %d", k, n, tc.opts.MaxMessages)
				plan, err := s.PlanCompaction(&tc.opts)
				require.NoError(t, err)
				res, err := s.Compact(ctx, session.ExtractiveSummarizer{}, &tc.opts)
				require.NoError(t, err, "turn %d", k)
				compactions++
				c := s.Context()
				require.Equal(t, session.RoleCompactionSummary, c.Messages[0].Role)
				kept := len(c.Messages) - 1
				assert.LessOrEqual(t, kept, tc.wantKeep, "turn %d: kept %d", k, kept)
				assert.Positive(t, kept)
				assert.Equal(t, plan.FirstKeptEntryID, c.EntryIDs[1])
				assert.NotEqual(t, session.RoleToolResult, c.Messages[1].Role, "a kept history never starts on a result")
				checkPairing(t, c.ForModel())
				require.False(t, s.NeedsCompaction(&tc.opts), "turn %d: still due after a compaction (%d messages)", k, len(c.Messages))
				assert.Equal(t, res.Entry.ID(), s.LeafID())
			}
			require.Positive(t, compactions)

			want := s.Context().Messages
			require.NoError(t, s.Close())
			r, err := session.Open(ctx, store, s.ID())
			require.NoError(t, err)
			defer r.Close()
			got := r.Context().Messages
			require.Len(t, got, len(want))
			for i := range want {
				assert.Equal(t, want[i].Text(), got[i].Text(), "message %d", i)
			}
			assert.False(t, r.NeedsCompaction(&tc.opts))
		})
	}
}

// TestCompactionMessageCountSettings: a kept count as large as the
// trigger, or a negative trigger, could leave the context due after a
// compaction: refused like other settings that cannot work.
func TestCompactionMessageCountSettings(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	for k := range 10 {
		appendAll(t, s, session.UserText(fmt.Sprintf("q%d", k)), reply("a"))
	}
	for _, o := range []session.CompactionOptions{
		{MaxMessages: 10, KeepRecentMessages: 10},
		{MaxMessages: 10, KeepRecentMessages: 30},
		{MaxMessages: -1},
	} {
		assert.True(t, s.NeedsCompaction(&o), "%+v: the host hears of settings that cannot work", o)
		_, err := s.Compact(ctx, session.ExtractiveSummarizer{}, &o)
		assert.ErrorIs(t, err, session.ErrCompactionSettings, "%+v", o)
	}
	// The token trigger works as before beside a count that is not reached.
	big := session.New()
	appendAll(t, big, session.UserText(strings.Repeat("x", 4000)), reply("a"), session.UserText(strings.Repeat("y", 40000)), reply("b"))
	o := session.CompactionOptions{MaxMessages: 100, ContextWindow: 8192}
	assert.True(t, big.NeedsCompaction(&o), "over the window with few messages")
	assert.False(t, big.NeedsCompaction(&session.CompactionOptions{MaxMessages: 100}), "few messages, no window")
}
