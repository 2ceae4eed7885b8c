package jsonx_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentsession/session/internal/jsonx"
)

func TestValid(t *testing.T) {
	cases := []struct {
		in   string
		want bool
	}{
		{`{}`, true},
		{` {"a":1, "b":[true,false,null,"x\u00e9\n"], "c":{"d":-0.5e+3}} `, true},
		{`[]`, true},
		{`"\ud83d\ude00"`, true},
		{`0`, true},
		{`-`, false},
		{`01`, false},
		{`1.`, false},
		{`1e`, false},
		{`{"a" 1}`, false},
		{`{"a":1,}`, false},
		{`[1,]`, false},
		{`"abc`, false},
		{"\"a\x01\"", false},
		{`"\x"`, false},
		{`"\u12"`, false},
		{`tru`, false},
		{`{} {}`, false},
		{``, false},
		{strings.Repeat("[", 10001) + strings.Repeat("]", 10001), false},
		{strings.Repeat("[", 10000) + strings.Repeat("]", 10000), true},
	}
	for _, c := range cases {
		got := jsonx.Valid([]byte(c.in))
		if got != c.want {
			t.Errorf("Valid(%.40q) = %v, want %v", c.in, got, c.want)
		}
		if std := json.Valid([]byte(c.in)); std != got {
			t.Errorf("Valid(%.40q) = %v, encoding/json says %v", c.in, got, std)
		}
	}
}

func TestObjectIter(t *testing.T) {
	it, err := jsonx.Object([]byte(`{ "a" : 1 , "b\u0063" : {"x":[1,2]}, "d":"e" }tail`))
	if err != nil {
		t.Fatal(err)
	}
	var keys, vals []string
	for it.Next() {
		keys = append(keys, it.Key())
		vals = append(vals, string(it.Value()))
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	if strings.Join(keys, ",") != "a,bc,d" || strings.Join(vals, "|") != `1|{"x":[1,2]}|"e"` {
		t.Fatalf("keys %q vals %q", keys, vals)
	}
	for _, bad := range []string{`{"a":1`, `{"a":}`, `{"a":1 "b":2}`, `{1:2}`} {
		it, _ := jsonx.Object([]byte(bad))
		for it.Next() {
		}
		if it.Err() == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}

func TestUnquote(t *testing.T) {
	for _, in := range []string{
		`""`, `"plain"`, `"tab\tnew\nline \"q\" \\ \/"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`,
		`"\ud83d"`, `"\ud83dx"`, `"\ude00\ud83d"`, "\"bad \xff utf8\"", `"\u0000"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("std rejects %q: %v", in, err)
		}
		got, err := jsonx.Unquote([]byte(in))
		if err != nil || got != want {
			t.Errorf("Unquote(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestAppendString(t *testing.T) {
	cases := []struct{ in, want string }{
		{"hi", `"hi"`},
		{"a\"b\\c", `"a\"b\\c"`},
		{"\n\r\t\b\f\x01\x1f", `"\n\r\t\b\f\u0001\u001f"`},
		{"<&>", `"<&>"`},         // JSON.stringify does not escape HTML
		{"\u2028", "\"\u2028\""}, // nor line separators
		{"\xff", "\"\uFFFD\""},   // invalid UTF-8 is replaced
		{"é中😀", `"é中😀"`},
	}
	for _, c := range cases {
		if got := string(jsonx.AppendString(nil, c.in)); got != c.want {
			t.Errorf("AppendString(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestAppendFloat(t *testing.T) {
	cases := []struct {
		in   float64
		want string
	}{
		{0, "0"}, {1, "1"}, {-2.5, "-2.5"}, {0.00030000000000000003, "0.00030000000000000003"},
		{0.0006000000000000001, "0.0006000000000000001"}, {1e-7, "1e-7"}, {1e21, "1e+21"},
		{123456789012345680000, "123456789012345680000"}, {math.NaN(), "null"},
	}
	for _, c := range cases {
		if got := string(jsonx.AppendFloat(nil, c.in)); got != c.want {
			t.Errorf("AppendFloat(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestParseInt(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "-12": -12, "1768471206000": 1768471206000, "9223372036854775807": math.MaxInt64, "-9223372036854775808": math.MinInt64} {
		if got, ok := jsonx.ParseInt([]byte(in)); !ok || got != want {
			t.Errorf("ParseInt(%s) = %d, %v", in, got, ok)
		}
	}
	for _, in := range []string{"1.5", "1e3", "9223372036854775808", "", "-", "x"} {
		if _, ok := jsonx.ParseInt([]byte(in)); ok {
			t.Errorf("ParseInt(%s) accepted", in)
		}
	}
}

// FuzzValid checks the validator against encoding/json.
func FuzzValid(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,"b",{"c":null}]}`, `"\u00e9"`, `-1.5e3`, `[1,]`, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, want := jsonx.Valid(b), json.Valid(b)
		if got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
		// ValidLoose takes all that Valid does, and differs from it
		// only on escapes.
		loose := jsonx.ValidLoose(b)
		if got && !loose {
			t.Fatalf("ValidLoose(%q) = false, Valid says true", b)
		}
		if !bytes.ContainsRune(b, '\\') && loose != got {
			t.Fatalf("ValidLoose(%q) = %v without an escape, Valid says %v", b, loose, got)
		}
		if it, err := jsonx.ObjectLoose(bytes.TrimSpace(b)); loose && err == nil {
			for it.Next() {
			}
			if it.Err() != nil {
				t.Fatalf("ObjectLoose(%q): %v, ValidLoose says true", b, it.Err())
			}
		}
	})
}

// FuzzStrings checks Unquote against encoding/json and that AppendString
// produces JSON that decodes back to the same text.
func FuzzStrings(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c\n", "\xff\xfe", "\ud7ff", "😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc := jsonx.AppendString(nil, s)
		if !json.Valid(enc) {
			t.Fatalf("AppendString(%q) = %s is not valid JSON", s, enc)
		}
		var back string
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatal(err)
		}
		want := strings.ToValidUTF8(s, "\uFFFD")
		if !utf8.ValidString(s) {
			// Each invalid byte becomes one U+FFFD, as in encoding/json.
			want = string([]rune(s))
		}
		if back != want {
			t.Fatalf("round trip of %q gave %q, want %q", s, back, want)
		}
		got, err := jsonx.Unquote(enc)
		if err != nil || got != back {
			t.Fatalf("Unquote(%s) = %q, %v; want %q", enc, got, err, back)
		}
		// Arbitrary bytes between quotes: same verdict and value as encoding/json.
		raw := append(append([]byte{'"'}, s...), '"')
		var std string
		stdErr := json.Unmarshal(raw, &std)
		if end, _, err := jsonx.SkipString(raw, 0); err == nil && end == len(raw) {
			got, err := jsonx.Unquote(raw)
			if stdErr != nil || err != nil || got != std {
				t.Fatalf("Unquote(%q) = %q, %v; encoding/json: %q, %v", raw, got, err, std, stdErr)
			}
		} else if stdErr == nil {
			t.Fatalf("SkipString rejects %q, encoding/json accepts", raw)
		}
		// A string a Cursor records as a span gives its token back.
		for _, tok := range [][]byte{raw, enc} {
			var spans []jsonx.Span
			c := jsonx.Cursor{Spans: &spans}
			c.Reset(tok)
			got, ok := c.Str()
			if len(spans) == 0 {
				continue
			}
			if !ok || len(spans) != 1 || spans[0].S != got || spans[0].Start != 0 || spans[0].End != c.Pos() {
				t.Fatalf("Str(%q) = %q, %v with spans %+v", tok, got, ok, spans)
			}
			if back := jsonx.AppendString(nil, got); string(back) != string(tok[:c.Pos()]) {
				t.Fatalf("span of %q rebuilds as %q", tok, back)
			}
		}
		// What AppendString writes is recorded, but for \u escapes (control
		// characters without a short form), which are left to the slow path.
		if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && !strings.ContainsRune("\n\r\t\b\f", r) }) {
			var spans []jsonx.Span
			c := jsonx.Cursor{Spans: &spans}
			c.Reset(enc)
			if _, ok := c.Str(); !ok || len(spans) != 1 {
				t.Fatalf("AppendString's own %q is not recorded as a span", enc)
			}
		}
	})
}

// FuzzObject checks that iterating an object sees what encoding/json sees.
func FuzzObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":"x","a":2}`, `{"k\u0041":[1,{"z":{}}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var std map[string]json.RawMessage
		stdErr := json.Unmarshal(b, &std)
		trimmed, err := jsonx.Trim(b)
		if err != nil || jsonx.KindOf(trimmed) != jsonx.KindObject {
			if stdErr == nil && std != nil {
				t.Fatalf("jsonx rejects object %q: %v", b, err)
			}
			return
		}
		it, _ := jsonx.Object(trimmed)
		got := map[string]string{}
		for it.Next() {
			got[it.Key()] = string(it.Value())
		}
		if it.Err() != nil {
			t.Fatalf("iterating valid object %q: %v", b, it.Err())
		}
		if stdErr != nil {
			t.Fatalf("encoding/json rejects %q: %v", b, stdErr)
		}
		if len(got) != len(std) {
			t.Fatalf("%d keys, encoding/json has %d", len(got), len(std))
		}
		for k, v := range std {
			if got[k] != string(v) {
				t.Fatalf("key %q: %s, encoding/json %s", k, got[k], v)
			}
		}
	})
}
