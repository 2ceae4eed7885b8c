package jsonx

import (
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Cursor reads JSON values from a byte slice in a single pass: each value
// is validated as it is read, and a value the caller does not read is
// skipped (and validated) when the caller moves on. Decoders built on it
// touch each byte about once.
type Cursor struct {
	b     []byte
	i     int
	err   error
	depth int
	// Share makes Str return strings without escapes as views of the
	// input instead of copies. Set it only for input that is never
	// modified while the strings live.
	Share bool
	// Loose makes Skip check the structure of what it passes over but not
	// the escapes in its strings, which makes skipping text dense with
	// escapes several times faster. Set it only for input without control
	// characters (HasControl), whose strings are checked when they are
	// read.
	Loose bool
	// Spans, when not nil, receives each string of at least SpanMin bytes
	// (its token, quotes and all) that Str reads and whose token is
	// exactly what AppendString writes for it, so that the token can be
	// rebuilt from the string: see Span.
	Spans   *[]Span
	SpanMin int
	// Arena, when not nil, holds the strings Str returns (Share aside).
	Arena *Arena
}

// Arena holds many strings in a few large blocks, written once: one
// allocation per block rather than one per string, and no copy through
// a scratch buffer, since strings are unescaped where they stay. A
// string keeps its whole block alive, which suits strings that live and
// die together (those of a session read from a file).
type Arena struct {
	buf []byte
	// Block is the size of a new block (a larger one is made for a
	// string that needs it); it bounds what an arena wastes.
	Block int
}

// Room returns the arena's free space, at least n bytes of it (length
// zero), for the caller to append at most that much to and Commit.
func (a *Arena) Room(n int) []byte {
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]byte, 0, max(n, a.Block))
	}
	return a.buf[len(a.buf):len(a.buf)]
}

// keep makes the k bytes written at the start of the free space a string.
func (a *Arena) keep(k int) string {
	if k == 0 {
		return ""
	}
	n := len(a.buf)
	a.buf = a.buf[:n+k]
	return unsafe.String(&a.buf[n], k)
}

// Commit keeps b, what the caller appended to Room's result without
// going beyond what it asked for, and returns it, never to be modified.
func (a *Arena) Commit(b []byte) []byte {
	n := len(a.buf)
	a.buf = a.buf[:n+len(b)]
	return a.buf[n:len(a.buf):len(a.buf)]
}

// Bytes returns a copy of b held by the arena, never to be modified.
func (a *Arena) Bytes(b []byte) []byte {
	return a.Commit(append(a.Room(len(b)), b...))
}

// String returns a copy of b held by the arena.
func (a *Arena) String(b []byte) string {
	return a.keep(copy(a.Room(len(b))[:len(b)], b))
}

// Span is a string token of a Cursor's input, b[Start:End] with its
// quotes, and the string it stands for; AppendString(nil, S) gives the
// token back byte for byte.
type Span struct {
	Start, End int
	S          string
}

// NewCursor returns a cursor at the start of b.
func NewCursor(b []byte) *Cursor { return &Cursor{b: b} }

// Reset points the cursor at the start of b, keeping its settings.
func (c *Cursor) Reset(b []byte) {
	*c = Cursor{b: b, Share: c.Share, Loose: c.Loose, Spans: c.Spans, SpanMin: c.SpanMin, Arena: c.Arena}
}

// Err returns the first syntax error met.
func (c *Cursor) Err() error { return c.err }

// Pos returns the offset of the next unread byte.
func (c *Cursor) Pos() int { return c.i }

// Mark is a saved cursor position.
type Mark struct{ i, depth int }

// Mark returns the current position, to go back to with Restore.
func (c *Cursor) Mark() Mark { return Mark{c.i, c.depth} }

// Restore goes back to a mark, unless an error has been met.
func (c *Cursor) Restore(m Mark) {
	if c.err == nil {
		c.i, c.depth = m.i, m.depth
		if c.Spans != nil {
			sp := *c.Spans
			for len(sp) > 0 && sp[len(sp)-1].Start >= m.i {
				sp = sp[:len(sp)-1] // read again from the mark
			}
			*c.Spans = sp
		}
	}
}

// AtEnd reports whether only whitespace is left.
func (c *Cursor) AtEnd() bool {
	c.i = SkipSpace(c.b, c.i)
	return c.i == len(c.b)
}

func (c *Cursor) fail(off int, msg string) {
	if c.err == nil {
		c.err = syntaxErr(off, msg)
	}
	c.i = len(c.b)
}

// Kind reports the kind of the next value without reading it.
func (c *Cursor) Kind() Kind {
	c.i = SkipSpace(c.b, c.i)
	if c.err != nil || c.i >= len(c.b) {
		return KindInvalid
	}
	return KindOf(c.b[c.i:])
}

// Skip reads the next value, whatever it is, and returns its raw bytes (a
// view of the input).
func (c *Cursor) Skip() []byte {
	c.i = SkipSpace(c.b, c.i)
	if c.err != nil {
		return nil
	}
	start := c.i
	end, err := skipValue(c.b, c.i, c.depth, c.Loose)
	if err != nil {
		c.err, c.i = err, len(c.b)
		return nil
	}
	c.i = end
	return c.b[start:end]
}

// Str reads the next value if it is a string. It returns false, reading
// nothing, if the next value is not a string (or the string is
// malformed, which also sets Err).
func (c *Cursor) Str() (string, bool) {
	if c.Kind() != KindString {
		return "", false
	}
	s, end, canon, err := readString(c.b, c.i, c.Share, c.Arena)
	if err != nil {
		c.err, c.i = err, len(c.b)
		return "", false
	}
	if c.Spans != nil && canon && end-c.i >= c.SpanMin {
		*c.Spans = append(*c.Spans, Span{Start: c.i, End: end, S: s})
	}
	c.i = end
	return s, true
}

// StrBytes reads the next value if it is a string without escapes and
// returns it as a view of the input; false, reading nothing, otherwise.
func (c *Cursor) StrBytes() ([]byte, bool) {
	if c.Kind() != KindString {
		return nil, false
	}
	end, esc, err := SkipString(c.b, c.i)
	if err != nil || esc || !utf8.Valid(c.b[c.i+1:end-1]) {
		return nil, false
	}
	v := c.b[c.i+1 : end-1]
	c.i = end
	return v, true
}

// Int reads the next value if it is an integer literal that fits an int64;
// false, reading nothing, otherwise.
func (c *Cursor) Int() (int64, bool) {
	if c.Kind() != KindNumber {
		return 0, false
	}
	end, err := SkipNumber(c.b, c.i)
	if err != nil {
		c.err, c.i = err, len(c.b)
		return 0, false
	}
	n, ok := ParseInt(c.b[c.i:end])
	if ok {
		c.i = end
	}
	return n, ok
}

// Float reads the next value if it is a number within float64 range.
func (c *Cursor) Float() (float64, bool) {
	if c.Kind() != KindNumber {
		return 0, false
	}
	end, err := SkipNumber(c.b, c.i)
	if err != nil {
		c.err, c.i = err, len(c.b)
		return 0, false
	}
	if n, ok := ParseInt(c.b[c.i:end]); ok && n > -1<<53 && n < 1<<53 {
		c.i = end
		return float64(n), true
	}
	f, perr := strconv.ParseFloat(string(c.b[c.i:end]), 64)
	if perr != nil || math.IsInf(f, 0) {
		return 0, false
	}
	c.i = end
	return f, true
}

// Bool reads the next value if it is true or false.
func (c *Cursor) Bool() (bool, bool) {
	if c.Kind() != KindBool {
		return false, false
	}
	if v, err := skipLiteral(c.b, c.i, "true"); err == nil {
		c.i = v
		return true, true
	}
	if v, err := skipLiteral(c.b, c.i, "false"); err == nil {
		c.i = v
		return false, true
	}
	c.fail(c.i, "invalid literal")
	return false, false
}

// Null reads the next value if it is null.
func (c *Cursor) Null() bool {
	if c.Kind() != KindNull {
		return false
	}
	v, err := skipLiteral(c.b, c.i, "null")
	if err != nil {
		c.fail(c.i, "invalid literal")
		return false
	}
	c.i = v
	return true
}

// Members walks an object. Obtain it with Cursor.Object.
type Members struct {
	c        *Cursor
	started  bool
	done     bool
	valStart int
	key      []byte
	esc      bool
}

// Object starts reading the next value as an object; false, reading
// nothing, if it is not one.
func (c *Cursor) Object() (Members, bool) {
	if c.Kind() != KindObject {
		return Members{done: true}, false
	}
	c.depth++
	if c.depth > MaxDepth {
		c.fail(c.i, ErrDepth.Error())
		return Members{done: true}, false
	}
	c.i++
	return Members{c: c, valStart: -1}, true
}

// Next moves to the next member, skipping the previous member's value if
// it was not read, and returns its key (a view of the input, still
// escaped if esc). It returns false after the closing brace or on error.
func (m *Members) Next() (key []byte, esc bool, ok bool) {
	if m.done {
		return nil, false, false
	}
	c := m.c
	if c.err != nil {
		m.done = true
		return nil, false, false
	}
	if m.valStart >= 0 && c.i == m.valStart {
		c.Skip() // the caller did not read the value
	}
	b := c.b
	i := SkipSpace(b, c.i)
	if !m.started {
		m.started = true
		if i < len(b) && b[i] == '}' {
			return m.end(i)
		}
	} else {
		if i >= len(b) {
			m.fail(i, "unexpected end of object")
			return nil, false, false
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case '}':
			return m.end(i)
		default:
			m.fail(i, "expected ',' or '}' in object")
			return nil, false, false
		}
	}
	if i >= len(b) {
		m.fail(i, "unexpected end of input")
		return nil, false, false
	}
	if b[i] != '"' {
		m.fail(i, "expected object key")
		return nil, false, false
	}
	end, e, err := SkipString(b, i)
	if err != nil {
		c.err, c.i, m.done = err, len(b), true
		return nil, false, false
	}
	key, esc = b[i+1:end-1], e || !utf8.Valid(b[i+1:end-1])
	i = SkipSpace(b, end)
	if i >= len(b) {
		m.fail(i, "unexpected end of input")
		return nil, false, false
	}
	if b[i] != ':' {
		m.fail(i, "expected ':' after object key")
		return nil, false, false
	}
	c.i = SkipSpace(b, i+1)
	m.valStart = c.i
	m.key, m.esc = key, esc
	return key, esc, true
}

func (m *Members) end(i int) ([]byte, bool, bool) {
	m.c.i = i + 1
	m.c.depth--
	m.done = true
	return nil, false, false
}

func (m *Members) fail(off int, msg string) {
	m.c.fail(off, msg)
	m.done = true
}

// Key returns the current key, unquoted.
func (m *Members) Key() string {
	if !m.esc {
		return string(m.key)
	}
	s, _ := unquoteBody(m.key)
	return s
}

// Elements walks an array. Obtain it with Cursor.Array.
type Elements struct {
	c        *Cursor
	started  bool
	done     bool
	valStart int
}

// Array starts reading the next value as an array; false, reading
// nothing, if it is not one.
func (c *Cursor) Array() (Elements, bool) {
	if c.Kind() != KindArray {
		return Elements{done: true}, false
	}
	c.depth++
	if c.depth > MaxDepth {
		c.fail(c.i, ErrDepth.Error())
		return Elements{done: true}, false
	}
	c.i++
	return Elements{c: c, valStart: -1}, true
}

// Next moves to the next element, skipping the previous one if it was not
// read. It returns false after the closing bracket or on error.
func (a *Elements) Next() bool {
	if a.done {
		return false
	}
	c := a.c
	if c.err != nil {
		a.done = true
		return false
	}
	if a.valStart >= 0 && c.i == a.valStart {
		c.Skip()
	}
	b := c.b
	i := SkipSpace(b, c.i)
	if !a.started {
		a.started = true
		if i < len(b) && b[i] == ']' {
			return a.end(i)
		}
	} else {
		if i >= len(b) {
			c.fail(i, "unexpected end of array")
			a.done = true
			return false
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case ']':
			return a.end(i)
		default:
			c.fail(i, "expected ',' or ']' in array")
			a.done = true
			return false
		}
	}
	c.i = i
	a.valStart = i
	return true
}

func (a *Elements) end(i int) bool {
	a.c.i = i + 1
	a.c.depth--
	a.done = true
	return false
}

// ---- Strings, a word at a time ----

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// strMask has the high bit set in each byte of x that is a control
// character, a quote or a backslash. Only the lowest flagged byte is
// exact (a borrow can flag a byte above it), which is all the scanners
// use: they jump to it.
func strMask(x uint64) uint64 {
	ctl := (x - lsb*0x20) & ^x
	q := x ^ (lsb * '"')
	q = (q - lsb) & ^q
	bs := x ^ (lsb * '\\')
	bs = (bs - lsb) & ^bs
	return (ctl | q | bs) & msb
}

// plainRun returns the end of the run of plain ASCII (no quote, backslash
// or control byte) starting at i.
func plainRun(b []byte, i int) int {
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := (strMask(x) | x) & msb; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(b) && b[i] < utf8.RuneSelf && plain[b[i]] {
		i++
	}
	return i
}

// scratch buffers for unescaping, so that a string is allocated once, at
// its final size.
var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// readString decodes the string token at b[i] (which is '"') and returns
// the string and the offset past it, resolving escapes and replacing
// invalid UTF-8 as encoding/json does. With share, a string without
// escapes is a view of b rather than a copy: only for input that is never
// modified afterwards. canon says AppendString writes the token back as
// it was (no \/ or \u escape, valid UTF-8).
func readString(b []byte, i int, share bool, arena *Arena) (s string, end int, canon bool, err error) {
	start := i + 1
	j := start
	// Fast path: no escapes, valid UTF-8.
	for {
		j = plainRun(b, j)
		if j >= len(b) {
			return "", j, false, syntaxErr(j, "unexpected end of string")
		}
		c := b[j]
		if c == '"' {
			if arena != nil {
				return arena.String(b[start:j]), j + 1, true, nil
			}
			if share && j > start {
				return unsafe.String(&b[start], j-start), j + 1, true, nil
			}
			return string(b[start:j]), j + 1, true, nil
		}
		if c < utf8.RuneSelf {
			break // escape or control character
		}
		r, size := utf8.DecodeRune(b[j:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		j += size
	}
	if arena != nil {
		// Unescaping shortens, so what is left of b bounds the string, but
		// for invalid UTF-8, whose bytes become U+FFFD, three bytes each:
		// then append has moved buf out of the arena.
		room := arena.Room(len(b) - start)
		buf, end, canon, err := unescapeFast(b, j, append(room, b[start:j]...))
		if err == errSlowPath {
			canon = false
			buf, end, err = unescape(b, j, append(room, b[start:j]...))
		}
		if err != nil {
			return "", end, false, err
		}
		if len(buf) > cap(room) {
			return arena.String(buf), end, canon, nil
		}
		return arena.keep(len(buf)), end, canon, nil
	}
	// Slow path: unescape into a scratch buffer, then copy the result
	// once (string conversion does not zero the memory it allocates).
	bp := scratchPool.Get().(*[]byte)
	buf, end, canon, err := unescapeFast(b, j, append((*bp)[:0], b[start:j]...))
	if err == errSlowPath {
		canon = false
		buf, end, err = unescape(b, j, append(buf[:0], b[start:j]...))
	}
	if err == nil {
		s = string(buf)
	}
	if cap(buf) <= 1<<20 {
		*bp = buf[:0]
		scratchPool.Put(bp)
	}
	return s, end, canon, err
}

// errSlowPath sends unescapeFast's input to unescape.
var errSlowPath = errors.New("jsonx: take the slow path")

// escapeByte maps the character after a backslash to what it stands for,
// 0 for the ones that need more ('u') or are invalid.
var escapeByte = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// unescapeFast is unescape for the common case, a word at a time: each
// word is stored whole and the output advanced to its first special
// byte, so text dense with escapes needs no copy calls. Non-ASCII bytes
// are copied as they are and checked once at the end; invalid UTF-8, \u
// escapes and errors go to unescape (errSlowPath). canon is false if it
// met an escaped slash, which AppendString would not write.
func unescapeFast(b []byte, j int, buf []byte) (_ []byte, _ int, canon bool, _ error) {
	from := len(buf)
	canon = true
	var high uint64
	for {
		for j+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[j:])
			if cap(buf)-len(buf) < 8 {
				buf = slices.Grow(buf, 8)
			}
			n := len(buf)
			binary.LittleEndian.PutUint64(buf[n:n+8], x)
			m := strMask(x)
			if m == 0 {
				high |= x
				buf = buf[:n+8]
				j += 8
				continue
			}
			k := bits.TrailingZeros64(m) >> 3
			high |= x & (1<<(8*k) - 1)
			buf = buf[:n+k]
			j += k
			goto special
		}
		for j < len(b) && strSafe[b[j]] {
			high |= uint64(b[j])
			buf = append(buf, b[j])
			j++
		}
		if j >= len(b) {
			return buf, j, false, errSlowPath
		}
	special:
		switch c := b[j]; {
		case c == '"':
			if high&msb != 0 && !utf8.Valid(buf[from:]) {
				return buf, j, false, errSlowPath
			}
			return buf, j + 1, canon, nil
		case c == '\\' && j+1 < len(b) && escapeByte[b[j+1]] != 0:
			buf = append(buf, escapeByte[b[j+1]])
			canon = canon && b[j+1] != '/'
			j += 2
			if j < len(b) && b[j] == '\\' {
				goto special // runs of escapes (\n\t\t) are common in code
			}
		default:
			return buf, j, false, errSlowPath
		}
	}
}

// unescape decodes the rest of a string body from b[j] on, appending to
// buf, and returns buf and the offset past the closing quote.
func unescape(b []byte, j int, buf []byte) ([]byte, int, error) {
	for {
		k := plainRun(b, j)
		buf = append(buf, b[j:k]...)
		j = k
		if j >= len(b) {
			return buf, j, syntaxErr(j, "unexpected end of string")
		}
		c := b[j]
		switch {
		case c == '"':
			return buf, j + 1, nil
		case c == '\\':
			if j+1 >= len(b) {
				return buf, j, syntaxErr(j, "unexpected end of string")
			}
			switch b[j+1] {
			case '"', '\\', '/':
				buf = append(buf, b[j+1])
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				rr := getu4(b[j:])
				if rr < 0 {
					return buf, j, syntaxErr(j, "invalid \\u escape")
				}
				j += 6
				if utf16.IsSurrogate(rr) {
					rr1 := getu4(b[j:])
					if dec := utf16.DecodeRune(rr, rr1); dec != unicode.ReplacementChar {
						j += 6
						buf = utf8.AppendRune(buf, dec)
						continue
					}
					rr = unicode.ReplacementChar
				}
				buf = utf8.AppendRune(buf, rr)
				continue
			default:
				return buf, j, syntaxErr(j, "invalid escape")
			}
			j += 2
		case c < 0x20:
			return buf, j, syntaxErr(j, "control character in string")
		default:
			r, size := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && size == 1 {
				buf = utf8.AppendRune(buf, unicode.ReplacementChar)
				j++
				continue
			}
			buf = append(buf, b[j:j+size]...)
			j += size
		}
	}
}
