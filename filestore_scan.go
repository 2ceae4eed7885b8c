package session

import (
	"bytes"
	"io"
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
	d := NewDecoder(io.NewSectionReader(f, from, size-from), &ReadOptions{Limits: lim})
	d.p.gotHeader = from > 0 // a scan from 0 reads the header first
	if from == 0 {
		if _, err := d.Header(); err != nil {
			return 0, lines, false
		}
	}
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
		// buffer is reused.
		e, ok, _ := d.p.entryLine(bytes.Clone(line), true)
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
