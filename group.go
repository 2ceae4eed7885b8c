package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// All-or-nothing appends in a file.
//
// A FileStore writes an append of several entries (a turn) in one write,
// but a crash can still leave part of it: the process killed in the
// middle of the write, or the machine losing power before the file
// system had all of it (which can keep a prefix, or lose a block in the
// middle and keep what follows). So that a reader never takes part of an
// append for entries, every line of an append of n entries but the last
// carries one more member, last in its object, with its place in the
// append and the id of the append's last entry:
//
//	{"type":"message","id":"a1",...,"agentsession.append":"0/3/a3"}
//	{"type":"message","id":"a2",...,"agentsession.append":"1/3/a3"}
//	{"type":"message","id":"a3",...}
//
// An append whose last id cannot stand in a marker as it is (longer than
// maxMarkedID, or holding a byte JSON would escape, or one that is not
// ASCII) is named by a hash of it instead, "k/n#<32 hex digits>": the
// first 16 bytes of the SHA-256 of the id.
//
// Readers strip the member (an entry reads back byte for byte as it was
// appended) and take the marked lines as entries only when all of them
// are there, in order, followed by the entry they name. Otherwise the
// append was cut: its lines are not entries, and are reported in
// Log.Partial, never deleted. An append of one entry is one line, whole or
// torn, and carries no marker; neither does the first append of a
// session, which a FileStore writes as a whole new file. pi and other
// readers of the format see an unknown member and keep it.

// appendKey is the member that marks the lines of a multi-entry append.
// It is reserved: NewEntry refuses payloads that set it.
const appendKey = "agentsession.append"

// markSuffix is what a marked line ends with, but the value and "}.
var markSuffix = []byte(`,"` + appendKey + `":"`)

// appendMark is a marker: the line is the k-th (from 0) of an append of n
// entries whose last is named by end, as the marker writes it after n:
// "/" and the id, or "#" and a hash of it (see markEnd).
type appendMark struct {
	k, n int
	end  string
}

// names reports whether the entry id is the one the marker names.
func (m appendMark) names(id string) bool {
	if len(m.end) > 0 && m.end[0] == '/' {
		return m.end[1:] == id // without building markEnd's string
	}
	return m.end == markEnd(id)
}

// markEnd is how a marker names id, the last entry of an append: "/" and
// the id when markable, "#" and the first 16 bytes of its SHA-256 in
// hexadecimal otherwise.
func markEnd(id string) string {
	if markable(id) {
		return "/" + id
	}
	sum := sha256.Sum256([]byte(id))
	return "#" + hex.EncodeToString(sum[:16])
}

// maxMarkedID bounds the id a marker names as it is, so that readers
// find a marker in the last bytes of a line: an append whose last entry
// has a longer id, or one JSON must escape, names it by a hash (markEnd).
const maxMarkedID = 256

// markable reports whether the id of an append's last entry can stand in
// its marker as it is.
func markable(end string) bool {
	if len(end) == 0 || len(end) > maxMarkedID {
		return false
	}
	for i := 0; i < len(end); i++ {
		if c := end[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			return false
		}
	}
	return true
}

// appendMarked appends line (an entry's JSON object, compact) with the
// marker of place k in an append of n whose last entry end names (as
// markEnd makes it).
func appendMarked(dst, line []byte, k, n int, end string) []byte {
	dst = append(dst, line[:len(line)-1]...)
	dst = append(dst, markSuffix...)
	dst = strconv.AppendInt(dst, int64(k), 10)
	dst = append(dst, '/')
	dst = strconv.AppendInt(dst, int64(n), 10)
	dst = append(dst, end...)
	return append(dst, '"', '}')
}

// appendLine appends to dst line k of the n lines of one append, and a
// newline: lines but the last marked with end (markEnd of the last id;
// "" for no marker) when there are several.
func appendLine(dst, line []byte, k, n int, end string) []byte {
	if k < n-1 && end != "" {
		dst = appendMarked(dst, line, k, n, end)
	} else {
		dst = append(dst, line...)
	}
	return append(dst, '\n')
}

// markWindow is how far from the end of a line cutMark looks for a
// marker: the member, two numbers and an id of maxMarkedID bytes.
const markWindow = 64 + maxMarkedID

// cutMark finds the marker at the end of a line (its JSON object, maybe
// with a CR or spaces after it) and returns the line without it, and the
// marker. A line without one is returned as it is, with ok false. The
// line is not modified: a marked one comes back as a copy. Only the end
// of the line is looked at, so this costs the same for lines of any size.
func cutMark(line []byte) (_ []byte, m appendMark, ok bool) {
	start, m, ok := findMark(line)
	if !ok {
		return line, m, false
	}
	out := make([]byte, 0, start+1)
	out = append(out, line[:start]...)
	return append(out, '}'), m, true
}

// cutMarkInPlace is cutMark for a line the caller owns: the line
// without its marker is written over it.
func cutMarkInPlace(line []byte) []byte {
	start, _, ok := findMark(line)
	if !ok {
		return line
	}
	line[start] = '}'
	return line[:start+1]
}

// findMark returns where the marker of line starts, and the marker.
func findMark(line []byte) (start int, m appendMark, ok bool) {
	v := bytes.TrimRight(line, " \t\r")
	if len(v) < len(markSuffix)+7 || v[len(v)-1] != '}' || v[len(v)-2] != '"' {
		return 0, m, false
	}
	tail := v[max(0, len(v)-markWindow):]
	i := bytes.LastIndex(tail, markSuffix)
	if i < 0 || i+len(markSuffix) > len(tail)-2 {
		return 0, m, false
	}
	val := tail[i+len(markSuffix) : len(tail)-2] // between the quotes
	if m, ok = parseMark(val); !ok {
		return 0, m, false // not a marker this package wrote
	}
	return len(v) - len(tail) + i, m, true
}

// parseMark reads a marker's value, "k/n/id" or "k/n#hash".
func parseMark(val []byte) (appendMark, bool) {
	ks, rest, ok1 := bytes.Cut(val, []byte{'/'})
	i := bytes.IndexAny(rest, "/#")
	if !ok1 || i < 0 {
		return appendMark{}, false
	}
	ns, end := rest[:i], rest[i:]
	good := end[0] == '/' && markable(string(end[1:])) || end[0] == '#' && len(end) == 33 && isLowerHex(end[1:])
	k, err1 := strconv.Atoi(string(ks))
	n, err2 := strconv.Atoi(string(ns))
	if !good || err1 != nil || err2 != nil || k < 0 || n < 2 || k > n-2 ||
		strconv.Itoa(k) != string(ks) || strconv.Itoa(n) != string(ns) { // as written: no sign, no leading zero
		return appendMark{}, false
	}
	return appendMark{k: k, n: n, end: string(end)}, true
}

func isLowerHex(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// marked reports whether line carries a marker, cheaply for the lines
// that do not (most end with "}}").
func marked(line []byte) bool {
	v := bytes.TrimRight(line, " \t\r")
	if len(v) < 2 || v[len(v)-1] != '}' || v[len(v)-2] != '"' {
		return false
	}
	_, _, ok := cutMark(line)
	return ok
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
	for i, g := range got {
		entries[i] = g.e
	}
	_, cut := groups(entries, marksOf(len(got), marked))
	for _, i := range cut {
		keep[i] = false
	}
	return keep
}

// marksOf spreads a parser's markers over its n entries.
func marksOf(n int, marked []markAt) []appendMark {
	marks := make([]appendMark, n)
	for _, m := range marked {
		marks[m.i] = m.mark
	}
	return marks
}

// groups resolves the markers of a run of entries read in file order:
// marks[i] is entries[i]'s (n 0: none; nil: no entry was marked). An
// append counts when its marked entries are all there, in order, right
// before the entry they name. It returns the entries that count, and the
// indexes of those that were part of an append a crash cut.
func groups(entries []Entry, marks []appendMark) (kept []Entry, cut []int) {
	if marks == nil {
		return entries, nil
	}
	kept = entries[:0:0]
	for i := 0; i < len(entries); {
		m := marks[i]
		if m.n == 0 {
			kept = append(kept, entries[i])
			i++
			continue
		}
		// The run of lines marked for this append.
		j := i
		for j < len(entries) && marks[j].n == m.n && marks[j].end == m.end && marks[j].k == j-i+m.k {
			j++
		}
		if m.k == 0 && j-i == m.n-1 && j < len(entries) && marks[j].n == 0 && m.names(entries[j].id) {
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
