package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
)

// BenchmarkListNoIndex1000 lists 1,000 sessions of W10k's turns (3 and
// 10 turns each: 20 and 67 MB in all) with a new store on a directory
// that has no listing index (removed before each run, as for sessions
// another program wrote), so that every file is read whole: the listing
// a first `agentsession ls` of pi's sessions does. With
// AGENTSESSION_BENCH_DIR set, the sessions are written under it once and
// kept (so that binaries built from other commits list the same files).
func BenchmarkListNoIndex1000(b *testing.B) {
	ctx := context.Background()
	sizes := []int{3, 10}
	if testing.Short() {
		sizes = sizes[:1] // the CI's run of every benchmark, once
	}
	for _, turns := range sizes {
		root := listNoIndexDir(b, turns)
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			var cpu cpuMeter
			defer cpu.report(b)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				if err := os.Remove(filepath.Join(root, ".index")); err != nil && !os.IsNotExist(err) {
					b.Fatal(err)
				}
				runtime.GC()
				b.StartTimer()
				cpu.start()
				st, err := session.OpenFileStore(root, nil)
				if err != nil {
					b.Fatal(err)
				}
				p, err := st.List(ctx, session.ListOptions{Limit: 1000})
				if err != nil || len(p.Sessions) != 1000 {
					b.Fatal(err, len(p.Sessions))
				}
				cpu.stop()
				b.StopTimer()
				st.Close()
				b.StartTimer()
			}
		})
	}
}

// listNoIndexDir returns a store root holding 1,000 sessions of turns
// W10k turns each, in 10 working directories.
func listNoIndexDir(b *testing.B, turns int) string {
	ctx := context.Background()
	root := b.TempDir()
	if dir := os.Getenv("AGENTSESSION_BENCH_DIR"); dir != "" {
		root = filepath.Join(dir, fmt.Sprintf("list-%d", turns))
		if _, err := os.Stat(filepath.Join(root, "done")); err == nil {
			return root
		}
		if err := os.RemoveAll(root); err != nil {
			b.Fatal(err)
		}
	}
	store, err := session.OpenFileStore(root, &session.FileStoreOptions{Sync: session.SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	msgs := workload.Messages(0, turns)
	for i := range 1000 {
		s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: fmt.Sprintf("/work/project-%d", i%10)})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.SaveTurn(ctx, msgs, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := store.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "done"), nil, 0o600); err != nil {
		b.Fatal(err)
	}
	return root
}

// BenchmarkOpenCompactW10k opens W10k with a new store (another process,
// as `agentsession compact` does: no context built first) and compacts
// it with the offline summarizer: "open+compact" times both,
// "compact-after-open" the compaction alone.
func BenchmarkOpenCompactW10k(b *testing.B) {
	ctx := context.Background()
	_, data := w10k(b)
	for _, timeOpen := range []bool{true, false} {
		name := "open+compact"
		if !timeOpen {
			name = "compact-after-open"
		}
		b.Run(name, func(b *testing.B) {
			var cpu cpuMeter
			defer cpu.report(b)
			root := b.TempDir()
			id, path := w10kStore(b, root)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				if err := os.WriteFile(path, data, 0o600); err != nil {
					b.Fatal(err)
				}
				store, err := session.OpenFileStore(root, nil)
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				if timeOpen {
					b.StartTimer()
					cpu.start()
				}
				s, err := session.Open(ctx, store, id)
				if err != nil {
					b.Fatal(err)
				}
				if !timeOpen {
					b.StartTimer()
					cpu.start()
				}
				res, err := s.Compact(ctx, session.ExtractiveSummarizer{}, nil)
				if err != nil {
					b.Fatal(err)
				}
				cpu.stop()
				b.StopTimer()
				if len(res.Plan.Summarize) < 29_000 {
					b.Fatalf("summarized only %d messages", len(res.Plan.Summarize))
				}
				store.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkOpenContextFile opens a session file with a new store (as
// another process's first open) and builds its Context(), with a
// cpu-ns/op column: the file AGENTSESSION_BENCH_FILE names (copied into a
// store, so that pi's side, bench/pi, can open the same bytes), else
// W10k.
func BenchmarkOpenContextFile(b *testing.B) {
	ctx := context.Background()
	root := b.TempDir()
	id, path := w10kStore(b, root)
	if src := os.Getenv("AGENTSESSION_BENCH_FILE"); src != "" {
		data, err := os.ReadFile(src)
		if err != nil {
			b.Fatal(err)
		}
		log, err := session.DecodeLog(data, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.Remove(path); err != nil {
			b.Fatal(err)
		}
		id = log.Header.ID
		path = filepath.Join(filepath.Dir(path), "2026-01-15T10-00-00-000Z_"+id+".jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	var cpu cpuMeter
	defer cpu.report(b)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		store, err := session.OpenFileStore(root, nil)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		b.StartTimer()
		cpu.start()
		s, err := session.Open(ctx, store, id)
		if err != nil {
			b.Fatal(err)
		}
		if len(s.Context().Messages) == 0 {
			b.Fatal("no messages")
		}
		cpu.stop()
		b.StopTimer()
		store.Close()
		b.StartTimer()
	}
}
