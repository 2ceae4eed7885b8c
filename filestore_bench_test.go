package session_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
	"github.com/agentsession/session/storekit"
)

// BenchmarkFileStoreAppendW10k appends the 30,000 messages of W10k, one
// Append each, to a session in a FileStore: gathered (SyncNever), and
// each written before Append returns (SyncOnFlush without a Flush, pi's
// appendFileSync), beside the floor of the latter: one write(2) of each
// entry's line, already encoded, to a file. Read ns/entry.
func BenchmarkFileStoreAppendW10k(b *testing.B) {
	msgs, data := w10k(b)
	ctx := context.Background()
	for _, policy := range []session.SyncPolicy{session.SyncNever, session.SyncOnFlush} {
		name := "buffered"
		if policy == session.SyncOnFlush {
			name = "write-through"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				root := b.TempDir()
				store, err := session.OpenFileStore(root, &session.FileStoreOptions{Sync: policy})
				if err != nil {
					b.Fatal(err)
				}
				s, err := session.Create(ctx, store, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for _, m := range msgs {
					if _, err := s.Append(ctx, m); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				store.Close()
				os.RemoveAll(root)
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/entry")
		})
	}
	b.Run("write-floor", func(b *testing.B) {
		lines := bytes.SplitAfter(data, []byte("\n"))
		lines = lines[1 : len(lines)-1] // the entries' lines
		for b.Loop() {
			b.StopTimer()
			f, err := os.CreateTemp(b.TempDir(), "floor")
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			for _, l := range lines {
				if _, err := f.Write(l); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			f.Close()
			os.Remove(f.Name())
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/entry")
	})
}

// BenchmarkTurnSync compares a turn saved with SyncOnFlush (SaveTurn of a
// W10k turn, then Flush) with the floor: writing the same bytes to a
// plain file and calling fdatasync, on the same disk.
func BenchmarkTurnSync(b *testing.B) {
	ctx := context.Background()
	turns := workload.Messages(0, 3000)
	b.Run("raw-fdatasync", func(b *testing.B) {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "raw"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		// The very lines turn-flush writes: W10k's turns as JSONL, the
		// three entries of a turn in one write.
		_, data := w10k(b)
		lines := bytes.SplitAfter(data, []byte("\n"))[1:]
		turns := make([][]byte, 1000) // joined before the clock starts
		for k := range turns {
			turns[k] = slices.Concat(lines[3*k : 3*k+3]...)
		}
		k := 0
		for b.Loop() {
			if _, err := f.Write(turns[k]); err != nil {
				b.Fatal(err)
			}
			if err := session.Fdatasync(f); err != nil {
				b.Fatal(err)
			}
			k = (k + 1) % 1000
		}
	})
	// Both, one after the other, a turn and a raw sync of its lines:
	// the disk's fdatasync moves by more from run to run than a turn
	// adds to it, so the ratio is taken from medians of the same run,
	// as agentsession bench takes it. Read turn/raw.
	b.Run("interleaved", func(b *testing.B) {
		dir := b.TempDir()
		s := turnSession(b, dir)
		f, err := os.OpenFile(filepath.Join(dir, "raw"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		_, data := w10k(b)
		lines := bytes.SplitAfter(data, []byte("\n"))[1:]
		// Each part timed too, medians reported: SaveTurn against the
		// raw write, Flush against the raw fdatasync.
		var turnNs, rawNs, saveNs, flushNs, writeNs, syncNs []float64
		k := 0
		for b.Loop() {
			t0 := time.Now()
			if err := s.SaveTurn(ctx, turns[3*k:3*k+3], nil); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := s.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			turnNs = append(turnNs, float64(t2.Sub(t0)))
			saveNs = append(saveNs, float64(t1.Sub(t0)))
			flushNs = append(flushNs, float64(t2.Sub(t1)))
			line := slices.Concat(lines[3*k : 3*k+3]...) // joined as SaveTurn joins them, before the clock
			t0 = time.Now()
			if _, err := f.Write(line); err != nil {
				b.Fatal(err)
			}
			t1 = time.Now()
			if err := session.Fdatasync(f); err != nil {
				b.Fatal(err)
			}
			t2 = time.Now()
			rawNs = append(rawNs, float64(t2.Sub(t0)))
			writeNs = append(writeNs, float64(t1.Sub(t0)))
			syncNs = append(syncNs, float64(t2.Sub(t1)))
			k = (k + 1) % 1000
		}
		turn, raw := medianOf(turnNs), medianOf(rawNs)
		b.ReportMetric(turn, "turn-ns")
		b.ReportMetric(raw, "raw-ns")
		b.ReportMetric(turn/raw, "turn/raw")
		b.ReportMetric(medianOf(saveNs), "save-ns")
		b.ReportMetric(medianOf(flushNs), "flush-ns")
		b.ReportMetric(medianOf(writeNs), "write-ns")
		b.ReportMetric(medianOf(syncNs), "sync-ns")
	})
	b.Run("turn-flush", func(b *testing.B) {
		s := turnSession(b, b.TempDir())
		k := 0
		for b.Loop() {
			if err := s.SaveTurn(ctx, turns[3*k:3*k+3], nil); err != nil {
				b.Fatal(err)
			}
			if err := s.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			k = (k + 1) % 1000
		}
	})
}

// turnSession creates a session in a FileStore at dir, with the default
// policy (SyncOnFlush), closed with the benchmark.
func turnSession(b *testing.B, dir string) *session.Session {
	store, err := session.OpenFileStore(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	s, err := session.Create(context.Background(), store, nil)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// medianOf returns the median of xs, which it sorts.
func medianOf(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// w10kStore writes W10k into a FileStore under root and returns the
// session id and file.
func w10kStore(b testing.TB, root string) (string, string) {
	_, data := w10k(b)
	log, err := session.DecodeLog(data, nil)
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(root, storekit.CwdDir(log.Header.Cwd))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "2026-01-15T10-00-00-000Z_"+log.Header.ID+".jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	return log.Header.ID, path
}

// BenchmarkOpenW10k opens the 67 MB W10k file in a FileStore: the read
// floor (os.ReadFile), ready to append, and with Context() built with
// every message decoded. B/op bounds the peak heap from above.
func BenchmarkOpenW10k(b *testing.B) {
	root := b.TempDir()
	id, path := w10kStore(b, root)
	b.Run("read-floor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := os.ReadFile(path); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, withContext := range []bool{false, true} {
		name := "ready-to-append"
		if withContext {
			name = "context"
		}
		b.Run(name, func(b *testing.B) { openLoop(b, root, id, withContext) })
	}
}

// openLoop opens the W10k session id of the store at root with a new
// store each time (another process's first open), and with withContext
// builds its Context().
func openLoop(b *testing.B, root, id string, withContext bool) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		store, err := session.OpenFileStore(root, nil)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		b.StartTimer()
		s, err := session.Open(ctx, store, id)
		if err != nil {
			b.Fatal(err)
		}
		if withContext {
			if n := len(s.Context().Messages); n != 3*workload.W10k {
				b.Fatal(n)
			}
		}
		b.StopTimer()
		store.Close()
		b.StartTimer()
	}
}

// BenchmarkList1000 lists 1,000 sessions of 3 turns (and of 30 turns, to
// show the cost does not grow with their size): with the store that wrote
// them, and with a new store (another process) whose first listing reads
// each file once.
func BenchmarkList1000(b *testing.B) {
	ctx := context.Background()
	sizes := []int{3, 30}
	if testing.Short() {
		sizes = sizes[:1] // the CI's run of every benchmark, once
	}
	for _, turns := range sizes {
		root := b.TempDir()
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
		list := func(b *testing.B, st *session.FileStore) {
			p, err := st.List(ctx, session.ListOptions{Limit: 1000})
			if err != nil || len(p.Sessions) != 1000 {
				b.Fatal(err, len(p.Sessions))
			}
		}
		b.Run(fmt.Sprintf("turns=%d/warm", turns), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				list(b, store)
			}
		})
		b.Run(fmt.Sprintf("turns=%d/new-store", turns), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				st, err := session.OpenFileStore(root, nil)
				if err != nil {
					b.Fatal(err)
				}
				list(b, st)
				b.StopTimer()
				st.Close()
				b.StartTimer()
			}
		})
		store.Close()
	}
}

// BenchmarkCompressedW10k opens the W10k session archived plain and
// archived compressed (FileStoreOptions.CompressArchive), with Context()
// built, and compresses it (CompressArchived). file-bytes is its size
// on disk each way.
func BenchmarkCompressedW10k(b *testing.B) {
	ctx := context.Background()
	for _, compressed := range []bool{false, true} {
		name := "open-plain"
		if compressed {
			name = "open-compressed"
		}
		b.Run(name, func(b *testing.B) {
			root := b.TempDir()
			id, _ := w10kStore(b, root)
			store, err := session.OpenFileStore(root, &session.FileStoreOptions{CompressArchive: compressed})
			if err != nil {
				b.Fatal(err)
			}
			if err := store.Archive(ctx, id); err != nil {
				b.Fatal(err)
			}
			path, err := store.Path(id)
			if err != nil {
				b.Fatal(err)
			}
			store.Close()
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			openLoop(b, root, id, true)
			b.ReportMetric(float64(fi.Size()), "file-bytes")
		})
	}
	b.Run("compress", func(b *testing.B) {
		root := b.TempDir()
		id, _ := w10kStore(b, root)
		store, err := session.OpenFileStore(root, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		for b.Loop() {
			b.StopTimer()
			if err := store.Unarchive(ctx, id); err != nil {
				b.Fatal(err)
			}
			if err := store.Archive(ctx, id); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := store.CompressArchived(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
	})
}
