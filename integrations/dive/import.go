package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/deepnoodle-ai/dive"
	"github.com/deepnoodle-ai/dive/llm"

	as "github.com/agentsession/session"
)

// Sessions written by Dive's own session.FileStore: a JSONL file of a
// header line and one line per event, {"line_type":..., "data":...}.

// diveLine is a line of a Dive session file.
type diveLine struct {
	LineType string          `json:"line_type"`
	Data     json.RawMessage `json:"data"`
}

// diveHeader is the first line of a Dive session file.
type diveHeader struct {
	ID                 string                    `json:"id"`
	Title              string                    `json:"title,omitempty"`
	CreatedAt          time.Time                 `json:"created_at"`
	UpdatedAt          time.Time                 `json:"updated_at"`
	Metadata           map[string]any            `json:"metadata,omitempty"`
	ForkedFrom         string                    `json:"forked_from,omitempty"`
	Suspended          bool                      `json:"suspended,omitempty"`
	PendingToolCalls   []*dive.PendingToolCall   `json:"pending_tool_calls,omitempty"`
	CompletedToolCalls []*dive.CompletedToolCall `json:"completed_tool_calls,omitempty"`
}

// diveEvent is an event line of a Dive session file.
type diveEvent struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	Timestamp time.Time      `json:"timestamp"`
	Messages  []*llm.Message `json:"messages"`
	Usage     *llm.Usage     `json:"usage,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// ErrNotDiveFile is returned by ImportDive for data that is not a session
// file of Dive's FileStore.
var ErrNotDiveFile = errors.New("not a session file of Dive's FileStore")

// readDive parses a Dive session file. A torn last line (a crash in the
// middle of an append) is dropped, as Dive drops it.
func readDive(r io.Reader) (*diveHeader, []*diveEvent, error) {
	br := bufio.NewReader(r)
	var h *diveHeader
	var events []*diveEvent
	var bad error // a line that did not parse, fatal unless it is the last
	for n := 1; ; n++ {
		raw, readErr := br.ReadBytes('\n')
		if line := bytes.TrimSpace(raw); len(line) > 0 {
			if bad != nil {
				return nil, nil, bad
			}
			var l diveLine
			err := json.Unmarshal(line, &l)
			switch {
			case err != nil && h == nil:
				return nil, nil, fmt.Errorf("%w: line 1: %v", ErrNotDiveFile, err)
			case err != nil:
				bad = fmt.Errorf("dive session file: line %d: %w", n, err)
			case h == nil:
				if l.LineType != "header" {
					return nil, nil, fmt.Errorf("%w: unrecognized first line type %q", ErrNotDiveFile, l.LineType)
				}
				h = new(diveHeader)
				if err := json.Unmarshal(l.Data, h); err != nil {
					return nil, nil, fmt.Errorf("%w: header: %v", ErrNotDiveFile, err)
				}
			case l.LineType == "event":
				var e diveEvent
				if err := json.Unmarshal(l.Data, &e); err != nil {
					bad = fmt.Errorf("dive session file: line %d: %w", n, err)
					continue
				}
				events = append(events, &e)
			}
		}
		if readErr == io.EOF {
			break
		}
		if readErr != nil {
			return nil, nil, readErr
		}
	}
	if h == nil {
		return nil, nil, fmt.Errorf("%w: empty", ErrNotDiveFile)
	}
	return h, events, nil
}

// ImportDive reads a session file written by Dive's own FileStore and
// stores it in store as the session of the header's id, which must not
// hold a turn yet: every event in order (turns with their ids, usage and
// metadata; compactions with their summaries), the title, the metadata,
// the session it was forked from, and a suspension if the session was
// suspended. Message timestamps are the times of their events. The
// session is built in memory and stored in one step (Put): a failed
// import stores nothing.
func ImportDive(ctx context.Context, store Store, r io.Reader) (*Session, error) {
	h, events, err := readDive(r)
	if err != nil {
		return nil, err
	}
	existing, err := store.Open(ctx, h.ID)
	if err != nil {
		return nil, err
	}
	if existing.holdsTurns() {
		return nil, fmt.Errorf("dive session: import %q: %w", h.ID, as.ErrExists)
	}
	s, err := as.Create(ctx, as.NewMemoryStore(), &as.CreateOptions{ID: h.ID, ParentSession: h.ForkedFrom})
	if err != nil {
		return nil, err
	}
	sess := wrap(s, nil)
	if err := sess.importDive(ctx, h, events); err != nil {
		return nil, err
	}
	if err := store.Put(ctx, sess); err != nil {
		return nil, err
	}
	return sess, nil
}

// holdsTurns reports whether the session holds messages, compactions or
// turn records.
func (s *Session) holdsTurns() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.err != nil {
		return false
	}
	for e := range s.s.Entries() {
		if e.Type() == as.TypeMessage || e.Type() == as.TypeCompaction {
			return true
		}
	}
	return len(s.s.TurnRecords()) > 0
}

// importDive writes a Dive session's header and events into s.
func (s *Session) importDive(ctx context.Context, h *diveHeader, events []*diveEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.Title != "" {
		s.title = strings.TrimSpace(h.Title)
		if err := s.writeInfo(ctx, &infoChange{title: &s.title}); err != nil {
			return err
		}
	}
	for k, v := range h.Metadata {
		if err := s.setMetadata(ctx, k, v); err != nil {
			return err
		}
	}
	for k, e := range events {
		if e.Type == "compaction" {
			if err := s.importCompaction(ctx, e); err != nil {
				return err
			}
			continue
		}
		conv, err := toAgent(e.Messages, s.callName)
		if err != nil {
			return err
		}
		for _, m := range conv {
			m.Timestamp = e.Timestamp.UnixMilli()
		}
		t := &turnRec{ID: e.ID, Usage: e.Usage, Metadata: e.Metadata}
		if h.Suspended && k == len(events)-1 {
			state := &dive.SuspensionState{PendingToolCalls: h.PendingToolCalls, CompletedToolCalls: h.CompletedToolCalls}
			err := saveSuspended(ctx, s.s, conv, t, state)
			if !errors.Is(err, ErrNothingPending) {
				if err != nil {
					return err
				}
				continue
			}
			// No call of the turn awaits a result (Dive's agent never
			// suspends such a turn): a turn like any other.
		}
		if err := saveTurn(ctx, s.s, conv, t); err != nil {
			return err
		}
	}
	return nil
}

func (s *Session) importCompaction(ctx context.Context, e *diveEvent) error {
	info := compactionInfo{ID: e.ID, Summary: e.Messages, Timestamp: e.Timestamp}
	if n, ok := e.Metadata["original_event_count"].(float64); ok {
		info.OriginalEventCount = int(n)
	}
	if n, ok := e.Metadata["original_message_count"].(float64); ok {
		info.OriginalMessageCount = int(n)
	}
	return s.appendCompaction(ctx, &info)
}

// ImportDive takes in the session file Dive's FileStore wrote for id in
// the store's directory, <dir>/<id>.jsonl (see the function ImportDive
// for what is kept), and keeps Dive's file aside, byte for byte, as
// <dir>/<id>.jsonl.dive (or .dive.2, .dive.3 ...: a backup is never
// overwritten). Open fails on such a file with an error wrapping
// agentsession's ErrForeignFormat, or calls this when ImportOnOpen is
// set.
//
// The file is read whole (at most MaxDiveFileBytes) before anything
// moves; a file that is not Dive's, or is damaged, is an error and stays
// where it is. The move is conditional on the file being the one read:
// if Dive wrote to it meanwhile, the import fails with an error wrapping
// agentsession's ErrConflict and nothing changes. If the import fails
// after the move, Dive's file is put back.
func (s *FileStore) ImportDive(ctx context.Context, id string) (*Session, error) {
	if id == "" || strings.ContainsAny(id, `/\`) || strings.Contains(id, "..") {
		return nil, fmt.Errorf("%w: %q", ErrInvalidSessionID, id)
	}
	path := filepath.Join(s.fs.Root(), id+".jsonl")
	data, before, err := readDiveFile(path)
	if err != nil {
		return nil, err
	}
	h, _, err := readDive(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("dive session: %s: %w", path, err)
	}
	if h.ID != id {
		// Dive names a session's file by its id: this one was copied or
		// renamed, and is no session of this id.
		return nil, fmt.Errorf("dive session: %s holds session %q, not %q: %w", path, h.ID, id, ErrNotDiveFile)
	}
	// Before anything moves: a session of this id the store keeps under
	// its own name (escaped, in the flat layout: "chat%207.jsonl" beside
	// Dive's "chat 7.jsonl") that holds turns is never replaced, and a
	// failed import deletes only a session it made.
	existed, err := s.holdsOwn(ctx, id)
	if err != nil {
		return nil, err
	}
	backup, err := moveAside(path, before)
	if err != nil {
		return nil, err
	}
	// The store may hold the file it refused open: let it go, so that it
	// creates the session anew.
	if err := s.fs.CloseSession(id); err != nil {
		return nil, errors.Join(err, putBack(backup, path))
	}
	sess, err := ImportDive(ctx, s, bytes.NewReader(data))
	if err != nil {
		if !existed && !errors.Is(err, as.ErrExists) {
			_ = s.Delete(ctx, id)
		}
		return nil, errors.Join(err, putBack(backup, path))
	}
	return sess, nil
}

// holdsOwn reports whether the store keeps a session of id in a file of
// its own, and refuses (ErrExists) one that holds turns.
func (s *FileStore) holdsOwn(ctx context.Context, id string) (bool, error) {
	log, err := s.fs.Load(ctx, id)
	switch {
	case errors.Is(err, as.ErrNotFound), errors.Is(err, as.ErrForeignFormat):
		return false, nil // none, or Dive's file is where the store would keep it
	case err != nil:
		return false, err
	}
	for _, e := range log.Entries {
		if t := e.Type(); t == as.TypeMessage || t == as.TypeCompaction || t == as.TypeCustom {
			return true, fmt.Errorf("dive session: import %q: the store holds a session of this id with turns: %w", id, as.ErrExists)
		}
	}
	return true, nil
}

// MaxDiveFileBytes bounds the Dive session file ImportDive reads, and the
// one List reads to describe a session Dive wrote.
const MaxDiveFileBytes = as.DefaultMaxLogBytes

// readDiveFile reads a regular file (no link followed) whole, refusing
// one over MaxDiveFileBytes, and returns what it was when read.
func readDiveFile(path string) ([]byte, os.FileInfo, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("dive session: %s is not a regular file", path)
	}
	if st.Size() > MaxDiveFileBytes {
		return nil, nil, fmt.Errorf("dive session: %s: %w (%d bytes, the cap is %d)", path, as.ErrTooLarge, st.Size(), int64(MaxDiveFileBytes))
	}
	// Not blocking, and no link followed: what is opened is checked
	// against what was looked at (sameState below).
	f, err := os.OpenFile(path, os.O_RDONLY|oNonblock|oNofollow, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxDiveFileBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if after, err := f.Stat(); err != nil || !sameState(st, after) || int64(len(data)) != st.Size() {
		return nil, nil, fmt.Errorf("dive session: %s changed while it was read: %w", path, as.ErrConflict)
	}
	return data, st, nil
}

func sameState(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// moveAside gives path a new name beside it, <path>.dive (.dive.2 ...:
// never one that exists), if it is still the file read (before), and
// returns that name. Dive's FileStore replaces its file by a rename: the
// file is first renamed to a name of its own (whatever is at path at
// that instant goes with it, and a file Dive renames in after stays),
// then checked; a file that is not the one read is put back (or, should
// Dive have written path again meanwhile, kept beside it as a backup),
// never removed.
func moveAside(path string, before os.FileInfo) (string, error) {
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".dive-import-")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	held := filepath.Join(tmp, "file")
	if err := os.Rename(path, held); err != nil {
		return "", err
	}
	if st, err := os.Lstat(held); err != nil || !sameState(before, st) {
		err = fmt.Errorf("dive session: %s changed while it was imported: %w", path, as.ErrConflict)
		_, lerr := linkFree(held, path, true)
		return "", errors.Join(err, lerr)
	}
	return linkFree(held, path, false)
}

// linkFree gives the file at held the first free name of path (when
// orPath), path.dive, path.dive.2 ... (a link never replaces a file),
// removes held, and returns the name.
func linkFree(held, path string, orPath bool) (string, error) {
	for k := 0; ; k++ {
		name := path + ".dive"
		switch {
		case k == 0 && !orPath:
			continue
		case k == 0:
			name = path
		case k > 1:
			name += "." + strconv.Itoa(k)
		}
		err := os.Link(held, name)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("dive session: Dive's file %s is kept as %s: %w", path, held, err)
		}
		return name, os.Remove(held)
	}
}

// putBack restores Dive's file after a failed import.
func putBack(backup, path string) error {
	if err := os.Link(backup, path); err != nil {
		return fmt.Errorf("dive session: Dive's file is kept as %s: %w", backup, err)
	}
	return os.Remove(backup)
}
