package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/jsonx"
)

// Reading a Claude Code transcript line by line, within bounds, and the
// tolerant accessors its members are read with: a member of an
// unexpected type reads as the zero value, never as an error.

// The bounds of one transcript file (see the format notes in claude.go).
// Variables so that tests can lower them.
var (
	// claudeMaxLineBytes bounds one line: a longer one is reported and
	// skipped (no store would take it as one entry anyway).
	claudeMaxLineBytes = int(session.DefaultMaxLineBytes)
	// claudeMaxLines bounds the lines read from one file; the rest of the
	// file is reported, not read.
	claudeMaxLines = session.DefaultMaxEntries
	// claudeMaxFileBytes bounds the bytes read from one file.
	claudeMaxFileBytes int64 = session.DefaultMaxLogBytes
)

// The errors of the LineErrors a Claude Code import reports.
var (
	// ErrClaudeLine: a line that is not a JSON object, or past the bounds.
	ErrClaudeLine = errors.New("importer: claude: unreadable line")
	// ErrClaudeMissingParent: a parentUuid that names no line of the file
	// (Claude Code writes such lines); the line is attached to the line
	// before it, and the rest of its branch with it.
	ErrClaudeMissingParent = errors.New("importer: claude: parent not in the file")
	// ErrClaudeDuplicate: a uuid seen on an earlier line with other
	// content; the line is kept under a new id.
	ErrClaudeDuplicate = errors.New("importer: claude: uuid seen before")
	// ErrClaudeCycle: lines whose parents make a cycle; the first is made
	// a root.
	ErrClaudeCycle = errors.New("importer: claude: parent cycle")
	// ErrClaudeFileOrder: lines after the first with a null (or no)
	// parentUuid, which are not compact boundaries: claude-code-log's
	// fixtures and early transcripts write every line so. Each is placed
	// after the graph line before it in the file, as the conversation is
	// shown; reported once a file, at the first such line.
	ErrClaudeFileOrder = errors.New("importer: claude: lines without a parent placed in file order")
	// ErrClaudeConversation: the tree built is not the conversation
	// Claude Code shows (a line of the chain to the last line is not on
	// the path to the session's leaf, or a tool call on that path has its
	// result in the file but not on the path: the message names the
	// call); the file is not imported.
	ErrClaudeConversation = errors.New("importer: claude: the import would not be the conversation Claude Code shows")
)

// claudeLine is one line of a transcript, its members kept in order.
type claudeLine struct {
	n    int            // 1-based line number in its file
	path string         // its file
	raw  []byte         // the line, trimmed
	obj  session.Fields // its members, views of raw
	typ  string
	uuid string // "" when the line has none
	t    time.Time
}

func (l *claudeLine) get(k string) []byte { v, _ := l.obj.Get(k); return v }
func (l *claudeLine) str(k string) string { return clStr(l.get(k)) }
func (l *claudeLine) flag(k string) bool  { return clBool(l.get(k)) }

// parent is the line's parentUuid ("" for null or none).
func (l *claudeLine) parent() string { return l.str("parentUuid") }

// claudeReadFile reads the lines of the transcript rel of rt. Lines that
// cannot be read are returned as LineErrors; err is an I/O error, or a
// file over claudeMaxFileBytes, or one that is no regular file.
func claudeReadFile(rt *root, rel string) (lines []*claudeLine, bad []LineError, err error) {
	f, err := rt.open(rel, claudeMaxFileBytes, false)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	lines, bad, err = claudeRead(io.LimitReader(f, claudeMaxFileBytes), rt.path(rel))
	return lines, bad, err
}

// claudeRead reads transcript lines from r.
func claudeRead(r io.Reader, path string) (lines []*claudeLine, bad []LineError, err error) {
	lr := newBoundedReader(r, claudeMaxLineBytes)
	for {
		raw, rerr := lr.next()
		switch {
		case rerr == io.EOF:
			return lines, bad, nil
		case rerr != nil && !errors.Is(rerr, errLineTooLong):
			return lines, bad, rerr
		}
		n := lr.line
		if n > claudeMaxLines {
			bad = append(bad, LineError{Path: path, Line: n, Err: fmt.Errorf("%w: more than %d lines: the rest is not read", ErrClaudeLine, claudeMaxLines)})
			return lines, bad, nil
		}
		if rerr != nil {
			bad = append(bad, LineError{Path: path, Line: n, Err: fmt.Errorf("%w: longer than %d bytes", ErrClaudeLine, claudeMaxLineBytes)})
			continue
		}
		text := bytes.TrimSpace(raw)
		if len(text) == 0 {
			continue // a blank line holds no record
		}
		l, perr := claudeParseLine(bytes.Clone(text))
		if perr != nil {
			bad = append(bad, LineError{Path: path, Line: n, Err: fmt.Errorf("%w: %v", ErrClaudeLine, perr)})
			continue
		}
		l.n, l.path = n, path
		lines = append(lines, l)
	}
}

// claudeParseLine reads one line, which must be a JSON object.
func claudeParseLine(raw []byte) (*claudeLine, error) {
	if jsonx.KindOf(raw) != jsonx.KindObject || !json.Valid(raw) {
		return nil, errors.New("not a JSON object")
	}
	obj, err := clMembers(raw)
	if err != nil {
		return nil, err
	}
	l := &claudeLine{raw: raw, obj: obj}
	l.typ = l.str("type")
	l.uuid = l.str("uuid")
	l.t = clTime(l.str("timestamp"))
	return l, nil
}

// clMembers returns the members of the JSON object raw, in order, as
// views of raw.
func clMembers(raw []byte) (session.Fields, error) {
	it, err := jsonx.Object(raw)
	if err != nil {
		return nil, err
	}
	var f session.Fields
	for it.Next() {
		f = append(f, session.Field{Key: it.Key(), Value: it.Value()})
	}
	return f, it.Err()
}

// clObject returns the members of v when it is a JSON object, else nil.
func clObject(v []byte) session.Fields {
	if jsonx.KindOf(v) != jsonx.KindObject {
		return nil
	}
	f, _ := clMembers(v)
	return f
}

// clArray returns the elements of v when it is a JSON array, else nil.
func clArray(v []byte) []json.RawMessage {
	if jsonx.KindOf(v) != jsonx.KindArray {
		return nil
	}
	var a []json.RawMessage
	if json.Unmarshal(v, &a) != nil {
		return nil
	}
	return a
}

// clStr reads a string; a number reads as its text; anything else as "".
func clStr(v []byte) string {
	switch jsonx.KindOf(v) {
	case jsonx.KindString:
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
	case jsonx.KindNumber:
		return string(v)
	}
	return ""
}

// clInt reads a count: a number (a fraction is cut), or a string holding
// one; anything else, negative or out of range, reads as 0.
func clInt(v []byte) int64 {
	s := string(v)
	switch jsonx.KindOf(v) {
	case jsonx.KindString:
		s = clStr(v)
	case jsonx.KindNumber:
	default:
		return 0
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return max(n, 0)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f >= math.MaxInt64 {
		return 0
	}
	return int64(f)
}

// clBool reads true, "true" or a non-zero number as true.
func clBool(v []byte) bool {
	switch jsonx.KindOf(v) {
	case jsonx.KindBool:
		return v[0] == 't'
	case jsonx.KindString:
		return clStr(v) == "true"
	case jsonx.KindNumber:
		return clInt(v) != 0
	}
	return false
}

// clTime parses an ISO-8601 timestamp; the zero time if it is not one.
func clTime(s string) time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// clJSON marshals v as JSON.stringify would (no HTML escaping).
func clJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return json.RawMessage("null")
	}
	return json.RawMessage(bytes.TrimSpace(b.Bytes()))
}

// clWithout returns the members of f but those named in drop, as a JSON
// object, or nil when none is left.
func clWithout(f session.Fields, drop ...string) json.RawMessage {
	var b []byte
	for _, m := range f {
		skip := false
		for _, d := range drop {
			skip = skip || m.Key == d
		}
		if skip {
			continue
		}
		if b == nil {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = jsonx.AppendString(b, m.Key)
		b = append(b, ':')
		b = append(b, m.Value...)
	}
	if b == nil {
		return nil
	}
	return append(b, '}')
}
