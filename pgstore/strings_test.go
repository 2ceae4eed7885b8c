package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
	"github.com/agentsession/session/storekit"
)

// oddHeader is a header whose strings hold NUL, other control
// characters and bytes that are not UTF-8.
func oddHeader(id string) session.Header {
	return session.Header{
		Version: session.CurrentVersion, ID: id, Timestamp: time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC),
		Cwd: "/w/a\x00b\x01\xffc\\d", Title: "t\x00 \xfe \u2028 end", ParentSession: "/s/2026_p-1.jsonl\x00",
	}
}

// infoOf lists the one session of cwd.
func infoOf(t *testing.T, s session.Store, cwd string) session.SessionInfo {
	t.Helper()
	p, err := s.List(context.Background(), session.ListOptions{Cwd: cwd, Archived: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sessions) != 1 {
		t.Fatalf("listing of cwd %q: %+v", cwd, p.Sessions)
	}
	return p.Sessions[0]
}

// TestUnusualStringsRows: the columns hold a header's strings as the JSON
// does, NUL included, through Create, Append (a session_info entry's
// name), Rewrite and the simple protocol; the parent filter still works
// on a parent named with odd bytes around a valid id, and parent_id stays
// ” for one that names none.
func TestUnusualStringsRows(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	h := oddHeader("odd")
	if err := s.Create(ctx, h); err != nil {
		t.Fatal(err)
	}
	cwd, title := storekit.StoredString(h.Cwd), storekit.StoredString(h.Title)
	var rowCwd, rowTitle, rowParent []byte
	var parentID string
	if err := pool.QueryRow(ctx, `SELECT cwd_utf8, title_utf8, parent_session_utf8, parent_id FROM agentsession_sessions WHERE id = 'odd'`).
		Scan(&rowCwd, &rowTitle, &rowParent, &parentID); err != nil {
		t.Fatal(err)
	}
	if string(rowCwd) != cwd || string(rowTitle) != title || string(rowParent) != h.ParentSession || parentID != "" {
		t.Fatalf("row: %q %q %q %q", rowCwd, rowTitle, rowParent, parentID)
	}

	// A session_info entry names it: the name as JSON decodes it.
	named, err := session.NewEntry(session.TypeSessionInfo, "i1", "", time.Now(), session.SessionInfoEntry{Name: " n\x00ame\xff "})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "odd", session.AppendOptions{}, named); err != nil {
		t.Fatal(err)
	}
	if in := infoOf(t, s, h.Cwd); in.Title != "n\x00ame\uFFFD" || in.Cwd != cwd || in.ParentSession != h.ParentSession {
		t.Fatalf("after the session_info entry: %+v", in)
	}
	// An append without one keeps the title.
	if err := s.Append(ctx, "odd", session.AppendOptions{IfLast: "i1"}, plainEntry(t, "m1", "i1")); err != nil {
		t.Fatal(err)
	}
	if in := infoOf(t, s, cwd); in.Title != "n\x00ame\uFFFD" {
		t.Fatalf("after a plain entry: %+v", in)
	}

	// Rewrite: new strings, a parent that names a session.
	h2 := h
	h2.Cwd, h2.Title, h2.ParentSession = "/w/\x00new", "new\x00title", "/s/2026-01-15_parent-2.jsonl"
	if err := s.Rewrite(ctx, "odd", session.RewriteOptions{IfLast: "m1"}, h2, []session.Entry{plainEntry(t, "m2", "")}); err != nil {
		t.Fatal(err)
	}
	in := infoOf(t, s, "/w/\x00new")
	if in.Title != "new\x00title" || in.ParentSession != h2.ParentSession || in.Entries != 1 {
		t.Fatalf("after Rewrite: %+v", in)
	}
	if p, err := s.List(ctx, session.ListOptions{Cwd: h.Cwd}); err != nil || len(p.Sessions) != 0 {
		t.Fatalf("listing of the old cwd after Rewrite: %v %v", p, err)
	}
	if p, err := s.List(ctx, session.ListOptions{ParentSession: "parent-2"}); err != nil || len(p.Sessions) != 1 {
		t.Fatalf("listing by parent: %v %v", p, err)
	}
	l, err := s.Load(ctx, "odd")
	if err != nil {
		t.Fatal(err)
	}
	if l.Header.Cwd != h2.Cwd || l.Header.Title != h2.Title || l.Header.ParentSession != h2.ParentSession {
		t.Fatalf("loaded header %+v", l.Header)
	}

	// Over the simple protocol (as behind PgBouncer) too.
	ts := textStore(t, pool)
	h3 := oddHeader("odd-text")
	h3.Cwd += "\\x41" // a backslash, as bytea's text input would read it
	if err := ts.Create(ctx, h3); err != nil {
		t.Fatal(err)
	}
	if err := ts.Append(ctx, "odd-text", session.AppendOptions{}, named); err != nil {
		t.Fatal(err)
	}
	if in := infoOf(t, ts, h3.Cwd); in.Cwd != storekit.StoredString(h3.Cwd) || in.Title != "n\x00ame\uFFFD" || in.ParentSession != h3.ParentSession {
		t.Fatalf("over the simple protocol: %+v", in)
	}
	if in := infoOf(t, s, h3.Cwd); in.ID != "odd-text" || in.Cwd != storekit.StoredString(h3.Cwd) {
		t.Fatalf("written over the simple protocol, listed over the other: %+v", in)
	}
}

func plainEntry(t *testing.T, id, parent string) session.Entry {
	t.Helper()
	e, err := session.NewEntry("note", id, parent, time.Date(2026, 1, 15, 10, 0, 1, 0, time.UTC), map[string]any{"text": "x\x00y"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// textStore returns a Store on a simple-protocol pool on the schema pool
// works in.
func textStore(t *testing.T, pool *pgxpool.Pool) *pgstore.Store {
	t.Helper()
	cfg := pool.Config().Copy()
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	cfg.MaxConns = 2
	tp, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tp.Close)
	s, err := pgstore.New(context.Background(), tp, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCopyNULThroughPostgres: a pi file whose header and session_info
// entry hold "\u0000" (legitimate JSON) moves from a FileStore into
// PostgreSQL and back into a new FileStore unchanged, and every store
// lists it alike.
func TestCopyNULThroughPostgres(t *testing.T) {
	ctx := context.Background()
	pg, _ := newStore(t)
	data := []byte(`{"type":"session","version":3,"id":"nul-copy","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/home/dev/a\u0000b","title":"ti\u0000tle","parentSession":"/home/dev/.s/2026-01-14_p\u0000q.jsonl"}
{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":"a\u0000b"}}
{"type":"session_info","id":"i1","parentId":"m1","timestamp":"2026-01-15T10:00:02.000Z","name":"na\u0000me"}
`)
	src, id := fileStoreWith(t, data)
	// And one the FileStore created itself, with bytes that are not UTF-8.
	h := oddHeader("nul-created")
	if err := src.Create(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := src.Append(ctx, h.ID, session.AppendOptions{}, plainEntry(t, "m1", "")); err != nil {
		t.Fatal(err)
	}
	back, err := session.OpenFileStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	for _, c := range []struct{ id, cwd, title string }{
		{id, "/home/dev/a\x00b", "na\x00me"},
		{h.ID, storekit.StoredString(h.Cwd), storekit.StoredString(h.Title)},
	} {
		if err := session.Copy(ctx, pg, src, c.id); err != nil {
			t.Fatalf("copy %s into PostgreSQL: %v", c.id, err)
		}
		if err := session.Copy(ctx, back, pg, c.id); err != nil {
			t.Fatalf("copy %s back: %v", c.id, err)
		}
		want := loadText(t, src, c.id)
		if got := loadText(t, pg, c.id); got != want {
			t.Fatalf("%s in PostgreSQL:\n%s\nwant\n%s", c.id, got, want)
		}
		if got := loadText(t, back, c.id); got != want {
			t.Fatalf("%s after the round trip:\n%s\nwant\n%s", c.id, got, want)
		}
		wantInfo := infoOf(t, src, c.cwd)
		if wantInfo.Cwd != c.cwd || wantInfo.Title != c.title {
			t.Fatalf("%s in the FileStore: %+v", c.id, wantInfo)
		}
		for name, st := range map[string]session.Store{"PostgreSQL": pg, "the new FileStore": back} {
			in := infoOf(t, st, c.cwd)
			if in.ID != c.id || in.Cwd != wantInfo.Cwd || in.Title != wantInfo.Title || in.ParentSession != wantInfo.ParentSession || in.Entries != wantInfo.Entries {
				t.Fatalf("%s listed in %s: %+v, want %+v", c.id, name, in, wantInfo)
			}
		}
	}
	if got, want := fileOf(t, back, id), string(data); got != want {
		t.Fatalf("the pi file did not come back byte for byte:\n%s\nwant\n%s", got, want)
	}
}

// loadText renders a session in the seed format.
func loadText(t *testing.T, s session.Store, id string) string {
	t.Helper()
	l, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := session.WriteLog(&b, l); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// createVersion applies the migrations up to version v to pool's schema,
// as that version's Migrate did.
func createVersion(t *testing.T, pool *pgxpool.Pool, v int) {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE agentsession_schema (
			version    integer     PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	for i, f := range files[:v] {
		sql, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, string(sql)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO agentsession_schema (version, name) VALUES ($1, $2)`, i+1, filepath.Base(f)); err != nil {
			t.Fatal(err)
		}
	}
}

// rowsOf returns every value of both tables as text, one line a row,
// with the session strings read by the expressions cwd, title and parent
// (the columns of version 2, or a conversion of version 3's).
func rowsOf(t *testing.T, pool *pgxpool.Pool, cwd, title, parent string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, q := range []string{
		fmt.Sprintf(`SELECT concat_ws(' | ', id, encode(header, 'hex'), %s, %s, %s, parent_id, created_at, updated_at,
			archived, entry_count, last_entry, size, generation) FROM agentsession_sessions ORDER BY id`, cwd, title, parent),
		`SELECT concat_ws(' | ', session_id, seq, entry_id, encode(raw, 'hex')) FROM agentsession_entries ORDER BY session_id, seq`,
	} {
		rows, err := pool.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			out = append(out, line)
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
	}
	return out
}

// TestMigrateFromVersion2: Migrate upgrades a version 2 database with
// sessions in it (written as the version 2 package wrote them: text
// columns, no NUL) to version 3 without losing or changing a value; the
// new Store lists and loads them as before, and the append functions of
// versions 1 and 2 keep working for replicas not yet upgraded, while
// their Create, Rewrite and List fail rather than store something else.
func TestMigrateFromVersion2(t *testing.T) {
	ctx := context.Background()
	pool := poolIn(t, newSchema(t), 2)
	createVersion(t, pool, 2)

	type sess struct {
		h       session.Header
		name    string // a session_info entry's, appended by the version 2 function
		archive bool
	}
	sessions := []sess{
		{h: session.Header{ID: "plain", Cwd: "/home/dev/project", Timestamp: time.Date(2026, 1, 15, 10, 0, 0, 123e6, time.UTC)}},
		{h: session.Header{ID: "odd", Cwd: `C:\Users\dev\x41 \\ é 😀` + "\x01\t\u2028", Title: `ti\x00tle "q" ` + "\x7f", ParentSession: `C:\s\2026-01-14_plain.jsonl`}},
		{h: session.Header{ID: "named", Cwd: "/home/dev/other", Title: "header title"}, name: `name \\ "é"`, archive: true},
		{h: session.Header{ID: "empty", Cwd: "", ParentSession: "not an id"}},
	}
	for i, c := range sessions {
		hb, err := c.h.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		// As the version 2 package's Create.
		var created *time.Time
		if !c.h.Timestamp.IsZero() {
			created = &c.h.Timestamp
		}
		if _, err := pool.Exec(ctx, `INSERT INTO agentsession_sessions
			(id, header, cwd, title, parent_session, parent_id, created_at, updated_at, size)
			VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp(), $8)`,
			c.h.ID, hb, c.h.Cwd, c.h.Title, c.h.ParentSession, session.ParentID(c.h.ParentSession), created, len(hb)+1); err != nil {
			t.Fatal(err)
		}
		e := plainEntry(t, fmt.Sprintf("e%d", i), "")
		entries := []session.Entry{e}
		var title *string
		if c.name != "" {
			n, err := session.NewEntry(session.TypeSessionInfo, "n1", e.ID(), time.Now(), session.SessionInfoEntry{Name: c.name})
			if err != nil {
				t.Fatal(err)
			}
			entries = append(entries, n)
			title = &c.name
		}
		if res := appendV2(t, pool, c.h.ID, title, entries...); res != "" {
			t.Fatalf("version 2 append: %q", res)
		}
		if c.archive {
			if _, err := pool.Exec(ctx, `UPDATE agentsession_sessions SET archived = true, generation = 7 WHERE id = $1`, c.h.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := rowsOf(t, pool, "cwd", "title", "parent_session")

	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	var versions []string
	rows, _ := pool.Query(ctx, `SELECT version || ' ' || name FROM agentsession_schema ORDER BY version`)
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if want := []string{"1 0001_init.sql", "2 0002_limits.sql", "3 0003_header_strings.sql", "4 0004_blobs.sql", "5 0005_lifecycle.sql", "6 0006_listeners.sql", "7 0007_append_batch.sql", "8 0008_lz4.sql", "9 0009_path.sql", "10 0010_longest.sql"}; rows.Err() != nil || !slices.Equal(versions, want) {
		t.Fatalf("versions: %v (%v), want %v", versions, rows.Err(), want)
	}
	after := rowsOf(t, pool, "convert_from(cwd_utf8, 'UTF8')", "convert_from(title_utf8, 'UTF8')", "convert_from(parent_session_utf8, 'UTF8')")
	if !slices.Equal(before, after) {
		t.Fatalf("the rows changed:\n%s\nnow\n%s", strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
	// The new columns hold the strings' UTF-8 bytes.
	for _, c := range sessions {
		var cwd, title, parent []byte
		if err := pool.QueryRow(ctx, `SELECT cwd_utf8, title_utf8, parent_session_utf8 FROM agentsession_sessions WHERE id = $1`, c.h.ID).
			Scan(&cwd, &title, &parent); err != nil {
			t.Fatal(err)
		}
		wantTitle := c.h.Title
		if c.name != "" {
			wantTitle = c.name
		}
		if string(cwd) != c.h.Cwd || string(title) != wantTitle || string(parent) != c.h.ParentSession {
			t.Fatalf("%s: columns %q %q %q", c.h.ID, cwd, title, parent)
		}
	}

	s, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range sessions {
		p, err := s.List(ctx, session.ListOptions{Cwd: c.h.Cwd, Archived: true})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(p.Sessions, func(in session.SessionInfo) bool { return in.ID == c.h.ID })
		if i < 0 {
			t.Fatalf("%s not listed by its cwd %q: %+v", c.h.ID, c.h.Cwd, p.Sessions)
		}
		in := p.Sessions[i]
		title := c.h.Title
		if c.name != "" {
			title = c.name
		}
		if in.Cwd != c.h.Cwd || in.Title != title || in.ParentSession != c.h.ParentSession || in.Archived != c.archive ||
			!in.Created.Equal(c.h.Timestamp) || in.Entries != 1+min(len(c.name), 1) {
			t.Fatalf("%s listed as %+v", c.h.ID, in)
		}
		l, err := s.Load(ctx, c.h.ID)
		if err != nil {
			t.Fatal(err)
		}
		if l.Header.Cwd != c.h.Cwd || l.Header.Title != c.h.Title || l.Header.ParentSession != c.h.ParentSession {
			t.Fatalf("%s loaded as %+v", c.h.ID, l.Header)
		}
	}
	if p, err := s.List(ctx, session.ListOptions{ParentSession: "plain"}); err != nil || len(p.Sessions) != 1 || p.Sessions[0].ID != "odd" {
		t.Fatalf("listing by parent after the upgrade: %+v %v", p, err)
	}

	// Replicas still on versions 2 and 1 append, and name sessions.
	title := `renamed \x41 é`
	n, err := session.NewEntry(session.TypeSessionInfo, "n2", "e0", time.Now(), session.SessionInfoEntry{Name: title})
	if err != nil {
		t.Fatal(err)
	}
	if res := appendV2(t, pool, "plain", &title, n); res != "" {
		t.Fatalf("version 2 append after the upgrade: %q", res)
	}
	if in := infoOf(t, s, "/home/dev/project"); in.Title != title || in.Entries != 2 {
		t.Fatalf("after the version 2 append: %+v", in)
	}
	var res string
	v1 := plainEntry(t, "v1", "n2")
	if err := pool.QueryRow(ctx, `SELECT agentsession_append($1, $2, $3, $4, $5, $6, $7)`,
		"plain", "n2", false, []string{v1.ID()}, [][]byte{v1.JSON()}, "v1 title", v1.Len()+1).Scan(&res); err != nil || res != "" {
		t.Fatalf("version 1 append after the upgrade: %q %v", res, err)
	}
	if in := infoOf(t, s, "/home/dev/project"); in.Title != "v1 title" || in.Entries != 3 {
		t.Fatalf("after the version 1 append: %+v", in)
	}
	stored(t, s, pool, "plain") // the row agrees with the log

	// Their Create and List fail: the columns they name are gone.
	_, err = pool.Exec(ctx, `INSERT INTO agentsession_sessions (id, header, cwd, title, parent_session, parent_id, created_at, updated_at, size)
		VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp(), $8)`, "late", []byte(`{}`), `a\\b`, "", "", "", nil, 3)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42703" {
		t.Fatalf("a version 2 Create after the upgrade: %v, want undefined_column", err)
	}
	_, err = pool.Exec(ctx, `SELECT id, title, cwd FROM agentsession_sessions`)
	if !errors.As(err, &pe) || pe.Code != "42703" {
		t.Fatalf("a version 2 List after the upgrade: %v, want undefined_column", err)
	}
}

// appendV2 appends as the version 2 package did: its function, the
// title as an argument of unknown type.
func appendV2(t *testing.T, pool *pgxpool.Pool, id string, title *string, entries ...session.Entry) string {
	t.Helper()
	var ids []string
	var raws [][]byte
	size := 0
	for _, e := range entries {
		ids = append(ids, e.ID())
		raws = append(raws, e.JSON())
		size += e.Len() + 1
	}
	var res string
	if err := pool.QueryRow(context.Background(), `SELECT agentsession_append($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		id, "", false, ids, raws, title, size, int64(session.DefaultMaxEntries), int64(session.DefaultMaxLogBytes)).Scan(&res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestListCwdUsesIndex: a listing filtered by cwd reads the (cwd_utf8,
// updated_at, id) index, with the plan PostgreSQL makes for the given
// values and with the generic plan a cached statement may switch to, on
// the first page and on the next, as it did when the column was text.
func TestListCwdUsesIndex(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	if _, err := pool.Exec(ctx, `INSERT INTO agentsession_sessions (id, header, cwd_utf8, title_utf8, updated_at, size)
		SELECT 's' || g, '\x7b7d', convert_to('/srv/p' || (g % 200), 'UTF8'), convert_to('t' || g, 'UTF8'),
			timestamptz '2026-01-15 10:00:00Z' + g * interval '1 second', 3
		FROM generate_series(1, 20000) AS g`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE agentsession_sessions`); err != nil {
		t.Fatal(err)
	}
	queries := map[string]string{ // as List builds them
		"first": `SELECT id, title_utf8, cwd_utf8, created_at, updated_at, parent_session_utf8, entry_count, size, archived
			FROM agentsession_sessions WHERE cwd_utf8 = $1 AND NOT archived ORDER BY updated_at DESC, id DESC LIMIT $4`,
		"next": `SELECT id, title_utf8, cwd_utf8, created_at, updated_at, parent_session_utf8, entry_count, size, archived
			FROM agentsession_sessions WHERE cwd_utf8 = $1 AND NOT archived AND (updated_at, id) < ($2, $3) ORDER BY updated_at DESC, id DESC LIMIT $4`,
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for name, q := range queries {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			stmt := "explain_" + name + "_" + mode
			if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode+"; PREPARE "+stmt+" (bytea, timestamptz, text, integer) AS "+q); err != nil {
				t.Fatal(err)
			}
			rows, err := conn.Query(ctx, "EXPLAIN EXECUTE "+stmt+" (convert_to('/srv/p7', 'UTF8'), '2026-01-15 13:00:00Z', 's1', 51)")
			if err != nil {
				t.Fatal(err)
			}
			plan := ""
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					t.Fatal(err)
				}
				plan += line + "\n"
			}
			if rows.Err() != nil {
				t.Fatal(rows.Err())
			}
			if _, err := conn.Exec(ctx, "DEALLOCATE "+stmt+"; RESET plan_cache_mode"); err != nil {
				t.Fatal(err)
			}
			// A page that few rows precede may be read with a bitmap scan
			// of the same index and sorted, as version 2's text column was.
			usesIndex := strings.Contains(plan, "Index Scan using agentsession_sessions_cwd ") ||
				strings.Contains(plan, "Bitmap Index Scan on agentsession_sessions_cwd ")
			if !usesIndex || strings.Contains(plan, "Seq Scan") {
				t.Errorf("%s (%s) does not scan the cwd index:\n%s", name, mode, plan)
			}
		}
	}
	p, err := s.List(ctx, session.ListOptions{Cwd: "/srv/p7", Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{p.Sessions[0].ID, p.Sessions[1].ID, p.Sessions[2].ID}; !slices.Equal(got, []string{"s19807", "s19607", "s19407"}) || p.Sessions[0].Title != "t19807" {
		t.Fatalf("listing: %+v", p.Sessions)
	}
}
