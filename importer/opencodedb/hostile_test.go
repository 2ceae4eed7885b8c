package opencodedb_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/importer"
	"github.com/agentsession/session/importer/opencodedb"
)

// A database built to exhaust the reader is refused or read in bounded
// time and memory: the tables it reads must be tables (a view can
// compute without end or make a gigabyte per row), hold no generated
// columns, and a file that is no SQLite database past its first bytes
// is not copied.
func TestDatabaseHostile(t *testing.T) {
	for _, c := range []struct {
		name string
		sql  []string
	}{
		{"a view with a recursive CTE", []string{
			`CREATE TABLE message (id text, session_id text, data text)`,
			`CREATE TABLE part (id text, message_id text, session_id text, data text)`,
			`CREATE VIEW session AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n) SELECT CAST(i AS TEXT) AS id, NULL AS parent_id FROM n`,
		}},
		{"a view of zeroblobs", []string{
			`CREATE TABLE session (id text primary key)`,
			`INSERT INTO session VALUES ('s1')`,
			`CREATE TABLE part (id text, message_id text, session_id text, data text)`,
			`CREATE VIEW message AS SELECT 'm' || x AS id, 's1' AS session_id, zeroblob(1000000000) AS data FROM (SELECT 1 AS x UNION ALL SELECT 2)`,
		}},
		{"a default of a megabyte, copied out for every row", []string{
			`CREATE TABLE session (id text primary key)`,
			`INSERT INTO session VALUES ('s1')`,
			`CREATE TABLE message (id text, session_id text, data text)`,
			`INSERT INTO message VALUES ('m1', 's1', '{"role":"user"}')`,
			`CREATE TABLE part (message_id text, data text)`,
			`INSERT INTO part VALUES ('m1', NULL), ('m1', NULL), ('m1', NULL)`,
			`PRAGMA writable_schema = ON`,
			`UPDATE sqlite_master SET sql = 'CREATE TABLE part (message_id text, data text, id text DEFAULT ''` + strings.Repeat("x", 1<<20) + `'')' WHERE name = 'part'`,
		}},
		{"a generated column", []string{
			`CREATE TABLE session (id text primary key)`,
			`INSERT INTO session VALUES ('s1')`,
			`CREATE TABLE message (id text, session_id text, n int, data blob GENERATED ALWAYS AS (zeroblob(1000000000)) VIRTUAL)`,
			`INSERT INTO message (id, session_id, n) VALUES ('m1', 's1', 1)`,
			`CREATE TABLE part (id text, message_id text, session_id text, data text)`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "opencode.db")
			db := openDB(t, path)
			for _, s := range c.sql {
				if _, err := db.Exec(s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			db.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang, not a slow machine
			defer cancel()
			_, err := importer.Import(ctx, session.NewMemoryStore(), path, nil)
			if ctx.Err() != nil {
				t.Fatal("the import did not end")
			}
			if !errors.Is(err, opencodedb.ErrNotOpenCode) {
				t.Fatalf("err %v, want ErrNotOpenCode", err)
			}
		})
	}
}

// A file with SQLite's magic and nothing a database holds past it (a
// sparse file of gigabytes, say) is refused from its header, not copied.
func TestDatabaseSparseNotCopied(t *testing.T) {
	path := filepath.Join(t.TempDir(), "opencode.db")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("SQLite format 3\x00"); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 30); err != nil {
		t.Skip(err)
	}
	f.Close()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	_, err = importer.Import(context.Background(), session.NewMemoryStore(), path, nil)
	if err == nil {
		t.Fatal("imported")
	}
	if !errors.Is(err, importer.ErrNotSQLite) {
		t.Errorf("err %v, want ErrNotSQLite", err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("copied: %v", ents)
	}
}

// Sessions are found by an index, not a scan per session: 20,000
// sessions with integer ids (CAST defeats an index) and no index on
// the message table import in a time that does not grow with their
// square. The bound is loose (a minute, for what takes seconds on a
// busy machine; a scan per session took two): it fails on the
// quadratic reader only.
func TestDatabaseManySessions(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("builds a database of 20,000 sessions; timed (the race detector slows SQLite tenfold)")
	}
	path := filepath.Join(t.TempDir(), "opencode.db")
	db := openDB(t, path)
	for _, s := range []string{
		`CREATE TABLE session (id, parent_id, title)`,
		`CREATE TABLE message (id text, session_id text, data text)`,
		`CREATE TABLE part (id text, message_id text, session_id text, data text)`,
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 20000) INSERT INTO session SELECT i, NULL, 't' || i FROM n`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	db.Close()
	store := session.NewMemoryStore()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := importer.Import(ctx, store, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Imported) != 20000 {
		t.Fatalf("imported %d", len(rep.Imported))
	}
}
