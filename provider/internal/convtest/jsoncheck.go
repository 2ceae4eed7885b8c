package convtest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// Encode is what encoding/json writes for v, without the newline an
// Encoder adds; escapeHTML false is an Encoder after SetEscapeHTML(false).
func Encode(v any, escapeHTML bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// CheckAppendJSON checks a request's append-style marshaller against
// encoding/json. appendJSON is the request's AppendJSON, req the request
// and ref the same request in types that encoding/json writes by
// reflection (the reference). It fails t unless:
//
//   - appendJSON fails exactly when encoding/json fails on ref, and then
//     returns the buffer it was given, unchanged;
//   - otherwise it appends to the buffer exactly the bytes encoding/json
//     writes for ref with HTML escaping off;
//   - json.Marshal(req) (through the request's MarshalJSON) gives exactly
//     json.Marshal(ref), HTML escaping included;
//   - and both decode to the same value.
func CheckAppendJSON(t testing.TB, appendJSON func([]byte) ([]byte, error), req, ref any) {
	t.Helper()
	const prefix = "prefix{"
	got, err := appendJSON([]byte(prefix))
	want, werr := Encode(ref, false)
	if (err != nil) != (werr != nil) {
		t.Fatalf("AppendJSON error %v, encoding/json error %v", err, werr)
	}
	if err != nil {
		if string(got) != prefix {
			t.Fatalf("AppendJSON failed (%v) but changed the buffer: %q", err, got)
		}
		if _, merr := json.Marshal(req); merr == nil {
			t.Fatalf("AppendJSON failed (%v), json.Marshal did not", err)
		}
		return
	}
	if !strings.HasPrefix(string(got), prefix) || !bytes.Equal(got[len(prefix):], want) {
		t.Fatalf("AppendJSON differs from encoding/json:\n got %s\nwant %s", got, want)
	}
	m1, err1 := json.Marshal(req)
	m2, err2 := json.Marshal(ref)
	if err1 != nil || err2 != nil || !bytes.Equal(m1, m2) {
		t.Fatalf("json.Marshal differs from encoding/json (%v, %v):\n got %s\nwant %s", err1, err2, m1, m2)
	}
	var a, b any
	if err := json.Unmarshal(got[len(prefix):], &a); err != nil {
		t.Fatalf("AppendJSON wrote JSON that does not decode: %v", err)
	}
	if err := json.Unmarshal(want, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("AppendJSON decodes to another value than encoding/json's output")
	}
}

// Data hands out the bytes of a fuzz input as the values of a request:
// when the bytes run out, every value is zero.
type Data struct{ b []byte }

// NewData returns a Data reading b.
func NewData(b []byte) *Data { return &Data{b} }

// Byte returns the next byte.
func (d *Data) Byte() byte {
	if len(d.b) == 0 {
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// N returns a number below n (n > 0).
func (d *Data) N(n int) int { return int(d.Byte()) % n }

// Bool returns a bool.
func (d *Data) Bool() bool { return d.Byte()&1 == 1 }

// snippets are strings that exercise the escapes.
var snippets = []string{"", "a", "<b>&</b>", "\u2028", "\u2029", "\xff", "\xe2\x80", "\"", "\\", "\n\t", "\x00\x1f", "é", "😀", " "}

// String returns a string: bytes of the input, or snippets.
func (d *Data) String() string {
	n := d.N(8)
	var s strings.Builder
	for range n {
		if d.Bool() {
			s.WriteString(snippets[d.N(len(snippets))])
		} else {
			k := min(d.N(16), len(d.b))
			s.Write(d.b[:k])
			d.b = d.b[k:]
		}
	}
	return s.String()
}

// raws are raw JSON values, valid or not.
var raws = []string{`{}`, `{"a":1}`, " {\"p\" : [1, 2.5e3, \"x y\"],\n\t\"q\":{\"<\":\"\u2028\xff\"} } ", `[]`, `"s"`, `null`, ``, ` `, `{`, `{"a":}`, `{} {}`, `nul`, `1e`}

// Raw returns raw JSON: nil, a snippet (valid or not) or input bytes.
func (d *Data) Raw() json.RawMessage {
	switch d.N(4) {
	case 0:
		return nil
	case 1:
		return json.RawMessage(d.String())
	}
	return json.RawMessage(raws[d.N(len(raws))])
}

// Float returns a float64, NaN and infinities among them.
func (d *Data) Float() float64 {
	switch d.N(8) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(1)
	}
	var w [8]byte
	for i := range w {
		w[i] = d.Byte()
	}
	f := math.Float64frombits(binary.LittleEndian.Uint64(w[:]))
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0.5
	}
	return f
}

// Strings returns nil, an empty slice or strings.
func (d *Data) Strings() []string {
	switch d.N(3) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	out := make([]string, 1+d.N(3))
	for i := range out {
		out[i] = d.String()
	}
	return out
}
