package workspace

import (
	"bytes"
	"strings"
	"testing"
)

func TestManifestRoundTrip(t *testing.T) {
	h := strings.Repeat("ab", 32)
	m := &Manifest{Entries: []Entry{
		{Path: "a b", Type: File, Mode: 0o644, Size: 3, Hash: h},
		{Path: "a.b", Type: Oversized, Mode: 0o600, Size: 1 << 40, Hash: h},
		{Path: "a/d", Type: Dir, Mode: 0o755},
		{Path: "a/l", Type: Symlink, Mode: 0o777, Size: 5, Target: "../\"x"},
		{Path: "a/\xff", Type: File, Mode: 0o755, Size: 0, Hash: h},
		{Path: "u", Type: Unreadable},
		{Path: "z\n\"q\"", Type: File, Mode: 0o644, Size: 1, Hash: h},
	}}
	data := m.Encode()
	got, err := DecodeManifest(data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if !bytes.Equal(got.Encode(), data) || len(got.Entries) != len(m.Entries) {
		t.Fatalf("round trip:\n%s\n%s", data, got.Encode())
	}
	for i := range m.Entries {
		if !m.Entries[i].same(&got.Entries[i]) || m.Entries[i].Path != got.Entries[i].Path {
			t.Errorf("%+v != %+v", m.Entries[i], got.Entries[i])
		}
	}
	if !strings.Contains(string(data), "blob:sha256:"+h+` "a b"`) {
		t.Errorf("the reference is not spelled as a blob reference:\n%s", data)
	}
	if e, ok := got.Lookup("a/d"); !ok || e.Type != Dir {
		t.Error("lookup")
	}
}

// FuzzDecodeManifest: DecodeManifest never panics, and what it accepts
// encodes back to the same bytes, with paths that are local and sorted.
func FuzzDecodeManifest(f *testing.F) {
	h := strings.Repeat("0f", 32)
	f.Add([]byte(manifestMagic))
	f.Add([]byte(manifestMagic + "f 644 3 blob:sha256:" + h + " \"a\"\n"))
	f.Add([]byte(manifestMagic + "l 777 1 - \"l\" \"x\"\nd 755 0 - \"m\"\no 600 9 sha256:" + h + " \"n/\\xff\"\nu 0 0 - \"z\"\n"))
	f.Add([]byte(manifestMagic + "f 644 3 blob:sha256:" + h + " \"../a\"\n"))
	f.Add([]byte(manifestMagic + "f 644 3 blob:sha256:" + h + " \"a\\u00e9\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeManifest(data)
		if err != nil {
			return
		}
		if enc := m.Encode(); !bytes.Equal(enc, data) {
			t.Fatalf("accepted bytes do not round-trip:\n%q\n%q", data, enc)
		}
		for i, e := range m.Entries {
			if err := checkPath(e.Path); err != nil {
				t.Fatal(err)
			}
			if i > 0 && m.Entries[i-1].Path >= e.Path {
				t.Fatal("unsorted")
			}
			if strings.HasPrefix(e.Path, "/") || strings.Contains("/"+e.Path+"/", "/../") {
				t.Fatal("escaping path accepted")
			}
		}
	})
}
