package session_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

// The state workload of issue 40: a framework checkpoint of 16 KiB saved
// 10,000 times (SetState of one key) in a FileStore session.
//
//	go test -run '^$' -bench 'BenchmarkState16K' -benchmem -count 6 .
//
// set: one more SetState at that depth; get and state: GetState and
// State at the leaf; at: StateAt of an earlier entry (after the first
// fold of the path, first-fold-ms); reopened: GetState
// on a handle just opened (its first fold included, once, in
// first-get-ms); pruned: the same after a Prune (prune-ms), with the
// file's size before (file-MB) and after (pruned-MB).

const (
	stateBenchSets = 10000
	stateBenchSize = 16 << 10
)

// stateBenchValue is the checkpoint saved the i-th time.
func stateBenchValue(i int) string {
	p := fmt.Sprintf("checkpoint %d ", i)
	return p + strings.Repeat("x", stateBenchSize-len(p))
}

// stateBenchSession makes a FileStore session holding the workload.
func stateBenchSession(b *testing.B) (*session.FileStore, *session.Session, []string) {
	b.Helper()
	ctx := context.Background()
	store, err := session.OpenFileStore(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	s, err := session.Create(ctx, store, nil)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, 0, stateBenchSets)
	for i := range stateBenchSets {
		if err := session.SetState(ctx, s, "checkpoint", stateBenchValue(i)); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, s.LeafID())
	}
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	return store, s, ids
}

func stateBenchFileMB(b *testing.B, store *session.FileStore, id string) float64 {
	p, err := store.Path(id)
	if err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	return float64(fi.Size()) / 1e6
}

func stateBenchGet(b *testing.B, s *session.Session, want int) {
	v, ok, err := session.GetState[string](context.Background(), s, "checkpoint")
	if err != nil || !ok || !strings.HasPrefix(v, fmt.Sprintf("checkpoint %d ", want)) {
		b.Fatalf("GetState: %.20q %v %v", v, ok, err)
	}
}

func BenchmarkState16K(b *testing.B) {
	ctx := context.Background()
	b.Run("set", func(b *testing.B) {
		store, s, _ := stateBenchSession(b)
		size := stateBenchFileMB(b, store, s.ID())
		defer func() { b.ReportMetric(size, "file-MB") }()
		i := stateBenchSets
		b.SetBytes(stateBenchSize)
		for b.Loop() {
			if err := session.SetState(ctx, s, "checkpoint", stateBenchValue(i)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("get", func(b *testing.B) {
		_, s, _ := stateBenchSession(b)
		stateBenchGet(b, s, stateBenchSets-1) // folded as it was appended
		for b.Loop() {
			stateBenchGet(b, s, stateBenchSets-1)
		}
	})
	b.Run("state", func(b *testing.B) {
		_, s, _ := stateBenchSession(b)
		if _, err := s.State(ctx); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			st, err := s.State(ctx)
			if err != nil || len(st["checkpoint"]) != stateBenchSize+2 {
				b.Fatal(len(st), err)
			}
		}
	})
	b.Run("at", func(b *testing.B) {
		_, s, ids := stateBenchSession(b)
		// The first fold of the path keeps folds along it (first-fold-ms).
		start := time.Now()
		if _, err := s.State(ctx); err != nil {
			b.Fatal(err)
		}
		first := float64(time.Since(start).Microseconds()) / 1e3
		defer func() { b.ReportMetric(first, "first-fold-ms") }()
		r := rand.New(rand.NewPCG(1, 2))
		for b.Loop() {
			k := r.IntN(len(ids))
			st, err := s.StateAt(ids[k])
			if err != nil || !strings.HasPrefix(string(st["checkpoint"]), fmt.Sprintf(`"checkpoint %d `, k)) {
				b.Fatal(k, err)
			}
		}
	})
	b.Run("reopened", func(b *testing.B) {
		store, s, _ := stateBenchSession(b)
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		o, err := session.Open(ctx, store, s.ID())
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		stateBenchGet(b, o, stateBenchSets-1)
		first := float64(time.Since(start).Microseconds()) / 1e3
		for b.Loop() {
			stateBenchGet(b, o, stateBenchSets-1)
		}
		b.ReportMetric(first, "first-get-ms")
	})
	b.Run("pruned", func(b *testing.B) {
		store, s, _ := stateBenchSession(b)
		before := stateBenchFileMB(b, store, s.ID())
		start := time.Now()
		res, err := s.Prune(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		took := float64(time.Since(start).Microseconds()) / 1e3
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		after := stateBenchFileMB(b, store, s.ID())
		o, err := session.Open(ctx, store, s.ID())
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		stateBenchGet(b, o, stateBenchSets-1)
		first := float64(time.Since(start).Microseconds()) / 1e3
		for b.Loop() {
			stateBenchGet(b, o, stateBenchSets-1)
		}
		b.ReportMetric(before, "file-MB")
		b.ReportMetric(took, "prune-ms")
		b.ReportMetric(float64(res.Kept), "kept-entries")
		b.ReportMetric(after, "pruned-MB")
		b.ReportMetric(first, "first-get-ms")
	})
}
