package session

// JSON edits: an entry's raw JSON changed in place by replacing byte
// ranges (applyEdits), so that what is not edited stays byte for byte,
// and the walk over its objects that finds what to edit (walkObjects).
// Size limits (sizelimits.go), blob references (blobref.go), redaction
// (redact_store.go) and Verify use them.

import (
	"slices"

	"github.com/agentsession/session/internal/jsonx"
)

// edit replaces raw[start:end] with repl; lost, for a string cut, is
// the UTF-16 code units it leaves out.
type edit struct {
	start, end int
	repl       []byte
	lost       int
}

func applyEdits(raw []byte, edits []edit) []byte {
	if len(edits) == 0 {
		return raw
	}
	slices.SortFunc(edits, func(a, b edit) int { return a.start - b.start })
	n := len(raw)
	for _, e := range edits {
		n += len(e.repl) - (e.end - e.start)
	}
	out := make([]byte, 0, n)
	at := 0
	for _, e := range edits {
		out = append(out, raw[at:e.start]...)
		out = append(out, e.repl...)
		at = e.end
	}
	return append(out, raw[at:]...)
}

// jsonMember is a string member of an object: its key and the span of
// its value token in the input.
type jsonMember struct {
	key        string
	start, end int
}

// jsonObject is what walkObjects reports of one object.
type jsonObject struct {
	image   bool // its "type" is "image"
	strings []jsonMember
}

// walkObjects calls fn for every object in the JSON value v, innermost
// first, with its string members. Invalid JSON ends the walk quietly:
// what is stored is already known to be valid.
func walkObjects(v []byte, fn func(*jsonObject)) {
	var c jsonx.Cursor
	c.Reset(v)
	walkValue(&c, fn)
}

func walkValue(c *jsonx.Cursor, fn func(*jsonObject)) {
	switch c.Kind() {
	case jsonx.KindObject:
		ms, _ := c.Object()
		obj := jsonObject{}
		for {
			kb, esc, more := ms.Next()
			if !more {
				break
			}
			key := string(kb)
			if esc {
				key = ms.Key()
			}
			switch c.Kind() {
			case jsonx.KindString:
				start := c.Pos()
				tok := c.Skip()
				if key == "type" && string(tok) == `"image"` {
					obj.image = true
				}
				obj.strings = append(obj.strings, jsonMember{key, start, start + len(tok)})
			case jsonx.KindObject, jsonx.KindArray:
				walkValue(c, fn)
			default:
				c.Skip()
			}
		}
		fn(&obj)
	case jsonx.KindArray:
		as, _ := c.Array()
		for as.Next() {
			walkValue(c, fn)
		}
	default:
		c.Skip()
	}
}
