package pgstore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
	"github.com/agentsession/session/pgstore"
)

// conflictCounter counts the appends a store refused with ErrConflict:
// what the Session handles then reloaded and retried.
type conflictCounter struct {
	session.Store
	appends, conflicts atomic.Int64
}

func (c *conflictCounter) Append(ctx context.Context, id string, opts session.AppendOptions, entries ...session.Entry) error {
	c.appends.Add(1)
	err := c.Store.Append(ctx, id, opts, entries...)
	if errors.Is(err, session.ErrConflict) {
		c.conflicts.Add(1)
	}
	return err
}

// LoadTail passes on to the store's own (session.TailLoader): without
// it a handle catching up after a conflict would Load the whole session,
// and "shared" would measure reads that grow with the log.
func (c *conflictCounter) LoadTail(ctx context.Context, id string, n int, last string) (*session.Log, error) {
	return c.Store.(session.TailLoader).LoadTail(ctx, id, n, last)
}

// BenchmarkAppend: 16 goroutines, each an agent saving W10k turns (a
// user message, an assistant message with a tool call, a 4 KB tool
// result: three entries, one Append) through a Session. "sessions": each
// its own session; "shared": all on one session, every append
// conditional on the last entry the handle knows (IfLast), reloading and
// retrying on a conflict. Reports entries/s across all goroutines, the
// p50 and p99 of one SaveTurn, and for "shared" the share of appends
// refused with ErrConflict. When appends went together (group commit,
// see Store.Append), it reports how many a batch held on average, and
// the share of the appends made in batches.
func BenchmarkAppend(b *testing.B) {
	const agents = 16
	for _, shared := range []bool{false, true} {
		name := "sessions"
		if shared {
			name = "shared"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			pg, _ := newStoreConns(b, agents+4)
			store := &conflictCounter{Store: pg}
			var err error
			handles := make([]*session.Session, agents)
			for g := range handles {
				if shared && g > 0 {
					handles[g], err = session.Open(ctx, store, handles[0].ID())
				} else {
					handles[g], err = session.Create(ctx, store, &session.CreateOptions{Cwd: "/bench"})
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			res, err := workload.SaveTurns(ctx, handles, b.N)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(res.EntriesPerSec(), "entries/s")
			b.ReportMetric(float64(res.Quantile(0.5).Microseconds()), "p50-µs")
			b.ReportMetric(float64(res.Quantile(0.99).Microseconds()), "p99-µs")
			if g := pgstore.Grouped(pg); g.Batches > 0 {
				b.ReportMetric(float64(g.Batched)/float64(g.Batches), "appends/batch")
				b.ReportMetric(float64(g.Batched)/float64(store.appends.Load()), "batched/append")
			}
			if shared {
				b.ReportMetric(float64(store.conflicts.Load())/float64(store.appends.Load()), "conflicts/append")
			}
		})
	}
}

// BenchmarkLoadW10k opens the W10k session (10,000 turns, 67 MB in the
// seed format) and builds its context with every message decoded: from
// PostgreSQL, and from a FileStore on local disk in the same run.
func BenchmarkLoadW10k(b *testing.B) {
	ctx := context.Background()
	mem := session.NewMemoryStore()
	src, err := workload.Session(ctx, mem, workload.W10k)
	if err != nil {
		b.Fatal(err)
	}
	pg, _ := newStoreConns(b, 4)
	fs, err := session.OpenFileStore(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer fs.Close()
	for _, dst := range []session.Store{pg, fs} {
		if err := session.Copy(ctx, dst, mem, src.ID()); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		store session.Store
	}{{"postgres", pg}, {"filestore", fs}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s, err := session.Open(ctx, c.store, src.ID())
				if err != nil {
					b.Fatal(err)
				}
				if n := len(s.Context().Messages); n != 3*workload.W10k {
					b.Fatal(n)
				}
				s.Close()
			}
		})
	}
}
