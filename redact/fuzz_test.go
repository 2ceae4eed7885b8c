package redact_test

import (
	"bytes"
	"encoding/json"
	"testing"
)

// maxFuzz caps the inputs of the fuzz targets.
const maxFuzz = 64 << 10

func FuzzString(f *testing.F) {
	for _, c := range shapes {
		f.Add(c.in)
	}
	for _, c := range lookAlikes {
		f.Add(c.in)
	}
	f.Add("password=[REDACTED:x] https://u:[REDACTED:y]@h /home//home/a/b C:\\\\Users\\\\x")
	r := testRedactor()
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > maxFuzz {
			return
		}
		out, rep := r.String(s)
		if rep.Total() == 0 && out != s {
			t.Fatalf("changed without a count: %q -> %q", s, out)
		}
		again, rep2 := r.String(out)
		if again != out || rep2.Total() != 0 {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", s, out, again, rep2.Counts)
		}
	})
}

func FuzzJSON(f *testing.F) {
	for _, c := range shapes {
		b, _ := json.Marshal(map[string]any{"text": c.in, "n": 1.5})
		f.Add(b)
	}
	for _, c := range lookAlikes {
		b, _ := json.Marshal([]string{c.in})
		f.Add(b)
	}
	f.Add([]byte(`{"password":"hunter2","a":[1,"\/home\/bob\/x",{"token":"\u0041bc123def"}]}`))
	f.Add([]byte(typicalEntry))
	f.Add([]byte(`{"a":`))
	f.Add([]byte("[\"\xff sk-ant-api03-1MULwJodFX1GOZrhrztAQpiN0k8s\"]"))
	r := testRedactor()
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > maxFuzz {
			return
		}
		valid := json.Valid(in)
		out, rep, err := r.JSON(in)
		if !valid {
			if err == nil {
				t.Fatalf("invalid JSON accepted: %q", in)
			}
			return
		}
		if err != nil {
			t.Fatalf("valid JSON rejected: %v: %q", err, in)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid output %q from %q", out, in)
		}
		if rep.Total() == 0 && string(out) != string(in) {
			t.Fatalf("changed without a count: %q -> %q", in, out)
		}
		// Nothing the rules would redact is left.
		again, rep2, err := r.JSON(out)
		if err != nil || string(again) != string(out) || rep2.Total() != 0 {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v, %v)", in, out, again, rep2.Counts, err)
		}
		x, err := decode(out)
		if err != nil {
			t.Fatal(err)
		}
		walkStrings(x, func(s string) {
			if o, rep := r.String(s); o != s || rep.Total() != 0 {
				t.Fatalf("string %q of the output still redacts to %q", s, o)
			}
		})
		// Only strings change: the shape and the other values stay.
		y, _ := decode(in)
		if !sameShape(x, y) {
			t.Fatalf("shape changed: %q -> %q", in, out)
		}
	})
}

// decode reads b keeping its numbers as they are spelled.
func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var x any
	err := d.Decode(&x)
	return x, err
}

func walkStrings(x any, fn func(string)) {
	switch v := x.(type) {
	case string:
		fn(v)
	case []any:
		for _, e := range v {
			walkStrings(e, fn)
		}
	case map[string]any:
		for _, e := range v {
			walkStrings(e, fn)
		}
	}
}

// sameShape reports whether a and b are equal but for their strings.
func sameShape(a, b any) bool {
	switch av := a.(type) {
	case string:
		_, ok := b.(string)
		return ok
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !sameShape(av[i], bv[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for k := range av {
			if !sameShape(av[k], bv[k]) {
				return false
			}
		}
		return true
	}
	return a == b
}
