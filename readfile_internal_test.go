package session

import (
	"bytes"
	"strings"
	"testing"
	"unsafe"
)

// TestCompactNoImage: an entry read into a compact entry is known to
// hold no image only when its message has none and the line nothing
// besides the envelope and the message; what a fork checks before it
// writes lines as they are rather than moving images to blobs.
func TestCompactNoImage(t *testing.T) {
	long := strings.Repeat("x", 100)
	const env = `{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-15T10:00:00.000Z",`
	cases := []struct {
		name string
		line string
		free bool
	}{
		{"text", env + `"message":{"role":"user","content":"` + long + `"}}`, true},
		{"text blocks and a tool call", env + `"message":{"role":"assistant","content":[{"type":"text","text":"` + long + `"},{"type":"toolCall","id":"c","name":"bash","arguments":{"cmd":"ls"}}]}}`, true},
		{"an image block", env + `"message":{"role":"user","content":[{"type":"image","data":"` + long + `","mimeType":"image/png"}]}}`, false},
		{"an image in a tool call's arguments", env + `"message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"bash","arguments":{"type":"image","data":"` + long + `"}}]}}`, false},
		{"a member of the message not modelled", env + `"message":{"role":"user","content":"` + long + `","attachments":[{"type":"image","data":"` + long + `"}]}}`, false},
		{"a member of the line not modelled", env + `"message":{"role":"user","content":"` + long + `"},"attachments":[{"type":"image","data":"` + long + `"}]}`, false},
		{"an image in a timestamp that is not a string", `{"type":"message","id":"m1","parentId":null,"timestamp":{"type":"image","data":"` + long + `"},"message":{"role":"user","content":"` + long + `"}}`, false},
		{"the message twice, the first with an image", env + `"message":{"role":"user","content":[{"type":"image","data":"` + long + `","mimeType":"image/png"}]},"message":{"role":"user","content":"` + long + `"}}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(`{"type":"session","version":3,"id":"s","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}` + "\n" + tc.line + "\n")
			log, _, _, err := readLogFile(bytes.NewReader(data), int64(len(data)), nil)
			if err != nil {
				t.Fatal(err)
			}
			e := log.Entries[0]
			if e.noImage != tc.free {
				t.Fatalf("noImage = %v, want %v", e.noImage, tc.free)
			}
		})
	}
}

// TestReadIDHash: the reader hashes each entry's id and parent as it
// reads the line (for the tree and the store's id set, which would
// otherwise read every id again), on both of its paths: a message made
// compact, and any other line. A hash that is not the id's would lose
// the entry in both.
func TestReadIDHash(t *testing.T) {
	data := []byte(`{"type":"session","version":3,"id":"s","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}` + "\n" +
		`{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-15T10:00:00.000Z","message":{"role":"user","content":"hi"}}` + "\n" +
		`{"type":"label","id":"l\u0031","parentId":"m1","timestamp":"2026-01-15T10:00:00.000Z","targetId":"m1","label":"x"}` + "\n")
	log, _, _, err := readLogFile(bytes.NewReader(data), int64(len(data)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Entries) != 2 || log.Entries[0].h == nil || log.Entries[1].h != nil {
		t.Fatalf("want a compact message and a plain entry, got %v", log.Entries)
	}
	for _, e := range log.Entries {
		if e.idh == 0 || e.idh != hashID(e.id) {
			t.Errorf("entry %s: idh %x, want %x", e.id, e.idh, hashID(e.id))
		}
		if e.parh == 0 || e.parh != hashID(e.parent) {
			t.Errorf("entry %s: parh %x, want %x", e.id, e.parh, hashID(e.parent))
		}
	}
	// The label's parent is the entry before it: one string, not two.
	if unsafe.StringData(log.Entries[1].parent) != unsafe.StringData(log.Entries[0].id) {
		t.Error("the label's parent is a copy of the message's id")
	}
	tr := newTree(log.Entries)
	for i, e := range log.Entries {
		if j, ok := tr.lookup(e.id); !ok || j != int32(i) {
			t.Errorf("lookup(%s) = %d, %v", e.id, j, ok)
		}
	}
	if tr.nodes[1].parent != 0 {
		t.Errorf("the label's parent is node %d, want 0", tr.nodes[1].parent)
	}
}
