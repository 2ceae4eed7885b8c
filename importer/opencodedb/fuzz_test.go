package opencodedb_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/importer"
)

// importFuzzed imports the database at path into a new store: it must
// not panic, and must end (a guard of a minute on the import's context;
// a database is copied and read under it). What it stores must open.
func importFuzzed(t *testing.T, path string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := session.NewMemoryStore()
	rep, _ := importer.Import(ctx, store, path, nil)
	if ctx.Err() != nil {
		t.Fatalf("the import of %s did not end within a minute", path)
	}
	if rep == nil {
		return
	}
	for _, s := range rep.Imported {
		sess, err := session.Open(context.Background(), store, s.ID)
		if err != nil {
			t.Fatalf("open %s: %v", s.ID, err)
		}
		_ = sess.Context()
		sess.Close()
	}
}

// FuzzDatabaseFile: any bytes as opencode.db (SQLite's own format
// damaged anywhere: pages, schema, records) are read without a panic or
// a hang; an error for the file is the worst outcome.
func FuzzDatabaseFile(f *testing.F) {
	dir := f.TempDir()
	path := buildDB(f, dir, firstSchema, fixture(f, parentChild, -1))
	valid, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add(valid[:100])
	f.Add([]byte("SQLite format 3\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		path := filepath.Join(t.TempDir(), "opencode.db")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		importFuzzed(t, path)
	})
}

// FuzzDatabaseRows: rows of any content in OpenCode's tables (ids,
// parents naming any session or themselves, data of any bytes, to-do
// items) import without a panic, and what is imported opens.
func FuzzDatabaseRows(f *testing.F) {
	// An empty database of OpenCode's schema, copied for each input.
	schema, err := os.ReadFile(buildDB(f, f.TempDir(), firstSchema, nil))
	if err != nil {
		f.Fatal(err)
	}
	f.Add("ses_a", "", "msg_a", `{"role":"user","time":{"created":1}}`, "prt_a", `{"type":"text","text":"hi"}`, "write tests")
	f.Add("ses_a", "ses_a", "msg_a", `{"role":"assistant","summary":true,"tokens":{"input":"x"}}`, "prt_a", `{"type":"tool","state":{"status":"completed","input":7}}`, "")
	f.Add("../../etc", "ses_b", "msg_a", `[1]`, "prt_a", `{"id":"other","type":"compaction","tail_start_id":"msg_a"}`, "\x00")
	f.Add("", "ses_", "", `{"role":"user","id":5,"sessionID":null}`, "", `not json`, "x")
	f.Fuzz(func(t *testing.T, sid, parent, mid, mdata, pid, pdata, todo string) {
		if len(mdata)+len(pdata)+len(todo) > 64<<10 {
			return
		}
		path := filepath.Join(t.TempDir(), "opencode.db")
		if err := os.WriteFile(path, schema, 0o644); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("sqlite", dsn(path, "_pragma=foreign_keys(0)&_pragma=synchronous(OFF)&_pragma=journal_mode(MEMORY)"))
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		var p any
		if parent != "" {
			p = parent
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated) VALUES (?, 'p', ?, 's', '/x', 't', '1.2.0', 1, 2)`, []any{sid, p}},
			{`INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated) VALUES (?, 'p', ?, 's', '/x', 't', '1.2.0', 1, 2)`, []any{parent + "2", sid}},
			{`INSERT INTO message VALUES (?, ?, 1, 1, ?)`, []any{mid, sid, mdata}},
			{`INSERT INTO part VALUES (?, ?, ?, 1, 1, ?)`, []any{pid, mid, sid, pdata}},
			{`INSERT INTO part VALUES (?, ?, ?, 1, 1, ?)`, []any{pid + "2", mid, sid, mdata}},
			{`INSERT INTO todo VALUES (?, ?, 'pending', 'high', 0, 1, 1)`, []any{sid, todo}},
		} {
			db.Exec(q.sql, q.args...) // a row a constraint refuses is left out
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		importFuzzed(t, path)
	})
}
