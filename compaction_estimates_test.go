package session_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestCompactionKeptEstimates: a session keeps DefaultTokenEstimator's
// estimate of each message of its context, and a compaction reads
// those rather than asking the estimator again. The same estimator
// wrapped in a function (which the session cannot recognise, so asks
// per message) must plan and apply exactly the same compaction, however
// the context came to be.
func TestCompactionKeptEstimates(t *testing.T) {
	ctx := context.Background()
	wrapped := session.TokenEstimatorFunc(func(m *session.Message) int64 {
		return session.DefaultTokenEstimator.EstimateTokens(m)
	})
	turns := func(s *session.Session, from, to, size int) {
		for k := from; k < to; k++ {
			turn(t, s, k, "read", "f.go", size)
		}
	}
	for _, tc := range []struct {
		name  string
		build func(s *session.Session)
	}{
		{"linear", func(s *session.Session) { turns(s, 0, 40, 300) }},
		{"after a compaction and more turns", func(s *session.Session) {
			turns(s, 0, 30, 300)
			_, err := s.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{KeepRecentTokens: 500})
			require.NoError(t, err)
			turns(s, 30, 60, 200)
		}},
		{"on a branch", func(s *session.Session) {
			turns(s, 0, 20, 300)
			mid := s.LeafID()
			turns(s, 20, 40, 300)
			require.NoError(t, s.Branch(ctx, mid))
			turns(s, 40, 55, 500)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, err := session.OpenFileStore(t.TempDir(), nil)
			require.NoError(t, err)
			defer store.Close()
			s, err := session.Create(ctx, store, nil)
			require.NoError(t, err)
			tc.build(s)
			require.NoError(t, s.Flush(ctx))
			// Once as built, once reopened (the context rebuilt from the
			// file).
			re, err := session.Open(ctx, store, s.ID())
			require.NoError(t, err)
			for _, s := range []*session.Session{s, re} {
				opts := func(est session.TokenEstimator) *session.CompactionOptions {
					return &session.CompactionOptions{KeepRecentTokens: 2000, Estimator: est}
				}
				kept, err := s.PlanCompaction(opts(nil))
				require.NoError(t, err)
				asked, err := s.PlanCompaction(opts(wrapped))
				require.NoError(t, err)
				require.Equal(t, asked.FirstKeptEntryID, kept.FirstKeptEntryID)
				require.Equal(t, asked.TokensBefore, kept.TokensBefore)
				require.Equal(t, asked.TokensKept, kept.TokensKept)
				require.Equal(t, asked.SplitTurn, kept.SplitTurn)
				require.Equal(t, len(asked.Summarize), len(kept.Summarize))
				require.Equal(t, len(asked.TurnPrefix), len(kept.TurnPrefix))
				require.Positive(t, kept.TokensKept)

				// Applied: two forks of the session, compacted with each.
				a, err := s.Fork(ctx, &session.ForkOptions{Store: session.NewMemoryStore()})
				require.NoError(t, err)
				b, err := s.Fork(ctx, &session.ForkOptions{Store: session.NewMemoryStore()})
				require.NoError(t, err)
				ra, err := a.Compact(ctx, session.ExtractiveSummarizer{}, opts(nil))
				require.NoError(t, err)
				rb, err := b.Compact(ctx, session.ExtractiveSummarizer{}, opts(wrapped))
				require.NoError(t, err)
				require.Equal(t, rb.TokensAfter, ra.TokensAfter)
				require.Equal(t, b.ContextTokens(wrapped), a.ContextTokens(nil))
			}
		})
	}
}
