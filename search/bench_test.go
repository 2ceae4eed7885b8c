package search_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
	"github.com/agentsession/session/search"
)

// The benchmark corpus: benchSessions sessions of W10k turns
// (workload.Turn: a 200-byte prompt, a 1 KiB reply with a tool call, a
// 4 KiB tool result), session i holding 50 + i%51 turns (75 on average,
// about 5.4 KB of text a turn: ~400 MB of session files in all), each
// with one more prompt naming "ticket <i>" and "module mod<i%37>", so
// that queries can find one session or a few among the 1,000.
//
// It is built once per run of the test binary in a temporary directory,
// or in $SEARCH_BENCH_DIR, where it is kept and reused by later runs
// (and by the CLI's measurements: $SEARCH_BENCH_DIR/sessions is a
// FileStore root).
const benchSessions = 1000

var corpus struct {
	once sync.Once
	dir  string
	tmp  bool
	err  error
}

func benchCorpus(b *testing.B) string {
	if testing.Short() {
		b.Skip("the corpus is 1,000 sessions, ~400 MB: not with -short")
	}
	corpus.once.Do(func() {
		corpus.dir = os.Getenv("SEARCH_BENCH_DIR")
		if corpus.dir == "" {
			corpus.dir, corpus.err = os.MkdirTemp("", "search-bench")
			corpus.tmp = true
		}
		if corpus.err == nil {
			corpus.err = buildCorpus(context.Background(), filepath.Join(corpus.dir, "sessions"))
		}
	})
	if corpus.err != nil {
		b.Fatal(corpus.err)
	}
	return filepath.Join(corpus.dir, "sessions")
}

// TestMain removes a temporary corpus when the benchmarks are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if corpus.tmp {
		os.RemoveAll(corpus.dir)
	}
	os.Exit(code)
}

// buildCorpus writes the corpus into the FileStore at root, unless a
// complete one is there already.
func buildCorpus(ctx context.Context, root string) error {
	done := filepath.Join(root, ".bench-corpus-complete")
	if _, err := os.Stat(done); err == nil {
		return nil
	}
	os.RemoveAll(root)
	store, err := session.OpenFileStore(root, &session.FileStoreOptions{Sync: session.SyncNever})
	if err != nil {
		return err
	}
	defer store.Close()
	for i := range benchSessions {
		mem := session.NewMemoryStore()
		s, err := session.Create(ctx, mem, &session.CreateOptions{Cwd: fmt.Sprintf("/home/dev/project%d", i%20)})
		if err != nil {
			return err
		}
		turns := 50 + i%51
		for k := range turns {
			msgs := workload.Messages(i*100+k, i*100+k+1)
			if k == turns/2 {
				msgs[0] = session.UserText(fmt.Sprintf("please look at ticket %d in module mod%d before the release", i, i%37)).
					WithTimestamp(msgs[0].Timestamp)
			}
			if err := s.SaveTurn(ctx, msgs, nil); err != nil {
				return err
			}
		}
		if err := session.Copy(ctx, store, mem, s.ID()); err != nil {
			return err
		}
	}
	return os.WriteFile(done, nil, 0o644)
}

// benchIndex is an index of the corpus, built once per run.
var benchIdx struct {
	once sync.Once
	idx  *search.Index
	err  error
}

func benchIndex(b *testing.B) (*search.Index, *session.FileStore) {
	root := benchCorpus(b)
	store, err := session.OpenFileStore(root, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	benchIdx.once.Do(func() {
		path := filepath.Join(filepath.Dir(root), "index.sqlite")
		if benchIdx.idx, benchIdx.err = search.Open(path, nil); benchIdx.err == nil {
			_, benchIdx.err = benchIdx.idx.Update(context.Background(), store)
		}
	})
	if benchIdx.err != nil {
		b.Fatal(benchIdx.err)
	}
	return benchIdx.idx, store
}

// BenchmarkIndexFirstRun indexes the whole corpus into a new index:
// run it with -benchtime 1x.
func BenchmarkIndexFirstRun(b *testing.B) {
	root := benchCorpus(b)
	store, err := session.OpenFileStore(root, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	b.ResetTimer()
	for i := range b.N {
		idx, err := search.Open(filepath.Join(b.TempDir(), fmt.Sprint("index", i, ".sqlite")), nil)
		if err != nil {
			b.Fatal(err)
		}
		st, err := idx.Update(b.Context(), store)
		if err != nil {
			b.Fatal(err)
		}
		if st.Indexed != benchSessions {
			b.Fatalf("indexed %d sessions, want %d", st.Indexed, benchSessions)
		}
		b.ReportMetric(float64(st.Entries), "entries")
		idx.Close()
	}
}

// BenchmarkUpdateNoChange is an Update of an index that is up to date:
// a listing of the store and a comparison of fingerprints.
func BenchmarkUpdateNoChange(b *testing.B) {
	idx, store := benchIndex(b)
	b.ResetTimer()
	for b.Loop() {
		st, err := idx.Update(b.Context(), store)
		if err != nil {
			b.Fatal(err)
		}
		if st.Unchanged != benchSessions {
			b.Fatalf("%+v", st)
		}
	}
}

// BenchmarkSearch runs queries of a few kinds: a word in one session, a
// word in a few dozen, a phrase of common words, and a word in nearly
// every entry (the worst case: every match is ranked).
func BenchmarkSearch(b *testing.B) {
	idx, _ := benchIndex(b)
	for _, c := range []struct{ name, query string }{
		{"one-session", "ticket 37"},
		{"few-sessions", "mod17 release"},
		{"prefix", "mod1*"},
		{"phrase", `"compact without losing"`},
		{"common-code", "errBad"},
	} {
		b.Run(c.name, func(b *testing.B) {
			var n int
			for b.Loop() {
				hits, err := idx.Search(b.Context(), c.query, &search.SearchOptions{Limit: 20})
				if err != nil {
					b.Fatal(err)
				}
				n = len(hits)
			}
			if n == 0 {
				b.Fatalf("%q found nothing", c.query)
			}
		})
	}
}
