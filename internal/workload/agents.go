package workload

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	session "github.com/agentsession/session"
)

// Agents is what SaveTurns measured: how long the turns took together,
// and each turn's latency, sorted.
type Agents struct {
	Turns     int
	Elapsed   time.Duration
	Latencies []time.Duration // one per turn, shortest first
	Conflicts int             // SaveTurn calls that ran out of retries (ErrConflict) and were made again
}

// EntriesPerSec is the message entries stored per second (3 a turn).
func (a Agents) EntriesPerSec() float64 {
	if a.Elapsed <= 0 {
		return 0
	}
	return float64(3*a.Turns) / a.Elapsed.Seconds()
}

// Quantile returns the latency of a turn at q (0.5 for the median).
func (a Agents) Quantile(q float64) time.Duration {
	if len(a.Latencies) == 0 {
		return 0
	}
	return a.Latencies[min(int(q*float64(len(a.Latencies))), len(a.Latencies)-1)]
}

// SaveTurns has one goroutine per handle (an agent each) save W10k turns
// with SaveTurn until turns turns are saved among them, and measures it.
// The handles may be on one session or on several. A SaveTurn that
// fails with ErrConflict (it lost every retry to the other writers) is
// made again, as an agent would; any other error stops the run.
func SaveTurns(ctx context.Context, handles []*session.Session, turns int) (Agents, error) {
	msgs := make([][]*session.Message, 64) // turns repeat: building them is not what is measured
	for i := range msgs {
		u, a, r := Turn(i)
		msgs[i] = []*session.Message{u, a, r}
	}
	lat := make([][]time.Duration, len(handles))
	var next, conflicts atomic.Int64
	var (
		once  sync.Once
		first error
	)
	start := time.Now()
	var wg sync.WaitGroup
	for g, h := range handles {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(turns) {
					return
				}
				t := time.Now()
				for {
					err := h.SaveTurn(ctx, msgs[i%int64(len(msgs))], nil)
					if err == nil {
						break
					}
					if !errors.Is(err, session.ErrConflict) {
						once.Do(func() { first = err })
						next.Store(int64(turns)) // the others stop too
						return
					}
					conflicts.Add(1)
				}
				lat[g] = append(lat[g], time.Since(t))
			}
		})
	}
	wg.Wait()
	a := Agents{Turns: turns, Elapsed: time.Since(start), Latencies: slices.Concat(lat...), Conflicts: int(conflicts.Load())}
	slices.Sort(a.Latencies)
	return a, first
}
