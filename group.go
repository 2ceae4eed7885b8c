package session

import (
	"bytes"
	"errors"

	"github.com/agentsession/session/internal/jsonx"
)

// All-or-nothing appends in a file.
//
// A FileStore writes an append of several entries (a turn, a fork) in
// one write, but a crash can still cut that write short: the process
// killed in the middle of it, or the machine losing power before the
// file system had all of it. What is left is a prefix of the append's
// lines. So that a reader never takes such a prefix for entries, every
// line of a multi-entry append but the last carries one more member,
// last in its object:
//
//	{"type":"message","id":"a1",...,"agentsession.appendEnd":"a3"}
//	{"type":"message","id":"a2",...,"agentsession.appendEnd":"a3"}
//	{"type":"message","id":"a3",...}
//
// naming the id of the append's last entry. Readers strip the member (an
// entry reads back byte for byte as it was appended) and take the lines
// that carry it as entries only when the entry they name follows them,
// the lines of the append one after the other. Otherwise the append was
// cut: its lines are not entries, and are reported in Log.Partial, never
// deleted. A single-entry append is one line, whole or torn, and carries
// no marker. pi and other readers of the format see an extra member and
// keep it.

// appendEndKey is the member that marks the lines of a multi-entry
// append. It is reserved: NewEntry refuses payloads that set it.
const appendEndKey = "agentsession.appendEnd"

// ErrPartialAppend is the error of a line in Log.Partial.
var ErrPartialAppend = errors.New("part of an append a crash cut short (its last entry never reached the file); not an entry")

// markSuffix is what the marked lines end with, but the id and "}.
var markSuffix = []byte(`,"` + appendEndKey + `":"`)

// appendMarked appends line (an entry's JSON object, compact) with the
// marker naming end.
func appendMarked(dst, line []byte, end string) []byte {
	dst = append(dst, line[:len(line)-1]...)
	dst = append(dst, ',')
	dst = jsonx.AppendString(dst, appendEndKey)
	dst = append(dst, ':')
	dst = jsonx.AppendString(dst, end)
	return append(dst, '}')
}

// appendLine appends to dst line i of the n lines of one append, and a
// newline: lines but the last marked with end when there are several.
func appendLine(dst, line []byte, i, n int, end string) []byte {
	if i < n-1 {
		dst = appendMarked(dst, line, end)
	} else {
		dst = append(dst, line...)
	}
	return append(dst, '\n')
}

// cutMark finds the marker at the end of a line (its JSON object, maybe
// with a CR or spaces after it) and returns the line without it, and the
// id it names. A line without one is returned as it is, with "". The line
// is not modified: a marked one comes back as a copy. Only the end of
// the line is looked at, so this costs the same for lines of any size.
func cutMark(line []byte) ([]byte, string) {
	v := bytes.TrimRight(line, " \t\r")
	if len(v) < len(markSuffix)+3 || v[len(v)-1] != '}' || v[len(v)-2] != '"' {
		return line, ""
	}
	tail := v[max(0, len(v)-markWindow):]
	i := bytes.LastIndex(tail, markSuffix)
	if i < 0 {
		return line, ""
	}
	str := tail[i+len(markSuffix)-1 : len(tail)-1] // the id's token, quotes and all
	if !jsonx.Valid(str) {
		return line, "" // the member is not the last, or not a string
	}
	end, err := jsonx.Unquote(str)
	if err != nil || end == "" {
		return line, "" // the member's value is not one string, as a marker's is
	}
	start := len(v) - len(tail) + i
	out := make([]byte, 0, start+1)
	out = append(out, v[:start]...)
	return append(out, '}'), end
}

// markWindow is how far from the end of a line cutMark looks for the
// marker: room for the member and an id of a few hundred bytes.
const markWindow = 1 << 10

// marked reports whether line carries the marker, cheaply for the lines
// that do not (most end with "}}").
func marked(line []byte) bool {
	v := bytes.TrimRight(line, " \t\r")
	if len(v) < 2 || v[len(v)-1] != '}' || v[len(v)-2] != '"' {
		return false
	}
	_, end := cutMark(line)
	return end != ""
}

// seenLine is an entry a reader of part of a file found: where its line
// ends (past its newline) and its number.
type seenLine struct {
	e    Entry
	end  int64
	line int
}

// kept says which of the entries a parser found count, by the
// all-or-nothing rule (see groups); marked is the parser's.
func kept(got []seenLine, marked []markAt) []bool {
	keep := make([]bool, len(got))
	for i := range keep {
		keep[i] = true
	}
	if len(marked) == 0 {
		return keep
	}
	entries := make([]Entry, len(got))
	marks := make([]string, len(got))
	for i, g := range got {
		entries[i] = g.e
	}
	for _, m := range marked {
		marks[m.i] = m.end
	}
	_, cut := groups(entries, marks)
	for _, i := range cut {
		keep[i] = false
	}
	return keep
}

// groups resolves the marked entries of a run of entries read in file
// order: marks[i] is the id entries[i]'s marker names, "" for none (nil:
// no entry was marked). It returns the entries that count, and the
// indexes of those that were part of a cut append.
func groups(entries []Entry, marks []string) (kept []Entry, cut []int) {
	if marks == nil {
		return entries, nil
	}
	kept = entries[:0:0]
	for i := 0; i < len(entries); {
		end := marks[i]
		if end == "" {
			kept = append(kept, entries[i])
			i++
			continue
		}
		j := i
		for j < len(entries) && marks[j] == end {
			j++
		}
		if j < len(entries) && marks[j] == "" && entries[j].id == end {
			kept = append(kept, entries[i:j+1]...)
			i = j + 1
			continue
		}
		for k := i; k < j; k++ {
			cut = append(cut, k)
		}
		i = j
	}
	return kept, cut
}
