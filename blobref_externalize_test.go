package session_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

// TestExternalizeImages: images over the size go to blobs, the same
// entries give the same bytes, and ResolveBlobs gives the entries back.
func TestExternalizeImages(t *testing.T) {
	ctx := context.Background()
	blobs := session.NewMemoryStore()
	big := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 1024)
	mk := func(id string, img []byte) session.Entry {
		e, err := session.NewEntry("message", id, "", time.Unix(1, 0), map[string]any{"message": session.User(session.Text("look"), session.Image("image/png", img))})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	in := []session.Entry{mk("small", []byte("tiny")), mk("big", big)}
	out, err := session.ExternalizeImages(ctx, in, blobs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out[0].JSON(), in[0].JSON()) {
		t.Fatal("a small image was moved")
	}
	if !strings.Contains(string(out[1].JSON()), session.BlobRef(big)) || len(out[1].JSON()) >= len(in[1].JSON()) {
		t.Fatalf("the large image stayed inline: %.200s", out[1].JSON())
	}
	again, err := session.ExternalizeImages(ctx, in, blobs, 0)
	if err != nil || !bytes.Equal(again[1].JSON(), out[1].JSON()) {
		t.Fatalf("externalized twice, other bytes: %v", err)
	}
	if same, _ := session.ExternalizeImages(ctx, in[:1], blobs, 0); &same[0] != &in[0] {
		t.Fatal("entries with nothing to move were copied")
	}
	log := &session.Log{Header: session.Header{ID: "s"}, Entries: out}
	if bad, err := session.ResolveBlobs(ctx, log, blobs); err != nil || len(bad) > 0 {
		t.Fatalf("resolve: %v %v", bad, err)
	}
	m, err := log.Entries[1].Message()
	if err != nil || m.Content[1].Data != session.Image("image/png", big).Data {
		t.Fatalf("the image read back differs: %v", err)
	}
	if inline, _ := session.ExternalizeImages(ctx, in, blobs, -1); !bytes.Equal(inline[1].JSON(), in[1].JSON()) {
		t.Fatal("minBytes < 0 moved an image")
	}
}
