package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
	if s.fileOnly || s.flat {
		return nil // the flat layout's files are its own: see foreignAt
	}
	cands := []string{names.FileStem(id) + fileExt}
	if filepath.IsLocal(id) && filepath.Base(id) == id && !strings.ContainsAny(id, `/\`) {
		cands = append(cands, id+fileExt)
	}
	for _, rel := range cands {
		f, err := s.r.Open(rel)
		if err != nil {
			continue
		}
		line, _ := bufio.NewReaderSize(f, 64<<10).ReadSlice('\n')
		f.Close()
		return &ForeignError{ID: id, Path: s.path(rel), Format: formatOf(line)}
	}
	return nil
}

// foreignAt returns a *ForeignError when the file rel, where the flat
// layout keeps session id, holds something other than a session of this
// format, nil otherwise.
func (s *FileStore) foreignAt(id, rel string) error {
	f, err := s.r.Open(rel)
	if err != nil {
		return nil
	}
	line, _ := bufio.NewReaderSize(f, 64<<10).ReadSlice('\n')
	f.Close()
	if format := formatOf(line); format != "agentsession" && format != "unknown" {
		return &ForeignError{ID: id, Path: s.path(rel), Format: format}
	}
	return nil
}

// formatOf names the agent whose session file starts with line.
func formatOf(line []byte) string {
	var v struct {
		Type      string          `json:"type"`
		LineType  string          `json:"line_type"`
		Data      json.RawMessage `json:"data"`
		UUID      string          `json:"uuid"`
		SessionID string          `json:"sessionId"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &v) != nil {
		return "unknown"
	}
	switch {
	case v.Type == "session":
		return "agentsession"
	case strings.HasPrefix(v.LineType, "header") && len(v.Data) > 0 && v.Data[0] == '{':
		return "Dive" // {"line_type":"header","data":{...}}
	case v.Type == "session_meta" || v.Type == "response_item":
		return "Codex"
	case v.UUID != "" || v.SessionID != "" || v.Type == "summary":
		return "Claude Code"
	}
	return "unknown"
}
