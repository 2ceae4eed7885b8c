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
// get and state: GetState and State at the leaf; at: StateAt of an
// earlier entry; set: one more SetState at that depth (file-MB: the file
// of 10,000); reopened: GetState on a handle just opened (its first
// fold in first-get-ms of the first run); pruned: GetState after a Prune
// (prune-ms) and a reopen, with the file's size before (file-MB) and
// after (pruned-MB), in the first run (the others find nothing more to
// drop). -count runs each sub-benchmark on the same session in turn.

const stateBenchSize = 16 << 10

// stateBenchSets is the number of sets: the 10,000, or 1,000
// with -short (the CI's run of every benchmark, once).
func stateBenchSets() int {
	if testing.Short() {
		return 1000
	}
	return 10000
}

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
	ids := make([]string, 0, stateBenchSets())
	for i := range stateBenchSets() {
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
	// One session per run (-count), the sub-benchmarks in turn on it:
	// those that read, then set (which adds entries), then pruned.
	store, s, ids := stateBenchSession(b)
	size := stateBenchFileMB(b, store, s.ID())
	b.Run("get", func(b *testing.B) {
		stateBenchGet(b, s, stateBenchSets()-1) // folded as it was appended
		for b.Loop() {
			stateBenchGet(b, s, stateBenchSets()-1)
		}
	})
	b.Run("state", func(b *testing.B) {
		for b.Loop() {
			st, err := s.State(ctx)
			if err != nil || len(st["checkpoint"]) != stateBenchSize+2 {
				b.Fatal(len(st), err)
			}
		}
	})
	b.Run("at", func(b *testing.B) {
		r := rand.New(rand.NewPCG(1, 2))
		for b.Loop() {
			k := r.IntN(len(ids))
			st, err := s.StateAt(ids[k])
			if err != nil || !strings.HasPrefix(string(st["checkpoint"]), fmt.Sprintf(`"checkpoint %d `, k)) {
				b.Fatal(k, err)
			}
		}
	})
	last := stateBenchSets() - 1
	b.Run("set", func(b *testing.B) {
		b.SetBytes(stateBenchSize)
		for b.Loop() {
			last++
			if err := session.SetState(ctx, s, "checkpoint", stateBenchValue(last)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(size, "file-MB")
	})
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	o, err := session.Open(ctx, store, s.ID())
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	b.Run("reopened", func(b *testing.B) {
		start := time.Now()
		stateBenchGet(b, o, last)
		first := float64(time.Since(start).Microseconds()) / 1e3
		for b.Loop() {
			stateBenchGet(b, o, last)
		}
		b.ReportMetric(first, "first-get-ms")
	})
	b.Run("pruned", func(b *testing.B) {
		// A handle of its own each run (-count): the first run prunes,
		// the others find nothing more to drop.
		h, err := session.Open(ctx, store, o.ID())
		if err != nil {
			b.Fatal(err)
		}
		before := stateBenchFileMB(b, store, h.ID())
		start := time.Now()
		res, err := h.Prune(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		took := float64(time.Since(start).Microseconds()) / 1e3
		if err := h.Close(); err != nil {
			b.Fatal(err)
		}
		after := stateBenchFileMB(b, store, h.ID())
		p, err := session.Open(ctx, store, h.ID())
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		start = time.Now()
		stateBenchGet(b, p, last)
		first := float64(time.Since(start).Microseconds()) / 1e3
		for b.Loop() {
			stateBenchGet(b, p, last)
		}
		b.ReportMetric(before, "file-MB")
		b.ReportMetric(took, "prune-ms")
		b.ReportMetric(float64(res.Kept), "kept-entries")
		b.ReportMetric(after, "pruned-MB")
		b.ReportMetric(first, "first-get-ms")
	})
}
