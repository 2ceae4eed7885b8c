package opencodedb

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/agentsession/session/importer"
	_ "modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"
)

// ErrNotOpenCode is the error of an SQLite database that is not
// OpenCode's: it lacks a session, message or part table.
var ErrNotOpenCode = errors.New("opencodedb: not an OpenCode database (its session, message and part tables are missing, or are not plain tables)")

// MaxRecordBytes caps the data of one message or part, and every other
// value read; a larger one is left out and reported.
const MaxRecordBytes = 64 << 20

// maxRecord is MaxRecordBytes (smaller in tests).
var maxRecord = MaxRecordBytes

func init() { importer.RegisterOpenCodeDB(read) }

// db is an open database and what its tables hold.
type db struct {
	sql  *sql.DB
	cols map[string]map[string]bool // table -> its columns
	// rowid is each session's rowid (nil for a table without one): its
	// row is found by it, not by a scan comparing every id as text.
	rowid map[string]int64
}

func (d *db) has(table string, cols ...string) bool {
	for _, c := range cols {
		if !d.cols[table][c] {
			return false
		}
	}
	return d.cols[table] != nil
}

// read opens the database at path read-only (a copy importer.Import
// made) and yields its sessions, parents before their children.
func read(ctx context.Context, path string, yield func(export []byte, problems []error) error) error {
	// The schema is checked before anything runs on the tables; then
	// they are indexed in the copy (read-write), and read through a
	// read-only handle opened after.
	d, err := openDB(ctx, path)
	if err != nil {
		return err
	}
	d.sql.Close()
	if err := index(ctx, path); err != nil {
		return err
	}
	if d, err = openDB(ctx, path); err != nil {
		return err
	}
	defer d.sql.Close()
	order, err := d.order(ctx)
	if err != nil {
		return err
	}
	for _, id := range order {
		if err := ctx.Err(); err != nil {
			return err
		}
		doc, problems, err := d.session(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			doc, problems = nil, append(problems, fmt.Errorf("session %.100q: %w", id, err))
		}
		if err := yield(doc, problems); err != nil {
			return err
		}
	}
	return nil
}

// index makes, in the private copy at path, the indexes the reader's
// queries use (OpenCode's databases have them; a database without would
// be scanned once per session). A table that cannot be indexed (a view)
// is left for schema to refuse.
func index(ctx context.Context, path string) error {
	h, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=rw")
	if err != nil {
		return err
	}
	defer h.Close()
	h.SetMaxOpenConns(1)
	for _, ix := range []string{
		`CREATE INDEX IF NOT EXISTS agentsession_message_session ON message (session_id)`,
		`CREATE INDEX IF NOT EXISTS agentsession_part_message ON part (message_id)`,
		`CREATE INDEX IF NOT EXISTS agentsession_todo_session ON todo (session_id)`,
	} {
		if _, err := h.ExecContext(ctx, ix); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// openDB opens the database at path read-only and reads its schema.
func openDB(ctx context.Context, path string) (*db, error) {
	q := url.Values{}
	q.Set("mode", "ro")
	if !exists(path+"-wal") && !exists(path+"-journal") {
		q.Set("immutable", "1") // nothing to apply: no lock, no -shm
	}
	q.Add("_pragma", "query_only(1)")
	h, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	h.SetMaxOpenConns(1)
	d := &db{sql: h, cols: map[string]map[string]bool{}}
	if err := d.schema(ctx); err != nil {
		h.Close()
		return nil, err
	}
	return d, nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// schema reads the tables and their columns, and checks that OpenCode's
// are there.
func (d *db) schema(ctx context.Context) error {
	for _, t := range []string{"session", "message", "part", "todo"} {
		if err := d.plainTable(ctx, t); err != nil {
			return err
		}
		rows, err := d.sql.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, t)
		if err != nil {
			return fmt.Errorf("opencodedb: reading the schema: %w", err)
		}
		cols := map[string]bool{}
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return fmt.Errorf("opencodedb: reading the schema: %w", err)
			}
			cols[c] = true
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("opencodedb: reading the schema: %w", err)
		}
		if len(cols) > 0 {
			d.cols[t] = cols
		}
	}
	if !d.has("session", "id") || !d.has("message", "id", "session_id", "data") || !d.has("part", "id", "message_id", "data") {
		return ErrNotOpenCode
	}
	return nil
}

// plainTable refuses a schema object t that is not a plain table: a view
// (it may compute without end, or a gigabyte a row), a virtual table, a
// table with generated columns. OpenCode's tables are plain tables; one
// absent is for the caller to judge.
func (d *db) plainTable(ctx context.Context, t string) error {
	var typ, def sql.NullString
	err := d.sql.QueryRowContext(ctx, `SELECT type, sql FROM sqlite_master WHERE name = ? COLLATE NOCASE AND type IN ('table', 'view') LIMIT 1`, t).Scan(&typ, &def)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("opencodedb: reading the schema: %w", err)
	case typ.String != "table":
		return fmt.Errorf("%w: %s is a %s, not a table", ErrNotOpenCode, t, typ.String)
	case strings.HasPrefix(strings.ToUpper(strings.TrimSpace(def.String)), "CREATE VIRTUAL"):
		return fmt.Errorf("%w: %s is a virtual table", ErrNotOpenCode, t)
	}
	var generated int
	if err := d.sql.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_xinfo(?) WHERE hidden IN (2, 3)`, t).Scan(&generated); err != nil {
		return fmt.Errorf("opencodedb: reading the schema: %w", err)
	}
	if generated > 0 {
		return fmt.Errorf("%w: %s has generated columns", ErrNotOpenCode, t)
	}
	// A column a row does not store takes its default, copied out again
	// for every row read: OpenCode's are a few bytes.
	var dflt sql.NullInt64
	if err := d.sql.QueryRowContext(ctx, `SELECT max(length(dflt_value)) FROM pragma_table_xinfo(?)`, t).Scan(&dflt); err != nil {
		return fmt.Errorf("opencodedb: reading the schema: %w", err)
	}
	if dflt.Valid && dflt.Int64 > maxDefault {
		return fmt.Errorf("%w: a column of %s has a default value of %d bytes", ErrNotOpenCode, t, dflt.Int64)
	}
	return nil
}

// maxDefault bounds the default value of a column of the tables read.
const maxDefault = 4 << 10

// order lists the sessions' ids: each session of its own (in the order
// of creation) followed by its children's, depth first. A session in a
// cycle of parents is taken where the cycle is found.
func (d *db) order(ctx context.Context) ([]string, error) {
	parent := "NULL"
	if d.has("session", "parent_id") {
		parent = "parent_id"
	}
	by := "id"
	if d.has("session", "time_created") {
		by = "time_created, id"
	}
	list := `SELECT CAST(id AS TEXT), CAST(` + parent + ` AS TEXT), rowid FROM session ORDER BY ` + by
	rows, err := d.sql.QueryContext(ctx, list)
	if err != nil { // a table WITHOUT ROWID
		rows, err = d.sql.QueryContext(ctx, strings.Replace(list, ", rowid", ", NULL", 1))
	}
	if err != nil {
		return nil, fmt.Errorf("opencodedb: listing the sessions: %w", err)
	}
	defer rows.Close()
	var ids []string
	parentOf := map[string]string{}
	d.rowid = map[string]int64{}
	for rows.Next() {
		var id, p sql.NullString
		var rowid sql.NullInt64
		if err := rows.Scan(&id, &p, &rowid); err != nil {
			return nil, fmt.Errorf("opencodedb: listing the sessions: %w", err)
		}
		if _, dup := parentOf[id.String]; dup {
			continue
		}
		ids = append(ids, id.String)
		parentOf[id.String] = p.String
		if rowid.Valid {
			d.rowid[id.String] = rowid.Int64
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("opencodedb: listing the sessions: %w", err)
	}
	children := map[string][]string{}
	var roots []string
	for _, id := range ids {
		p := parentOf[id]
		if _, ok := parentOf[p]; ok && p != id {
			children[p] = append(children[p], id)
		} else {
			roots = append(roots, id)
		}
	}
	out := make([]string, 0, len(ids))
	done := map[string]bool{}
	visit := func(root string) {
		stack := []string{root}
		for len(stack) > 0 {
			id := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if done[id] {
				continue
			}
			done[id] = true
			out = append(out, id)
			kids := children[id]
			for i := len(kids) - 1; i >= 0; i-- {
				stack = append(stack, kids[i])
			}
		}
	}
	for _, r := range roots {
		visit(r)
	}
	for _, id := range ids { // sessions in cycles of parents
		visit(id)
	}
	return out, nil
}

// capped is the SQL of column c of a row, NULL when it holds more than
// MaxRecordBytes, then its size.
func capped(c string) string {
	q := `"` + strings.ReplaceAll(c, `"`, `""`) + `"`
	n := strconv.Itoa(maxRecord)
	return `CASE WHEN length(CAST(` + q + ` AS BLOB)) > ` + n + ` THEN NULL ELSE ` + q + ` END, length(CAST(` + q + ` AS BLOB))`
}

// cell is one value read with capped.
type cell struct {
	v    any
	size sql.NullInt64
}

func (c *cell) over() bool { return c.v == nil && c.size.Valid && c.size.Int64 > int64(maxRecord) }

func (c *cell) text() (string, bool) {
	switch v := c.v.(type) {
	case string:
		return v, true
	case []byte:
		return string(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), true
	}
	return "", false
}

// session builds the export of session id, and says what of it could
// not be read.
func (d *db) session(ctx context.Context, id string) ([]byte, []error, error) {
	var problems []error
	info, err := d.info(ctx, id, &problems)
	if err != nil {
		return nil, problems, err
	}
	var b bytes.Buffer
	b.WriteString(`{"info":`)
	b.Write(info)
	b.WriteString(`,"messages":[`)
	parts, err := d.parts(ctx, id, &problems)
	if err != nil {
		return nil, problems, err
	}
	size := 0
	for _, p := range parts {
		for _, raw := range p {
			size += len(raw)
		}
	}
	by := "id"
	if d.has("message", "time_created") {
		by = "time_created, id"
	}
	rows, err := d.sql.QueryContext(ctx, `SELECT CAST(id AS TEXT), `+capped("data")+` FROM message WHERE session_id = ? ORDER BY `+by, id)
	if err != nil {
		return nil, problems, fmt.Errorf("reading its messages: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var mid sql.NullString
		var data cell
		if err := rows.Scan(&mid, &data.v, &data.size); err != nil {
			return nil, problems, fmt.Errorf("reading its messages: %w", err)
		}
		m, err := record(data, "id", mid.String, "sessionID", id)
		if err != nil {
			problems = append(problems, fmt.Errorf("message %.100q: %w", mid.String, err))
			continue
		}
		if size += len(m); size > importer.OpenCodeMaxFileBytes {
			return nil, problems, fmt.Errorf("its messages and parts pass %d bytes", importer.OpenCodeMaxFileBytes)
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(`{"info":`)
		b.Write(m)
		b.WriteString(`,"parts":[`)
		for k, p := range parts[mid.String] {
			if k > 0 {
				b.WriteByte(',')
			}
			b.Write(p)
		}
		b.WriteString(`]}`)
	}
	if err := rows.Err(); err != nil {
		return nil, problems, fmt.Errorf("reading its messages: %w", err)
	}
	b.WriteString(`]`)
	if todo := d.todo(ctx, id, &problems); todo != nil {
		b.WriteString(`,"todo":`)
		b.Write(todo)
	}
	b.WriteString(`}`)
	return b.Bytes(), problems, nil
}

// record is a message's or part's data with its ids, as OpenCode
// rebuilds it: {...data, id, sessionID[, messageID]}.
func record(data cell, kv ...string) ([]byte, error) {
	if data.over() {
		return nil, fmt.Errorf("its data holds %d bytes, over the cap of %d", data.size.Int64, maxRecord)
	}
	s, ok := data.text()
	if !ok {
		return nil, errNotObject
	}
	return assign([]byte(s), kv...)
}

// parts reads the parts of the session's messages, by message, each in
// the order of its id.
func (d *db) parts(ctx context.Context, id string, problems *[]error) (map[string][][]byte, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT CAST(id AS TEXT), CAST(message_id AS TEXT), `+capped("data")+
		` FROM part WHERE message_id IN (SELECT id FROM message WHERE session_id = ?) ORDER BY message_id, id`, id)
	if err != nil {
		return nil, fmt.Errorf("reading its parts: %w", err)
	}
	defer rows.Close()
	out := map[string][][]byte{}
	size := 0
	for rows.Next() {
		var pid, mid sql.NullString
		var data cell
		if err := rows.Scan(&pid, &mid, &data.v, &data.size); err != nil {
			return nil, fmt.Errorf("reading its parts: %w", err)
		}
		p, err := record(data, "id", pid.String, "sessionID", id, "messageID", mid.String)
		if err != nil {
			*problems = append(*problems, fmt.Errorf("part %.100q of message %.100q: %w", pid.String, mid.String, err))
			continue
		}
		if size += len(p); size > importer.OpenCodeMaxFileBytes {
			return nil, fmt.Errorf("its parts pass %d bytes", importer.OpenCodeMaxFileBytes)
		}
		out[mid.String] = append(out[mid.String], p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading its parts: %w", err)
	}
	return out, nil
}

// sessionCols are the columns of a session row Session.fromRow reads,
// in the order it writes them.
var sessionCols = []string{"id", "slug", "project_id", "workspace_id", "directory", "path", "parent_id", "title", "agent", "model",
	"version", "share_url", "summary_additions", "summary_deletions", "summary_files", "revert", "permission", "metadata",
	"time_created", "time_updated", "time_compacting", "time_archived"}

// jsonCols hold JSON.
var jsonCols = map[string]bool{"model": true, "revert": true, "permission": true, "metadata": true}

// info is the session's info as OpenCode's Session.fromRow builds it
// from its row (summary_diffs, the changed files' contents, left out).
func (d *db) info(ctx context.Context, id string, problems *[]error) ([]byte, error) {
	var cols, sel []string
	for _, c := range sessionCols {
		if d.has("session", c) {
			cols = append(cols, c)
			sel = append(sel, capped(c))
		}
	}
	var row *sql.Row
	if rowid, ok := d.rowid[id]; ok {
		row = d.sql.QueryRowContext(ctx, `SELECT `+strings.Join(sel, ", ")+` FROM session WHERE rowid = ?`, rowid)
	} else {
		row = d.sql.QueryRowContext(ctx, `SELECT `+strings.Join(sel, ", ")+` FROM session WHERE id = ? LIMIT 1`, id)
	}
	cells := make([]cell, len(cols))
	dest := make([]any, 0, 2*len(cols))
	for i := range cells {
		dest = append(dest, &cells[i].v, &cells[i].size)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, fmt.Errorf("reading its row: %w", err)
	}
	v := map[string]*cell{}
	for i, c := range cols {
		if cells[i].over() {
			*problems = append(*problems, fmt.Errorf("session %.100q: its %s holds %d bytes, over the cap of %d", id, c, cells[i].size.Int64, maxRecord))
			continue
		}
		if cells[i].v != nil {
			v[c] = &cells[i]
		}
	}
	val := func(c string) (json.RawMessage, bool) {
		x := v[c]
		if x == nil {
			return nil, false
		}
		if jsonCols[c] {
			if s, ok := x.text(); ok && json.Valid([]byte(s)) {
				return json.RawMessage(s), true
			}
			*problems = append(*problems, fmt.Errorf("session %.100q: its %s is not JSON", id, c))
			return nil, false
		}
		switch n := x.v.(type) {
		case int64:
			if strings.HasPrefix(c, "time_") || strings.HasPrefix(c, "summary_") {
				return json.RawMessage(strconv.FormatInt(n, 10)), true
			}
		case float64:
			if strings.HasPrefix(c, "time_") || strings.HasPrefix(c, "summary_") {
				b, _ := json.Marshal(n)
				return b, true
			}
		}
		s, _ := x.text()
		return str(s), true
	}
	var ms []member
	add := func(key, col string) {
		if raw, ok := val(col); ok {
			ms = append(ms, member{key, raw})
		}
	}
	ms = append(ms, member{"id", str(id)})
	add("slug", "slug")
	add("projectID", "project_id")
	add("workspaceID", "workspace_id")
	add("directory", "directory")
	add("path", "path")
	add("parentID", "parent_id")
	add("title", "title")
	add("agent", "agent")
	add("model", "model")
	add("version", "version")
	if v["summary_additions"] != nil || v["summary_deletions"] != nil || v["summary_files"] != nil {
		var sm []member
		for _, k := range []string{"additions", "deletions", "files"} {
			raw, ok := val("summary_" + k)
			if !ok {
				raw = json.RawMessage("0")
			}
			sm = append(sm, member{k, raw})
		}
		ms = append(ms, member{"summary", object(sm)})
	}
	if raw, ok := val("share_url"); ok && string(raw) != `""` {
		ms = append(ms, member{"share", object([]member{{"url", raw}})})
	}
	add("revert", "revert")
	add("permission", "permission")
	add("metadata", "metadata")
	var tm []member
	for _, k := range []string{"created", "updated", "compacting", "archived"} {
		if raw, ok := val("time_" + k); ok {
			tm = append(tm, member{k, raw})
		}
	}
	ms = append(ms, member{"time", object(tm)})
	return object(ms), nil
}

// todo is the session's to-do list, [{content, status, priority}] in
// its order; nil when it has none.
func (d *db) todo(ctx context.Context, id string, problems *[]error) []byte {
	if !d.has("todo", "session_id", "content", "status", "priority") {
		return nil
	}
	by := ""
	if d.has("todo", "position") {
		by = " ORDER BY position"
	}
	rows, err := d.sql.QueryContext(ctx, `SELECT `+capped("content")+`, `+capped("status")+`, `+capped("priority")+
		` FROM todo WHERE session_id = ?`+by+` LIMIT 100000`, id)
	if err != nil {
		*problems = append(*problems, fmt.Errorf("session %.100q: reading its to-do list: %w", id, err))
		return nil
	}
	defer rows.Close()
	var items [][]byte
	size := 0
	for rows.Next() {
		var c [3]cell
		if err := rows.Scan(&c[0].v, &c[0].size, &c[1].v, &c[1].size, &c[2].v, &c[2].size); err != nil {
			*problems = append(*problems, fmt.Errorf("session %.100q: reading its to-do list: %w", id, err))
			return nil
		}
		var ms []member
		for i, k := range []string{"content", "status", "priority"} {
			s, _ := c[i].text()
			ms = append(ms, member{k, str(s)})
		}
		item := object(ms)
		if size += len(item); size > maxRecord {
			*problems = append(*problems, fmt.Errorf("session %.100q: its to-do list passes %d bytes", id, maxRecord))
			return nil
		}
		items = append(items, item)
	}
	if err := rows.Err(); err != nil {
		*problems = append(*problems, fmt.Errorf("session %.100q: reading its to-do list: %w", id, err))
		return nil
	}
	if len(items) == 0 {
		return nil
	}
	return append(append([]byte("["), bytes.Join(items, []byte(","))...), ']')
}
