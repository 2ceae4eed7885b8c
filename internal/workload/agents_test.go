package workload_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
)

// TestSaveTurns: every turn is saved once, by one of the agents, whether
// they write sessions of their own or share one.
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
		assert.Positive(t, a.Elapsed)
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
// (they take no new turn) and is returned.
func TestSaveTurnsError(t *testing.T) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	handles := make([]*session.Session, 4)
	for g := range handles {
		var err error
		handles[g], err = session.Create(ctx, store, nil)
		require.NoError(t, err)
	}
	require.NoError(t, handles[2].Close())
	a, err := workload.SaveTurns(ctx, handles, 100_000)
	assert.ErrorIs(t, err, session.ErrClosed)
	assert.Less(t, len(a.Latencies), 10_000, "the others went on after the error")

	_, err = workload.SaveTurns(ctx, nil, 10)
	assert.Error(t, err)
}

// TestAgentsFigures: the rates and the nearest-rank quantiles.
func TestAgentsFigures(t *testing.T) {
	a := workload.Agents{Turns: 100, Elapsed: 2 * time.Second}
	for i := range 100 {
		a.Latencies = append(a.Latencies, time.Duration(i+1)*time.Millisecond)
	}
	assert.Equal(t, 150.0, a.EntriesPerSec())
	for q, want := range map[float64]time.Duration{0: 1, 0.01: 1, 0.5: 50, 0.99: 99, 1: 100} {
		assert.Equal(t, want*time.Millisecond, a.Quantile(q), "q %v", q)
	}
	small := workload.Agents{Latencies: []time.Duration{10, 20, 30}}
	assert.Equal(t, time.Duration(20), small.Quantile(0.5))
	assert.Equal(t, time.Duration(30), small.Quantile(0.99))
	assert.Zero(t, workload.Agents{}.Quantile(0.5))
	assert.Zero(t, workload.Agents{}.EntriesPerSec())
}
