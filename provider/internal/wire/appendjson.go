package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/agentsession/session/internal/jsonx"
)

// The appenders below write JSON as encoding/json does with HTML escaping
// off (an Encoder after SetEscapeHTML(false)): the same bytes, so that a
// request's AppendJSON can be checked against encoding/json byte for
// byte. json.Marshal escapes '<', '>' and '&' too, when it compacts what
// a MarshalJSON method returns, so json.Marshal of a request still gives
// exactly what encoding/json gives.

// MarshalError reports a member that has no JSON encoding: raw JSON (a
// schema, tool input, Extra) that is not valid JSON, or a float that is
// NaN or infinite. encoding/json fails on the same values.
type MarshalError struct {
	Member string // the member's name, as the request's JSON has it
	Err    error
}

func (e *MarshalError) Error() string {
	return fmt.Sprintf("json: member %q: %v", e.Member, e.Err)
}

func (e *MarshalError) Unwrap() error { return e.Err }

// Key appends the name of an object's member and its colon, after a comma
// unless the object was just opened. name must need no escaping.
func Key(dst []byte, name string) []byte {
	if n := len(dst); n > 0 && dst[n-1] != '{' {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, name...)
	return append(dst, '"', ':')
}

// Sep appends the comma between two elements of an array, unless the
// array was just opened.
func Sep(dst []byte) []byte {
	if n := len(dst); n > 0 && dst[n-1] != '[' {
		dst = append(dst, ',')
	}
	return dst
}

// String appends the member name: s.
func String(dst []byte, name, s string) []byte {
	return AppendString(Key(dst, name), s)
}

// OptString appends the member name: s unless s is empty (omitempty).
func OptString(dst []byte, name, s string) []byte {
	if s == "" {
		return dst
	}
	return AppendString(Key(dst, name), s)
}

// Int appends the member name: n.
func Int(dst []byte, name string, n int64) []byte {
	return strconv.AppendInt(Key(dst, name), n, 10)
}

// Bool appends the member name: b.
func Bool(dst []byte, name string, b bool) []byte {
	return strconv.AppendBool(Key(dst, name), b)
}

// AppendString appends s as a JSON string, as encoding/json writes it
// with HTML escaping off: quote, backslash and control characters
// escaped (\b, \f, \n, \r, \t, else \u00XX), U+2028 and U+2029 escaped,
// invalid UTF-8 written as \ufffd. Valid text goes through
// jsonx.AppendString, eight bytes at a time.
func AppendString(dst []byte, s string) []byte {
	start := len(dst)
	dst, valid := jsonx.AppendStringValid(dst, s)
	if !valid {
		return appendStringSlow(dst[:start], s)
	}
	// jsonx writes U+2028 and U+2029 as they are; encoding/json escapes
	// them. Both are E2 80 A8/A9, and E2 is rare outside punctuation.
	for j := start; ; {
		k := bytes.IndexByte(dst[j:], 0xE2)
		if k < 0 {
			return dst
		}
		p := j + k
		if p+2 < len(dst) && dst[p+1] == 0x80 && dst[p+2]&^1 == 0xA8 {
			return escapeSeparators(dst, p)
		}
		j = p + 1
	}
}

// escapeSeparators rewrites each U+2028 and U+2029 of dst from p on as
// its escape.
func escapeSeparators(dst []byte, p int) []byte {
	tail := bytes.Clone(dst[p:])
	dst = dst[:p]
	for i := 0; i < len(tail); i++ {
		if c := tail[i]; c == 0xE2 && i+2 < len(tail) && tail[i+1] == 0x80 && tail[i+2]&^1 == 0xA8 {
			dst = append(dst, '\\', 'u', '2', '0', '2', "89"[tail[i+2]&1])
			i += 2
			continue
		}
		dst = append(dst, tail[i])
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendStringSlow is AppendString byte by byte, for text that is not
// valid UTF-8.
func appendStringSlow(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\b':
				dst = append(dst, '\\', 'b')
			case c == '\f':
				dst = append(dst, '\\', 'f')
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// AppendRaw appends raw as encoding/json writes a json.RawMessage: nil as
// null, anything else validated and compacted (white space outside
// strings removed, nothing else changed). Raw JSON that is not valid
// (empty included) is a *MarshalError naming member.
func AppendRaw(dst []byte, member string, raw json.RawMessage) ([]byte, error) {
	if raw == nil {
		return append(dst, "null"...), nil
	}
	if _, err := jsonx.Trim(raw); err != nil {
		return dst, &MarshalError{Member: member, Err: err}
	}
	return compact(dst, raw), nil
}

// compact appends the valid JSON raw without white space outside its
// strings.
func compact(dst, raw []byte) []byte {
	dst = slices.Grow(dst, len(raw))
	for i := 0; i < len(raw); {
		switch c := raw[i]; c {
		case ' ', '\t', '\r', '\n':
			i++
		case '"':
			end, _, _ := jsonx.SkipString(raw, i) // raw is valid
			dst = append(dst, raw[i:end]...)
			i = end
		default:
			// A run of bytes outside strings that are not white space.
			j := i + 1
			for j < len(raw) {
				if d := raw[j]; d == ' ' || d == '\t' || d == '\r' || d == '\n' || d == '"' {
					break
				}
				j++
			}
			dst = append(dst, raw[i:j]...)
			i = j
		}
	}
	return dst
}

// Raw appends the member name: raw (see AppendRaw).
func Raw(dst []byte, name string, raw json.RawMessage) ([]byte, error) {
	return AppendRaw(Key(dst, name), name, raw)
}

// OptRaw appends the member name: raw unless raw is empty (omitempty).
func OptRaw(dst []byte, name string, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return dst, nil
	}
	return Raw(dst, name, raw)
}

// Float appends the member name: f as encoding/json writes a float64
// (shortest digits; exponent form below 1e-6 and from 1e21 up). NaN and
// infinities are a *MarshalError.
func Float(dst []byte, name string, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, &MarshalError{Member: name, Err: fmt.Errorf("unsupported value %v", f)}
	}
	return jsonx.AppendFloat(Key(dst, name), f), nil
}

// Any appends the member name: v unless v is nil (omitempty on an
// interface): a string or json.RawMessage directly, anything else
// through encoding/json (HTML escaping off).
func Any(dst []byte, name string, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return dst, nil
	case string:
		return String(dst, name, x), nil
	case json.RawMessage:
		return Raw(dst, name, x)
	}
	b, err := Marshal(v)
	if err != nil {
		return dst, &MarshalError{Member: name, Err: err}
	}
	return append(Key(dst, name), b...), nil
}

// Extra appends the members of the JSON object extra (compacted) to the
// object being written, after its own; nil or empty adds nothing. extra
// that is not a JSON object is a *MarshalError.
func Extra(dst []byte, extra json.RawMessage) ([]byte, error) {
	if len(extra) == 0 {
		return dst, nil
	}
	v, err := jsonx.Trim(extra)
	if err == nil && v[0] != '{' {
		err = fmt.Errorf("not a JSON object")
	}
	if err != nil {
		return dst, &MarshalError{Member: "Extra", Err: err}
	}
	start := len(dst)
	dst = compact(dst, v)
	body := dst[start+1 : len(dst)-1] // the members, without the braces
	if len(body) == 0 {
		return dst[:start], nil
	}
	if n := start; n > 0 && dst[n-1] != '{' {
		dst[start] = ',' // the brace becomes the comma
		return dst[:len(dst)-1], nil
	}
	copy(dst[start:], body)
	return dst[:start+len(body)], nil
}

// Keep is the end of every request's AppendJSON: what appendJSON made of
// dst (b), or, when it failed, dst as it was given, with the error.
func Keep(dst, b []byte, err error) ([]byte, error) {
	if err != nil {
		return dst, err
	}
	return b, nil
}

// Array appends xs as a JSON array, each element by elem, and "null" for
// a nil slice, as encoding/json writes a slice.
func Array[T any](b []byte, xs []T, elem func(*T, []byte) []byte) []byte {
	if xs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range xs {
		b = elem(&xs[i], Sep(b))
	}
	return append(b, ']')
}

// ArrayErr is Array with elements whose encoding may fail; the first
// error ends it.
func ArrayErr[T any](b []byte, xs []T, elem func(*T, []byte) ([]byte, error)) ([]byte, error) {
	if xs == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i := range xs {
		var err error
		if b, err = elem(&xs[i], Sep(b)); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}
