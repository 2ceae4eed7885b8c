package jsonx

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Unquote decodes the JSON string v (with its quotes) the way
// encoding/json does: escapes are resolved, invalid UTF-8 and unpaired
// surrogates become U+FFFD. v must already be a valid string token.
func Unquote(v []byte) (string, error) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", syntaxErr(0, "expected string")
	}
	return unquoteBody(v[1 : len(v)-1])
}

// unquoteBody decodes the inside of a string token.
func unquoteBody(s []byte) (string, error) {
	// Fast path: nothing to resolve.
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '\\' || c < 0x20 {
			break
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	if i == len(s) {
		return string(s), nil
	}
	b := make([]byte, 0, len(s)+8)
	b = append(b, s[:i]...)
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return "", syntaxErr(i, "unexpected end of string")
			}
			switch s[i+1] {
			case '"', '\\', '/':
				b = append(b, s[i+1])
				i += 2
			case 'b':
				b = append(b, '\b')
				i += 2
			case 'f':
				b = append(b, '\f')
				i += 2
			case 'n':
				b = append(b, '\n')
				i += 2
			case 'r':
				b = append(b, '\r')
				i += 2
			case 't':
				b = append(b, '\t')
				i += 2
			case 'u':
				rr := getu4(s[i:])
				if rr < 0 {
					return "", syntaxErr(i, "invalid \\u escape")
				}
				i += 6
				if utf16.IsSurrogate(rr) {
					rr1 := getu4(s[i:])
					if dec := utf16.DecodeRune(rr, rr1); dec != unicode.ReplacementChar {
						i += 6
						b = utf8.AppendRune(b, dec)
						break
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
			default:
				return "", syntaxErr(i, "invalid escape")
			}
		case c < 0x20:
			return "", syntaxErr(i, "control character in string")
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, unicode.ReplacementChar)
				i++
				continue
			}
			b = append(b, s[i:i+size]...)
			i += size
		}
	}
	return string(b), nil
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// plain marks ASCII bytes that are written into a string as they are.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, escaped the way JavaScript's
// JSON.stringify does it (so lines we write look like the seed agents'):
// quote, backslash and control characters are escaped, nothing else.
// Invalid UTF-8 is replaced by U+FFFD, as encoding/json does.
func AppendString(dst []byte, s string) []byte {
	dst, _ = AppendStringValid(dst, s)
	return dst
}

// AppendStringValid is AppendString, and reports whether s was valid
// UTF-8 (written as it is) rather than repaired.
//
// UTF-8 is checked only when s holds a byte from 0x80 on, which the
// escaping loop notes as it goes: text that is all ASCII (most of what
// an agent writes) is read once, not twice.
func AppendStringValid(dst []byte, s string) ([]byte, bool) {
	start := len(dst)
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	dst = slices.Grow(dst, len(s)+16)
	dst = append(dst, '"')
	o := len(dst)
	out := dst[:cap(dst)]
	var high uint64
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		high |= x
		if len(out)-o < escRoom {
			dst = slices.Grow(dst[:o], len(b)-i+escRoom)
			out = dst[:cap(dst)]
		}
		if strMask(x) == 0 {
			binary.LittleEndian.PutUint64(out[o:o+8], x)
			o += 8
			continue
		}
		w := (*[escRoom]byte)(out[o : o+escRoom])
		n := 0
		c := byte(x)
		binary.LittleEndian.PutUint64(w[n&63:], escapeTmpl[c])
		n += int(escapeLen[c])
		c = byte(x >> 8)
		binary.LittleEndian.PutUint64(w[n&63:], escapeTmpl[c])
		n += int(escapeLen[c])
		c = byte(x >> 16)
		binary.LittleEndian.PutUint64(w[n&63:], escapeTmpl[c])
		n += int(escapeLen[c])
		c = byte(x >> 24)
		binary.LittleEndian.PutUint64(w[n&63:], escapeTmpl[c])
		n += int(escapeLen[c])
		c = byte(x >> 32)
		binary.LittleEndian.PutUint64(w[n&63:], escapeTmpl[c])
		n += int(escapeLen[c])
		c = byte(x >> 40)
		binary.LittleEndian.PutUint64(w[n&63:], escapeTmpl[c])
		n += int(escapeLen[c])
		c = byte(x >> 48)
		binary.LittleEndian.PutUint64(w[n&63:], escapeTmpl[c])
		n += int(escapeLen[c])
		c = byte(x >> 56)
		binary.LittleEndian.PutUint64(w[n&63:], escapeTmpl[c])
		n += int(escapeLen[c])
		o += n
	}
	dst = dst[:o]
	for ; i < len(b); i++ {
		c := b[i]
		high |= uint64(c)
		dst = binary.LittleEndian.AppendUint64(dst, escapeTmpl[c])
		dst = dst[:len(dst)-8+int(escapeLen[c])]
	}
	if high&msb != 0 && !utf8.ValidString(s) {
		return appendInvalidString(dst[:start], s), false
	}
	return append(dst, '"'), true
}

// escRoom is the room AppendStringValid keeps ahead of a word it
// escapes: 8 bytes of 6 each, and an 8-byte store at the last of them.
const escRoom = 72

// escapeTmpl holds for each byte what AppendString writes for it, in the
// low bytes of a word (bytes from 0x80 on, parts of valid UTF-8, stand
// for themselves); escapeLen its length.
var escapeTmpl, escapeLen = func() (t [256]uint64, n [256]uint8) {
	for c := range 256 {
		var e []byte
		switch {
		case c == '"' || c == '\\':
			e = []byte{'\\', byte(c)}
		case c == '\n':
			e = []byte(`\n`)
		case c == '\r':
			e = []byte(`\r`)
		case c == '\t':
			e = []byte(`\t`)
		case c == '\b':
			e = []byte(`\b`)
		case c == '\f':
			e = []byte(`\f`)
		case c < 0x20:
			e = []byte{'\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF]}
		default:
			e = []byte{byte(c)}
		}
		var w [8]byte
		copy(w[:], e)
		t[c], n[c] = binary.LittleEndian.Uint64(w[:]), uint8(len(e))
	}
	return t, n
}()

// appendInvalidString is AppendString for text that is not valid UTF-8:
// each invalid byte becomes U+FFFD, as encoding/json does.
func appendInvalidString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\uFFFD"...)
			i++
			continue
		}
		for k := i; k < i+size; k++ {
			c := s[k]
			dst = binary.LittleEndian.AppendUint64(dst, escapeTmpl[c])
			dst = dst[:len(dst)-8+int(escapeLen[c])]
		}
		i += size
	}
	return append(dst, '"')
}

// AppendFloat appends f the way JavaScript prints numbers (and
// encoding/json writes float64): shortest round-trip digits, exponent form
// only below 1e-6 or from 1e21 up. NaN and infinities, which JSON cannot
// hold, are written as null, as JSON.stringify does.
func AppendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	n := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// Go writes e-07 where JavaScript writes e-7.
		m := len(dst)
		if m-n >= 4 && dst[m-4] == 'e' && dst[m-3] == '-' && dst[m-2] == '0' {
			dst[m-2] = dst[m-1]
			dst = dst[:m-1]
		}
	}
	return dst
}

// ParseInt reads v as an integer literal (no fraction, no exponent) that
// fits an int64.
func ParseInt(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 20 {
		return 0, false
	}
	i := 0
	neg := false
	if v[0] == '-' {
		neg = true
		i = 1
		if len(v) == 1 {
			return 0, false
		}
	}
	var n uint64
	for ; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (math.MaxUint64-9)/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		if n > 1<<63 {
			return 0, false
		}
		return -int64(n), true
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}

// ParseFloat reads the number v as a float64.
func ParseFloat(v []byte) (float64, bool) {
	if KindOf(v) != KindNumber {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}

// ParseBool reads true or false.
func ParseBool(v []byte) (bool, bool) {
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// String reads v as a JSON string.
func String(v []byte) (string, bool) {
	if KindOf(v) != KindString {
		return "", false
	}
	s, err := Unquote(v)
	return s, err == nil
}
