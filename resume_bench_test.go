package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
)

// BenchmarkResumeCompacted: resuming a long session whose history is
// far larger than its context (issue 40's W20k-C and W100k-C: W10k's
// turns, a compaction every 2,000 but after the last 2,000 turns), as
// another process does: a new store, Open, Context and Messages. The
// first open of such a file reads it whole and leaves its path index;
// the benchmark times the opens after that one.
// AGENTSESSION_RESUME_TURNS picks the sizes (default 4000,20000, 4000
// with -short; W100k-C is 100000, about 670 MB in the temporary
// directory, W300k-C 300000, 2 GB). AGENTSESSION_RESUME_DIR keeps the
// workloads there between runs (each in a directory named for its
// size), so that several runs compare the same files, and read indexes
// an earlier process wrote.
func BenchmarkResumeCompacted(b *testing.B) {
	sizes := []int{4000, 20000}
	if testing.Short() {
		sizes = sizes[:1] // the CI's run of every benchmark, once
	}
	if v := os.Getenv("AGENTSESSION_RESUME_TURNS"); v != "" {
		sizes = nil
		for _, f := range filepathSplitList(v) {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	old := session.SetPathIndexMin(0)
	defer session.SetPathIndexMin(old)
	for _, turns := range sizes {
		root, id, size := cachedCompactedWorkload(b, turns)
		b.Run(fmt.Sprintf("W%dk-C", turns/1000), func(b *testing.B) {
			b.ReportMetric(float64(size)/1e6, "file-MB")
			ctx := context.Background()
			b.ReportAllocs()
			var (
				msgs int
				cpu  cpuMeter
				live uint64
				ms   runtime.MemStats
			)
			for b.Loop() {
				b.StopTimer()
				store, err := session.OpenFileStore(root, resumeStoreOptions())
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&ms)
				base := ms.HeapAlloc
				b.StartTimer()
				cpu.start()
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
				cpu.stop()
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&ms)
				live = max(live, ms.HeapAlloc-min(base, ms.HeapAlloc))
				runtime.KeepAlive(m)
				if !session.IsPartial(s) {
					b.Fatal("the session was read whole")
				}
				s.Close()
				store.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(msgs), "messages")
			b.ReportMetric(float64(live)/(1<<20), "live-MiB")
			cpu.report(b)
		})
	}
}

func filepathSplitList(v string) []string { return filepath.SplitList(stringsReplaceComma(v)) }

func stringsReplaceComma(v string) string {
	out := []byte(v)
	for i, c := range out {
		if c == ',' {
			out[i] = os.PathListSeparator
		}
	}
	return string(out)
}

// compactedWorkload writes W10k's turns [0, turns) to a session in a
// FileStore at root, compacting every 2,000 turns, opens it once so
// that its path index is built, and returns its id and file size.
func compactedWorkload(b *testing.B, root string, turns int) (string, int64) {
	b.Helper()
	ctx := context.Background()
	opts := resumeStoreOptions()
	opts.Sync = session.SyncNever
	store, err := session.OpenFileStore(root, opts)
	if err != nil {
		b.Fatal(err)
	}
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/home/dev/project"})
	if err != nil {
		b.Fatal(err)
	}
	copts := &session.CompactionOptions{ContextWindow: 200000}
	for i := range turns {
		u, a, r := workload.Turn(i)
		if err := s.SaveTurn(ctx, []*session.Message{u, a, r}, nil); err != nil {
			b.Fatal(err)
		}
		// As the issue measured: the last 2,000 turns after the latest
		// compaction, so the context holds some 6,000 messages.
		if i%2000 == 1999 && i+2000 < turns {
			if _, err := s.Compact(ctx, session.ExtractiveSummarizer{}, copts); err != nil {
				b.Fatal(err)
			}
		}
	}
	id := s.ID()
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if err := store.Close(); err != nil {
		b.Fatal(err)
	}
	store, err = session.OpenFileStore(root, resumeStoreOptions())
	if err != nil {
		b.Fatal(err)
	}
	s, err = session.Open(ctx, store, id)
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
	session.WaitPathIndexes(store)
	store.Close()
	st, err := os.Stat(session.PathIndexFile(store, id))
	if err != nil {
		b.Fatal("no path index: ", err)
	}
	_ = st
	var size int64
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".jsonl" {
			if fi, err := d.Info(); err == nil {
				size = fi.Size()
			}
		}
		return nil
	})
	return id, size
}

// cachedCompactedWorkload is compactedWorkload in a temporary directory,
// or in AGENTSESSION_RESUME_DIR, built there once and reused.
func cachedCompactedWorkload(b *testing.B, turns int) (root, id string, size int64) {
	dir := os.Getenv("AGENTSESSION_RESUME_DIR")
	if dir == "" {
		root = b.TempDir()
		id, size = compactedWorkload(b, root, turns)
		return root, id, size
	}
	root = filepath.Join(dir, fmt.Sprintf("W%d-C", turns))
	done := filepath.Join(dir, fmt.Sprintf("W%d-C.done", turns))
	if data, err := os.ReadFile(done); err == nil {
		if _, err := fmt.Sscan(string(data), &id, &size); err == nil {
			return root, id, size
		}
	}
	if err := os.RemoveAll(root); err != nil {
		b.Fatal(err)
	}
	id, size = compactedWorkload(b, root, turns)
	if err := os.WriteFile(done, fmt.Appendf(nil, "%s %d", id, size), 0o644); err != nil {
		b.Fatal(err)
	}
	return root, id, size
}

// resumeStoreOptions are the benchmark's store options: the default
// limits but MaxLogBytes, raised so that the 2 GB workload (300,000
// turns; the default refuses logs over 1 GiB) opens too.
func resumeStoreOptions() *session.FileStoreOptions {
	return &session.FileStoreOptions{Limits: session.Limits{MaxLogBytes: 4 << 30}}
}

// BenchmarkResumeFirstOpen: the first open of a compacted session no
// index describes (another program wrote it, pi say), as another
// process does: a new store, Open, Context and Messages, a whole read.
// "indexed" is what the store does (it builds the index in the
// background a second after the read, for the next open, or when it
// closes; the benchmark closes it outside the timer), "unindexed" the same open with the
// index turned off: the issue asks the first to be no slower.
func BenchmarkResumeFirstOpen(b *testing.B) {
	turns := 20000
	if testing.Short() {
		turns = 4000 // the CI's run of every benchmark, once
	}
	if v := os.Getenv("AGENTSESSION_RESUME_TURNS"); v != "" {
		n, err := strconv.Atoi(filepathSplitList(v)[0])
		if err != nil {
			b.Fatal(err)
		}
		turns = n
	}
	root, id, _ := cachedCompactedWorkload(b, turns)
	ctx := context.Background()
	for _, mode := range []struct {
		name string
		min  int64
	}{{"indexed", 0}, {"unindexed", 1 << 62}} {
		b.Run(fmt.Sprintf("W%dk-C/%s", turns/1000, mode.name), func(b *testing.B) {
			old := session.SetPathIndexMin(mode.min)
			defer session.SetPathIndexMin(old)
			// The delay a store waits before it builds an index (the
			// tests' is 0): the build then starts after the open's work.
			oldDelay := session.SetPathIndexDelay(time.Second)
			defer session.SetPathIndexDelay(oldDelay)
			var cpu cpuMeter
			for b.Loop() {
				b.StopTimer()
				store, err := session.OpenFileStore(root, resumeStoreOptions())
				if err != nil {
					b.Fatal(err)
				}
				if err := os.Remove(session.PathIndexFile(store, id)); err != nil && !os.IsNotExist(err) {
					b.Fatal(err)
				}
				runtime.GC()
				b.StartTimer()
				cpu.start()
				s, err := session.Open(ctx, store, id)
				if err != nil {
					b.Fatal(err)
				}
				_ = s.Context()
				if _, err := s.Messages(ctx); err != nil {
					b.Fatal(err)
				}
				cpu.stop()
				b.StopTimer()
				s.Close()
				store.Close() // builds the index now if it has not yet
				b.StartTimer()
			}
			cpu.report(b)
		})
	}
	// Leave the index for BenchmarkResumeCompacted.
	store, err := session.OpenFileStore(root, resumeStoreOptions())
	if err != nil {
		b.Fatal(err)
	}
	if s, err := session.Open(ctx, store, id); err == nil {
		s.Close()
	}
	session.WaitPathIndexes(store)
	store.Close()
}
