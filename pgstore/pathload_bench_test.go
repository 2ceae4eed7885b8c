package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
	"github.com/agentsession/session/pgstore"
)

// BenchmarkResumeCompacted: resuming a long compacted session from
// PostgreSQL as another replica does (issue 40's W20k-C and W100k-C:
// W10k's turns, a compaction every 2,000 turns but after the last 2,000):
// a new Store on the pool, Open, Context and Messages. The session is
// built in a MemoryStore and copied in (one append of every entry).
// AGENTSESSION_RESUME_TURNS picks the sizes (default 4000, which the
// CI's run of every benchmark builds in seconds; W20k-C is 20000,
// W100k-C 100000, about 670 MB in the database).
func BenchmarkResumeCompacted(b *testing.B) {
	sizes := []int{4000}
	if v := os.Getenv("AGENTSESSION_RESUME_TURNS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	ctx := context.Background()
	for _, turns := range sizes {
		dst, pool := newStoreConns(b, 4)
		id := compactedSession(b, dst, turns)
		if pl, err := dst.LoadPath(ctx, id); err != nil || pl.Complete {
			b.Fatalf("LoadPath read the session whole (%v)", err)
		} else {
			b.Logf("the path: %d entries", len(pl.Log.Entries))
		}
		b.Run(fmt.Sprintf("W%dk-C", turns/1000), func(b *testing.B) {
			b.ReportAllocs()
			msgs := 0
			var took []time.Duration
			for b.Loop() {
				t0 := time.Now()
				store, err := pgstore.New(ctx, pool, nil)
				if err != nil {
					b.Fatal(err)
				}
				s, err := session.Open(ctx, store, id)
				if err != nil {
					b.Fatal(err)
				}
				_ = s.Context()
				m, err := s.Messages(ctx)
				if err != nil {
					b.Fatal(err)
				}
				msgs = len(m)
				took = append(took, time.Since(t0))
				s.Close()
				store.Close()
			}
			b.ReportMetric(float64(msgs), "messages")
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
		})
	}
}

// compactedSession writes W10k's turns [0, turns) to a session,
// compacting every 2,000 turns but after the last 2,000, in a
// MemoryStore, copies it to dst, and returns its id.
func compactedSession(b testing.TB, dst session.Store, turns int) string {
	b.Helper()
	ctx := context.Background()
	mem := session.NewMemoryStore()
	s, err := session.Create(ctx, mem, &session.CreateOptions{Cwd: "/home/dev/project"})
	if err != nil {
		b.Fatal(err)
	}
	opts := &session.CompactionOptions{ContextWindow: 200000}
	for i := range turns {
		u, a, r := workload.Turn(i)
		if err := s.SaveTurn(ctx, []*session.Message{u, a, r}, nil); err != nil {
			b.Fatal(err)
		}
		if i%2000 == 1999 && i+2000 < turns {
			if _, err := s.Compact(ctx, session.ExtractiveSummarizer{}, opts); err != nil {
				b.Fatal(err)
			}
		}
	}
	id := s.ID()
	s.Close()
	if err := session.Copy(ctx, dst, mem, id); err != nil {
		b.Fatal(err)
	}
	return id
}
