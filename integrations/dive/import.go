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

// ImportDive moves the session file Dive's FileStore wrote for id in the
// store's directory, <dir>/<id>.jsonl, to <dir>/<id>.jsonl.dive and
// imports it (see the function ImportDive). Open fails on such a file
// with an error wrapping agentsession's ErrForeignFormat; call this then.
// If the import fails, the file is moved back.
func (s *FileStore) ImportDive(ctx context.Context, id string) (*Session, error) {
	if id == "" || strings.ContainsAny(id, `/\`) || strings.Contains(id, "..") {
		return nil, fmt.Errorf("%w: %q", ErrInvalidSessionID, id)
	}
	path := filepath.Join(s.fs.Root(), id+".jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if _, _, err := readDive(bytes.NewReader(data)); err != nil {
		return nil, err
	}
	backup := path + ".dive"
	if err := os.Rename(path, backup); err != nil {
		return nil, err
	}
	// The store may hold the file it refused open: let it go, so that it
	// creates the session anew.
	if err := s.fs.CloseSession(id); err != nil {
		return nil, err
	}
	sess, err := ImportDive(ctx, s, bytes.NewReader(data))
	if err != nil {
		_ = s.Delete(ctx, id)
		if rerr := os.Rename(backup, path); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	return sess, nil
}
