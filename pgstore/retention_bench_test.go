package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentsession/session"
)

// BenchmarkSweep is the root package's BenchmarkSweep on PostgreSQL:
// 10,000 sessions (100 working directories, two entries each), the
// 9,000 made first expired, read and deleted with DeleteIfUnchanged.
func BenchmarkSweep(b *testing.B) {
	const total, expired = 10_000, 9_000
	ctx := context.Background()
	make1 := func(b *testing.B, store session.Store, i int) {
		id := fmt.Sprintf("sess-%05d", i)
		h := session.Header{Version: session.CurrentVersion, ID: id, Timestamp: time.Now(), Cwd: fmt.Sprintf("/src/p%02d", i%100)}
		e1, err := session.NewEntry("bench", id+"-a", "", time.Now(), map[string]any{"text": "hello"})
		if err != nil {
			b.Error(err)
			return
		}
		e2, _ := session.NewEntry("bench", id+"-b", id+"-a", time.Now(), map[string]any{"text": "world"})
		if err := store.(session.EntryCreator).CreateWithEntries(ctx, h, []session.Entry{e1, e2}); err != nil {
			b.Error(err)
		}
	}
	fill := func(b *testing.B, store session.Store, from, to int) {
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := from + g; i < to; i += 8 {
					make1(b, store, i)
				}
			})
		}
		wg.Wait()
	}
	for b.Loop() {
		b.StopTimer()
		store, _ := newStoreConns(b, 10)
		fill(b, store, 0, expired)
		time.Sleep(50 * time.Millisecond)
		boundary := time.Now()
		time.Sleep(50 * time.Millisecond)
		fill(b, store, expired, total)
		b.StartTimer()
		res, err := session.Sweep(ctx, store, &session.SweepPolicy{OlderThan: time.Hour,
			Now: func() time.Time { return boundary.Add(time.Hour) }})
		b.StopTimer()
		if err != nil || len(res.Deleted) != expired || len(res.Errors) > 0 {
			b.Fatalf("%v: deleted %d, errors %v", err, len(res.Deleted), res.Errors)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*total), "ns/session")
}
