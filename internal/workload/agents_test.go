package workload_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
)

// TestSaveTurns: every turn is saved once, by one of the agents, whether
// they write sessions of their own or share one (and then lose races and
// save again).
func TestSaveTurns(t *testing.T) {
	ctx := context.Background()
	for _, shared := range []bool{false, true} {
		store := session.NewMemoryStore()
		handles := make([]*session.Session, 4)
		for g := range handles {
			var err error
			if shared && g > 0 {
				handles[g], err = session.Open(ctx, store, handles[0].ID())
			} else {
				handles[g], err = session.Create(ctx, store, nil)
			}
			require.NoError(t, err)
		}
		a, err := workload.SaveTurns(ctx, handles, 50)
		require.NoError(t, err)
		assert.Equal(t, 50, a.Turns)
		require.Len(t, a.Latencies, 50)
		assert.LessOrEqual(t, a.Quantile(0.5), a.Quantile(0.99))
		assert.Positive(t, a.EntriesPerSec())
		ids := map[string]bool{}
		entries := 0
		for _, h := range handles {
			if ids[h.ID()] {
				continue
			}
			ids[h.ID()] = true
			s, err := session.Open(ctx, store, h.ID())
			require.NoError(t, err)
			for range s.Entries() {
				entries++
			}
		}
		assert.Equal(t, 150, entries, "shared %v", shared)
	}
}

// TestSaveTurnsError: an error other than a lost race stops every agent
// and is returned.
func TestSaveTurnsError(t *testing.T) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	s, err := session.Create(ctx, store, nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = workload.SaveTurns(ctx, []*session.Session{s}, 10)
	assert.ErrorIs(t, err, session.ErrClosed)
}
