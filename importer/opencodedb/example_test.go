package opencodedb_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/importer"
	_ "github.com/agentsession/session/importer/opencodedb"
)

// exampleDB writes an OpenCode 1.2 database at dir/opencode.db: the
// tables as OpenCode's first migration creates them, and a session of
// one question and its answer, as OpenCode writes them.
func exampleDB(dir string) string {
	path := filepath.Join(dir, "opencode.db")
	db, err := sql.Open("sqlite", dsn(path, ""))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	schema, err := os.ReadFile(filepath.Join("testdata", "migration", "20260127222353_familiar_lady_ursula.sql"))
	if err != nil {
		panic(err)
	}
	stmts := strings.Split(string(schema), "--> statement-breakpoint")
	stmts = append(stmts,
		`INSERT INTO project VALUES ('prj_1', '/home/dev/web', 'git', NULL, NULL, NULL, 1761700000000, 1761700000000, NULL, '[]')`,
		`INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated)
			VALUES ('ses_4e1f0a2b3ffeQuestion0001', 'prj_1', 'calm-otter', '/home/dev/web', 'Why does the build fail?', '1.2.0', 1761700000000, 1761700009000)`,
		`INSERT INTO message VALUES ('msg_b2c3d4e5f001Question001', 'ses_4e1f0a2b3ffeQuestion0001', 1761700000000, 1761700000000,
			'{"role":"user","time":{"created":1761700000000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}')`,
		`INSERT INTO part VALUES ('prt_b2c3d4e5f002Question001', 'msg_b2c3d4e5f001Question001', 'ses_4e1f0a2b3ffeQuestion0001', 1761700000000, 1761700000000,
			'{"type":"text","text":"Why does the build fail?"}')`,
		`INSERT INTO message VALUES ('msg_b2c3d4e5f003Answer00001', 'ses_4e1f0a2b3ffeQuestion0001', 1761700001000, 1761700009000,
			'{"role":"assistant","time":{"created":1761700001000,"completed":1761700009000},"parentID":"msg_b2c3d4e5f001Question001","modelID":"claude-sonnet-4-5","providerID":"anthropic","mode":"build","agent":"build","path":{"cwd":"/home/dev/web","root":"/home/dev/web"},"cost":0.0123,"tokens":{"input":1200,"output":80,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}')`,
		`INSERT INTO part VALUES ('prt_b2c3d4e5f004Answer00001', 'msg_b2c3d4e5f003Answer00001', 'ses_4e1f0a2b3ffeQuestion0001', 1761700001000, 1761700009000,
			'{"type":"text","text":"A dependency is missing from the Makefile."}')`,
	)
	for _, s := range stmts {
		if strings.TrimSpace(s) == "" {
			continue
		}
		if _, err := db.Exec(s); err != nil {
			panic(err)
		}
	}
	return path
}

// With this package imported (for its effect), Import reads OpenCode's
// SQLite database: from a copy, never the user's file in place.
func Example() {
	dir, err := os.MkdirTemp("", "opencode-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := exampleDB(dir)

	ctx := context.Background()
	store := session.NewMemoryStore()
	rep, err := importer.Import(ctx, store, path, nil)
	if err != nil {
		panic(err)
	}
	for _, imp := range rep.Imported {
		s, err := session.Open(ctx, store, imp.ID)
		if err != nil {
			panic(err)
		}
		for _, m := range s.Context().Messages {
			fmt.Printf("%s: %s\n", m.Role, m.Text())
		}
		fmt.Printf("%q, %s, cost %.4f\n", s.Title(), imp.Format, s.Usage().Cost.Total)
		s.Close()
	}
	// Output:
	// user: Why does the build fail?
	// assistant: A dependency is missing from the Makefile.
	// "Why does the build fail?", opencode, cost 0.0123
}
