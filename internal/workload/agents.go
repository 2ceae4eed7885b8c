package workload

import (
	"context"
	"errors"
	"fmt"
	"math"
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

// Quantile returns the latency of a turn at q in [0, 1] (0.5 for the
// median), by nearest rank: the smallest latency that at least q of the
// turns took no longer than.
func (a Agents) Quantile(q float64) time.Duration {
	n := len(a.Latencies)
	if n == 0 {
		return 0
	}
	k := int(math.Ceil(q*float64(n))) - 1
	return a.Latencies[min(max(k, 0), n-1)]
}

// maxConflicts bounds the SaveTurn calls of one turn that SaveTurns makes
// while the turn loses races (each of which retried for about a second).
const maxConflicts = 10

// SaveTurns has one goroutine per handle (an agent each) save W10k turns
// with SaveTurn until turns turns are saved among them, and measures it.
// The handles may be on one session or on several. A SaveTurn that
// fails with ErrConflict (it lost every retry to the other writers) is
// made again, as an agent would, up to maxConflicts times in a row for
// one turn; any other error, or ctx's end, stops every agent, and the
// first such error is returned.
func SaveTurns(ctx context.Context, handles []*session.Session, turns int) (Agents, error) {
	if len(handles) == 0 {
		return Agents{}, errors.New("workload: SaveTurns without a handle")
	}
	msgs := make([][]*session.Message, 64) // turns repeat: building them is not what is measured
	for i := range msgs {
		u, a, r := Turn(i)
		msgs[i] = []*session.Message{u, a, r}
	}
	lat := make([][]time.Duration, len(handles))
	var next, conflicts atomic.Int64
	var stopped atomic.Bool // an agent failed: the others stop too
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
				for try := 1; ; try++ {
					err := h.SaveTurn(ctx, msgs[i%int64(len(msgs))], nil)
					if err == nil {
						break
					}
					if errors.Is(err, session.ErrConflict) && try < maxConflicts && ctx.Err() == nil && !stopped.Load() {
						conflicts.Add(1)
						continue
					}
					if errors.Is(err, session.ErrConflict) {
						err = fmt.Errorf("workload: turn %d lost %d races in a row: %w", i, try, err)
					}
					once.Do(func() { first = err })
					stopped.Store(true)
					next.Store(int64(turns)) // the others take no new turn
					return
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
