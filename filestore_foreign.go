package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
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

// ErrForeignFormat reports that a session of the id asked for exists in a
// file the store does not own: another agent's format, or a session file
// outside the store's layout. The error is a *ForeignError.
var ErrForeignFormat = errors.New("session: a session in a format or place the store does not own")

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
	line, _ := bufio.NewReaderSize(f, 64<<10).ReadSlice('\n')
	f.Close()
	format, fid := formatOf(line)
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
// names no agent (ours, damaged) is the store's to delete.
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
	line, _ := bufio.NewReaderSize(io.NewSectionReader(r, 0, 64<<10), 64<<10).ReadSlice('\n')
	switch format, _ := formatOf(line); format {
	case "agentsession", "unknown":
		return nil
	default:
		return &ForeignError{ID: fsess.id, Path: s.path(fsess.rel), Format: format}
	}
}

// formatOf names the agent whose session file starts with line, and the
// id of the session it holds ("" when it names none).
func formatOf(line []byte) (format, id string) {
	var v struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		LineType  string `json:"line_type"`
		UUID      string `json:"uuid"`
		SessionID string `json:"sessionId"`
		Data      struct {
			ID string `json:"id"`
		} `json:"data"`
		Payload struct {
			ID string `json:"id"`
		} `json:"payload"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &v) != nil {
		return "unknown", ""
	}
	switch {
	case v.Type == "session":
		return "agentsession", v.ID
	case strings.HasPrefix(v.LineType, "header"):
		return "Dive", v.Data.ID // {"line_type":"header","data":{...}}
	case v.Type == "session_meta":
		return "Codex", v.Payload.ID
	case v.UUID != "" || v.SessionID != "":
		return "Claude Code", v.SessionID
	}
	return "unknown", ""
}
