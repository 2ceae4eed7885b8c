package session

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentsession/session/internal/jsonx"
)

// Preparing an entry for persisting, as oh-my-pi does to every entry it
// writes (prepareEntryForPersistence in session-persistence.ts):
// streaming leftovers are removed (by the Session, for every store), long
// strings are cut with pi's notice (by a FileStore), and the lineCount of
// an object whose content changed is counted again.

// TruncationNotice ends a string that a FileStore cut to its
// MaxStringChars: the text oh-my-pi ends a string with when it cuts one
// for the same reason, so that a cut string reads the same whichever
// wrote it (see IsTruncated).
const TruncationNotice = "\n\n[Session persistence truncated large content]"

// noticeUnits is the length of TruncationNotice in UTF-16 code units (it
// is ASCII): the smallest limit a string can be cut to.
const noticeUnits = len(TruncationNotice)

// IsTruncated reports whether s is a string that a store cut to its size
// limit: it ends with TruncationNotice (oh-my-pi's
// isPersistenceTruncatedString), or with the notice versions of this
// package before it wrote, "\n\n[agentsession: N characters truncated]".
func IsTruncated(s string) bool {
	return strings.HasSuffix(s, TruncationNotice) || hasOldNotice(s)
}

// hasOldNotice reports whether s ends with the notice of earlier versions.
func hasOldNotice(s string) bool {
	const pre, suf = "\n\n[agentsession: ", " characters truncated]"
	rest, ok := strings.CutSuffix(s, suf)
	if !ok {
		return false
	}
	i := strings.LastIndex(rest, pre)
	if i < 0 {
		return false
	}
	n := rest[i+len(pre):]
	return n != "" && strings.Trim(n, "0123456789") == ""
}

// isTransient reports whether key names a member that is removed before
// persisting, at any depth: partialJson, the accumulator of a tool call's
// JSON while it streams, and jsonlEvents, a subprocess's raw streaming
// events (kept in files of their own).
func isTransient(key []byte) bool {
	return string(key) == "partialJson" || string(key) == "jsonlEvents"
}

// isSignatureKey reports whether key holds a signature, a string that is
// never cut: a cut signature is no signature.
func isSignatureKey(key string) bool {
	switch key {
	case "thinkingSignature", "thoughtSignature", "textSignature":
		return true
	}
	return false
}

// mayHoldTransient reports whether the JSON raw may hold a transient
// member, without parsing it: it holds one of their names, or an escaped
// ASCII letter (\u0040 to \u007f), with which a key could spell one
// unseen. JSON.stringify and Go's encoders never escape a letter, so the
// common entry answers false after three searches.
func mayHoldTransient(raw []byte) bool {
	if bytes.Contains(raw, []byte("partialJson")) || bytes.Contains(raw, []byte("jsonlEvents")) {
		return true
	}
	for {
		i := bytes.Index(raw, []byte(`\u00`))
		if i < 0 || i+4 >= len(raw) {
			return false
		}
		if c := raw[i+4]; c >= '4' && c <= '7' {
			return true
		}
		raw = raw[i+4:]
	}
}

// stripTransient returns raw without transient members, wherever they
// are, and with the lineCount of each object they were under counted
// again (see prepper). It returns raw itself, and false, when it has none
// (or is not valid JSON).
func stripTransient(raw []byte) ([]byte, bool) {
	if !mayHoldTransient(raw) {
		return raw, false
	}
	p := prepper{raw: raw, strip: true, limit: -1}
	out, changed, _ := p.run()
	return out, changed
}

// prepEntry returns e without transient members (see stripTransient): e
// itself when it has none.
func prepEntry(e Entry) Entry {
	out, changed := stripTransient(e.bytes())
	if !changed {
		return e
	}
	// The envelope's members are strings and keep their values: only the
	// bytes change.
	e.raw, e.h = out, nil
	return e
}

// prepMessage returns m, which the session owns, without transient
// members in the JSON of its own it holds (extra members, details, tool
// arguments): m itself when it has none, else the message that decoding
// its encoding without them gives, which is what a reopen reads.
func prepMessage(m *Message) *Message {
	if !m.mayHoldTransient() {
		return m
	}
	enc, err := m.AppendJSON(nil)
	if err != nil {
		return m // the append reports it
	}
	out, changed := stripTransient(enc)
	if !changed {
		return m
	}
	var nm Message
	if err := nm.UnmarshalJSON(out); err != nil {
		return m
	}
	return &nm
}

// mayHoldTransient reports whether m holds JSON of its own in which a
// transient member may be (see the function of the same name).
func (m *Message) mayHoldTransient() bool {
	if fieldsMayHoldTransient(m.Extra) || mayHoldTransient(m.Details) {
		return true
	}
	if u := m.Usage; u != nil {
		for _, f := range u.extras() {
			if fieldsMayHoldTransient(f) {
				return true
			}
		}
	}
	for i := range m.Content {
		b := &m.Content[i]
		if fieldsMayHoldTransient(b.Extra) || mayHoldTransient(b.Arguments) {
			return true
		}
	}
	return false
}

func fieldsMayHoldTransient(f Fields) bool {
	for _, x := range f {
		if isTransient([]byte(x.Key)) || mayHoldTransient(x.Value) {
			return true
		}
	}
	return false
}

// utf16Len returns the length of s in UTF-16 code units, JavaScript's
// string length.
func utf16Len(s string) int {
	n := len(s) // a code unit per byte for ASCII; less for the others
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		n -= size
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		i += size
	}
	return n
}

// cutUTF16 returns the longest prefix of s of at most n UTF-16 code
// units that does not split a character: what JavaScript's
// s.slice(0, n) gives, less a high surrogate left alone at its end.
func cutUTF16(s string, n int) string {
	u := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if u+w > n {
			return s[:i]
		}
		u += w
	}
	return s
}

// cutString returns s cut, notice included, to limit UTF-16 code units
// (limit >= noticeUnits), as oh-my-pi's truncateForPersistence cuts it.
func cutString(s string, limit int) string {
	return cutUTF16(s, limit-noticeUnits) + TruncationNotice
}

// prepper rewrites the JSON of an entry for persisting, with edits of its
// bytes (what it does not change keeps its bytes, whitespace and all):
//
//   - with strip, members whose key is transient (isTransient) are
//     removed, at any depth;
//   - with limit >= 0, a string value longer than limit UTF-16 code units
//     is cut to limit with TruncationNotice (cutString); image data of
//     z's size goes to z's blobs, and stays whole otherwise;
//   - an object that changed (a member removed, cut or moved to a blob
//     anywhere beneath it) and has a string content and a numeric
//     lineCount gets the number of lines of its content as lineCount;
//
// as oh-my-pi's truncateForPersistence does. Strings are not cut (nor
// images moved) in the blocks a provider signed or encrypted, which it
// checks byte for byte (see signed), nor under a signature's key.
// Transient members are removed from those too: they are never part of
// what was signed.
//
// Where a key appears twice in an object, its last member is the one
// that counts (as in JSON.parse and this package's decoders).
type prepper struct {
	raw   []byte
	strip bool
	limit int         // <0: strings are not cut
	z     *sizeLimits // images to blobs (when it has a blob store)
	ctx   context.Context

	edits []edit
	strs  []strMember // string members of the objects being walked: a stack
	err   error

	lost int // the UTF-16 code units the last cut left out, for its edit
}

// strMember is a string member of an object, for the decisions taken at
// the object's end, when its type is known.
type strMember struct {
	key        string
	start, end int // its value's token
}

// objState is what the walk of an object learned of it.
type objState struct {
	typ          string // its "type", when a string
	sig          uint8  // its non-empty members that make it signed (see signed)
	content      int    // index in prepper.strs of its string content; -1: none
	lcStart      int    // its numeric lineCount's token; lcStart < 0: none
	lcEnd        int
	contentValue string // its content, when cut
	contentCut   bool
}

const (
	sigThinking = 1 << iota
	sigText
	sigThought
	sigData
	sigEncrypted
)

// sigBit is the bit of signed's members a key holds.
func sigBit(key []byte) uint8 {
	switch string(key) {
	case "thinkingSignature":
		return sigThinking
	case "textSignature":
		return sigText
	case "thoughtSignature":
		return sigThought
	case "data":
		return sigData
	case "encrypted_content":
		return sigEncrypted
	}
	return 0
}

// signed reports whether the object is a block a provider signed or
// encrypted, to be kept byte for byte: thinking with a thinkingSignature,
// text with a textSignature, a tool call with a thoughtSignature,
// redacted thinking with its data, a reasoning item with its
// encrypted_content (each non-empty).
func (o *objState) signed() bool {
	switch o.typ {
	case BlockThinking:
		return o.sig&sigThinking != 0
	case BlockText:
		return o.sig&sigText != 0
	case BlockToolCall:
		return o.sig&sigThought != 0
	case "redactedThinking":
		return o.sig&sigData != 0
	case "reasoning":
		return o.sig&sigEncrypted != 0
	}
	return false
}

// run returns the prepared bytes (raw itself when nothing changed or raw
// is not valid JSON) and whether they changed.
func (p *prepper) run() ([]byte, bool, error) {
	var c jsonx.Cursor
	c.Reset(p.raw)
	changed, _ := p.value(&c, nil, false)
	if p.err != nil {
		return nil, false, p.err
	}
	if !changed || c.Err() != nil || !c.AtEnd() {
		return p.raw, false, nil
	}
	return applyEdits(p.raw, p.edits), true, nil
}

// value walks the next value, a member of key (or an element of an
// array that is), exempt from cuts when in a signed block. changed says
// it was edited; cut that it was edited in a way an exempt walk would not
// have.
func (p *prepper) value(c *jsonx.Cursor, key []byte, exempt bool) (changed, cut bool) {
	switch c.Kind() {
	case jsonx.KindObject:
		return p.object(c, exempt)
	case jsonx.KindArray:
		as, _ := c.Array()
		for as.Next() && p.err == nil {
			ch, ct := p.value(c, key, exempt)
			changed, cut = changed || ch, cut || ct
		}
	case jsonx.KindString:
		start := c.Pos()
		tok := c.Skip()
		if !exempt && !isSignatureKey(string(key)) && p.over(tok) {
			if s, ok := p.cut(tok); ok {
				p.edits = append(p.edits, edit{start, start + len(tok), jsonx.AppendString(nil, s), p.lost})
				return true, true
			}
		}
	default:
		c.Skip()
	}
	return changed, cut
}

// over reports whether the string token tok may be over the limit: its
// bytes are at least its code units.
func (p *prepper) over(tok []byte) bool { return p.limit >= 0 && len(tok)-2 > p.limit }

// cut returns the string of tok cut to the limit, if it is over it.
func (p *prepper) cut(tok []byte) (string, bool) {
	s, err := jsonx.Unquote(tok)
	n := utf16Len(s)
	if err != nil || n <= p.limit {
		return "", false
	}
	c := cutString(s, p.limit)
	p.lost = n - utf16Len(c) + noticeUnits
	return c, true
}

// object walks the next value, an object (see value).
func (p *prepper) object(c *jsonx.Cursor, exempt bool) (changed, cut bool) {
	mark, edits0, strs0 := c.Mark(), len(p.edits), len(p.strs)
	o := objState{content: -1, lcStart: -1}
	ms, _ := c.Object()
	runStart := -1 // key of the first of the members being removed
	runEnd := -1   // end of the value of the last of them
	keptEnd := -1  // end of the value of the last member kept
	for p.err == nil {
		from := c.Pos()
		kb, esc, more := ms.Next()
		if !more {
			break
		}
		if esc {
			kb = []byte(ms.Key())
		}
		if p.strip && isTransient(kb) {
			if runStart < 0 {
				runStart = keyStart(p.raw, from)
			}
			c.Skip()
			runEnd, changed = c.Pos(), true
			continue
		}
		if runStart >= 0 {
			// The members removed, their separators with them.
			p.edits = append(p.edits, edit{runStart, keyStart(p.raw, from), nil, 0})
			runStart = -1
		}
		start := c.Pos()
		kind := c.Kind()
		switch string(kb) {
		case "content":
			o.content = -1
		case "lineCount":
			o.lcStart = -1
		case "type":
			o.typ = ""
		}
		o.sig &^= sigBit(kb)
		switch kind {
		case jsonx.KindObject, jsonx.KindArray:
			ch, ct := p.value(c, kb, exempt)
			changed, cut = changed || ch, cut || ct
		case jsonx.KindString:
			tok := c.Skip()
			end := start + len(tok)
			if len(tok) > 2 {
				o.sig |= sigBit(kb)
			}
			k := string(kb)
			if k == "type" {
				o.typ, _ = jsonx.Unquote(tok)
			}
			if k == "content" {
				o.content = len(p.strs)
			}
			if k == "content" || k == "data" || p.over(tok) {
				p.strs = append(p.strs, strMember{k, start, end})
			}
		case jsonx.KindNumber:
			tok := c.Skip()
			if string(kb) == "lineCount" {
				o.lcStart, o.lcEnd = start, start+len(tok)
			}
		default:
			c.Skip()
		}
		keptEnd = c.Pos()
	}
	if c.Err() != nil || p.err != nil {
		return false, false // the walk ends
	}
	if runStart >= 0 {
		if keptEnd >= 0 {
			runStart = keptEnd // the separator before the run goes
		}
		p.edits = append(p.edits, edit{runStart, runEnd, nil, 0})
	}
	signed := o.signed()
	if signed && !exempt && cut {
		// Something beneath was cut before the object was known to be
		// signed: walk it again, exempt.
		p.edits, p.strs = p.edits[:edits0], p.strs[:strs0]
		c.Restore(mark)
		return p.object(c, true)
	}
	exempt = exempt || signed
	for k := strs0; k < len(p.strs) && p.err == nil; k++ {
		m := p.strs[k]
		tok := p.raw[m.start:m.end]
		switch {
		case o.typ == BlockImage && m.key == "data":
			if !exempt && p.z != nil && p.z.blobs != nil && p.z.minBlob >= 0 && len(tok)-2 >= p.z.minBlob {
				var e *edit
				e, p.err = p.z.externalize(p.ctx, p.raw, jsonMember{m.key, m.start, m.end})
				if e != nil {
					p.edits = append(p.edits, *e)
					changed, cut = true, true
				}
			}
			// Image data that does not go to a blob stays whole.
		case exempt || isSignatureKey(m.key) || !p.over(tok):
		default:
			if s, ok := p.cut(tok); ok {
				p.edits = append(p.edits, edit{m.start, m.end, jsonx.AppendString(nil, s), p.lost})
				changed, cut = true, true
				if k == o.content {
					o.contentValue, o.contentCut = s, true
				}
			}
		}
	}
	if changed && o.content >= 0 && o.lcStart >= 0 {
		content := o.contentValue
		if !o.contentCut {
			m := p.strs[o.content]
			content, _ = jsonx.Unquote(p.raw[m.start:m.end])
		}
		n := strconv.AppendInt(nil, int64(strings.Count(content, "\n")+1), 10)
		if !bytes.Equal(n, p.raw[o.lcStart:o.lcEnd]) {
			p.edits = append(p.edits, edit{o.lcStart, o.lcEnd, n, 0})
		}
	}
	p.strs = p.strs[:strs0]
	return changed, cut
}

// keyStart returns the offset of the key of the member that follows from
// (the end of the previous member's value, or the opening brace's).
func keyStart(raw []byte, from int) int {
	i := jsonx.SkipSpace(raw, from)
	if i < len(raw) && raw[i] == ',' {
		i = jsonx.SkipSpace(raw, i+1)
	}
	return i
}
