package session_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
)

// openW10k opens the W10k session in a new FileStore at root, writing the
// file first (so that every iteration starts from the same bytes), with
// its context built, as an agent holds it.
func openW10k(b *testing.B, root string) (*session.FileStore, *session.Session) {
	b.Helper()
	ctx := context.Background()
	_, data := w10k(b)
	id, path := w10kStore(b, root)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	store, err := session.OpenFileStore(root, nil)
	if err != nil {
		b.Fatal(err)
	}
	s, err := session.Open(ctx, store, id)
	if err != nil {
		b.Fatal(err)
	}
	if n := len(s.Context().Messages); n != 3*workload.W10k {
		b.Fatal(n)
	}
	// The open's garbage is collected before the clock starts: what is
	// measured is the operation, not the end of the setup's collection.
	runtime.GC()
	return store, s
}

// BenchmarkCompactW10k plans and applies a compaction of W10k (the
// default KeepRecentTokens, the offline summarizer) on a FileStore with
// its default sync policy: the whole of Session.Compact, the session open
// with its context built beforehand.
func BenchmarkCompactW10k(b *testing.B) {
	ctx := context.Background()
	root := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		store, s := openW10k(b, root)
		b.StartTimer()
		res, err := s.Compact(ctx, session.ExtractiveSummarizer{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if len(res.Plan.Summarize) < 29_000 {
			b.Fatalf("summarized only %d messages", len(res.Plan.Summarize))
		}
		store.Close()
		b.StartTimer()
	}
}

// BenchmarkForkW10k forks W10k at its middle entry into a new session of
// the same FileStore (default sync policy): 15,000 entries, 33 MB,
// copied; "flushed" adds the Flush that makes the fork durable. Its floor
// ("write-floor") is the disk's part: writing the fork's bytes to a new
// file and syncing it, as a fork's file is synced before it takes its
// name.
func BenchmarkForkW10k(b *testing.B) {
	ctx := context.Background()
	root := b.TempDir()
	store, s := openW10k(b, root)
	defer store.Close()
	mid := leafPath(s)[3*workload.W10k/2-1].ID()
	b.Run("write-floor", func(b *testing.B) {
		f, err := s.Fork(ctx, &session.ForkOptions{At: mid})
		if err != nil {
			b.Fatal(err)
		}
		data, err := os.ReadFile(sessionFileOf(b, root, f.ID()))
		if err != nil {
			b.Fatal(err)
		}
		if err := store.Delete(ctx, f.ID()); err != nil {
			b.Fatal(err)
		}
		name := filepath.Join(root, "floor.jsonl")
		b.ReportAllocs()
		for b.Loop() {
			out, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := out.Write(data); err != nil {
				b.Fatal(err)
			}
			if err := out.Sync(); err != nil {
				b.Fatal(err)
			}
			out.Close()
			b.StopTimer()
			os.Remove(name)
			b.StartTimer()
		}
	})
	for _, flush := range []bool{false, true} {
		name := "written"
		if flush {
			name = "flushed"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f, err := s.Fork(ctx, &session.ForkOptions{At: mid})
				if err != nil {
					b.Fatal(err)
				}
				if flush {
					if err := f.Flush(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if f.Len() != 3*workload.W10k/2 {
					b.Fatalf("the fork holds %d entries", f.Len())
				}
				if err := store.Delete(ctx, f.ID()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkContextAfterCompactionW10k opens W10k after a compaction that
// kept about 20,000 tokens, in a new FileStore, and builds Context(): only
// the messages it emits are decoded (reported as decoded/op next to
// messages/op).
func BenchmarkContextAfterCompactionW10k(b *testing.B) {
	ctx := context.Background()
	root := b.TempDir()
	store, s := openW10k(b, root)
	if _, err := s.Compact(ctx, session.ExtractiveSummarizer{}, nil); err != nil {
		b.Fatal(err)
	}
	id := s.ID()
	store.Close()
	session.CountDecodes(true)
	defer session.CountDecodes(false)
	var decoded, emitted int64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		store, err := session.OpenFileStore(root, nil)
		if err != nil {
			b.Fatal(err)
		}
		before := session.DecodedMessages()
		b.StartTimer()
		s, err := session.Open(ctx, store, id)
		if err != nil {
			b.Fatal(err)
		}
		n := len(s.Context().Messages)
		b.StopTimer()
		decoded += session.DecodedMessages() - before
		emitted += int64(n)
		store.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(decoded)/float64(b.N), "decoded/op")
	b.ReportMetric(float64(emitted)/float64(b.N), "messages/op")
}
