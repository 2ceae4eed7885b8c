package session

import (
	"hash/crc32"
	"io"
	"runtime"
	"slices"
	"sync/atomic"
)

// The lines of a new file (a fork, or a create with entries), written
// in pieces: writeLines.
//
// A fork of a long session writes tens of megabytes of lines that the
// source's file already holds byte for byte (an entry's bytes are the
// line it was read from). Rebuilding them from compact entries means
// escaping their long strings again, most of a fork's time; so a run of
// entries read from consecutive lines of one file is copied from that
// file instead, a piece at a time. The file can have changed since it
// was read: a store cut a failed write back and wrote another line at
// the same place, or someone edited it in place. So each line read back
// must end with a newline where it ended, and have the CRC-32C the
// reader took of it; if a piece's lines do not, the rest of the run is
// built from the entries, as it is when the file cannot be read (it was
// closed: its store was closed, or replaced it by a rewrite). The new
// file holds the entries' bytes either way.

// castagnoli is the CRC-32C table.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sumLines says whether the reader takes the CRC-32C of the message lines
// it keeps, which a fork needs to copy them. Where the processor has an
// instruction for it (Go uses one on these architectures) the sums cost
// an open a few milliseconds of processor time for 67 MB (20 GB/s);
// elsewhere Go computes them from tables, some twenty times slower,
// which would cost every open more than it saves the occasional fork.
var sumLines = slices.Contains([]string{"amd64", "arm64", "loong64", "ppc64le", "s390x"}, runtime.GOARCH)

// A CRC-32C tells a line changed by accident, or by a store that cut a
// failed write back, with certainty but for one chance in four billion;
// it does not hold against someone who edits the file in place on
// purpose to forge a line with the same sum (who could write anything
// into the session's file anyway).

// copyMin is the shortest run of lines copied from their file: below
// it, the read costs more than building the lines.
const copyMin = 16 << 10

// pieceSize is about how much writeLines builds or copies before it
// writes: a buffer this size is all it holds of the file.
const pieceSize = 1 << 20

// noCopy turns the copying off, so that tests can cover the building
// path with the same entries.
var noCopy atomic.Bool

// copiedBytes counts the bytes copyLines took from files, for tests.
var copiedBytes atomic.Int64

// writeLines writes the entries' lines to w, in pieces of about
// pieceSize: stored[i], when there is one, for entry i, else the entry's
// bytes. Runs of lines read from one file are copied from it (see
// above), the others built from the entries.
func writeLines(w io.Writer, entries []Entry, stored map[int][]byte) error {
	total := 0
	for i, e := range entries {
		if l, ok := stored[i]; ok {
			total += len(l) + 1
		} else {
			total += e.Len() + 1
		}
	}
	// The string encoder asks for room beyond what it writes (a word's
	// worst case): the slack keeps it from copying the buffer.
	const slack = 128
	buf := make([]byte, 0, min(total, pieceSize)+slack)
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	build := func(from, to int) error {
		for i := from; i < to; i++ {
			if l, ok := stored[i]; ok {
				buf = append(buf, l...)
			} else {
				buf = entries[i].appendBytes(buf)
			}
			if buf = append(buf, '\n'); len(buf) >= pieceSize {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for i := 0; i < len(entries); {
		j, size := sourcedRun(entries, stored, i)
		if size < copyMin || noCopy.Load() {
			if err := build(i, max(j, i+1)); err != nil {
				return err
			}
			i = max(j, i+1)
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		for i < j {
			k, n := i, 0 // the piece: entries[i:k], n bytes
			for k < j && (k == i || n+entries[k].h.n+1 <= pieceSize) {
				n += entries[k].h.n + 1
				k++
			}
			var ok bool
			if buf, ok = copyLines(buf, entries[i:k], n); !ok {
				break
			}
			if err := flush(); err != nil {
				return err
			}
			i = k
		}
		if err := build(i, j); err != nil { // what could not be copied
			return err
		}
		i = j
	}
	return flush()
}

// sourcedRun returns the end j of the run of entries from i read from
// consecutive lines of one file and written as they are (not in
// stored), and the run's size with newlines; j is i and size 0 if
// entries[i] is not such an entry.
func sourcedRun(entries []Entry, stored map[int][]byte, i int) (j, size int) {
	h := entries[i].h
	if h == nil || h.src == nil {
		return i, 0
	}
	src, next := h.src, h.off
	for j = i; j < len(entries); j++ {
		h := entries[j].h
		if h == nil || h.src != src || h.off != next {
			break
		}
		if _, ok := stored[j]; ok {
			break
		}
		next += int64(h.n) + 1
		size += h.n + 1
	}
	return j, size
}

// copyLines appends the lines of es, consecutive lines of one file
// making size bytes with their newlines, read from that file; ok is
// false, and dst's length unchanged, if the file could not be read or no
// longer holds every line as it was read.
func copyLines(dst []byte, es []Entry, size int) (_ []byte, ok bool) {
	n := len(dst)
	out := slices.Grow(dst, size)[:n+size]
	first := es[0].h
	if _, err := first.src.ReadAt(out[n:], first.off); err != nil {
		return out[:n], false
	}
	p := n
	for _, e := range es {
		end := p + e.h.n
		if out[end] != '\n' || crc32.Checksum(out[p:end], castagnoli) != e.h.sum {
			return out[:n], false
		}
		p = end + 1
	}
	copiedBytes.Add(int64(size))
	return out, true
}
