package jsonx_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentsession/session/internal/jsonx"
)

// decodeAny reads one value with a Cursor into the shapes encoding/json
// produces for interface{} with UseNumber.
func decodeAny(c *jsonx.Cursor) (any, bool) {
	switch c.Kind() {
	case jsonx.KindObject:
		m := map[string]any{}
		ms, _ := c.Object()
		for {
			_, _, ok := ms.Next()
			if !ok {
				break
			}
			k := ms.Key()
			v, ok := decodeAny(c)
			if !ok {
				return nil, false
			}
			m[k] = v
		}
		return m, c.Err() == nil
	case jsonx.KindArray:
		a := []any{}
		es, _ := c.Array()
		for es.Next() {
			v, ok := decodeAny(c)
			if !ok {
				return nil, false
			}
			a = append(a, v)
		}
		return a, c.Err() == nil
	case jsonx.KindString:
		s, ok := c.Str()
		return s, ok
	case jsonx.KindNumber:
		raw := c.Skip()
		return json.Number(raw), raw != nil
	case jsonx.KindBool:
		b, ok := c.Bool()
		return b, ok
	case jsonx.KindNull:
		return nil, c.Null()
	}
	c.Skip()
	return nil, false
}

func TestCursorPartialReads(t *testing.T) {
	c := jsonx.NewCursor([]byte(` {"a": {"deep": [1, 2, {"x": "y"}]}, "b": "s\u00e9", "n": 12, "f": 1.5, "t": true, "z": null, "s": "plain"} `))
	ms, ok := c.Object()
	if !ok {
		t.Fatal("not an object")
	}
	got := map[string]any{}
	for {
		k, _, ok := ms.Next()
		if !ok {
			break
		}
		switch string(k) {
		case "a": // not read: skipped by Next
		case "b":
			got["b"], _ = c.Str()
		case "n":
			if _, ok := c.Str(); ok {
				t.Fatal("a number read as a string")
			}
			got["n"], _ = c.Int()
		case "f":
			if _, ok := c.Int(); ok {
				t.Fatal("1.5 read as an int")
			}
			got["f"], _ = c.Float()
		case "t":
			got["t"], _ = c.Bool()
		case "z":
			got["z"] = c.Null()
		case "s":
			v, ok := c.StrBytes()
			got["s"] = string(v) + map[bool]string{true: "", false: "!"}[ok]
		}
	}
	if c.Err() != nil || !c.AtEnd() {
		t.Fatalf("err %v, at end %v", c.Err(), c.AtEnd())
	}
	want := map[string]any{"b": "sé", "n": int64(12), "f": 1.5, "t": true, "z": true, "s": "plain"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestCursorLongStrings(t *testing.T) {
	// Long runs exercise the eight-bytes-at-a-time scanner around specials.
	for _, s := range []string{
		strings.Repeat("abcdefgh", 100),
		strings.Repeat("a\tb\"c\\d\ne", 50),
		strings.Repeat("é中😀x", 60) + "\x7f",
		strings.Repeat("x", 7) + "\"" + strings.Repeat("y", 9),
		// Runs of escapes, as code has them, across words and at the
		// string's end.
		strings.Repeat("\n\t\t\"\\", 40) + "x",
		"\t\t\t\t\t\t\t\t\t\\\"",
	} {
		enc, _ := json.Marshal(s)
		c := jsonx.NewCursor(enc)
		got, ok := c.Str()
		if !ok || got != s {
			t.Fatalf("Str of %.30q... = %.30q, %v", s, got, ok)
		}
		if end, _, err := jsonx.SkipString(enc, 0); err != nil || end != len(enc) {
			t.Fatalf("SkipString: %d, %v", end, err)
		}
		if got := string(jsonx.AppendString(nil, s)); !json.Valid([]byte(got)) {
			t.Fatalf("AppendString gave invalid JSON")
		}
	}
}

// FuzzCursor checks that reading any input with a Cursor accepts what
// encoding/json accepts and yields the same values.
func FuzzCursor(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,"b",{"c":null}],"a":2}`, `"\u00e9"`, `-1.5e3`, `[1,]`, `"\ud800"`, `[true,false,null]`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want any
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.UseNumber()
		stdErr := dec.Decode(&want)
		if stdErr == nil && dec.More() {
			stdErr = errTrailing
		}
		if stdErr == nil {
			// json.Decoder tolerates trailing whitespace only.
			var rest json.RawMessage
			if dec.Decode(&rest) == nil {
				stdErr = errTrailing
			}
		}
		c := jsonx.NewCursor(b)
		got, ok := decodeAny(c)
		ok = ok && c.Err() == nil && c.AtEnd()
		if ok != (json.Valid(b)) {
			t.Fatalf("cursor ok=%v, json.Valid=%v for %q (err %v)", ok, json.Valid(b), b, c.Err())
		}
		if ok && stdErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("cursor read %#v, encoding/json %#v", got, want)
		}
		// Strings in an arena (with tiny blocks, to change blocks often)
		// are the same strings.
		ac := jsonx.NewCursor(b)
		ac.Arena = &jsonx.Arena{Block: 8}
		agot, aok := decodeAny(ac)
		aok = aok && ac.Err() == nil && ac.AtEnd()
		if aok != ok || (ok && !reflect.DeepEqual(agot, got)) {
			t.Fatalf("with an arena: %#v, %v; without: %#v, %v", agot, aok, got, ok)
		}
	})
}

type trailingErr struct{}

func (trailingErr) Error() string { return "trailing data" }

var errTrailing error = trailingErr{}

// TestArenaLongerThanInput: invalid UTF-8 unescapes to more bytes than
// it had (U+FFFD for each byte), more than the arena set aside.
func TestArenaLongerThanInput(t *testing.T) {
	for _, in := range []string{"\"\xff\xff\xff\"", "\"a\\n\xff\xfe\"", `"\u00e9\ud800"`} {
		want, err := jsonx.Unquote([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonx.NewCursor([]byte(in))
		c.Arena = &jsonx.Arena{}
		got, ok := c.Str()
		if !ok || got != want {
			t.Fatalf("Str(%q) in an arena = %q, %v; want %q", in, got, ok, want)
		}
	}
}
