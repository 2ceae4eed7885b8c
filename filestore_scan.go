package session

import (
	"bytes"
	"io"
	"strings"
)

// scanAppends reads the lines of f in [from, size) the way Load reads
// them, and gives the entries of each whole append to each, in file
// order (an append of one entry, or the lines of a marked append of
// several; each's argument is reused after it returns):
// entries are the lines a lenient read accepts, and the lines of an
// append of several entries (group.go) are given only once its last
// entry has been read; those of an append a crash cut short never are.
// It stops before an unfinished last line, and before the lines of an
// append whose last entry has not been read (a writer may be writing
// it: listings and the watcher take no lock), and returns end, where
// the next scan starts, and lines, the lines counted after the header
// up to end (starting from lines). from is at the start of a line: 0
// for the header's, which is read first. It reports false for a file a
// Load would refuse (more lines than lim.MaxEntries, a header that
// cannot be read, a compressed log past lim.MaxLogBytes or damaged), or
// that could not be read. A compressed file (from 0) is read as the
// Decoder streams it, holding a line at a time; the offsets are then
// those of the log's bytes.
//
// The listing index (indexEntry.scan) and the watcher's tail reader
// (filestore_watch.go) both read through it, so that what a listing
// counts and what subscribers are told are the entries a Load returns.
func scanAppends(f io.ReaderAt, from, size int64, lines int, lim Limits, each func(run []Entry)) (end int64, nlines int, ok bool) {
	d := newPooledDecoder(io.NewSectionReader(f, from, size-from), &ReadOptions{Limits: lim})
	defer d.release()
	d.p.gotHeader = from > 0 // a scan from 0 reads the header first
	if from == 0 {
		if _, err := d.Header(); err != nil {
			return 0, lines, false
		}
	}
	return scanDecoder(d, from, lines, lim, false, each)
}

// scanDecoder is scanAppends over d, a decoder of the bytes from from on
// whose header, when from is 0, has been read. With borrowed, the
// entries of a one-entry append given to each are views of d's buffer,
// valid until each returns (each keeps none of them, or copies what it
// keeps: see ownEntry). The entries held for an append of several are
// their own all the same: each is marked, and a marked line is read
// from a copy without its marker (cutMark). A listing folds most
// entries into counts and keeps nothing of them: copying every line
// cost it as much as reading it.
func scanDecoder(d *Decoder, from int64, lines int, lim Limits, borrowed bool, each func(run []Entry)) (end int64, nlines int, ok bool) {
	var (
		run      []Entry // the entries of an append of several, so far
		runMark  appendMark
		runStart int64 // offset of the run's first line
		runLines int   // lines before it
		pos      = from + d.read
	)
	for {
		lineStart := pos
		line, complete, err := d.readLine()
		if err != nil && err != io.EOF {
			// A limit (a compressed log past MaxLogBytes), a damaged
			// stream, a failed read: a Load would fail too.
			return pos, lines, false
		}
		if err != nil || !complete {
			break // the end, or an unfinished line: left for the next scan
		}
		pos = from + d.read
		if lines++; lines > lim.MaxEntries {
			return pos, lines, false
		}
		if d.long > 0 {
			continue // a line over the limit: no entry
		}
		// The entry keeps its line (see parseEntryMode): the decoder's
		// buffer is reused, so the line is copied unless borrowed.
		if !borrowed {
			line = bytes.Clone(line)
		}
		e, ok, _ := d.p.entryLine(line, true)
		if !ok {
			continue
		}
		var m appendMark
		if k := len(d.p.marked); k > 0 && d.p.marked[k-1].i == d.p.nent-1 {
			m = d.p.marked[k-1].mark
			d.p.marked = d.p.marked[:0]
		}
		switch {
		case m.n > 0 && len(run) > 0 && m.n == runMark.n && m.end == runMark.end && m.k == runMark.k+1:
			run, runMark = append(run, e), m
			continue
		case m.n > 0:
			run, runMark, runStart, runLines = append(run[:0], e), m, lineStart, lines-1
			continue
		case len(run) > 0 && runMark.names(e.id) && runMark.k == runMark.n-2 && len(run) == runMark.n-1:
			run = append(run, e) // the append is whole
		default:
			run = append(run[:0], e) // a cut append's lines do not count
		}
		each(run)
		run = run[:0]
	}
	if len(run) > 0 {
		// Read it again next time: its last entry may come.
		return runStart, runLines, true
	}
	return pos, lines, true
}

// ownEntry returns e with bytes of its own, for an entry read from a
// buffer that is reused (scanDecoder's borrowed entries): its strings
// are views of the bytes it was parsed from.
func ownEntry(e Entry) Entry {
	if e.h != nil {
		return e // a template's strings are its holes', never the line's
	}
	o, err := parseEntryMode(bytes.Clone(e.raw), true)
	if err != nil {
		// Cannot happen: the same bytes parsed a moment ago. Keep the
		// entry's own copy of its fields rather than views.
		o = e
		o.raw = bytes.Clone(e.raw)
		o.typ, o.id, o.parent, o.ts = strings.Clone(e.typ), strings.Clone(e.id), strings.Clone(e.parent), strings.Clone(e.ts)
	}
	o.idh, o.parh = e.idh, e.parh
	return o
}
