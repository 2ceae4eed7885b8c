package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// The sessions Dive's own FileStore wrote in a FileStore's directory: a
// user who switches to this package by its import path keeps them in
// view. List shows them (SessionInfo.DiveFile says which they are), Open
// says how to take one in, or takes it in with ImportOnOpen.

// ImportOnOpen sets whether Open of a session Dive's FileStore wrote in
// the store's directory imports it (ImportDive: Dive's file kept aside as
// <id>.jsonl.dive) rather than fail with an error wrapping agentsession's
// ErrForeignFormat. Off by default: an import moves a file another
// program may still be writing.
func (s *FileStore) ImportOnOpen(on bool) {
	s.mu.Lock()
	s.importOnOpen = on
	s.mu.Unlock()
}

// List returns a summary of every session, most recently updated first:
// the store's own, and those Dive's FileStore wrote in its directory and
// that are not imported yet, their SessionInfo.DiveFile naming the file
// (Open imports one with ImportOnOpen, or ImportDive does). Dive's files
// are described as Dive's List describes them: from the header, and the
// count of events of the file (read to the end, as Dive reads it; a file
// over MaxDiveFileBytes or that is not Dive's is left out).
func (s *FileStore) List(ctx context.Context, opts *ListOptions) (*ListResult, error) {
	var filter ListOptions
	if opts != nil {
		filter.Suspended = opts.Suspended
	}
	own, err := s.StoreAdapter.List(ctx, &filter)
	if err != nil {
		return nil, err
	}
	infos := own.Sessions
	have := make(map[string]bool, len(infos))
	for _, in := range infos {
		have[in.ID] = true
	}
	dive, err := s.diveSessions(ctx, have)
	if err != nil {
		return nil, err
	}
	for _, in := range dive {
		if filter.Suspended == nil || *filter.Suspended == in.Suspended {
			infos = append(infos, in)
		}
	}
	sort.SliceStable(infos, func(i, j int) bool { return infos[i].UpdatedAt.After(infos[j].UpdatedAt) })
	if opts != nil {
		if opts.Offset > 0 {
			infos = infos[min(opts.Offset, len(infos)):]
		}
		if opts.Limit > 0 && opts.Limit < len(infos) {
			infos = infos[:opts.Limit]
		}
	}
	return &ListResult{Sessions: infos}, nil
}

// diveSessions describes the session files of Dive's FileStore in the
// store's directory (<dir>/<id>.jsonl, the id the header's), but those
// whose ids have is set for.
func (s *FileStore) diveSessions(ctx context.Context, have map[string]bool) ([]*SessionInfo, error) {
	root := s.fs.Root()
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []*SessionInfo
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || !e.Type().IsRegular() || have[id] {
			continue // a link, a directory, or the store's own
		}
		in, err := diveInfo(filepath.Join(root, e.Name()), id)
		if err != nil {
			continue // not Dive's, or unreadable: not a Dive session to list
		}
		out = append(out, in)
	}
	return out, nil
}

// maxDiveHeader bounds the header line List reads of a Dive file.
const maxDiveHeader = 64 << 20

// diveInfo describes the Dive session file at path, if it is one whose
// header names id. It streams the file: the header, then the line types.
func diveInfo(path, id string) (*SessionInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > MaxDiveFileBytes {
		return nil, errors.New("not a regular file within the cap")
	}
	br := bufio.NewReaderSize(f, 64<<10)
	first, complete, headLen, err := readLine(br, maxDiveHeader)
	if err != nil || !complete {
		return nil, fmt.Errorf("no header line: %v", err)
	}
	var l diveLine
	var h diveHeader
	if json.Unmarshal(first, &l) != nil || l.LineType != "header" || json.Unmarshal(l.Data, &h) != nil || h.ID != id {
		return nil, ErrNotDiveFile
	}
	events, last, err := countEvents(br, f, int64(headLen))
	if err != nil {
		return nil, err
	}
	updated := h.UpdatedAt
	if last.After(updated) {
		updated = last // an append does not rewrite the header; Dive's List shows the last event's time
	}
	return &SessionInfo{
		ID: h.ID, Title: h.Title, CreatedAt: h.CreatedAt, UpdatedAt: updated,
		EventCount: events, Metadata: h.Metadata, Suspended: h.Suspended, DiveFile: path,
	}, nil
}

// eventPrefix begins every event line Dive writes (json.Marshal of its
// line struct), and eventTime finds the event's time in the members that
// follow (id, type, timestamp, in the order Dive's struct has them).
var (
	eventPrefix = []byte(`{"line_type":"event"`)
	eventTime   = regexp.MustCompile(`"timestamp":"([0-9T:.+\-Z]{20,40})"`)
)

// eventHead is how much of an event line is kept: its prefix and the
// members before its messages.
const eventHead = 512

// countEvents counts the event lines of the rest of a Dive file, from
// offset at, as Dive's reader does (a last line that is not JSON, cut
// short or not, or that does not decode, is not an event), and returns
// the time of the last.
// Only the start of each line is kept; the last event line is read
// again from f, whole, to be checked.
func countEvents(br *bufio.Reader, f io.ReaderAt, at int64) (n int, last time.Time, err error) {
	var lastAt, lastLen int64 = -1, 0 // the last event line counted
	prev := last                      // the time before it
	for {
		// A line not complete is the last one, without its newline: it
		// is checked whole below, as every last line is.
		line, _, size, err := readLine(br, eventHead)
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, last, err
		}
		at += int64(size)
		if !bytes.HasPrefix(bytes.TrimLeft(line, " \t"), eventPrefix) {
			lastAt = -1 // the last line is not an event: nothing to check
			continue
		}
		n++
		lastAt, lastLen = at-int64(size), int64(size)
		prev = last
		if m := eventTime.FindSubmatch(line); m != nil {
			if t, err := time.Parse(time.RFC3339Nano, string(m[1])); err == nil {
				last = t
			}
		}
	}
	if lastAt >= 0 && lastLen <= MaxDiveFileBytes {
		b, err := io.ReadAll(io.NewSectionReader(f, lastAt, lastLen))
		if err != nil {
			return n, last, err
		}
		if !diveReads(b) {
			n, last = n-1, prev // Dive drops it
		}
	}
	return n, last, nil
}

// diveReads reports whether Dive's reader takes line as an event: JSON
// that decodes into its types (it drops a last line that does not).
func diveReads(line []byte) bool {
	var l diveLine
	var e diveEvent
	return json.Unmarshal(bytes.TrimSpace(line), &l) == nil && json.Unmarshal(l.Data, &e) == nil
}

// readLine reads a line; it keeps at most keep bytes of it (the rest is
// read and dropped) and says whether the line was whole: ended by a
// newline, or, at the end of the file, valid JSON kept whole (Dive reads
// such a line; one cut short it drops).
func readLine(br *bufio.Reader, keep int) (line []byte, complete bool, size int, err error) {
	var kept []byte
	total := 0
	for {
		chunk, err := br.ReadSlice('\n')
		total += len(chunk)
		if room := keep - len(kept); room > 0 {
			kept = append(kept, chunk[:min(room, len(chunk))]...)
		}
		switch {
		case err == nil:
			return bytes.TrimRight(kept, "\r\n"), true, total, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && total > 0:
			return kept, total == len(kept) && json.Valid(bytes.TrimSpace(kept)), total, nil
		default:
			return nil, false, total, err
		}
	}
}
