package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentsession/session/internal/names"
)

// A session the store does not own: a file named for the id at the
// root, where other agents keep theirs (Dive's <dir>/<id>.jsonl) or
// where one of ours was moved. Open and Create report it rather than
// start a new, empty session beside it.

// ForeignError names the file of a session the store does not own and
// what it holds.
type ForeignError struct {
	ID     string
	Path   string
	Format string // "Dive", "Codex", "Claude Code", "agentsession" (ours, outside the layout) or "unknown"
}

func (e *ForeignError) Error() string {
	what := "import it into the store (package importer, or agentsession import " + e.Path + ")"
	if e.Format == "agentsession" {
		what = "it is outside the store's layout: open it with FileStore.OpenPath, or move it into the store"
	}
	return fmt.Sprintf("session: session %s is in %s, a %s session the store does not own: %s", e.ID, e.Path, e.Format, what)
}

func (e *ForeignError) Unwrap() error { return ErrForeignFormat }

// foreign returns a *ForeignError when the root holds a file for session
// id that is not in the store's layout, nil otherwise.
func (s *FileStore) foreign(id string) error {
	if s.fileOnly {
		return nil
	}
	stemName := names.FileStem(id) + fileExt
	var cands []string
	if !s.flat {
		cands = append(cands, stemName) // the flat layout's own file: see foreignAt
	}
	if filepath.IsLocal(id) && filepath.Base(id) == id && !strings.ContainsAny(id, `/\`) && id+fileExt != stemName {
		cands = append(cands, id+fileExt) // Dive's, for an id escaping changes
	}
	for _, rel := range cands {
		if err := s.foreignAt(id, rel); err != nil {
			return err
		}
	}
	return nil
}

// foreignAt returns a *ForeignError when rel is a regular file that
// holds session id in a format the store does not own where it would
// look (another agent's, or ours outside the layout), nil otherwise. A
// file of another id (a case-insensitive twin, say) is none of its
// business.
func (s *FileStore) foreignAt(id, rel string) error {
	fi, err := s.r.Lstat(rel)
	if err != nil || !fi.Mode().IsRegular() {
		return nil // no file, a directory, a FIFO a read would block on
	}
	f, err := openRegular(s.r, rel, os.O_RDONLY)
	if err != nil {
		return nil
	}
	format, fid := sniffFormat(f, s.opts.Limits.MaxLineBytes)
	f.Close()
	if format == "unknown" || fid != id {
		return nil
	}
	if format == "agentsession" && s.flat {
		return nil // the flat layout's own file
	}
	return &ForeignError{ID: id, Path: s.path(rel), Format: format}
}

// ownFile refuses, with a *ForeignError, a file at a session's name that
// another agent wrote (in the flat layout <id>.jsonl is where Dive keeps
// its own): a delete would drop it and a move hide it from its agent.
// Callers hold fsess.mu and the file's lock. A file whose first line
// is a JSON object other than our header (another program's, whatever
// it names) is not the store's; one whose first line is no JSON object
// (ours, damaged) is.
func (s *FileStore) ownFile(fsess *fileSession) error {
	if fsess.compressed {
		return nil // only this store compresses a log
	}
	var r io.ReaderAt = fsess.f
	if fsess.f == nil {
		f, err := s.openRel(fsess.rel)
		if err != nil {
			return nil // gone: the delete says so
		}
		defer f.Close()
		r = f
	}
	format, _ := sniffFormat(io.NewSectionReader(r, 0, 1<<62), s.opts.Limits.MaxLineBytes)
	switch format {
	case "agentsession", "":
		return nil
	default:
		return &ForeignError{ID: fsess.id, Path: s.path(fsess.rel), Format: format}
	}
}

// formatOf names the agent whose session file starts with line, and the
// id of the session it holds ("" when it names none).
func formatOf(line []byte) (format, id string) {
	f, id := sniffFormat(bytes.NewReader(line), int64(len(line)))
	if f == "" {
		f = "unknown"
	}
	return f, id
}

// sniffFormat names the agent whose session file r is, from the members
// of its first JSON value, read as a stream (at most max bytes, one
// string at a time held: a header of megabytes, as a suspended Dive
// session's holding its pending calls' inputs, is read to its end), and
// the id of the session it holds. It is "" when the file does not start
// with a JSON object (ours, damaged; or empty), "unknown" for an object
// no agent this package knows writes.
func sniffFormat(r io.Reader, max int64) (format, id string) {
	if max <= 0 {
		max = DefaultMaxLineBytes
	}
	dec := json.NewDecoder(bufio.NewReaderSize(io.LimitReader(r, max), 64<<10))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", ""
	}
	var v struct{ typ, id, lineType, uuid, sessionID, dataID, payloadID string }
	str := map[string]*string{"type": &v.typ, "id": &v.id, "line_type": &v.lineType, "uuid": &v.uuid, "sessionId": &v.sessionID}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return "", ""
		}
		key, _ := k.(string)
		switch {
		case str[key] != nil:
			t, err := dec.Token()
			if err != nil {
				return "", ""
			}
			if s, ok := t.(string); ok {
				*str[key] = s
			} else if d, ok := t.(json.Delim); ok && !skipRest(dec, d) {
				return "", ""
			}
		case key == "data" || key == "payload":
			into := &v.dataID
			if key == "payload" {
				into = &v.payloadID
			}
			if !memberID(dec, into) {
				return "", ""
			}
		default:
			if !skipValue(dec) {
				return "", ""
			}
		}
	}
	switch {
	case v.typ == "session":
		return "agentsession", v.id
	case strings.HasPrefix(v.lineType, "header"):
		return "Dive", v.dataID // {"line_type":"header","data":{...}}
	case v.typ == "session_meta":
		return "Codex", v.payloadID
	case v.uuid != "" || v.sessionID != "" || v.typ == "summary" || v.typ == "file-history-snapshot":
		return "Claude Code", v.sessionID
	}
	return "unknown", ""
}

// memberID reads a value; when it is an object, its "id" string goes in
// into. It reports whether the value was read whole.
func memberID(dec *json.Decoder, into *string) bool {
	t, err := dec.Token()
	if err != nil {
		return false
	}
	if t != json.Delim('{') {
		if d, ok := t.(json.Delim); ok {
			return skipRest(dec, d)
		}
		return true
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		if k == "id" {
			t, err := dec.Token()
			if err != nil {
				return false
			}
			if s, ok := t.(string); ok {
				*into = s
			} else if d, ok := t.(json.Delim); ok && !skipRest(dec, d) {
				return false
			}
			continue
		}
		if !skipValue(dec) {
			return false
		}
	}
	_, err = dec.Token() // '}'
	return err == nil
}

// skipValue reads one value, a token at a time.
func skipValue(dec *json.Decoder) bool {
	t, err := dec.Token()
	if err != nil {
		return false
	}
	if d, ok := t.(json.Delim); ok {
		return skipRest(dec, d)
	}
	return true
}

// skipRest reads the rest of the array or object that d opened.
func skipRest(dec *json.Decoder, d json.Delim) bool {
	if d != '{' && d != '[' {
		return false
	}
	for depth := 1; depth > 0; {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return true
}
