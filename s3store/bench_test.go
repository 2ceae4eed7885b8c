package s3store_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
	"github.com/agentsession/session/pgstore"
	"github.com/agentsession/session/s3store"
)

// BenchmarkStores measures the S3 store side by side with FileStore and
// pgstore (when AGENTSESSION_PG_DSN is set) on the same machine and the
// same workloads: appends by 16 agents, each on a session of its own
// (entries/s, and requests a turn on S3), resume of W10k (open, context,
// messages) by a store that never read it (another machine) and by one
// that did, a fork of it, and a listing of 1,000 sessions by a store
// that never listed them. -short: W1k and 100 sessions.
func BenchmarkStores(b *testing.B) {
	kinds := []struct {
		name string
		open func(b *testing.B) func() session.Store // a store factory on one shared place
	}{
		{"file", func(b *testing.B) func() session.Store {
			root := b.TempDir()
			return func() session.Store {
				s, err := session.OpenFileStore(root, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.Close() })
				return s
			}
		}},
		{"postgres", func(b *testing.B) func() session.Store {
			dsn := os.Getenv("AGENTSESSION_PG_DSN")
			if dsn == "" {
				b.Skip("AGENTSESSION_PG_DSN is not set")
			}
			pool := pgPool(b, dsn)
			if err := pgstore.Migrate(context.Background(), pool); err != nil {
				b.Fatal(err)
			}
			return func() session.Store {
				s, err := pgstore.New(context.Background(), pool, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.Close() })
				return s
			}
		}},
		{"s3", func(b *testing.B) func() session.Store {
			opts := options(b)
			return func() session.Store { return openStore(b, opts) }
		}},
	}
	turns, sessions := 10000, 1000
	if testing.Short() {
		turns, sessions = 1000, 100
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			ctx := context.Background()
			b.Run("append16", func(b *testing.B) {
				store := k.open(b)()
				handles := make([]*session.Session, 16)
				for i := range handles {
					var err error
					if handles[i], err = session.Create(ctx, store, &session.CreateOptions{Cwd: "/bench"}); err != nil {
						b.Fatal(err)
					}
				}
				before, _ := requests(store)
				b.ResetTimer()
				a, err := workload.SaveTurns(ctx, handles, max(b.N, 16))
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(a.EntriesPerSec(), "entries/s")
				b.ReportMetric(float64(a.Quantile(0.5).Microseconds()), "p50-µs/turn")
				if r, ok := requests(store); ok {
					b.ReportMetric(float64(r.Sub(before).Total())/float64(a.Turns), "requests/turn")
				}
			})
			newStore := k.open(b)
			log, err := workload.Log(turns)
			if err != nil {
				b.Fatal(err)
			}
			log.Header.ID = fmt.Sprintf("w%d", turns)
			if err := newStore().(session.EntryCreator).CreateWithEntries(ctx, log.Header, log.Entries); err != nil {
				b.Fatal(err)
			}
			resume := func(b *testing.B, store session.Store) {
				s, err := session.Open(ctx, store, log.Header.ID)
				if err != nil {
					b.Fatal(err)
				}
				msgs, err := s.Messages(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if n := len(msgs); n != 3*turns {
					b.Fatalf("%d messages", n)
				}
			}
			b.Run(fmt.Sprintf("resume-w%d-cold", turns/1000), func(b *testing.B) {
				for b.Loop() {
					resume(b, newStore())
				}
			})
			b.Run(fmt.Sprintf("resume-w%d-warm", turns/1000), func(b *testing.B) {
				store := newStore()
				resume(b, store)
				for b.Loop() {
					resume(b, store)
				}
			})
			b.Run(fmt.Sprintf("fork-w%d", turns/1000), func(b *testing.B) {
				store := newStore()
				s, err := session.Open(ctx, store, log.Header.ID)
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					f, err := s.Fork(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					f.Close()
				}
			})
			b.Run(fmt.Sprintf("list%d-cold", sessions), func(b *testing.B) {
				fill := k.open(b)
				store := fill()
				for i := range sessions {
					s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/bench"})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := s.Append(ctx, session.UserText(fmt.Sprint("question ", i))); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := store.List(ctx, session.ListOptions{Limit: 1}); err != nil { // the index object, where there is one
					b.Fatal(err)
				}
				for b.Loop() {
					page, err := fill().List(ctx, session.ListOptions{Limit: sessions})
					if err != nil || len(page.Sessions) != sessions {
						b.Fatalf("%d sessions listed, %v", len(page.Sessions), err)
					}
				}
			})
		})
	}
}

// requests returns the requests an S3 store sent so far.
func requests(store session.Store) (s3store.Requests, bool) {
	if s, ok := store.(*s3store.Store); ok {
		return s.Requests(), true
	}
	return s3store.Requests{}, false
}
