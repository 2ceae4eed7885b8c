package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

// stdlib is what encoding/json writes for v with HTML escaping off.
func stdlib(t testing.TB, v any) (string, error) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n"), err
}

var stringCases = []string{
	"", "plain", `quote " and \ backslash`, "\b\f\n\r\t\x00\x01\x1f\x7f",
	"<b>&amp;</b>", "line\u2028para\u2029end", "\u2028", "em\u2014dash \u201cquoted\u201d",
	"bad \xff utf-8 \xe2\x80", "\xe2\x80\xa8\xff", "caf\u00e9 \U0001F600",
	strings.Repeat("\tfmt.Printf(\"%d\\n\", i) // <x>\n", 40),
}

func TestAppendStringAsEncodingJSON(t *testing.T) {
	for _, s := range stringCases {
		want, _ := stdlib(t, s)
		if got := string(AppendString(nil, s)); got != want {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
		// Appending after other bytes changes nothing before them.
		if got := string(AppendString([]byte("x\xe2\x80\xa8"), s)); got != "x\xe2\x80\xa8"+want {
			t.Errorf("AppendString after a prefix = %q", got)
		}
	}
}

func TestAppendRawAsEncodingJSON(t *testing.T) {
	for _, raw := range []json.RawMessage{
		nil, json.RawMessage(``), json.RawMessage(` `), json.RawMessage(`{`),
		json.RawMessage(`{"a" : [1, 2 ,{"b\"" : "x y\tz"}] ,"c":null}`),
		json.RawMessage("\n {\"<\": \"\u2028 &\xff\"} \n"), json.RawMessage(`"s"`), json.RawMessage(`12.50`),
		json.RawMessage(`{"a":1} {}`), json.RawMessage(`[true, false]`),
	} {
		want, werr := stdlib(t, raw)
		got, err := AppendRaw(nil, "m", raw)
		if (err != nil) != (werr != nil) || err == nil && string(got) != want {
			t.Errorf("AppendRaw(%q) = %s, %v; want %s, %v", raw, got, err, want, werr)
		}
		var me *MarshalError
		if err != nil && (!errors.As(err, &me) || me.Member != "m") {
			t.Errorf("AppendRaw(%q) error %v is not a *MarshalError for m", raw, err)
		}
	}
}

func TestFloatAsEncodingJSON(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, 0.7, 1e-7, 123456789, 1e20, 1e21, -2.5e-9, math.MaxFloat64} {
		want, _ := stdlib(t, map[string]float64{"f": f})
		got, err := Float([]byte("{"), "f", f)
		if err != nil || string(got)+"}" != want {
			t.Errorf("Float(%v) = %s, %v; want %s", f, got, err, want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := Float(nil, "f", f); err == nil {
			t.Errorf("Float(%v): no error", f)
		}
	}
}

func TestMembers(t *testing.T) {
	b := []byte("{")
	b = String(b, "a", "x")
	b = OptString(b, "skip", "")
	b = Int(b, "n", -3)
	b = Bool(b, "t", true)
	b, _ = Any(b, "none", nil)
	b, _ = Any(b, "s", "auto")
	b, _ = Any(b, "o", map[string]any{"type": "function", "name": "<f>"})
	b, _ = OptRaw(b, "empty", nil)
	b, err := Extra(b, json.RawMessage(` {"x" : 1, "y":[ ]} `))
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '}')
	want := `{"a":"x","n":-3,"t":true,"s":"auto","o":{"name":"<f>","type":"function"},"x":1,"y":[]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	for _, extra := range []string{`[]`, `{`, `"x"`} {
		if _, err := Extra([]byte(`{"a":1`), json.RawMessage(extra)); err == nil {
			t.Errorf("Extra(%s): no error", extra)
		}
	}
	if b, err := Extra([]byte(`{"a":1`), json.RawMessage(`{ }`)); err != nil || string(b) != `{"a":1` {
		t.Errorf("empty Extra: %s, %v", b, err)
	}
	if b, err := Extra([]byte(`{`), json.RawMessage(`{"z":0}`)); err != nil || string(b) != `{"z":0` {
		t.Errorf("Extra first: %s, %v", b, err)
	}
}

// FuzzAppendString checks AppendString and AppendRaw against encoding/json
// on any bytes.
func FuzzAppendString(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Add(`{"a" : [1, "\u2028 <"]}`)
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := stdlib(t, s)
		if got := string(AppendString(nil, s)); got != want {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
		raw := json.RawMessage(s)
		want, werr := stdlib(t, raw)
		got, err := AppendRaw(nil, "m", raw)
		if (err != nil) != (werr != nil) || err == nil && string(got) != want {
			t.Fatalf("AppendRaw(%q) = %s, %v; want %s, %v", raw, got, err, want, werr)
		}
	})
}
