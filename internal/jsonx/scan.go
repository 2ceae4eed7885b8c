// Package jsonx is the small, allocation-free JSON layer the session format
// is read and written with.
//
// encoding/json decodes through reflection and cannot tell which members an
// object had, which we need to keep unknown fields and to know whether a
// member was present at all. This package instead walks raw bytes: it
// validates and skips values, iterates the members of an object, unquotes
// strings and appends quoted strings and numbers. Its acceptance rules are
// those of encoding/json (json.Valid, json.Unmarshal into string), which the
// fuzz tests use as the oracle.
//
// It imports the standard library only: every package of the module may
// use it.
package jsonx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting accepted, the same limit as encoding/json.
const MaxDepth = 10000

// SyntaxError describes malformed JSON and where it was found.
type SyntaxError struct {
	Offset int    // byte offset of the problem
	Msg    string // what was wrong
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.Offset, e.Msg)
}

// ErrDepth is wrapped by the SyntaxError for input nested deeper than MaxDepth.
var ErrDepth = errors.New("exceeded max depth")

func syntaxErr(off int, msg string) error { return &SyntaxError{Offset: off, Msg: msg} }

// Kind is the type of a JSON value, read from its first byte.
type Kind byte

const (
	KindInvalid Kind = iota
	KindNull
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

// KindOf reports the kind of the value v, which must start at its first byte.
func KindOf(v []byte) Kind {
	if len(v) == 0 {
		return KindInvalid
	}
	switch v[0] {
	case 'n':
		return KindNull
	case 't', 'f':
		return KindBool
	case '"':
		return KindString
	case '[':
		return KindArray
	case '{':
		return KindObject
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return KindNumber
	}
	return KindInvalid
}

// isSpace reports JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipSpace returns the index of the first non-whitespace byte at or after i.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// Valid reports whether b is exactly one JSON value with optional
// surrounding whitespace.
func Valid(b []byte) bool {
	i := SkipSpace(b, 0)
	end, err := SkipValue(b, i)
	if err != nil {
		return false
	}
	return SkipSpace(b, end) == len(b)
}

// ValidLoose is Valid as entry lines are checked when a log is read (see
// skipValue's loose): the structure is checked, but the escapes of
// strings that are values are not. Text with a control character is
// checked strictly. Code that edits lines the reader accepted (a
// migration, say) checks them this way, so that it takes every line the
// reader does.
func ValidLoose(b []byte) bool {
	i := SkipSpace(b, 0)
	end, err := skipValue(b, i, 0, !HasControl(b))
	if err != nil {
		return false
	}
	return SkipSpace(b, end) == len(b)
}

// Trim returns the single JSON value in b without surrounding whitespace,
// or an error if b is not exactly one valid value.
func Trim(b []byte) ([]byte, error) {
	i := SkipSpace(b, 0)
	end, err := SkipValue(b, i)
	if err != nil {
		return nil, err
	}
	if j := SkipSpace(b, end); j != len(b) {
		return nil, syntaxErr(j, "unexpected data after value")
	}
	return b[i:end], nil
}

// SkipValue validates the value starting at b[i] (no leading whitespace)
// and returns the index just past it.
func SkipValue(b []byte, i int) (int, error) {
	return skipValue(b, i, 0, false)
}

// skipValue validates the value at b[i]. With loose, strings that are
// values (not keys) are only scanned for their closing quote: their
// escapes are not checked, and control characters must have been ruled
// out by the caller (see HasControl).
func skipValue(b []byte, i, depth int, loose bool) (int, error) {
	if i >= len(b) {
		return i, syntaxErr(i, "unexpected end of input")
	}
	switch c := b[i]; c {
	case '"':
		if loose {
			return skipStringLoose(b, i)
		}
		end, _, err := SkipString(b, i)
		return end, err
	case '{':
		return skipObject(b, i, depth+1, loose)
	case '[':
		return skipArray(b, i, depth+1, loose)
	case 't':
		return skipLiteral(b, i, "true")
	case 'f':
		return skipLiteral(b, i, "false")
	case 'n':
		return skipLiteral(b, i, "null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return SkipNumber(b, i)
		}
		return i, syntaxErr(i, fmt.Sprintf("invalid character %q looking for beginning of value", c))
	}
}

func skipLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, syntaxErr(i, "invalid literal")
	}
	return i + len(lit), nil
}

// SkipNumber validates the number starting at b[i] and returns the index
// just past it.
func SkipNumber(b []byte, i int) (int, error) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return i, syntaxErr(i, "unexpected end of number")
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return i, syntaxErr(i, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return i, syntaxErr(i, "invalid number: no digits after decimal point")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return i, syntaxErr(i, "invalid number: no digits in exponent")
		}
	}
	return i, nil
}

// strSafe marks bytes that need no attention inside a JSON string when
// scanning: everything but the quote, the backslash and control characters.
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// SkipString validates the string starting at b[i] (which must be '"') and
// returns the index just past its closing quote, and whether it holds
// escapes.
func SkipString(b []byte, i int) (end int, escaped bool, err error) {
	if i >= len(b) || b[i] != '"' {
		return i, false, syntaxErr(i, "expected string")
	}
	i++
	// Eight bytes at a time: the mask flags every quote, backslash and
	// control character of the word (and, above a real one, maybe a few
	// bytes that are not: they are checked and passed over), so text
	// dense with escapes is handled without going back to byte steps.
	for i+8 <= len(b) {
		base := i
		m := strMask(binary.LittleEndian.Uint64(b[i:]))
		for m != 0 {
			k := base + bits.TrailingZeros64(m)>>3
			m &= m - 1
			if k < i {
				continue // the character of an escape already read
			}
			switch c := b[k]; {
			case c == '"':
				return k + 1, escaped, nil
			case c == '\\':
				escaped = true
				n, err := skipEscape(b, k)
				if err != nil {
					return k, escaped, err
				}
				i = k + n
			case c < 0x20:
				return k, escaped, syntaxErr(k, "control character in string")
			}
		}
		i = max(i, base+8)
	}
	for {
		for i < len(b) && strSafe[b[i]] {
			i++
		}
		if i >= len(b) {
			return i, escaped, syntaxErr(i, "unexpected end of string")
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			n, err := skipEscape(b, i)
			if err != nil {
				return i, escaped, err
			}
			i += n
		default:
			return i, escaped, syntaxErr(i, "control character in string")
		}
	}
}

// skipStringLoose returns the index past the string at b[i] (a quote):
// past the first quote after it that no backslash escapes. Nothing else
// is checked.
func skipStringLoose(b []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b), syntaxErr(len(b), "unexpected end of string")
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, nil
		}
		j = q + 1
	}
}

// HasControl reports whether b holds a byte below 0x20 (a control
// character, raw tab included), which may stand only between tokens.
func HasControl(b []byte) bool {
	var acc uint64
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		acc |= (x - lsb*0x20) & ^x
	}
	if acc&msb != 0 {
		return true
	}
	for ; i < len(b); i++ {
		if b[i] < 0x20 {
			return true
		}
	}
	return false
}

// skipEscape validates the escape at b[i] (a backslash) and returns its
// length.
func skipEscape(b []byte, i int) (int, error) {
	if i+1 >= len(b) {
		return 0, syntaxErr(i, "unexpected end of string")
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
		if i+6 > len(b) {
			return 0, syntaxErr(i, "unexpected end of string")
		}
		if !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
			return 0, syntaxErr(i, "invalid \\u escape")
		}
		return 6, nil
	}
	return 0, syntaxErr(i, "invalid escape")
}

func skipObject(b []byte, i, depth int, loose bool) (int, error) {
	if depth > MaxDepth {
		return i, &SyntaxError{Offset: i, Msg: ErrDepth.Error()}
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) {
			return i, syntaxErr(i, "unexpected end of input")
		}
		if b[i] != '"' {
			return i, syntaxErr(i, "expected object key")
		}
		var err error
		if i, _, err = SkipString(b, i); err != nil {
			return i, err
		}
		i = SkipSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			return i, syntaxErr(i, "expected ':' after object key")
		}
		i = SkipSpace(b, i+1)
		if i, err = skipValue(b, i, depth, loose); err != nil {
			return i, err
		}
		i = SkipSpace(b, i)
		if i >= len(b) {
			return i, syntaxErr(i, "unexpected end of object")
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return i, syntaxErr(i, "expected ',' or '}' in object")
		}
	}
}

func skipArray(b []byte, i, depth int, loose bool) (int, error) {
	if depth > MaxDepth {
		return i, &SyntaxError{Offset: i, Msg: ErrDepth.Error()}
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = skipValue(b, i, depth, loose); err != nil {
			return i, err
		}
		i = SkipSpace(b, i)
		if i >= len(b) {
			return i, syntaxErr(i, "unexpected end of array")
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return i, syntaxErr(i, "expected ',' or ']' in array")
		}
	}
}

// Iter walks the members of one JSON object, validating every value it
// passes over. The zero Iter is empty.
//
//	it, err := jsonx.Object(b)
//	for it.Next() { use(it.Key(), it.Value()) }
//	if it.Err() != nil { ... }
type Iter struct {
	b       []byte
	i       int
	started bool
	done    bool
	err     error
	key     []byte // raw key without quotes
	keyEsc  bool
	val     []byte
	valOff  int
	loose   bool // see ObjectLoose
}

// Object returns an iterator over the object b, which must start with '{'
// (no leading whitespace). Trailing bytes after the object are not checked.
func Object(b []byte) (Iter, error) {
	if len(b) == 0 || b[0] != '{' {
		return Iter{done: true}, syntaxErr(0, "expected object")
	}
	return Iter{b: b, i: 1}, nil
}

// ObjectLoose is Object checking the values it passes over as ValidLoose
// does.
func ObjectLoose(b []byte) (Iter, error) {
	it, err := Object(b)
	it.loose = err == nil && !HasControl(b)
	return it, err
}

// Next advances to the next member and reports whether there is one.
func (it *Iter) Next() bool {
	if it.done {
		return false
	}
	b := it.b
	i := SkipSpace(b, it.i)
	if !it.started {
		it.started = true
		if i < len(b) && b[i] == '}' {
			it.i = i + 1
			it.done = true
			return false
		}
	} else {
		if i >= len(b) {
			return it.fail(i, "unexpected end of object")
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case '}':
			it.i = i + 1
			it.done = true
			return false
		default:
			return it.fail(i, "expected ',' or '}' in object")
		}
	}
	if i >= len(b) || b[i] != '"' {
		return it.fail(i, "expected object key")
	}
	end, esc, err := SkipString(b, i)
	if err != nil {
		it.err, it.done = err, true
		return false
	}
	it.key, it.keyEsc = b[i+1:end-1], esc || !utf8.Valid(b[i+1:end-1])
	i = SkipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		return it.fail(i, "expected ':' after object key")
	}
	i = SkipSpace(b, i+1)
	vend, err := skipValue(b, i, 1, it.loose)
	if err != nil {
		it.err, it.done = err, true
		return false
	}
	it.val = b[i:vend]
	it.valOff = i
	it.i = vend
	return true
}

func (it *Iter) fail(off int, msg string) bool {
	it.err, it.done = syntaxErr(off, msg), true
	return false
}

// Key returns the current member's key. Keys with escapes are unquoted,
// which allocates; plain keys are returned as a view of the input.
func (it *Iter) Key() string {
	if !it.keyEsc {
		return string(it.key)
	}
	s, _ := unquoteBody(it.key)
	return s
}

// KeyBytes returns the current key as bytes: a view of the input for
// plain keys (index maps with string(it.KeyBytes()) to avoid allocating),
// a fresh unquoted copy for keys with escapes.
func (it *Iter) KeyBytes() []byte {
	if !it.keyEsc {
		return it.key
	}
	return []byte(it.Key())
}

// KeyIs reports whether the current key equals k, without allocating for
// keys that hold no escapes.
func (it *Iter) KeyIs(k string) bool {
	if !it.keyEsc {
		return string(it.key) == k
	}
	return it.Key() == k
}

// RawKey returns the current key as it appears in the input (without
// quotes) and whether it holds escapes.
func (it *Iter) RawKey() ([]byte, bool) { return it.key, it.keyEsc }

// Value returns the current member's raw value, a view of the input.
func (it *Iter) Value() []byte { return it.val }

// ValueOffset returns the offset of the current value in the object.
func (it *Iter) ValueOffset() int { return it.valOff }

// End returns the offset just past the closing brace once iteration has
// finished without error.
func (it *Iter) End() int { return it.i }

// Err returns the first syntax error met, if any.
func (it *Iter) Err() error { return it.err }

// EachElement calls fn for each element of the array v (which must start
// with '['), stopping at the first error fn returns.
func EachElement(v []byte, fn func(elem []byte) error) error {
	if len(v) == 0 || v[0] != '[' {
		return syntaxErr(0, "expected array")
	}
	i := SkipSpace(v, 1)
	if i < len(v) && v[i] == ']' {
		return nil
	}
	for {
		end, err := skipValue(v, i, 1, false)
		if err != nil {
			return err
		}
		if err := fn(v[i:end]); err != nil {
			return err
		}
		i = SkipSpace(v, end)
		if i >= len(v) {
			return syntaxErr(i, "unexpected end of array")
		}
		switch v[i] {
		case ',':
			i = SkipSpace(v, i+1)
		case ']':
			return nil
		default:
			return syntaxErr(i, "expected ',' or ']' in array")
		}
	}
}
