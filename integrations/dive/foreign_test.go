package session_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	divesession "github.com/deepnoodle-ai/dive/session"

	as "github.com/agentsession/session"
	session "github.com/agentsession/session/integrations/dive"
)

// A Dive user who switches to this package by its import path keeps
// their history in view: the sessions Dive's FileStore wrote in the
// directory are listed (marked as Dive's files, not yet imported), and
// with ImportOnOpen an Open takes one in, keeping Dive's file aside.
func TestFileStoreListsDiveSessions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeDiveSession(t, dir, "s1")
	writeDiveSession(t, dir, "chat 7")
	// A file Dive wrote and a crash cut short (its last line torn).
	torn, err := os.ReadFile("../../importer/testdata/dive/dive-torn.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dive-torn.jsonl"), torn, 0o644); err != nil {
		t.Fatal(err)
	}
	// Files that are no Dive session: left out.
	if err := os.WriteFile(filepath.Join(dir, "notes.jsonl"), []byte("{\"a\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "dive-torn.jsonl"), filepath.Join(dir, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	dive, err := divesession.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := dive.List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}

	store := reopen(t, dir)
	mine, err := store.Open(ctx, "mine") // one of this package's own, beside them
	if err != nil {
		t.Fatal(err)
	}
	mine.SetTitle("mine")
	got, err := store.List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*session.SessionInfo{}
	for _, s := range got.Sessions {
		byID[s.ID] = s
	}
	if len(got.Sessions) != 4 || byID["mine"] == nil || byID["mine"].DiveFile != "" {
		t.Fatalf("listed %d sessions: %+v", len(got.Sessions), got.Sessions)
	}
	for _, w := range want.Sessions {
		g := byID[w.ID]
		if g == nil {
			t.Fatalf("Dive's session %q is not listed", w.ID)
		}
		if g.DiveFile != filepath.Join(dir, w.ID+".jsonl") {
			t.Errorf("%s: DiveFile %q", w.ID, g.DiveFile)
		}
		if g.Title != w.Title || g.EventCount != w.EventCount || g.Suspended != w.Suspended ||
			!g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) || !reflect.DeepEqual(g.Metadata, w.Metadata) {
			t.Errorf("%s: listed as %+v, Dive lists %+v", w.ID, g, w)
		}
	}
	// The filters apply to them too.
	yes := true
	susp, err := store.List(ctx, &session.ListOptions{Suspended: &yes})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range susp.Sessions {
		if !s.Suspended {
			t.Errorf("a session not suspended listed as suspended: %+v", s)
		}
	}

	// Without the option, Open says what to do; with it, Open imports.
	if _, err := store.Open(ctx, "s1"); !errors.Is(err, as.ErrForeignFormat) || !strings.Contains(err.Error(), "ImportOnOpen") {
		t.Fatalf("Open of a Dive file: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "s1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	store.ImportOnOpen(true)
	sess, err := store.Open(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if sess.Title() != "Imported chat" || sess.EventCount() != byID["s1"].EventCount {
		t.Errorf("imported on open: title %q, %d events", sess.Title(), sess.EventCount())
	}
	kept, err := os.ReadFile(filepath.Join(dir, "s1.jsonl.dive"))
	if err != nil || !bytes.Equal(kept, raw) {
		t.Errorf("Dive's file was not kept aside as it was: %v", err)
	}
	again, err := reopen(t, dir).List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range again.Sessions {
		if s.ID == "s1" && s.DiveFile != "" {
			t.Errorf("s1 still listed as Dive's file after its import")
		}
	}
	if len(again.Sessions) != 4 {
		t.Errorf("after the import: %d sessions listed", len(again.Sessions))
	}
}

// Importing in place never loses Dive's file: a second file of the same
// id does not overwrite the first's backup, and a file that is not Dive's
// (damaged, or too large) is left as it is with a clear error.
func TestFileStoreImportDiveKeepsEveryFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeDiveSession(t, dir, "s1")
	store := reopen(t, dir)
	if _, err := store.ImportDive(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(filepath.Join(dir, "s1.jsonl.dive"))
	if err != nil {
		t.Fatal(err)
	}
	// Dive wrote s1 again (its process still running): the new file is
	// foreign beside nothing; the store refuses to import over its own
	// session, and the first backup stays.
	if err := os.Rename(filepath.Join(dir, "s1.jsonl"), filepath.Join(dir, "ours.keep")); err != nil {
		t.Fatal(err)
	}
	writeDiveSession(t, dir, "s1")
	store2 := reopen(t, dir)
	if _, err := store2.ImportDive(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "s1.jsonl.dive")); err != nil || !bytes.Equal(b, first) {
		t.Errorf("the first backup was overwritten: %v", err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "s1.jsonl.dive*"))
	if len(matches) != 2 {
		t.Errorf("backups: %v", matches)
	}

	// A damaged Dive file: an error, and the file as it was.
	bad := filepath.Join(dir, "bad.jsonl")
	data := []byte(`{"line_type":"header","data":{"id":"bad"}}` + "\n" + `{"line_type":"event","data":` + "\n" + `{"line_type":"event","data":{}}` + "\n")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := store2.ImportDive(ctx, "bad"); err == nil {
		t.Error("a damaged file imported")
	}
	if b, _ := os.ReadFile(bad); !bytes.Equal(b, data) {
		t.Error("the damaged file changed")
	}
	if _, err := os.Stat(bad + ".dive"); err == nil {
		t.Error("the damaged file was moved aside")
	}
}

// FuzzDiveInfo lists a directory holding one file of arbitrary bytes: the
// listing neither fails nor hangs, and a file it lists as Dive's is one
// Dive lists too, with as many events.
func FuzzDiveInfo(f *testing.F) {
	for _, name := range []string{"dive-main", "dive-torn", "dive-suspended", "dive-kinds"} {
		b, err := os.ReadFile("../../importer/testdata/dive/" + name + ".jsonl")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"line_type":"header","data":{"id":"s"}}` + "\n" + `{"line_type":"event","data":{"timestamp":"x"}}`))
	f.Add([]byte(`{"line_type":"header","data":{"id":"s"}}` + "\n" + strings.Repeat("{", 70000)))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "s.jsonl"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"dive-main", "dive-torn", "dive-suspended", "dive-kinds"} {
			if bytes.Contains(data, []byte(`"id":"`+id+`"`)) {
				if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		store, err := session.NewFileStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		got, err := store.List(ctx, nil)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		dive, err := divesession.NewFileStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range got.Sessions {
			d, err := dive.Open(ctx, in.ID)
			if err != nil {
				continue // Dive refuses what a quick read takes: it is not listed as more than it is
			}
			// Only files Dive itself wrote are compared: a hand-made
			// line Dive's reader takes may be laid out otherwise.
			if bytes.HasPrefix(data, []byte(`{"line_type":"header","data":{"id":"`)) && d.EventCount() != in.EventCount && isDiveWritten(data) {
				t.Errorf("%s: %d events listed, Dive reads %d", in.ID, in.EventCount, d.EventCount())
			}
		}
	})
}

// isDiveWritten reports whether every line after the first is as Dive's
// writer lays it out.
func isDiveWritten(data []byte) bool {
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	for _, l := range lines[1:] {
		if !bytes.HasPrefix(l, []byte(`{"line_type":"event","data":{"id":"evt-`)) {
			return false
		}
	}
	return true
}
