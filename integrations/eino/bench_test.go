package eino_test

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/integrations/eino"
)

// The benchmarks: Set and Get of a 16 KiB checkpoint after 1,000 and
// 10,000 Sets of it, on a FileStore and a MemoryStore, and Open (a new
// FileStore and Store over the directory, then Get: what a resumed
// process pays). file-MB is the size of the session's file.
//
//	go test -run '^$' -bench . -benchmem -count 6 > bench.txt
//	benchstat -col /op bench.txt

const checkpointSize = 16 << 10

// checkpoint returns a 16 KiB JSON checkpoint, different for each i.
func checkpoint(i int) []byte {
	head := fmt.Sprintf(`{"Channels":{"node":{"Values":{"step":%d}}},"State":{"notes":"`, i)
	tail := `"}}`
	return []byte(head + strings.Repeat("n", checkpointSize-len(head)-len(tail)) + tail)
}

// history is a FileStore directory holding one checkpoint set n times,
// made once per n and copied by each benchmark that writes.
var history = struct {
	sync.Mutex
	dirs map[int]string
}{dirs: map[int]string{}}

func historyDir(b *testing.B, n int) string {
	history.Lock()
	defer history.Unlock()
	if d, ok := history.dirs[n]; ok {
		return d
	}
	d, err := os.MkdirTemp("", "eino-bench-")
	if err != nil {
		b.Fatal(err)
	}
	files, err := session.OpenFileStore(d, nil)
	if err != nil {
		b.Fatal(err)
	}
	fill(b, files, n)
	files.Close()
	history.dirs[n] = d
	return d
}

// fill sets the checkpoint "thread" n times.
func fill(b *testing.B, st session.Store, n int) {
	s, err := eino.New(st, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range n {
		if err := s.Set(ctx, "thread", checkpoint(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
}

// memories are MemoryStores holding one checkpoint set n times, made
// once per n: the Set benchmarks add theirs after, so a later run starts
// after a few more than n.
var memories = struct {
	sync.Mutex
	stores map[int]*session.MemoryStore
}{stores: map[int]*session.MemoryStore{}}

func memoryHistory(b *testing.B, n int) *session.MemoryStore {
	memories.Lock()
	defer memories.Unlock()
	if st, ok := memories.stores[n]; ok {
		return st
	}
	st := session.NewMemoryStore()
	fill(b, st, n)
	memories.stores[n] = st
	return st
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range history.dirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// copyDir copies the files of src into dst.
func copyDir(b *testing.B, src, dst string) {
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// sessionBytes is the size of the files under dir.
func sessionBytes(b *testing.B, dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func BenchmarkCheckpoint(b *testing.B) {
	ctx := context.Background()
	sizes := []int{1000, 10000}
	if f := flag.Lookup("test.benchtime"); f != nil && f.Value.String() == "1x" {
		// A smoke run (.ci/run's): building 10,000 Sets takes a minute.
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("sets=%d/store=file/op=Set", n), func(b *testing.B) {
			dir := b.TempDir()
			copyDir(b, historyDir(b, n), dir)
			s := newStore(b, openFiles(b, dir))
			if _, ok, err := s.Get(ctx, "thread"); !ok || err != nil { // opens the session
				b.Fatal(ok, err)
			}
			v := checkpoint(n)
			b.SetBytes(checkpointSize)
			b.ResetTimer()
			for b.Loop() {
				if err := s.Set(ctx, "thread", v); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(sessionBytes(b, dir))/1e6, "file-MB")
		})
		b.Run(fmt.Sprintf("sets=%d/store=file/op=Get", n), func(b *testing.B) {
			dir := historyDir(b, n)
			s := newStore(b, openFiles(b, dir))
			if _, ok, err := s.Get(ctx, "thread"); !ok || err != nil {
				b.Fatal(ok, err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, _, err := s.Get(ctx, "thread"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(sessionBytes(b, dir))/1e6, "file-MB")
		})
		b.Run(fmt.Sprintf("sets=%d/store=file/op=Open", n), func(b *testing.B) {
			dir := historyDir(b, n)
			for b.Loop() {
				files, err := session.OpenFileStore(dir, nil)
				if err != nil {
					b.Fatal(err)
				}
				s, err := eino.New(files, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, ok, err := s.Get(ctx, "thread"); !ok || err != nil {
					b.Fatal(ok, err)
				}
				s.Close()
				files.Close()
			}
		})
		b.Run(fmt.Sprintf("sets=%d/store=memory/op=Set", n), func(b *testing.B) {
			s := newStore(b, memoryHistory(b, n))
			if _, ok, err := s.Get(ctx, "thread"); !ok || err != nil { // opens the session
				b.Fatal(ok, err)
			}
			v := checkpoint(n)
			b.SetBytes(checkpointSize)
			b.ResetTimer()
			for b.Loop() {
				if err := s.Set(ctx, "thread", v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("sets=%d/store=memory/op=Get", n), func(b *testing.B) {
			s := newStore(b, memoryHistory(b, n))
			if _, ok, err := s.Get(ctx, "thread"); !ok || err != nil {
				b.Fatal(ok, err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, _, err := s.Get(ctx, "thread"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
