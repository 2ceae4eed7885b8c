package session_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	session "github.com/agentsession/session"
)

// A blob of the largest size allowed reads back whatever its content:
// random bytes, which compress to a little more than they are, are
// stored plain, and a frame a little over the limit (as an older writer
// stored them) still reads.
func TestBlobAtTheLimitReadsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 64 MiB blob")
	}
	ctx := context.Background()
	data := make([]byte, session.DefaultMaxBlobBytes)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	d := session.OpenBlobDir(t.TempDir(), nil)
	ref, err := d.PutBlob(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.GetBlob(ctx, ref)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("read back other bytes")
	}
}
