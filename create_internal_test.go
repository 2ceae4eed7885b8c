package session

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestCreateSmallSized: the check create makes on each of a fork's
// entries without rebuilding their bytes (smallSized, on compact
// entries' templates) answers as small does on the bytes, for plain,
// compact, long and image entries, and a session created from them is
// written byte for byte.
func TestCreateSmallSized(t *testing.T) {
	ctx := context.Background()
	store, err := OpenFileStore(filepath.Join(t.TempDir(), "s"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	src, err := Create(ctx, store, &CreateOptions{ID: "src", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []*Message{
		UserText("short"),
		UserText(strings.Repeat("long text with \"quotes\" and \\n ", 4000)),
		User(Text("an image"), Image("image/png", bytes.Repeat([]byte{1, 2, 3}, 2000))),
		User(Text(`a text that says "image" in quotes`)),
		AssistantText(strings.Repeat("x", 700_000)), // over the cut
	}
	for _, m := range msgs {
		if _, err := src.Append(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	log, err := store.Load(ctx, "src") // compact entries, as a fork sees them
	if err != nil {
		t.Fatal(err)
	}
	compact := 0
	for _, e := range log.Entries {
		if e.h != nil {
			compact++
		}
		if got, want := store.limits.smallSized(e.Len(), e.raw, e.noImage), store.limits.small(e.bytes(), e.noImage); got != want {
			t.Errorf("entry %s (%d bytes): smallSized %v, small %v", e.id, e.Len(), got, want)
		}
	}
	if compact == 0 {
		t.Fatal("no compact entry read: the test checks nothing of templates")
	}
	small := log.Entries[:2]
	for _, e := range small {
		if !store.limits.smallSized(e.Len(), e.raw, e.noImage) {
			t.Fatalf("entry %s is not small", e.id)
		}
	}
	if err := store.CreateWithEntries(ctx, Header{ID: "copy", Cwd: "/w"}, small); err != nil {
		t.Fatal(err)
	}
	got, err := store.Load(ctx, "copy")
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range small {
		if !bytes.Equal(got.Entries[i].bytes(), e.bytes()) {
			t.Fatalf("entry %d written as %s, not %s", i, got.Entries[i].bytes(), e.bytes())
		}
	}
}
