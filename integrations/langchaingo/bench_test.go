package langchaingo_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/integrations/langchaingo"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/memory"
	"github.com/tmc/langchaingo/schema"
)

// The benchmarks compare histories through langchaingo's interface
// (schema.ChatMessageHistory): this package's over a FileStore (its
// default SyncOnFlush, and SyncEveryAppend, which syncs each append as
// SQLite's default does each insert) and over a MemoryStore, beside
// langchaingo's own in-memory history and, where cgo builds it, its
// SQLite history (bench_sqlite3_test.go), in a file and in memory.
//
//	go test -run '^$' -bench . -benchmem -count 6 > bench.txt
//	benchstat bench.txt

// backend makes a fresh history for a benchmark.
type backend struct {
	name string
	make func(b *testing.B) schema.ChatMessageHistory
}

var backends = []backend{
	{"agentsession-FileStore", fileHistory(session.SyncOnFlush)},
	{"agentsession-FileStore-SyncEveryAppend", fileHistory(session.SyncEveryAppend)},
	{"agentsession-MemoryStore", func(b *testing.B) schema.ChatMessageHistory {
		return adapterOn(b, session.NewMemoryStore())
	}},
	{"langchaingo-memory", func(*testing.B) schema.ChatMessageHistory {
		return memory.NewChatMessageHistory()
	}},
}

func fileHistory(sync session.SyncPolicy) func(b *testing.B) schema.ChatMessageHistory {
	return func(b *testing.B) schema.ChatMessageHistory {
		fs, err := session.OpenFileStore(filepath.Join(b.TempDir(), "sessions"), &session.FileStoreOptions{Sync: sync})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = fs.Close() })
		return adapterOn(b, fs)
	}
}

func adapterOn(b *testing.B, store session.Store) schema.ChatMessageHistory {
	h, err := langchaingo.New(context.Background(), store, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close() })
	return h
}

// benchMessage is the i-th message of a conversation: human and AI in
// turn, about 200 bytes each.
func benchMessage(i int) llms.ChatMessage {
	text := fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum ", 16))
	if i%2 == 0 {
		return llms.HumanChatMessage{Content: text}
	}
	return llms.AIChatMessage{Content: text}
}

// BenchmarkAddMessage appends one message per iteration to a history
// that grows with them.
func BenchmarkAddMessage(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			h := be.make(b)
			msgs := make([]llms.ChatMessage, 64)
			for i := range msgs {
				msgs[i] = benchMessage(i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := h.AddMessage(ctx, msgs[i%len(msgs)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMessages reads a history of n messages per iteration.
func BenchmarkMessages(b *testing.B) {
	for _, n := range []int{100, 1000} {
		for _, be := range backends {
			b.Run(fmt.Sprintf("%s/n=%d", be.name, n), func(b *testing.B) {
				ctx := context.Background()
				h := be.make(b)
				for i := range n {
					if err := h.AddMessage(ctx, benchMessage(i)); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					msgs, err := h.Messages(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if len(msgs) != n {
						b.Fatalf("%d messages, want %d", len(msgs), n)
					}
				}
			})
		}
	}
}

// BenchmarkReopenMessages opens a history of n messages kept in a
// FileStore and reads it: what a process that picks the conversation up
// pays, once (the file read, the context rebuilt and converted).
func BenchmarkReopenMessages(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("agentsession-FileStore/n=%d", n), func(b *testing.B) {
			ctx := context.Background()
			root := filepath.Join(b.TempDir(), "sessions")
			fs, err := session.OpenFileStore(root, nil)
			if err != nil {
				b.Fatal(err)
			}
			h, err := langchaingo.New(ctx, fs, "bench")
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				if err := h.AddMessage(ctx, benchMessage(i)); err != nil {
					b.Fatal(err)
				}
			}
			if err := h.Close(); err != nil {
				b.Fatal(err)
			}
			if err := fs.Close(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				fs, err := session.OpenFileStore(root, nil)
				if err != nil {
					b.Fatal(err)
				}
				h, err := langchaingo.New(ctx, fs, "bench")
				if err != nil {
					b.Fatal(err)
				}
				msgs, err := h.Messages(ctx)
				if err != nil || len(msgs) != n {
					b.Fatal(len(msgs), err)
				}
				_ = h.Close()
				_ = fs.Close()
			}
		})
	}
}
