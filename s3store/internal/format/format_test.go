package format

import (
	"testing"

	session "github.com/agentsession/session"
)

// The parsers of what other processes (or anything with write access to
// the bucket) put there: they return an error or a value, never panic,
// and what they accept stays inside the session's keys.

func FuzzObjects(f *testing.F) {
	f.Add([]byte(`{"k":"append","t":"2026-01-01T00:00:00Z"}`+"\n"+`{"type":"x","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00Z"}`+"\n"), uint8(0))
	f.Add([]byte(`{"k":"next","t":"2026-01-01T00:00:00Z","gen":"g0000000001-abcdef01"}`+"\n"), uint8(0))
	f.Add([]byte(`{"v":1,"header":{"type":"session","version":3,"id":"s"},"segments":[{"key":"seg/0123","entries":2,"bytes":10}],"entries":2}`), uint8(1))
	f.Add([]byte(`{"v":1,"inc":"0123456789abcdef","gen":"g0000000000-abcdef01","seq":3,"info":{"ID":"s"}}`), uint8(2))
	f.Add([]byte(`{"v":1,"segments":[{"key":"seg/../../x"}]}`), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		switch kind % 3 {
		case 0:
			h, lines, err := DecodePart(data)
			if err != nil {
				return
			}
			if h.K == PartNext && GenOrdinal(h.Gen) < 0 {
				t.Fatalf("a marker to %q accepted", h.Gen)
			}
			if h.K != PartAppend && len(lines) > 0 {
				t.Fatalf("a %s part with lines accepted", h.K)
			}
		case 1:
			d, err := ParseDescriptor(data)
			if err != nil {
				return
			}
			for _, sg := range d.Segments {
				if CheckRel(sg.Key) != nil {
					t.Fatalf("segment %q accepted", sg.Key)
				}
			}
		case 2:
			h, err := ParseHead(data)
			if err != nil {
				return
			}
			if !IsInc(h.Inc) || GenOrdinal(h.Gen) < 0 {
				t.Fatalf("head %+v accepted", h)
			}
		}
	})
}

func FuzzKeyID(f *testing.F) {
	for _, id := range []string{"s", "../..", "a/b", "~x", string(make([]byte, 600))} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if session.ValidateID(id) != nil {
			return // no store takes it
		}
		k := EncID(id)
		if !IsKeyID(k) {
			t.Fatalf("encID(%q) = %q, which isKeyID refuses", id, k)
		}
		for _, c := range k {
			if c == '/' || c == '.' {
				t.Fatalf("encID(%q) = %q: not one plain path element", id, k)
			}
		}
		if len(k) > 200 {
			t.Fatalf("encID(%q) is %d bytes", id, len(k))
		}
		if back, ok := DecID(k); ok && back != id {
			t.Fatalf("decID(encID(%q)) = %q", id, back)
		}
	})
}

func TestGenOrdinal(t *testing.T) {
	for gen, want := range map[string]int{
		NewGen(0): 0, NewGen(42): 42, NewGen(MaxGenOrdinal): MaxGenOrdinal,
		"g0000000001-../../x": -1, "g+000000001-abcdef01": -1, "g-000000001-abcdef01": -1,
		"g0000000001-ABCDEF01": -1, "g00000000001-abcdef01": -1, "": -1, "x0000000001-abcdef01": -1,
	} {
		if got := GenOrdinal(gen); got != want {
			t.Errorf("GenOrdinal(%q) = %d, want %d", gen, got, want)
		}
	}
}
