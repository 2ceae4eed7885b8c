package search_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/search"
)

// cjkCorpus writes sessions of Chinese text (runs of 5 to 40
// characters drawn from 600 common ones, between punctuation) into a
// new FileStore: n sessions of 20 turns, about 2 KB of text a turn.
func cjkCorpus(b *testing.B, n int) *session.FileStore {
	b.Helper()
	var chars []rune
	for r := rune(0x4e00); len(chars) < 600; r += 7 {
		chars = append(chars, r)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	text := func(size int) string {
		var sb strings.Builder
		for sb.Len() < size {
			for range 5 + rng.IntN(36) {
				sb.WriteRune(chars[rng.IntN(len(chars))])
			}
			sb.WriteString("，")
		}
		return sb.String()
	}
	store, err := session.OpenFileStore(filepath.Join(b.TempDir(), "sessions"), &session.FileStoreOptions{Sync: session.SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	for i := range n {
		s, err := session.Create(b.Context(), store, &session.CreateOptions{Cwd: "/w"})
		if err != nil {
			b.Fatal(err)
		}
		for k := range 20 {
			prompt := text(300)
			if k == 10 && i%10 == 0 {
				prompt += "请保存会话状态"
			}
			if err := s.SaveTurn(b.Context(), []*session.Message{session.UserText(prompt), session.AssistantText(text(1700))}, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	return store
}

// BenchmarkCJKIndex indexes 200 sessions of Chinese text (4,000 turns,
// ~8 MB of text) and reports the index's size (its file and WAL).
func BenchmarkCJKIndex(b *testing.B) {
	store := cjkCorpus(b, 200)
	b.ResetTimer()
	for i := range b.N {
		path := filepath.Join(b.TempDir(), fmt.Sprint("index", i, ".sqlite"))
		idx, err := search.Open(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := idx.Update(b.Context(), store); err != nil {
			b.Fatal(err)
		}
		idx.Close()
		var size int64
		for _, p := range []string{path, path + "-wal"} {
			if fi, err := os.Stat(p); err == nil {
				size += fi.Size()
			}
		}
		b.ReportMetric(float64(size), "index-bytes")
	}
}

// BenchmarkCJKSearch searches that corpus for a word inside a run (in
// 20 sessions) and for a single common character.
func BenchmarkCJKSearch(b *testing.B) {
	store := cjkCorpus(b, 200)
	idx, err := search.Open(filepath.Join(b.TempDir(), "index.sqlite"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer idx.Close()
	if _, err := idx.Update(b.Context(), store); err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{"会话", "会话状态", "一"} {
		b.Run(q, func(b *testing.B) {
			var n int
			for b.Loop() {
				hits, err := idx.Search(b.Context(), q, &search.SearchOptions{Limit: 20})
				if err != nil {
					b.Fatal(err)
				}
				n = len(hits)
			}
			b.ReportMetric(float64(n), "hits")
		})
	}
}
