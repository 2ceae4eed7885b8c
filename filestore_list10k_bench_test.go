package session_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/names"
	"github.com/agentsession/session/internal/workload"
)

// list10kCount is the number of sessions BenchmarkList10k lists: 10,000,
// or 1,000 with -short (.ci/run runs every benchmark once so).
func list10kCount() int {
	if testing.Short() {
		return 1_000
	}
	return 10_000
}

// BenchmarkList10k lists 10,000 small sessions (issue 40's target: 100 ms
// with their listing index, 2 s for the same files written by another
// program) with a new store each time, as another process's first
// listing: OpenFileStore and List of every session are timed, closing
// is not. "index" lists through the listing index (.index) a FileStore
// left; "no-index" has the index removed before each run (and the path
// indexes, which these short sessions do not get), so that every file
// is read whole, as for sessions pi wrote. The sessions are written
// once, in the parent's directory: 1 to 5 W10k turns each (3 on
// average, some 220 MB in all), a first user message, every fourth
// titled (a session_info entry), every sixth with metadata, in 16
// working directories as pi lays them out (--cwd--/<time>_<id>.jsonl).
// cpu-ns/op is the processor time of each run (see cpuMeter), list-ns/op
// the wall time of List alone (without OpenFileStore's own scan of the
// tree).
//
// The files are in the page cache: a listing after a cold boot reads
// them from the disk besides. With AGENTSESSION_BENCH_DIR set, the
// sessions are written under it once (DIR/list10k; DIR/list1k with -short) and kept, so that pi
// (bench/pi) and binaries of other commits list the same files.
func BenchmarkList10k(b *testing.B) {
	ctx := context.Background()
	n := list10kCount()
	root := list10kDir(b, n)
	index := filepath.Join(root, ".index")
	// list times one listing; the timer is stopped around it.
	list := func(b *testing.B, cpu *cpuMeter, listOnly *time.Duration) {
		runtime.GC()
		b.StartTimer()
		cpu.start()
		st, err := session.OpenFileStore(root, nil)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		p, err := st.List(ctx, session.ListOptions{Limit: n})
		*listOnly += time.Since(t0)
		cpu.stop()
		b.StopTimer()
		if err != nil || len(p.Sessions) != n {
			b.Fatal(err, len(p.Sessions))
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
	}
	report := func(b *testing.B, listOnly time.Duration) {
		b.ReportMetric(float64(listOnly.Nanoseconds())/float64(b.N), "list-ns/op")
	}
	b.Run("index", func(b *testing.B) {
		if _, err := os.Stat(index); err != nil {
			b.Fatal("the writer left no listing index:", err)
		}
		var cpu cpuMeter
		var listOnly time.Duration
		defer cpu.report(b)
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			list(b, &cpu, &listOnly)
			b.StartTimer()
		}
		report(b, listOnly)
	})
	b.Run("no-index", func(b *testing.B) {
		var cpu cpuMeter
		var listOnly time.Duration
		defer cpu.report(b)
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			for _, name := range []string{".index", ".pathindex"} {
				if err := os.RemoveAll(filepath.Join(root, name)); err != nil {
					b.Fatal(err)
				}
			}
			list(b, &cpu, &listOnly)
			b.StartTimer()
		}
		report(b, listOnly)
	})
}

// list10kDir returns the root of BenchmarkList10k's sessions, written
// on the first call (see AGENTSESSION_BENCH_DIR above).
func list10kDir(b *testing.B, n int) string {
	dir := os.Getenv("AGENTSESSION_BENCH_DIR")
	if dir == "" {
		root := b.TempDir()
		writeList10k(b, root, n)
		return root
	}
	root := filepath.Join(dir, fmt.Sprintf("list%dk", n/1000))
	if _, err := os.Stat(filepath.Join(root, "done")); err == nil {
		return root
	}
	if err := os.RemoveAll(root); err != nil {
		b.Fatal(err)
	}
	writeList10k(b, root, n)
	if err := os.WriteFile(filepath.Join(root, "done"), nil, 0o600); err != nil {
		b.Fatal(err)
	}
	return root
}

// writeList10k writes BenchmarkList10k's sessions under root as another
// program would (each made on a MemoryStore, written with WriteLog where
// FileStore's seed layout puts it: --cwd--/<time>_<id>.jsonl), then
// lists them once with a FileStore, which leaves the listing index.
// (Creating them on a FileStore costs a scan of the tree per Create,
// minutes for 10,000.)
func writeList10k(b *testing.B, root string, n int) {
	b.Helper()
	ctx := context.Background()
	for i := range n {
		cwd := fmt.Sprintf("/home/dev/src/project-%d", i%16)
		s, err := session.Create(ctx, session.NewMemoryStore(), &session.CreateOptions{Cwd: cwd})
		if err != nil {
			b.Fatal(err)
		}
		turns := 1 + i%5
		if err := s.SaveTurn(ctx, workload.Messages(0, 1), nil); err != nil {
			b.Fatal(err)
		}
		if i%4 == 0 {
			if err := s.SetTitle(ctx, fmt.Sprintf("fix the listing of project %d %s", i, strings.Repeat("x", i%40))); err != nil {
				b.Fatal(err)
			}
		}
		if i%6 == 0 {
			if err := s.UpdateMeta(ctx, session.MetaUpdate{Set: map[string]string{"ticket": fmt.Sprint(i)}}); err != nil {
				b.Fatal(err)
			}
		}
		if turns > 1 {
			if err := s.SaveTurn(ctx, workload.Messages(1, turns), nil); err != nil {
				b.Fatal(err)
			}
		}
		log := s.Log()
		dir := filepath.Join(root, names.CwdDir(cwd))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		stamp := strings.ReplaceAll(log.Header.Timestamp.UTC().Format("2006-01-02T15-04-05.000Z"), ".", "-")
		var buf bytes.Buffer
		if err := session.WriteLog(&buf, log); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, stamp+"_"+log.Header.ID+".jsonl"), buf.Bytes(), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	st, err := session.OpenFileStore(root, nil)
	if err != nil {
		b.Fatal(err)
	}
	p, err := st.List(ctx, session.ListOptions{Limit: n})
	if err != nil || len(p.Sessions) != n {
		b.Fatal(err, len(p.Sessions))
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
}
