package opencodedb_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/importer"
	"github.com/agentsession/session/importer/opencodedb"
)

func importPath(t *testing.T, store session.Store, path string) *importer.Report {
	t.Helper()
	rep, err := importer.Import(context.Background(), store, path, nil)
	if err != nil {
		t.Fatalf("import %s: %v (report %+v)", path, err, rep)
	}
	return rep
}

// sameJSON reports whether a and b are the same JSON value, whatever the
// order of their objects' members.
func sameJSON(a, b []byte) bool {
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	return da.Decode(&x) == nil && db.Decode(&y) == nil && reflect.DeepEqual(x, y)
}

// sameSessions fails unless the stores hold the same sessions: ids,
// parents, titles, directories, and entries that are the same JSON (an
// entry keeping a part whole may hold its members in another order: an
// export of OpenCode 1.2 puts a part's ids last).
func sameSessions(t *testing.T, want, got session.Store) {
	t.Helper()
	ctx := context.Background()
	ids := func(s session.Store) []string {
		page, err := s.List(ctx, session.ListOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, i := range page.Sessions {
			out = append(out, i.ID)
		}
		sort.Strings(out)
		return out
	}
	wi, gi := ids(want), ids(got)
	if !reflect.DeepEqual(wi, gi) {
		t.Fatalf("sessions %v, want %v", gi, wi)
	}
	for _, id := range wi {
		w, _ := want.Load(ctx, id)
		g, _ := got.Load(ctx, id)
		if w.Header.ParentSession != g.Header.ParentSession || w.Header.Title != g.Header.Title || w.Header.Cwd != g.Header.Cwd ||
			!w.Header.Timestamp.Equal(g.Header.Timestamp) {
			t.Errorf("%s: header %+v, want %+v", id, g.Header, w.Header)
		}
		if len(w.Entries) != len(g.Entries) {
			t.Errorf("%s: %d entries, want %d", id, len(g.Entries), len(w.Entries))
			continue
		}
		for i := range w.Entries {
			if !sameJSON(w.Entries[i].JSON(), g.Entries[i].JSON()) {
				t.Errorf("%s: entry %d:\n got %s\nwant %s", id, i, g.Entries[i].JSON(), w.Entries[i].JSON())
			}
		}
	}
}

// TestDatabaseImportsAsItsExport: a session of OpenCode's database
// imports as the `opencode export` of that session: the same entries,
// subagents' sessions as children of their parent's. Importing the
// export first and the database then (the same sessions, after
// OpenCode 1.2 moved them) stores nothing twice.
func TestDatabaseImportsAsItsExport(t *testing.T) {
	for _, c := range []struct {
		name, fixture string
		drop          int
		schema        []string
	}{
		{"every part type", everyPart, 8, firstSchema},
		{"parent and child", parentChild, -1, firstSchema},
		{"every part type, later schema", everyPart, 8, laterSchema},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			doc := fixture(t, c.fixture, c.drop)
			exp := filepath.Join(dir, "export.json")
			if err := os.WriteFile(exp, doc, 0o644); err != nil {
				t.Fatal(err)
			}
			db := buildDB(t, dir, c.schema, doc)

			want := session.NewMemoryStore()
			wantRep := importPath(t, want, exp)
			got := session.NewMemoryStore()
			rep := importPath(t, got, db)
			if len(rep.Errors) != 0 || len(rep.Imported) != len(wantRep.Imported) {
				t.Fatalf("import of the database: %+v", rep)
			}
			for i := range rep.Imported {
				if rep.Imported[i].ID != wantRep.Imported[i].ID || rep.Imported[i].ParentSession != wantRep.Imported[i].ParentSession {
					t.Errorf("imported %+v, want %+v (parents first)", rep.Imported[i], wantRep.Imported[i])
				}
			}
			sameSessions(t, want, got)

			again := importPath(t, want, db)
			if len(again.Errors) != 0 || len(again.Skipped) != len(wantRep.Imported) {
				t.Errorf("the database after its export: %+v", again)
			}
		})
	}
}

// TestDatabaseNotOpenedInPlace: the user's database, in WAL mode with
// OpenCode still holding it open, is read from a copy: what only its
// -wal holds imports, and nothing beside it changes or appears.
func TestDatabaseNotOpenedInPlace(t *testing.T) {
	dir := t.TempDir()
	path := buildDB(t, dir, firstSchema, nil)
	// OpenCode: WAL mode, a connection open, rows written since the
	// last checkpoint.
	live, err := sql.Open("sqlite", dsn(path, "_pragma=journal_mode(WAL)&_pragma=wal_autocheckpoint(0)"))
	if err != nil {
		t.Fatal(err)
	}
	live.SetMaxOpenConns(1)
	defer live.Close()
	insertExports(t, live, fixture(t, parentChild, -1))
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("no -wal beside the live database: %v", err)
	}
	before := snapshot(t, dir)

	store := session.NewMemoryStore()
	rep := importPath(t, store, dir)
	if len(rep.Imported) != 2 || len(rep.Errors) != 0 {
		t.Fatalf("import of %s: %+v", dir, rep)
	}
	var shm bool
	for _, n := range rep.NotImported {
		switch n.Path {
		case path + "-shm":
			shm = true
		default:
			t.Errorf("%s not imported: %v", n.Path, n.Err)
		}
	}
	if !shm {
		t.Errorf("the -shm is not named: %v", rep.NotImported)
	}
	if after := snapshot(t, dir); !reflect.DeepEqual(before, after) {
		t.Errorf("the directory changed:\nbefore %v\n after %v", before, after)
	}
}

// snapshot is every file of dir with its size and content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// TestDatabaseRecordsNotRead: a part whose data is no JSON object, or
// over the cap, is reported in its session's Malformed and the rest
// imports; a session in a cycle of parents imports once; a database
// that is not OpenCode's is an error saying so.
func TestDatabaseRecordsNotRead(t *testing.T) {
	defer opencodedb.SetMaxRecord(4096)()
	dir := t.TempDir()
	path := buildDB(t, dir, firstSchema, fixture(t, parentChild, -1))
	db := openDB(t, path)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	var mid string
	if err := db.QueryRow(`SELECT id FROM message WHERE session_id = 'ses_parentAAAAAAAAAAAAAAAAAA' ORDER BY id LIMIT 1`).Scan(&mid); err != nil {
		t.Fatal(err)
	}
	exec(`INSERT INTO part VALUES ('prt_zz1', ?, 'ses_parentAAAAAAAAAAAAAAAAAA', 1, 1, '{"type":"text","text":')`, mid)
	exec(`INSERT INTO part VALUES ('prt_zz2', ?, 'ses_parentAAAAAAAAAAAAAAAAAA', 1, 1, ?)`, mid, `{"type":"text","text":"`+strings.Repeat("x", 5000)+`"}`)
	exec(`INSERT INTO part VALUES ('prt_zz3', ?, 'ses_parentAAAAAAAAAAAAAAAAAA', 1, 1, '[1,2]')`, mid)
	exec(`INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated) VALUES
		('ses_cycleA', 'prj_1', 'ses_cycleB', 'a', '/x', 'A', '1.2.0', 5, 5), ('ses_cycleB', 'prj_1', 'ses_cycleA', 'b', '/x', 'B', '1.2.0', 6, 6)`)
	exec(`INSERT INTO todo VALUES ('ses_parentAAAAAAAAAAAAAAAAAA', 'Write the tests', 'in_progress', 'high', 0, 1, 1)`)
	db.Close()

	store := session.NewMemoryStore()
	rep := importPath(t, store, path)
	byID := map[string]importer.Session{}
	for _, s := range rep.Imported {
		byID[s.ID] = s
	}
	if len(rep.Imported) != 4 || len(rep.Errors) != 0 {
		t.Fatalf("imported %+v, errors %v", rep.Imported, rep.Errors)
	}
	p := byID["ses_parentAAAAAAAAAAAAAAAAAA"]
	if len(p.Malformed) != 3 {
		t.Fatalf("malformed: %v", p.Malformed)
	}
	for _, m := range p.Malformed {
		if !errors.Is(m.Err, importer.ErrOpenCodeRecord) || m.Path != path {
			t.Errorf("malformed %v (%s)", m.Err, m.Path)
		}
	}
	log, err := store.Load(context.Background(), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := log.Header.Extra.Get("opencodeTodo"); !ok || !strings.Contains(string(v), "Write the tests") {
		t.Errorf("the to-do list: %s", v)
	}
	if len(log.Entries) == 0 {
		t.Errorf("the parent's session lost its entries")
	}

	other := filepath.Join(t.TempDir(), "other.db")
	o := openDB(t, other)
	if _, err := o.Exec(`CREATE TABLE notes (id integer primary key, body text)`); err != nil {
		t.Fatal(err)
	}
	o.Close()
	_, err = importer.Import(context.Background(), session.NewMemoryStore(), other, nil)
	if !errors.Is(err, opencodedb.ErrNotOpenCode) {
		t.Errorf("a database that is not OpenCode's: %v", err)
	}
}
