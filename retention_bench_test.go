package session_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

// BenchmarkSweep sweeps a store of 10,000 sessions (100 working
// directories, two entries each) of which the 9,000 made first have
// expired: they are read (for labels) and deleted, and the blob
// collection that follows reads the 1,000 left (a tenth of each with
// -short). The figure is the time of one sweep (ns/op), and ns/session
// per session listed.
func BenchmarkSweep(b *testing.B) {
	total, expired := 10_000, 9_000
	if testing.Short() { // the CI's smoke run: creating 10,000 synced files is most of its time
		total, expired = 1_000, 900
	}
	ctx := context.Background()
	fill := func(b *testing.B, store session.Store) time.Time {
		b.Helper()
		var boundary time.Time
		for i := range total {
			if i == expired {
				time.Sleep(5 * time.Millisecond)
				boundary = time.Now()
				time.Sleep(5 * time.Millisecond)
			}
			id := fmt.Sprintf("sess-%05d", i)
			h := session.Header{Version: session.CurrentVersion, ID: id, Timestamp: time.Now(), Cwd: fmt.Sprintf("/src/p%02d", i%100)}
			e1, err := session.NewEntry("bench", id+"-a", "", time.Now(), map[string]any{"text": "hello"})
			if err != nil {
				b.Fatal(err)
			}
			e2, _ := session.NewEntry("bench", id+"-b", id+"-a", time.Now(), map[string]any{"text": "world"})
			if err := store.(session.EntryCreator).CreateWithEntries(ctx, h, []session.Entry{e1, e2}); err != nil {
				b.Fatal(err)
			}
		}
		return boundary
	}
	run := func(b *testing.B, open func(b *testing.B) session.Store) {
		for b.Loop() {
			b.StopTimer()
			store := open(b)
			boundary := fill(b, store)
			b.StartTimer()
			res, err := session.Sweep(ctx, store, &session.SweepPolicy{OlderThan: time.Hour,
				Now: func() time.Time { return boundary.Add(time.Hour) }})
			b.StopTimer()
			if err != nil || len(res.Deleted) != expired || len(res.Errors) > 0 {
				b.Fatalf("%v: deleted %d, errors %v", err, len(res.Deleted), res.Errors)
			}
			if c, ok := store.(interface{ Close() error }); ok {
				c.Close()
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*total), "ns/session")
	}
	b.Run("MemoryStore", func(b *testing.B) {
		run(b, func(*testing.B) session.Store { return session.NewMemoryStore() })
	})
	b.Run("FileStore", func(b *testing.B) {
		run(b, func(b *testing.B) session.Store {
			store, err := session.OpenFileStore(filepath.Join(b.TempDir(), "sessions"), nil)
			if err != nil {
				b.Fatal(err)
			}
			return store
		})
	})
}
