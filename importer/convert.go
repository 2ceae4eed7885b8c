package importer

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	session "github.com/agentsession/session"
)

// Helpers the Codex and OpenCode readers share (the Claude Code reader
// may use them too): tolerant access to decoded JSON, a bounded line
// reader, stable ids and the linear chain of entries a reader builds.

// jsonObj is a JSON object read tolerantly: a member of an unexpected type
// reads as its zero value, never as an error.
type jsonObj map[string]json.RawMessage

// jsonObject decodes raw as an object; anything else gives nil.
func jsonObject(raw json.RawMessage) jsonObj {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var o jsonObj
	if json.Unmarshal(raw, &o) != nil {
		return nil
	}
	return o
}

// jsonArray decodes raw as an array; anything else gives nil.
func jsonArray(raw json.RawMessage) []json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil
	}
	var a []json.RawMessage
	if json.Unmarshal(raw, &a) != nil {
		return nil
	}
	return a
}

// str is member k as a string ("" when absent or not a string).
func (o jsonObj) str(k string) string {
	var s string
	if json.Unmarshal(o[k], &s) != nil {
		return ""
	}
	return s
}

// num is member k as a number (0 when absent or not a number; a numeric
// string is read too, as JavaScript would).
func (o jsonObj) num(k string) float64 {
	raw := bytes.TrimSpace(o[k])
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			raw = []byte(s)
		}
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0
	}
	return f
}

// int is member k as a whole number, clamped to what an int64 holds.
func (o jsonObj) int(k string) int64 {
	f := o.num(k)
	switch {
	case f != f: // NaN
		return 0
	case f >= 9.2e18:
		return 1<<63 - 1
	case f <= -9.2e18:
		return -1 << 63
	}
	return int64(f)
}

// bool is member k as a boolean (false when absent or not a boolean).
func (o jsonObj) bool(k string) bool {
	var b bool
	return json.Unmarshal(o[k], &b) == nil && b
}

func (o jsonObj) jsonObj(k string) jsonObj       { return jsonObject(o[k]) }
func (o jsonObj) arr(k string) []json.RawMessage { return jsonArray(o[k]) }
func (o jsonObj) has(k string) bool              { _, ok := o[k]; return ok }
func (o jsonObj) raw(k string) json.RawMessage   { return o[k] }
func (o jsonObj) rawOr(k, def string) json.RawMessage {
	if v := bytes.TrimSpace(o[k]); len(v) > 0 {
		return v
	}
	return json.RawMessage(def)
}

// parseRFC3339 reads an RFC 3339 time; ok is false for anything else.
func parseRFC3339(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// unixMillis is a time in Unix milliseconds, zero for 0 or an absurd value.
func unixMillis(ms int64) time.Time {
	if ms <= 0 || ms > 1<<50 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// argsObject returns the JSON object of a tool call's arguments: raw
// when it is one, the object a JSON string holds, or else the value
// wrapped as {"input": value}, so that a call always has an object.
func argsObject(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage("{}")
	}
	if raw[0] == '{' && json.Valid(raw) {
		return raw
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		t := bytes.TrimSpace([]byte(s))
		if len(t) > 0 && t[0] == '{' && json.Valid(t) {
			return t
		}
		if s == "" {
			return json.RawMessage("{}")
		}
	}
	if !json.Valid(raw) {
		raw, _ = json.Marshal(string(raw))
	}
	return json.RawMessage(`{"input":` + string(raw) + `}`)
}

// dataImage turns a data: URL holding an image into an image block; ok
// is false for any other URL.
func dataImage(url, mime string) (session.Block, bool) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return session.Block{}, false
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok {
		return session.Block{}, false
	}
	kind, isB64 := strings.CutSuffix(meta, ";base64")
	if kind == "" {
		kind = mime
	}
	if !strings.HasPrefix(kind, "image/") {
		return session.Block{}, false
	}
	if !isB64 {
		data = base64.StdEncoding.EncodeToString([]byte(data))
	}
	return session.ImageBase64(kind, data), true
}

// ---- ids ----

// idAlloc hands out the entry ids of one session: the source's own id
// when it is a valid, unused one, else a derivedID, stepped past any id
// already taken so that a long session never repeats one.
type idAlloc struct {
	source string
	taken  map[string]bool
}

func newIDAlloc(source string) *idAlloc {
	return &idAlloc{source: source, taken: map[string]bool{}}
}

// id returns own if usable, else a stable id for (line, part).
func (a *idAlloc) id(own string, line, part int) string {
	if own != "" && session.ValidateID(own) == nil && !a.taken[own] {
		a.taken[own] = true
		return own
	}
	for k := 0; ; k++ {
		id := derivedID(a.source, line, part+k<<20)
		if !a.taken[id] {
			a.taken[id] = true
			return id
		}
	}
}

// ---- the chain ----

// convNode is one entry to be: a message, or an entry of another type with
// its payload. Readers fill nodes in log order and build them last, so
// that a message can still be completed (its usage, a later block)
// after it is placed.
type convNode struct {
	id  string
	t   time.Time
	msg *session.Message
	typ string // entry type when msg is nil
	pl  any    // its payload
}

// chain builds nodes into entries, each the child of the one before:
// the linear tree of a format without branches.
func chainEntries(nodes []*convNode) ([]session.Entry, error) {
	out := make([]session.Entry, 0, len(nodes))
	parent := ""
	for _, n := range nodes {
		var e session.Entry
		var err error
		if n.msg != nil {
			if n.msg.Timestamp == 0 && !n.t.IsZero() {
				n.msg.Timestamp = n.t.UnixMilli()
			}
			e, err = messageEntry(n.id, parent, n.t, n.msg)
		} else {
			e, err = session.NewEntry(n.typ, n.id, parent, n.t, n.pl)
		}
		if err != nil {
			return nil, fmt.Errorf("importer: entry %s: %w", n.id, err)
		}
		out = append(out, e)
		parent = n.id
	}
	return out, nil
}

// customPayload is the payload of a custom entry keeping a record whole.
type customPayload struct {
	CustomType string          `json:"customType"`
	Data       json.RawMessage `json:"data,omitempty"`
}

// customMessagePayload is the payload of a custom_message entry: text that takes
// part in the context (as the seed agents' extension messages do).
type customMessagePayload struct {
	CustomType string          `json:"customType"`
	Content    string          `json:"content"`
	Display    bool            `json:"display"`
	Details    json.RawMessage `json:"details,omitempty"`
}

// ---- bounded lines ----

// boundedReader reads lines of at most max bytes; a longer line is skipped
// without being held in memory and reported as too long.
type boundedReader struct {
	r    *bufio.Reader
	max  int
	line int // the number of the line last returned, 1 based
	buf  []byte
}

func newBoundedReader(r io.Reader, max int) *boundedReader {
	return &boundedReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// errLineTooLong reports a line over the reader's cap.
var errLineTooLong = errors.New("line too long")

// next returns the next line without its newline. At the end it returns
// io.EOF; a line over the cap returns errLineTooLong (and the reader
// moves past it).
func (lr *boundedReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	over := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if !over {
			if len(lr.buf)+len(chunk) > lr.max+1 {
				over, lr.buf = true, lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && (len(lr.buf) > 0 || over):
			lr.line++ // a last line without a newline
			if over {
				return nil, errLineTooLong
			}
			return bytes.TrimRight(lr.buf, "\r\n"), nil
		case err != nil:
			return nil, err
		}
		lr.line++
		if over {
			return nil, errLineTooLong
		}
		return bytes.TrimRight(lr.buf, "\r\n"), nil
	}
}

// count adds one record of type typ to p.Unknown.
func countUnknown(p *Parsed, typ string) {
	if p.Unknown == nil {
		p.Unknown = map[string]int{}
	}
	p.Unknown[typ]++
}

// firstLineOf splits b at its first newline.
func firstLineOf(b []byte) (line, rest []byte, found bool) {
	line, rest, found = bytes.Cut(b, []byte("\n"))
	return bytes.TrimRight(line, "\r"), rest, found
}

// jsonPrefix reports whether b, past leading space, starts with prefix.
func jsonPrefix(b []byte, prefix string) bool {
	return bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n\ufeff"), []byte(prefix))
}

func containsStr(b []byte, s string) bool { return bytes.Contains(b, []byte(s)) }

// isBlank reports a line of only white space.
func isBlank(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

// whyNotObject says why b is not a JSON object.
func whyNotObject(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	return errors.New("not a JSON object")
}

// compact is raw without insignificant space: a member kept in Extra is
// written as it is, and a log line must not break.
func compactRaw(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		v, _ := json.Marshal(string(raw))
		return v
	}
	return b.Bytes()
}

// setIntField sets key in f to n when o holds a number under key.
func setIntField(f *session.Fields, o jsonObj, key, as string) {
	var n json.Number
	if json.Unmarshal(o[key], &n) == nil {
		f.Set(as, json.RawMessage(strconv.FormatInt(o.int(key), 10)))
	}
}

// orDefault is s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// anthropicDocument maps an Anthropic document block (as Claude Code and
// Dive keep them) to a document block: a base64, text, URL or file
// source, its title, context and citations setting; the members it does
// not model stay in Extra. ok is false for a source of another kind
// (content blocks), which callers keep whole.
func anthropicDocument(obj session.Fields) (b session.Block, ok bool) {
	src := clObject(clField(obj, "source"))
	sv := func(k string) string { return clStr(clField(src, k)) }
	switch sv("type") {
	case "base64":
		b = session.DocumentBase64(sv("media_type"), sv("data"))
	case "text":
		b = session.TextDocument(sv("data"))
		b.MimeType = orDefault(sv("media_type"), "text/plain")
	case "url":
		b = session.DocumentURL(sv("url"))
	case "file":
		b = session.DocumentFile(sv("file_id"))
	default:
		return session.Block{}, false
	}
	b.Title, b.Context = clStr(clField(obj, "title")), clStr(clField(obj, "context"))
	b.Extra = clExtra(obj, "type", "source", "title", "context", "citations")
	if cit := clField(obj, "citations"); cit != nil {
		b.Citations = compactRaw(cit) // {"enabled":true}, as Block keeps it
	}
	if rest := clWithout(src, "type", "media_type", "data", "url", "file_id"); rest != nil {
		b.Extra.Set("source", compactRaw(rest))
	}
	return b, true
}
