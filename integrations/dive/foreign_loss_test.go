package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepnoodle-ai/dive/llm"
	divesession "github.com/deepnoodle-ai/dive/session"

	as "github.com/agentsession/session"
	session "github.com/agentsession/session/integrations/dive"
)

// A failed import of Dive's file never takes a session it did not make:
// the user's own session of the same id (kept under its escaped name,
// "chat%207.jsonl", beside Dive's "chat 7.jsonl") holds turns, so the
// import is refused before anything moves, and both files stay as they
// were, through a close and a reopen.
func TestFileStoreImportDiveKeepsTheSessionItRefuses(t *testing.T) {
	ctx := context.Background()
	for _, imp := range []struct {
		name string
		do   func(*session.FileStore, string) error
	}{
		{"ImportDive", func(s *session.FileStore, id string) error { _, err := s.ImportDive(ctx, id); return err }},
		{"ImportOnOpen", func(s *session.FileStore, id string) error {
			s.ImportOnOpen(true)
			_, err := s.Open(ctx, id)
			return err
		}},
	} {
		t.Run(imp.name, func(t *testing.T) {
			dir := t.TempDir()
			const id = "chat 7"
			store := reopen(t, dir)
			s, err := store.Open(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SaveTurn(ctx, []*llm.Message{llm.NewUserTextMessage("IMPORTANT question"), llm.NewAssistantTextMessage("IMPORTANT answer")}, &llm.Usage{}); err != nil {
				t.Fatal(err)
			}
			if err := store.Close(); err != nil {
				t.Fatal(err)
			}
			// Dive's own FileStore, pointed at the same directory, makes
			// its file for the id.
			d, err := divesession.NewFileStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.Open(ctx, id); err != nil {
				t.Fatal(err)
			}
			diveFile := filepath.Join(dir, id+".jsonl")
			before, err := os.ReadFile(diveFile)
			if err != nil {
				t.Fatal(err)
			}
			store = reopen(t, dir)
			if err := imp.do(store, id); !errors.Is(err, as.ErrExists) {
				t.Fatalf("err %v, want ErrExists", err)
			}
			if err := store.Close(); err != nil {
				t.Fatal(err)
			}
			if after, err := os.ReadFile(diveFile); err != nil || string(after) != string(before) {
				t.Fatalf("Dive's file changed or moved: %v", err)
			}
			mine, err := os.ReadFile(filepath.Join(dir, "chat%207.jsonl"))
			if err != nil || !strings.Contains(string(mine), "IMPORTANT answer") {
				t.Fatalf("the user's session is gone: %v", err)
			}
			// With Dive's file taken away, the store opens it whole.
			if err := os.Remove(diveFile); err != nil {
				t.Fatal(err)
			}
			store = reopen(t, dir)
			got, err := store.Unwrap().Load(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			for _, e := range got.Entries {
				text.Write(e.JSON())
			}
			if !strings.Contains(text.String(), "IMPORTANT answer") {
				t.Fatalf("the user's turn is gone: %s", text.String())
			}
		})
	}
}

// A Dive file whose header names another session than its file's name
// is not Dive's file for that id: refused, left where it is.
func TestFileStoreImportDiveOfAnotherID(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeDiveSession(t, dir, "a")
	if err := os.Rename(filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")); err != nil {
		t.Fatal(err)
	}
	store := reopen(t, dir)
	if _, err := store.ImportDive(ctx, "b"); !errors.Is(err, session.ErrNotDiveFile) {
		t.Fatalf("err %v, want ErrNotDiveFile", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.jsonl")); err != nil {
		t.Fatal(err)
	}
	if page, err := store.Unwrap().List(ctx, as.ListOptions{}); err != nil || len(page.Sessions) != 0 {
		t.Fatalf("stored %v (%v)", page, err)
	}
}

// A Dive file whose header is longer than any buffer (a long title, a
// suspended turn's pending calls with their inputs) is Dive's all the
// same: listed as Dive's, imported on open, never taken for an empty or
// damaged session of this package.
func TestFileStoreDiveLongHeader(t *testing.T) {
	ctx := context.Background()
	for _, size := range []int{100, 92 << 10, 2 << 20} {
		for _, id := range []string{"s1", "chat 7"} {
			t.Run(fmt.Sprintf("%d/%s", size, id), func(t *testing.T) {
				dir := t.TempDir()
				// As Dive's FileStore writes it: a header line, an event.
				title := strings.Repeat("t", size)
				file := `{"line_type":"header","data":{"id":"` + id + `","title":"` + title + `","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:01Z"}}` + "\n" +
					`{"line_type":"event","data":{"id":"e1","type":"turn","timestamp":"2026-01-01T00:00:01Z","messages":[{"role":"user","content":[{"type":"text","text":"LONG-HEADER question"}]},{"role":"assistant","content":[{"type":"text","text":"answer"}]}]}}` + "\n"
				if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(file), 0o644); err != nil {
					t.Fatal(err)
				}
				store := reopen(t, dir)
				if _, err := store.Open(ctx, id); !errors.Is(err, as.ErrForeignFormat) {
					t.Fatalf("Open: %v, want ErrForeignFormat", err)
				}
				store.ImportOnOpen(true)
				s, err := store.Open(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if s.Title() != title {
					t.Errorf("title of %d bytes, want %d", len(s.Title()), len(title))
				}
				msgs, err := s.Messages(ctx)
				if err != nil || len(msgs) != 2 {
					t.Errorf("%d messages after the import (%v)", len(msgs), err)
				}
			})
		}
	}
}
