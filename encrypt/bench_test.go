package encrypt_test

import (
	"context"
	"path/filepath"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
)

// BenchmarkW1k writes and opens again a 1,000-turn session of the W10k
// workload on a FileStore, in clear and sealed.
func BenchmarkW1k(b *testing.B) {
	for _, sealed := range []bool{false, true} {
		name := "clear"
		if sealed {
			name = "sealed"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				var store session.Store = openFS(b, filepath.Join(b.TempDir(), "sessions"))
				if sealed {
					store = wrap(b, store, keyring(b, key("k1", 1)))
				}
				s, err := workload.Session(ctx, store, 1000)
				if err != nil {
					b.Fatal(err)
				}
				s.Close()
				if s, err = session.Open(ctx, store, s.ID()); err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}
