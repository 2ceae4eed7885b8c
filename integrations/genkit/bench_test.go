package genkitstore_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	gksession "github.com/firebase/genkit/go/core/x/session"

	session "github.com/agentsession/session"
	genkitstore "github.com/agentsession/session/integrations/genkit"
)

// The benchmarks measure Save and Get of a 16 KiB session data after
// 1,000 and 10,000 Saves of it (the cost of state that grows with its
// history), on a MemoryStore and a FileStore (its default sync policy:
// each Save flushed); StateFold, the fold of the session state that a
// Get pays when it cannot use the value it knows; and Resume: a new
// FileStore and Store, and the first Get, as a restarted server does. The FileStore benchmarks report
// the session file's size (file-MB).
//
//	go test -run '^$' -bench . -benchmem -count 6 > bench.txt
//	benchstat bench.txt

// checkpoint is 16 KiB of session data as JSON.
type checkpoint struct {
	Turn  int      `json:"turn"`
	Notes []string `json:"notes"`
}

func checkpointAt(turn int) *gksession.Data[checkpoint] {
	notes := make([]string, 64)
	for i := range notes {
		notes[i] = fmt.Sprintf("%06d %03d ", turn, i) + strings.Repeat("x", 256-11)
	}
	return &gksession.Data[checkpoint]{ID: "bench", State: checkpoint{Turn: turn, Notes: notes}}
}

// depths are the numbers of Saves the benchmarks measure after; a smoke
// run (-benchtime 1x, as .ci/run's) measures after 1,000 only.
func depths() []int {
	if f := flag.Lookup("test.benchtime"); f != nil && f.Value.String() == "1x" {
		return []int{1000}
	}
	return []int{1000, 10000}
}

// fileTemplates holds, by depth, a directory whose FileStore holds the
// session "bench" after that many Saves: made once per process, copied
// for each benchmark.
var fileTemplates sync.Map

func fileTemplate(b *testing.B, depth int) string {
	if dir, ok := fileTemplates.Load(depth); ok {
		return dir.(string)
	}
	dir, err := os.MkdirTemp("", "genkit-bench-")
	if err != nil {
		b.Fatal(err)
	}
	fs, err := session.OpenFileStore(filepath.Join(dir, "sessions"), &session.FileStoreOptions{Sync: session.SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	fill(b, fs, depth)
	if err := fs.Close(); err != nil {
		b.Fatal(err)
	}
	fileTemplates.Store(depth, dir)
	return dir
}

// fill saves depth values in the session "bench" of backing.
func fill(b *testing.B, backing session.Store, depth int) {
	st, err := genkitstore.New[checkpoint](backing, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for i := range depth {
		if err := st.Save(context.Background(), "bench", checkpointAt(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// copyTree copies the directory src to dst.
func copyTree(b *testing.B, src, dst string) {
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		b.Fatal(err)
	}
}

// sizeMB is the size of the .jsonl files under dir, in MB.
func sizeMB(b *testing.B, dir string) float64 {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			info, ierr := d.Info()
			if ierr != nil {
				return ierr
			}
			n += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return float64(n) / 1e6
}

// benchStore returns a Store whose session "bench" holds depth Saves, on
// a MemoryStore or on a FileStore copied from the template (with the
// size of its files).
func benchStore(b *testing.B, backend string, depth int) (*genkitstore.Store[checkpoint], string) {
	var backing session.Store
	var root string
	switch backend {
	case "MemoryStore":
		backing = session.NewMemoryStore()
		fill(b, backing, depth)
	case "FileStore":
		dir := b.TempDir()
		copyTree(b, fileTemplate(b, depth), dir)
		root = filepath.Join(dir, "sessions")
		fs, err := session.OpenFileStore(root, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = fs.Close() })
		backing = fs
	}
	st, err := genkitstore.New[checkpoint](backing, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	// The session open, as a server that serves it has it.
	if d, err := st.Get(context.Background(), "bench"); err != nil || d == nil || d.State.Turn != depth-1 {
		b.Fatalf("Get = %v, %v", d, err)
	}
	return st, root
}

func BenchmarkSave(b *testing.B) {
	for _, backend := range []string{"MemoryStore", "FileStore"} {
		for _, depth := range depths() {
			b.Run(fmt.Sprintf("store=%s/after=%d", backend, depth), func(b *testing.B) {
				st, root := benchStore(b, backend, depth)
				ctx := context.Background()
				data := checkpointAt(depth)
				b.ReportAllocs()
				for b.Loop() {
					if err := st.Save(ctx, "bench", data); err != nil {
						b.Fatal(err)
					}
				}
				if root != "" {
					b.ReportMetric(sizeMB(b, root), "file-MB")
				}
			})
		}
	}
}

func BenchmarkGet(b *testing.B) {
	for _, backend := range []string{"MemoryStore", "FileStore"} {
		for _, depth := range depths() {
			b.Run(fmt.Sprintf("store=%s/after=%d", backend, depth), func(b *testing.B) {
				st, root := benchStore(b, backend, depth)
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					d, err := st.Get(ctx, "bench")
					if err != nil || d == nil {
						b.Fatal(d, err)
					}
				}
				if root != "" {
					b.ReportMetric(sizeMB(b, root), "file-MB")
				}
			})
		}
	}
}

// BenchmarkStateFold: agentsession's session.GetState of the data's key
// on the open session after the Saves: what Get costs when it cannot
// use the value it knows (the first Get of an opened session, or after
// another writer's Save), and what an incremental fold improves.
func BenchmarkStateFold(b *testing.B) {
	for _, backend := range []string{"MemoryStore", "FileStore"} {
		for _, depth := range depths() {
			b.Run(fmt.Sprintf("store=%s/after=%d", backend, depth), func(b *testing.B) {
				var backing session.Store = session.NewMemoryStore()
				if backend == "FileStore" {
					dir := b.TempDir()
					copyTree(b, fileTemplate(b, depth), dir)
					fs, err := session.OpenFileStore(filepath.Join(dir, "sessions"), nil)
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { _ = fs.Close() })
					backing = fs
				} else {
					fill(b, backing, depth)
				}
				ctx := context.Background()
				s, err := session.Open(ctx, backing, "bench")
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				b.ReportAllocs()
				for b.Loop() {
					if _, ok, err := session.GetState[json.RawMessage](ctx, s, genkitstore.DefaultStateKey); err != nil || !ok {
						b.Fatal(ok, err)
					}
				}
			})
		}
	}
}

// BenchmarkResume: a new FileStore and Store over the directory, and the
// first Get: what a restarted server pays for a session.
func BenchmarkResume(b *testing.B) {
	for _, depth := range depths() {
		b.Run(fmt.Sprintf("store=FileStore/after=%d", depth), func(b *testing.B) {
			dir := b.TempDir()
			copyTree(b, fileTemplate(b, depth), dir)
			root := filepath.Join(dir, "sessions")
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				fs, err := session.OpenFileStore(root, nil)
				if err != nil {
					b.Fatal(err)
				}
				st, err := genkitstore.New[checkpoint](fs, nil)
				if err != nil {
					b.Fatal(err)
				}
				if d, err := st.Get(ctx, "bench"); err != nil || d == nil {
					b.Fatal(d, err)
				}
				st.Close()
				fs.Close()
			}
			b.ReportMetric(sizeMB(b, root), "file-MB")
		})
	}
}

// TestMain removes the benchmarks' templates.
func TestMain(m *testing.M) {
	code := m.Run()
	fileTemplates.Range(func(_, dir any) bool {
		os.RemoveAll(dir.(string))
		return true
	})
	os.Exit(code)
}
