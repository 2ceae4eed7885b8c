package importer

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

// oldTranscripts are transcripts of each format whose records are more
// than a year older than the tests run (2025), and sessions of them.
var oldTranscripts = []struct {
	name, path string
}{
	{"claude", "testdata/claude/public/claude-code-log/representative_messages.jsonl"},
	{"codex", "testdata/codex/rollout-2025-08-18T01-16-13-c3c4b301-27c8-4c70-b6e4-46b99fdf0236.jsonl"},
	{"opencode", "testdata/opencode/session-export.json"},
}

// sourceTimes returns the time of a session's first and last entries,
// as the import wrote them: the source's first and last activity.
func sourceTimes(t *testing.T, store session.Store, id string) (first, last time.Time) {
	t.Helper()
	log, err := store.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range log.Entries {
		ts := e.Time()
		if first.IsZero() || ts.Before(first) {
			first = ts
		}
		if ts.After(last) {
			last = ts
		}
	}
	if first.IsZero() {
		t.Fatalf("session %s has no entries", id)
	}
	return first, last
}

// TestImportKeepsSourceTimes: an imported session is listed as updated
// when its source last was (its last entry), and created no later than
// its first entry, in the store that imported it and in one opened on
// the same directory after; a sweep by age treats it as old.
func TestImportKeepsSourceTimes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range oldTranscripts {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "sessions")
			store, err := session.OpenFileStore(root, nil)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			rep, err := Import(ctx, store, tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Imported) == 0 || len(rep.Errors) > 0 {
				t.Fatalf("report %+v", rep)
			}
			want := map[string][2]time.Time{}
			for _, s := range rep.Imported {
				first, last := sourceTimes(t, store, s.ID)
				if !last.Before(start.AddDate(0, -6, 0)) {
					t.Fatalf("the transcript's session %s was last active %s: not old", s.ID, last)
				}
				want[s.ID] = [2]time.Time{first, last}
			}
			check := func(store session.Store, when string) {
				t.Helper()
				p, err := store.List(ctx, session.ListOptions{Archived: true})
				if err != nil {
					t.Fatal(err)
				}
				seen := 0
				for _, info := range p.Sessions {
					w, ok := want[info.ID]
					if !ok {
						continue
					}
					seen++
					if !info.Updated.Equal(w[1]) {
						t.Errorf("%s: %s listed as updated %s, want its last activity %s", when, info.ID, info.Updated, w[1])
					}
					if info.Created.After(w[0]) || info.Created.Before(w[0].AddDate(0, 0, -1)) {
						t.Errorf("%s: %s listed as created %s, its first entry is of %s", when, info.ID, info.Created, w[0])
					}
				}
				if seen != len(want) {
					t.Errorf("%s: %d of %d imported sessions listed", when, seen, len(want))
				}
				res, err := session.Sweep(ctx, store, &session.SweepPolicy{OlderThan: 90 * 24 * time.Hour, ArchiveOnly: true, IncludeLabeled: true, DryRun: true})
				if err != nil {
					t.Fatal(err)
				}
				for id := range want {
					if !slices.Contains(res.Archived, id) {
						t.Errorf("%s: a sweep of sessions older than 90 days would not archive %s: %+v", when, id, res)
					}
				}
			}
			check(store, "after the import")
			// Importing again skips it, and leaves its times.
			if rep, err := Import(ctx, store, tc.path, nil); err != nil || len(rep.Imported) > 0 {
				t.Fatalf("import again: %+v, %v", rep, err)
			}
			check(store, "after importing again")
			if err := store.Close(); err != nil {
				t.Fatal(err)
			}
			reopened, err := session.OpenFileStore(root, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer reopened.Close()
			check(reopened, "reopened")
			// A session taken up again is updated now.
			id := rep.Imported[0].ID
			log, err := reopened.Load(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			e, err := session.NewEntry(session.TypeLabel, "taken-up", log.Entries[len(log.Entries)-1].ID(), time.Now(), map[string]string{"label": "again"})
			if err != nil {
				t.Fatal(err)
			}
			if err := reopened.Append(ctx, id, session.AppendOptions{}, e); err != nil {
				t.Fatal(err)
			}
			p, err := reopened.List(ctx, session.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, info := range p.Sessions {
				if info.ID == id && info.Updated.Before(start) {
					t.Errorf("appended to now, %s is listed as updated %s", id, info.Updated)
				}
			}
		})
	}
}

// TestImportKeepsSourceTimesMemoryStore: the same in a MemoryStore.
func TestImportKeepsSourceTimesMemoryStore(t *testing.T) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	rep, err := Import(ctx, store, oldTranscripts[1].path, nil)
	if err != nil || len(rep.Imported) != 1 {
		t.Fatalf("%+v, %v", rep, err)
	}
	id := rep.Imported[0].ID
	_, last := sourceTimes(t, store, id)
	p, err := store.List(ctx, session.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sessions) != 1 || !p.Sessions[0].Updated.Equal(last) {
		t.Fatalf("listed %+v, want updated %s", p.Sessions, last)
	}
}

// TestImportAgainRepairsTimes: a session an earlier version imported,
// listed as updated at the import, gets the source's time when it is
// imported again (skipped: the store holds it all).
func TestImportAgainRepairsTimes(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	store, err := session.OpenFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Import(ctx, store, oldTranscripts[0].path, nil)
	if err != nil || len(rep.Imported) != 1 {
		t.Fatalf("%+v, %v", rep, err)
	}
	id := rep.Imported[0].ID
	_, last := sourceTimes(t, store, id)
	// What an earlier version left: the session updated at the import,
	// in the file's time and in the listing index on disk.
	log, err := store.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := session.SetUpdated(ctx, store, id, session.MarkOf(log), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	store, err = session.OpenFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rep, err = Import(ctx, store, oldTranscripts[0].path, nil)
	if err != nil || len(rep.Skipped) != 1 {
		t.Fatalf("%+v, %v", rep, err)
	}
	p, err := store.List(ctx, session.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sessions) != 1 || !p.Sessions[0].Updated.Equal(last) {
		t.Fatalf("listed %+v, want updated %s", p.Sessions, last)
	}
}

// TestImportTimesNeverAhead: a source whose clock was ahead is listed
// as updated no later than the import; one without times keeps the
// import's.
func TestImportTimesNeverAhead(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		when time.Time
	}{{"ahead", time.Now().AddDate(1, 0, 0)}, {"no time", time.Time{}}} {
		t.Run(tc.name, func(t *testing.T) {
			store := session.NewMemoryStore()
			e, err := messageEntry("e1", "", tc.when, session.UserText("hi"))
			if err != nil {
				t.Fatal(err)
			}
			p := &Parsed{Format: "test", Source: "x", Header: session.Header{ID: "s1", Timestamp: tc.when}, Entries: []session.Entry{e}}
			start := time.Now()
			rep := &Report{}
			if err := write(ctx, store, p, "", &Options{}, rep); err != nil {
				t.Fatal(err)
			}
			pg, err := store.List(ctx, session.ListOptions{})
			if err != nil || len(pg.Sessions) != 1 {
				t.Fatalf("%+v, %v", pg, err)
			}
			if u := pg.Sessions[0].Updated; u.Before(start) || u.After(time.Now()) {
				t.Fatalf("listed as updated %s, want the time of the import", u)
			}
		})
	}
}
