package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/agentsession/session/internal/jsonx"
)

// Entry: one line of a log, immutable, that keeps its bytes; building
// entries (NewEntry, ParseEntry) and their ids. Entry types and their
// payloads are in payload.go; how the reader makes compact entries, in
// readfile.go.

// Entry is one line of a session log: a node of the conversation tree. It
// knows its type, id, parent and timestamp at once and decodes its payload
// only when asked.
//
// An Entry is immutable and keeps the exact bytes it was read from, so a
// log written back keeps every line it did not change byte for byte,
// whatever fields or types it holds. Copying an Entry is cheap and safe.
// The zero Entry is invalid.
type Entry struct {
	typ    string
	id     string
	parent string
	ts     string
	kind   entryKind
	// noImage says the entry holds no image for sure: it was built from a
	// message without image blocks or members this package does not
	// model, so stores need not look for images to move to blobs.
	noImage bool
	// validText says every string of the message it was built from was
	// valid UTF-8, so that the message decodes back to itself.
	validText bool
	raw       []byte // the JSON object, no surrounding whitespace or newline
	// h, when set, makes raw a template: the entry's bytes with the
	// contents of its long strings cut out, which h holds decoded (see
	// compactEntry). Use bytes() for the entry's bytes.
	h *holes
	// idh and parh are hashID of id and parent, when the file reader
	// took them while the line was in the cache (withHashes), or idh
	// when buildEntry made the entry; 0 otherwise (see idHash). Whatever
	// makes an entry with another id or parent makes a new Entry, which
	// starts without them or with its own.
	idh, parh uint64
}

// idHash returns hashID(e.id), taken by the reader or now.
func (e Entry) idHash() uint64 {
	if e.idh != 0 {
		return e.idh
	}
	return hashID(e.id)
}

// parentHash returns hashID(e.parent), taken by the reader or now.
func (e Entry) parentHash() uint64 {
	if e.parh != 0 {
		return e.parh
	}
	return hashID(e.parent)
}

// bytes returns the entry's JSON: its own bytes, or for a compact entry a
// new copy rebuilt from the template.
func (e Entry) bytes() []byte {
	if e.h == nil || len(e.h.cut) == 0 {
		return e.raw
	}
	return e.appendBytes(make([]byte, 0, e.h.n))
}

// appendBytes appends the entry's JSON to dst.
func (e Entry) appendBytes(dst []byte) []byte {
	if e.h == nil {
		return append(dst, e.raw...)
	}
	prev := 0
	for _, c := range e.h.cut {
		dst = append(dst, e.raw[prev:c.at]...)
		dst = jsonx.AppendString(dst, c.s)
		prev = int(c.at)
	}
	return append(dst, e.raw[prev:]...)
}

// Type returns the entry type, such as "message". Unknown types are kept.
func (e Entry) Type() string { return e.typ }

// ID returns the entry id.
func (e Entry) ID() string { return e.id }

// ParentID returns the parent's id, or "" for a root.
func (e Entry) ParentID() string { return e.parent }

// Timestamp returns the entry's ISO-8601 timestamp as written.
func (e Entry) Timestamp() string { return e.ts }

// Time parses the timestamp; it is the zero time if there is none or it
// cannot be parsed.
func (e Entry) Time() time.Time {
	t, err := time.Parse(time.RFC3339Nano, e.ts)
	if err != nil {
		return time.Time{}
	}
	return t
}

// IsZero reports whether e is the zero Entry.
func (e Entry) IsZero() bool { return e.raw == nil }

// Len returns the size of the entry's JSON encoding in bytes.
func (e Entry) Len() int {
	if e.h != nil {
		return e.h.n
	}
	return len(e.raw)
}

// JSON returns a copy of the entry's JSON encoding (one line, no newline).
func (e Entry) JSON() []byte {
	if e.h != nil {
		return e.bytes() // a new copy already
	}
	return bytes.Clone(e.raw)
}

// AppendJSON appends the entry's JSON encoding to dst.
func (e Entry) AppendJSON(dst []byte) []byte { return e.appendBytes(dst) }

// MarshalJSON returns the entry's bytes, so an Entry embeds in other JSON
// unchanged.
func (e Entry) MarshalJSON() ([]byte, error) {
	if e.raw == nil {
		return nil, errors.New("session: marshal of zero Entry")
	}
	return e.JSON(), nil
}

// UnmarshalJSON parses an entry, like ParseEntry.
func (e *Entry) UnmarshalJSON(b []byte) error {
	x, err := ParseEntry(b)
	if err != nil {
		return err
	}
	*e = x
	return nil
}

// String returns a short description for logs and debugging.
func (e Entry) String() string {
	if e.raw == nil {
		return "Entry{}"
	}
	return fmt.Sprintf("Entry{%s %s parent=%q}", e.typ, e.id, e.parent)
}

// Field returns a copy of the raw value of a top-level member of the entry.
func (e Entry) Field(key string) (json.RawMessage, bool) {
	v, ok := e.field(key)
	return cloneRaw(v), ok
}

func (e Entry) field(key string) ([]byte, bool) { return topMember(e.bytes(), key) }

// topMember returns the raw value of the top-level member key of the JSON
// object obj (the last one, as in JSON.parse).
func topMember(obj []byte, key string) ([]byte, bool) {
	var c jsonx.Cursor
	c.Reset(obj)
	ms, ok := c.Object()
	if !ok {
		return nil, false
	}
	var found []byte
	ok = false
	for {
		kb, esc, more := ms.Next()
		if !more {
			break
		}
		if (!esc && string(kb) == key) || (esc && ms.Key() == key) {
			found, ok = c.Skip(), true // the last one wins, as in JSON.parse
		}
	}
	return found, ok
}

// Decode unmarshals the entry's JSON into v, typically one of the payload
// types (Compaction, Label ...) or a struct of the caller's own for an
// unknown type. It is encoding/json's strict decoding: a member of the
// wrong type fails it. The package itself reads the payloads of the
// entries it knows member by member, so that such a member is ignored
// (and reported by Verify) rather than the whole entry.
func (e Entry) Decode(v any) error {
	if e.raw == nil {
		return errors.New("session: decode of zero Entry")
	}
	return json.Unmarshal(e.bytes(), v)
}

// Message decodes the message of a "message" entry. The result is the
// caller's own. An entry read from a file, or whose images were
// resolved from blobs, keeps its message decoded: Message then returns
// a deep copy of it, its strings shared (they never change), rather than
// write the entry's bytes out again (an image's base64 escaped anew) and
// decode them again.
func (e Entry) Message() (*Message, error) {
	if m := e.readMessage(); m != nil && e.kind == kindMessage {
		return copyMessages([]*Message{m})[0], nil
	}
	return e.message(false)
}

// message decodes the message; with share, its strings are views of the
// entry's bytes (which never change) where they need no unescaping.
func (e Entry) message(share bool) (*Message, error) {
	if e.kind != kindMessage {
		return nil, fmt.Errorf("session: entry %s is a %q, not a message", e.id, e.typ)
	}
	c := jsonx.Cursor{Share: share}
	m := readMessageMember(&c, e.bytes())
	if err := c.Err(); err != nil {
		return nil, fmt.Errorf("session: entry %s: %w", e.id, err)
	}
	if m == nil {
		return nil, fmt.Errorf("session: entry %s: message is missing or not an object", e.id)
	}
	return m, nil
}

// readMessageMember decodes the "message" member of the entry v, in one
// pass where it stands, with the cursor c (see its Err); nil if it is
// missing or not an object.
func readMessageMember(c *jsonx.Cursor, v []byte) *Message {
	c.Reset(v)
	ms, _ := c.Object()
	var m *Message
	for {
		kb, esc, more := ms.Next()
		if !more {
			break
		}
		if (!esc && string(kb) == "message") || (esc && ms.Key() == "message") {
			x := new(Message)
			if x.read(c, true) {
				m = x
			} else {
				m = nil
			}
		}
	}
	return m
}

var (
	errNotObject   = errors.New("not a JSON object")
	errNoType      = errors.New(`no "type" string`)
	errNoID        = errors.New(`no "id" string`)
	errBadParent   = errors.New(`"parentId" is neither a string nor null`)
	errHeaderEntry = errors.New("a session header where an entry was expected")
)

// ParseEntry parses one line of a session log (surrounding whitespace
// allowed). The entry keeps its own copy of the bytes. An object spread
// over several lines is compacted to one, since an entry must be one line
// of a log; any other input keeps its bytes.
func ParseEntry(line []byte) (Entry, error) {
	v, err := jsonx.Trim(line)
	if err != nil {
		return Entry{}, err
	}
	v, _, _ = cutMark(v) // a marker of a FileStore's is not the entry's
	if bytes.ContainsAny(v, "\n\r") {
		var b bytes.Buffer
		if err := json.Compact(&b, v); err != nil {
			return Entry{}, err
		}
		return parseEntry(b.Bytes())
	}
	return parseEntry(bytes.Clone(v))
}

// envelope is what a reader found of an entry's envelope members.
type envelope struct{ hasType, hasID, badParent bool }

// member reads the member key at c into e when it is one of the
// envelope's (type, id, parentId, timestamp), and reports whether it
// was. A later member of the same key wins, as in JSON.parse.
func (env *envelope) member(c *jsonx.Cursor, key []byte, e *Entry) bool {
	switch string(key) {
	case "type":
		e.typ, env.hasType = c.Str()
	case "id":
		e.id, env.hasID = c.Str()
	case "parentId":
		if c.Null() {
			e.parent, env.badParent = "", false
		} else if p, ok := c.Str(); ok {
			e.parent, env.badParent = p, false
		} else {
			env.badParent = true
		}
	case "timestamp":
		e.ts, _ = c.Str()
	default:
		return false
	}
	return true
}

// parseEntry reads the envelope of the object v, which it keeps (no copy),
// and validates the rest of it.
func parseEntry(v []byte) (Entry, error) { return parseEntryMode(v, false) }

// parseEntryMode is parseEntry; with loose, the escapes inside the strings
// of the payload are left for the decoders to check, when the entry is
// used (see ReadOptions). A line with a control character is always read
// strictly.
func parseEntryMode(v []byte, loose bool) (Entry, error) {
	// v is the entry's own and never changes: its envelope strings may be
	// views of it rather than copies.
	c := jsonx.Cursor{Loose: loose && !jsonx.HasControl(v), Share: true}
	c.Reset(v)
	ms, ok := c.Object()
	if !ok {
		if c.Err() != nil {
			return Entry{}, c.Err()
		}
		return Entry{}, errNotObject
	}
	e := Entry{raw: v}
	var env envelope
	for {
		kb, esc, more := ms.Next()
		if !more {
			break
		}
		if esc {
			kb = []byte(ms.Key())
		}
		env.member(&c, kb, &e)
	}
	if err := c.Err(); err != nil {
		return Entry{}, err
	}
	if !c.AtEnd() {
		return Entry{}, &jsonx.SyntaxError{Offset: c.Pos(), Msg: "unexpected data after object"}
	}
	switch {
	case !env.hasType:
		return Entry{}, errNoType
	case e.typ == "session":
		return Entry{}, errHeaderEntry
	case !env.hasID || e.id == "":
		return Entry{}, errNoID
	case env.badParent:
		return Entry{}, errBadParent
	}
	e.kind = kindOf(e.typ)
	return e, nil
}

// isoMillis is the timestamp layout the seed agents write (JavaScript's
// Date.toISOString).
const isoMillis = "2006-01-02T15:04:05.000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(isoMillis) }

// reservedKeys are the envelope members an entry payload may not set.
func reservedKey(k string) bool {
	return k == "type" || k == "id" || k == "parentId" || k == "timestamp" || k == appendKey
}

// NewEntry builds an entry of any type. payload is marshalled to a JSON
// object (a json.RawMessage is used as it is) whose members follow the
// envelope; it may not set type, id, parentId or timestamp. parentID ""
// makes a root.
func NewEntry(typ, id, parentID string, t time.Time, payload any) (Entry, error) {
	if typ == "" || typ == "session" {
		return Entry{}, fmt.Errorf("session: invalid entry type %q", typ)
	}
	if id == "" {
		return Entry{}, fmt.Errorf("session: empty entry id")
	}
	var obj []byte
	switch p := payload.(type) {
	case nil:
		obj = []byte("{}")
	case json.RawMessage:
		obj = p
	default:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // write like JSON.stringify
		if err := enc.Encode(payload); err != nil {
			return Entry{}, fmt.Errorf("session: %s payload: %w", typ, err)
		}
		obj = buf.Bytes()
	}
	obj, err := jsonx.Trim(obj)
	if err != nil || jsonx.KindOf(obj) != jsonx.KindObject {
		return Entry{}, fmt.Errorf("session: %s payload is not a JSON object", typ)
	}
	return buildEntry(typ, id, parentID, formatTime(t), len(obj)+128, func(dst []byte) ([]byte, error) {
		it, _ := jsonx.Object(obj)
		for it.Next() {
			if k := it.Key(); reservedKey(k) {
				return nil, fmt.Errorf("session: %s payload sets reserved member %q", typ, k)
			}
			dst = append(dst, ',')
			dst = append(dst, '"')
			raw, _ := it.RawKey()
			dst = append(dst, raw...)
			dst = append(dst, '"', ':')
			dst = append(dst, it.Value()...)
		}
		return dst, it.Err()
	})
}

// newEntryID returns a random 8-hex-digit id for which taken is false,
// drawn from r, or from the global generator when r is nil.
func newEntryID(r *rand.Rand, taken func(string) bool) string {
	var buf [8]byte
	for {
		var v uint32
		if r != nil {
			v = r.Uint32()
		} else {
			v = rand.Uint32()
		}
		for i := 7; i >= 0; i-- {
			buf[i] = hexDigits[v&0xF]
			v >>= 4
		}
		if id := string(buf[:]); taken == nil || !taken(id) {
			return id
		}
	}
}

const hexDigits = "0123456789abcdef"

// buildEntry writes the envelope and lets payload append ",member..."
// pieces, then parses the result so that the Entry is exactly what a
// reader would get.
func buildEntry(typ, id, parent, ts string, size int, payload func([]byte) ([]byte, error)) (Entry, error) {
	dst := make([]byte, 0, max(size, 128))
	dst = append(dst, `{"type":`...)
	dst = jsonx.AppendString(dst, typ)
	dst = append(dst, `,"id":`...)
	dst = jsonx.AppendString(dst, id)
	dst = append(dst, `,"parentId":`...)
	if parent == "" {
		dst = append(dst, "null"...)
	} else {
		dst = jsonx.AppendString(dst, parent)
	}
	dst = append(dst, `,"timestamp":`...)
	dst = jsonx.AppendString(dst, ts)
	if payload != nil {
		var err error
		if dst, err = payload(dst); err != nil {
			return Entry{}, err
		}
	}
	dst = append(dst, '}')
	// The id's hash is taken once here: the tree, the store's id set and
	// its retry check would each take it again.
	return Entry{typ: typ, id: id, parent: parent, ts: ts, kind: kindOf(typ), raw: dst, idh: hashID(id)}, nil
}

// newMessageEntry encodes a message entry.
func newMessageEntry(id, parent, ts string, m *Message) (Entry, error) {
	valid := false
	e, err := buildEntry(TypeMessage, id, parent, ts, m.sizeHint()+128, func(dst []byte) ([]byte, error) {
		dst = append(dst, `,"message":`...)
		var err error
		dst, valid, err = m.appendJSON(dst)
		return dst, err
	})
	e.noImage = err == nil && !m.mayHoldImage()
	e.validText = valid
	return e, err
}

// ---- Payload types ----

// customMessage decodes a custom_message entry into the message it
// contributes to the context (role "custom").
func (e Entry) customMessage() (*Message, error) {
	m := &Message{Role: RoleCustom, decoded: true, has: mRole | mTimestamp, Timestamp: entryMillis(e)}
	var c jsonx.Cursor
	c.Reset(e.bytes())
	ms, _ := c.Object()
	for {
		kb, esc, more := ms.Next()
		if !more {
			break
		}
		if esc {
			kb = []byte(ms.Key())
		}
		// The members of a custom_message that make its message; the
		// others (its envelope, members of its own) are not the message's.
		bit := messageBit(kb)
		if bit&(mCustomType|mContent|mDisplay|mDetails) == 0 {
			continue
		}
		if m.readMember(&c, bit, true) {
			m.has |= bit
		}
	}
	return m, c.Err()
}

// withParent returns the entry with another parent ("" for a root), its
// other bytes kept.
func (e Entry) withParent(parent string) (Entry, error) {
	v := []byte("null")
	if parent != "" {
		v = jsonx.AppendString(nil, parent)
	}
	return e.withMember("parentId", v)
}

// copyAs returns a copy of the entry with another id, under another
// parent ("" for a root), its other bytes kept: how edits that only
// append (ReplacePathSegment, ReplayLastTurn) write an entry again.
func (e Entry) copyAs(id, parent string) (Entry, error) {
	c, err := e.withMember("id", jsonx.AppendString(nil, id))
	if err != nil {
		return Entry{}, err
	}
	return c.withParent(parent)
}

// withMember returns the entry with member key set to the JSON value v,
// its other bytes kept.
func (e Entry) withMember(key string, v []byte) (Entry, error) {
	raw, err := setMember(bytes.TrimSpace(e.bytes()), key, v)
	if err != nil {
		return Entry{}, fmt.Errorf("session: entry %s: %w", e.id, err)
	}
	ne, err := parseEntry(raw)
	if err != nil {
		return Entry{}, fmt.Errorf("session: entry %s: %w", e.id, err)
	}
	ne.noImage, ne.validText = e.noImage, e.validText
	return ne, nil
}
