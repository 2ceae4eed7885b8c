package session_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	session "github.com/agentsession/session"
)

// BenchmarkPutBlob: a BlobDir's put of 4 KiB of new content (written,
// not synced), of content already there (refreshed), and a put followed
// by the append that refers to it (the pin taken and released).
func BenchmarkPutBlob(b *testing.B) {
	ctx := context.Background()
	data := func(i int) []byte { return []byte(fmt.Sprintf("%04096d", i)) }
	b.Run("new", func(b *testing.B) {
		d := session.OpenBlobDir(filepath.Join(b.TempDir(), "blobs"), nil)
		i := 0
		for b.Loop() {
			if _, err := d.PutBlob(ctx, data(i)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("reused", func(b *testing.B) {
		d := session.OpenBlobDir(filepath.Join(b.TempDir(), "blobs"), nil)
		for i := range 1000 {
			if _, err := d.PutBlob(ctx, data(i)); err != nil {
				b.Fatal(err)
			}
		}
		i := 0
		for b.Loop() {
			if _, err := d.PutBlob(ctx, data(i%1000)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("put+append", func(b *testing.B) {
		store, err := session.OpenFileStore(filepath.Join(b.TempDir(), "sessions"), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/w"})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		i := 0
		for b.Loop() {
			ref, err := store.PutBlob(ctx, data(i))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.AppendCustom(ctx, "bench.ref", map[string]string{"ref": ref}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
