package session

// The JSON codec of messages, on internal/jsonx, so that members are kept
// exactly (presence, order of unknown ones, raw values) and so that reading
// a long session costs one pass over its bytes.
//
// Most of it is generated: internal/codecgen/tables.go holds one table per
// type (Message, Block, Usage and the objects it nests), one line per
// member, from which message_codec.go reads, writes, compares with zero,
// clones and makes canonical each member. A new member is a field in its
// struct (message.go) and a line in its table; then run go generate.
//
// This file holds what the tables do not say: the encoder and the readers
// the generated code calls, content written as a JSON string, the range of
// exitCode, and the entry points. The members a value built in Go always
// has are requiredFor and blockRequired in message.go.

//go:generate go run ./internal/codecgen

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/agentsession/session/internal/jsonx"
)

// ---- Encoding ----

// objEnc writes JSON objects, nested ones included.
type objEnc struct {
	dst     []byte
	first   bool
	invalid bool // a string written was not valid UTF-8 (and was repaired)
}

// open starts an object.
func (e *objEnc) open() {
	e.dst = append(e.dst, '{')
	e.first = true
}

// close ends an object, which may be a member's value.
func (e *objEnc) close() {
	e.dst = append(e.dst, '}')
	e.first = false
}

// key writes the separator and a key that needs no escaping.
func (e *objEnc) key(k string) {
	if !e.first {
		e.dst = append(e.dst, ',')
	}
	e.first = false
	e.dst = append(e.dst, '"')
	e.dst = append(e.dst, k...)
	e.dst = append(e.dst, '"', ':')
}

func (e *objEnc) str(k, v string) {
	e.key(k)
	e.string(v)
}

// string writes a string value.
func (e *objEnc) string(v string) {
	var ok bool
	e.dst, ok = jsonx.AppendStringValid(e.dst, v)
	e.invalid = e.invalid || !ok
}

func (e *objEnc) boolean(k string, v bool) {
	e.key(k)
	e.dst = appendBool(e.dst, v)
}

func (e *objEnc) integer(k string, v int64) {
	e.key(k)
	e.dst = appendInt(e.dst, v)
}

func (e *objEnc) float(k string, v float64) {
	e.key(k)
	e.dst = jsonx.AppendFloat(e.dst, v)
}

// raw writes a caller-supplied raw JSON value, def if it is empty.
func (e *objEnc) raw(k string, v json.RawMessage, def string) error {
	b, err := rawValue(v, def)
	if err != nil {
		return err
	}
	e.key(k)
	e.dst = append(e.dst, b...)
	return nil
}

// content writes a message's content: a JSON string or a list of blocks.
func (e *objEnc) content(blocks []Block, asString bool) error {
	if asString {
		e.string(blocks[0].Text)
		return nil
	}
	e.dst = append(e.dst, '[')
	for i := range blocks {
		if i > 0 {
			e.dst = append(e.dst, ',')
		}
		if err := blocks[i].encode(e); err != nil {
			return err
		}
	}
	e.dst = append(e.dst, ']')
	return nil
}

// extra writes unknown members, leaving out keys written already.
func (e *objEnc) extra(f Fields, written func(string) bool) error {
	var err error
	e.dst, e.first, err = f.appendTo(e.dst, e.first, written)
	return err
}

// MarshalJSON encodes the message in the seed format's JSON shape.
func (m *Message) MarshalJSON() ([]byte, error) {
	return m.AppendJSON(make([]byte, 0, m.sizeHint()))
}

// sizeHint estimates the encoded size, to allocate once.
func (m *Message) sizeHint() int {
	n := m.size()
	return n + n/8 // room for escapes
}

// AppendJSON appends the message's JSON encoding to dst.
func (m *Message) AppendJSON(dst []byte) ([]byte, error) {
	dst, _, err := m.appendJSON(dst)
	return dst, err
}

// appendJSON is AppendJSON, and reports whether every string was valid
// UTF-8: a message that encodes as it is, which canonicalize can take on
// trust.
func (m *Message) appendJSON(dst []byte) ([]byte, bool, error) {
	e := objEnc{dst: dst}
	if err := m.encode(&e); err != nil {
		return nil, false, err
	}
	return e.dst, !e.invalid, nil
}

// MarshalJSON encodes the block.
func (b Block) MarshalJSON() ([]byte, error) {
	var e objEnc
	if err := b.encode(&e); err != nil {
		return nil, err
	}
	return e.dst, nil
}

// MarshalJSON encodes the usage.
func (u Usage) MarshalJSON() ([]byte, error) {
	var e objEnc
	if err := u.encode(&e); err != nil {
		return nil, err
	}
	return e.dst, nil
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

func appendInt(dst []byte, v int64) []byte {
	return strconv.AppendInt(dst, v, 10)
}

// appendContent writes content as a JSON string or a list of blocks.
func appendContent(dst []byte, blocks []Block, asString bool) ([]byte, error) {
	e := objEnc{dst: dst}
	if err := e.content(blocks, asString); err != nil {
		return nil, err
	}
	return e.dst, nil
}

// ---- Decoding ----

// UnmarshalJSON decodes a message of any role. Members of an unexpected
// type are kept in Extra rather than rejected.
func (m *Message) UnmarshalJSON(data []byte) error {
	var c jsonx.Cursor
	c.Reset(data)
	return readWhole(&c, m.read(&c, true), errNotObject, "message")
}

var errNotBlock = errors.New("content element is not an object")

// UnmarshalJSON decodes a block.
func (b *Block) UnmarshalJSON(data []byte) error {
	var c jsonx.Cursor
	c.Reset(data)
	return readWhole(&c, b.read(&c, true), errNotBlock, "block")
}

// UnmarshalJSON decodes a usage object.
func (u *Usage) UnmarshalJSON(data []byte) error {
	var c jsonx.Cursor
	c.Reset(data)
	return readWhole(&c, u.read(&c, true), errNotUsage, "usage")
}

var errNotUsage = errors.New("usage is not an object")

// readWhole is the error of reading an object (ok says whether it was
// read) that must be all the cursor holds.
func readWhole(c *jsonx.Cursor, ok bool, notObject error, what string) error {
	if !ok {
		if c.Err() != nil {
			return c.Err()
		}
		return notObject
	}
	if !c.AtEnd() {
		return &jsonx.SyntaxError{Offset: c.Pos(), Msg: "unexpected data after " + what}
	}
	return nil
}

func keepRaw(v []byte, copyRaw bool) json.RawMessage {
	if copyRaw {
		return append(json.RawMessage(nil), v...)
	}
	return v
}

// readRaw reads any value, kept verbatim; false only on a syntax error.
func readRaw(c *jsonx.Cursor, copyRaw bool) (json.RawMessage, bool) {
	raw := c.Skip()
	return keepRaw(raw, copyRaw), raw != nil
}

// readIntPtr reads an integer within int's range; false, reading nothing,
// for anything else.
func readIntPtr(c *jsonx.Cursor) (*int, bool) {
	mark := c.Mark()
	n, ok := c.Int()
	if !ok {
		return nil, false
	}
	if int64(int(n)) != n {
		c.Restore(mark)
		return nil, false
	}
	v := int(n)
	return &v, true
}

// readContent reads a string or a list of block objects; false, reading
// nothing, for anything else.
func readContent(c *jsonx.Cursor, copyRaw bool) (blocks []Block, asString, ok bool) {
	switch c.Kind() {
	case jsonx.KindString:
		s, ok := c.Str()
		if !ok {
			return nil, false, false
		}
		return stringContent(s), true, true
	case jsonx.KindArray:
		mark := c.Mark()
		es, _ := c.Array()
		// Read into a list on the stack, then copied into one of the
		// exact length: one allocation per message, none grown, no spare
		// capacity kept (a message holds its blocks as long as it lives).
		var few [4]Block
		read := few[:0]
		for es.Next() {
			var b Block
			if !b.read(c, copyRaw) {
				c.Restore(mark)
				return nil, false, false
			}
			read = append(read, b)
		}
		blocks = make([]Block, len(read))
		copy(blocks, read)
		return blocks, false, c.Err() == nil
	}
	return nil, false, false
}

// stringContent is the content decoded from the JSON string s.
func stringContent(s string) []Block {
	return []Block{{Type: BlockText, Text: s, has: bType | bText, decoded: true}}
}

// ---- Canonical form ----

// canonicalContent turns a message's content into what decoding its
// encoding gives (see Message.canonicalize): a JSON string becomes a
// decoded text block, a nil that is written an empty list.
func canonicalContent(blocks *[]Block, asString, valid bool) bool {
	switch {
	case asString:
		text := (*blocks)[0].Text
		*blocks = stringContent(text)
		return valid || validStrings(text)
	case *blocks == nil:
		*blocks = []Block{}
	default:
		for i := range *blocks {
			if !(*blocks)[i].canonicalize(valid) {
				return false
			}
		}
	}
	return true
}

func validStrings(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// finite reports whether JSON can hold f.
func finite(f float64) bool {
	return !math.IsNaN(f) && !math.IsInf(f, 0)
}
