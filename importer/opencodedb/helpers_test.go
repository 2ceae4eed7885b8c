package opencodedb_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	_ "github.com/agentsession/session/importer/opencodedb"
)

// OpenCode's schema as its migrations create it (testdata/migration,
// see testdata/PROVENANCE.md): the first, which 1.2.0 shipped, and the
// later ones that touch the tables this package reads.
var (
	firstSchema = []string{"20260127222353_familiar_lady_ursula"}
	laterSchema = []string{"20260127222353_familiar_lady_ursula", "20260227213759_add_session_workspace_id",
		"20260312043431_session_message_cursor", "20260427172553_slow_nightmare", "20260428004200_add_session_path",
		"20260501142318_next_venus", "20260510033149_session_usage", "20260511173437_session-metadata"}
)

// The fixtures importer's own tests read: `opencode export` files.
var (
	everyPart   = filepath.Join("..", "testdata", "opencode", "session-export.json")
	parentChild = filepath.Join("..", "testdata", "opencode", "parent-and-child.json")
)

// dsn is the URI of the database file at path (a test's directory may
// hold '#' or '?'), with the query q.
func dsn(path, q string) string {
	u := "file:" + (&url.URL{Path: path}).EscapedPath()
	if q != "" {
		u += "?" + q
	}
	return u
}

// openDB opens (creating) the SQLite database at path for writing.
func openDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, "_pragma=foreign_keys(0)&_pragma=synchronous(OFF)"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// migrate runs OpenCode's migrations on db, statement by statement, as
// drizzle's migrator does.
func migrate(t testing.TB, db *sql.DB, names []string) {
	t.Helper()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("testdata", "migration", n+".sql"))
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range strings.Split(string(b), "--> statement-breakpoint") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if _, err := db.Exec(stmt); err != nil {
				t.Fatalf("migration %s: %v\n%s", n, err, stmt)
			}
		}
	}
}

// without is the JSON object raw without the members named, the others
// in their order: what OpenCode 1.2 keeps as a row's data.
func without(t testing.TB, raw json.RawMessage, drop ...string) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", raw)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for dec.More() {
		tok, _ := dec.Token()
		k := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		skip := false
		for _, d := range drop {
			skip = skip || k == d
		}
		if skip {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		var c bytes.Buffer
		json.Compact(&c, v)
		b.Write(c.Bytes())
	}
	b.WriteByte('}')
	return b.String()
}

// obj decodes raw into a map (nil for anything else).
func obj(raw json.RawMessage) map[string]json.RawMessage {
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) != nil {
		return nil
	}
	return o
}

func jstr(raw json.RawMessage) string {
	var s string
	json.Unmarshal(raw, &s)
	return s
}

func jnull(raw json.RawMessage) any {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var v any
	json.Unmarshal(raw, &v)
	if f, ok := v.(float64); ok {
		return int64(f)
	}
	if s, ok := v.(string); ok {
		return s
	}
	return string(raw)
}

// now stands for Date.now() where OpenCode's migration takes it.
const now = int64(1761800000000)

// insertExports writes the sessions of an export (or a list of them)
// into db as OpenCode 1.2's JSON migration writes the storage tree: a
// row a session, message and part, ids in their columns and the rest of
// each as its data.
func insertExports(t testing.TB, db *sql.DB, doc []byte) {
	t.Helper()
	var exports []json.RawMessage
	if json.Unmarshal(doc, &exports) != nil {
		exports = []json.RawMessage{doc}
	}
	for _, e := range exports {
		o := obj(e)
		info := obj(o["info"])
		tm := obj(info["time"])
		sum := obj(info["summary"])
		share := obj(info["share"])
		sid := jstr(info["id"])
		proj := jstr(info["projectID"])
		if _, err := db.Exec(`INSERT OR IGNORE INTO project (id, worktree, time_created, time_updated, sandboxes) VALUES (?, '/', ?, ?, '[]')`, proj, now, now); err != nil {
			t.Fatal(err)
		}
		orNow := func(raw json.RawMessage) any {
			if v := jnull(raw); v != nil {
				return v
			}
			return now
		}
		if _, err := db.Exec(`INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, share_url,
			summary_additions, summary_deletions, summary_files, revert, permission,
			time_created, time_updated, time_compacting, time_archived) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
			sid, proj, jnull(info["parentID"]), jstr(info["slug"]), jstr(info["directory"]), jstr(info["title"]), jstr(info["version"]),
			jnull(share["url"]), jnull(sum["additions"]), jnull(sum["deletions"]), jnull(sum["files"]),
			jnull(info["revert"]), jnull(info["permission"]), orNow(tm["created"]), orNow(tm["updated"]),
			jnull(tm["compacting"]), jnull(tm["archived"])); err != nil {
			t.Fatal(err)
		}
		var msgs []json.RawMessage
		json.Unmarshal(o["messages"], &msgs)
		for _, m := range msgs {
			mo := obj(m)
			mi := obj(mo["info"])
			mid := jstr(mi["id"])
			mt := obj(mi["time"])
			if _, err := db.Exec(`INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?,?,?,?,?)`,
				mid, sid, orNow(mt["created"]), orNow(mt["updated"]), without(t, mo["info"], "id", "sessionID")); err != nil {
				t.Fatal(err)
			}
			var parts []json.RawMessage
			json.Unmarshal(mo["parts"], &parts)
			for _, p := range parts {
				pt := obj(obj(p)["time"])
				if _, err := db.Exec(`INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?,?,?,?,?,?)`,
					jstr(obj(p)["id"]), mid, sid, orNow(pt["created"]), orNow(pt["updated"]), without(t, p, "id", "messageID", "sessionID")); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// ascending gives the messages and parts of an export (or of each of a
// list of them) ids that sort in their order (OpenCode's ascending ids:
// the time, then a counter) and are unique in the database, renaming
// every quoted occurrence within the export.
func ascending(t testing.TB, doc []byte) []byte {
	t.Helper()
	var exports []json.RawMessage
	list := json.Unmarshal(doc, &exports) == nil
	if !list {
		exports = []json.RawMessage{doc}
	}
	n := 0
	var out []string
	for _, e := range exports {
		rename := map[string]string{}
		next := func(prefix, old string) {
			if old != "" && rename[old] == "" {
				n++
				rename[old] = fmt.Sprintf("%s_9a1b2c3d%04dAscendingIdForTest", prefix, n)
			}
		}
		var msgs []json.RawMessage
		json.Unmarshal(obj(e)["messages"], &msgs)
		for _, m := range msgs {
			mo := obj(m)
			if mo == nil {
				continue
			}
			next("msg", jstr(obj(mo["info"])["id"]))
			var parts []json.RawMessage
			json.Unmarshal(mo["parts"], &parts)
			for _, p := range parts {
				next("prt", jstr(obj(p)["id"]))
			}
		}
		olds := make([]string, 0, len(rename))
		for o := range rename {
			olds = append(olds, o)
		}
		sort.Slice(olds, func(i, j int) bool { return len(olds[i]) > len(olds[j]) })
		s := string(e)
		for _, o := range olds {
			s = strings.ReplaceAll(s, `"`+o+`"`, `"`+rename[o]+`"`)
		}
		out = append(out, s)
	}
	if !list {
		return []byte(out[0])
	}
	return []byte("[" + strings.Join(out, ",") + "]")
}

// dropMessage removes message i of an export.
func dropMessage(t testing.TB, doc []byte, i int) []byte {
	t.Helper()
	o := obj(doc)
	var msgs []json.RawMessage
	json.Unmarshal(o["messages"], &msgs)
	msgs = append(msgs[:i:i], msgs[i+1:]...)
	m, _ := json.Marshal(msgs)
	return []byte(`{"info":` + string(o["info"]) + `,"messages":` + string(m) + `}`)
}

// fixture reads an export fixture with ascending ids, message drop (when
// >= 0) left out.
func fixture(t testing.TB, path string, drop int) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if drop >= 0 {
		b = dropMessage(t, b, drop)
	}
	return ascending(t, b)
}

// buildDB writes a database at dir/opencode.db holding the exports of
// doc, with OpenCode's schema of names, and returns its path. The
// database is closed (checkpointed) when it returns.
func buildDB(t testing.TB, dir string, names []string, doc []byte) string {
	t.Helper()
	path := filepath.Join(dir, "opencode.db")
	// No fsync: a test's database need not survive a crash.
	db, err := sql.Open("sqlite", dsn(path, "_pragma=synchronous(OFF)&_pragma=journal_mode(MEMORY)"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	migrate(t, db, names)
	if doc != nil {
		insertExports(t, db, doc)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
