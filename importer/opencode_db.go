// OpenCode's SQLite database (versions 1.2 on): format notes and the
// mapping.
//
// OpenCode 1.2 moved its storage tree (see opencode_storage.go) into an
// SQLite database, $XDG_DATA_HOME/opencode/opencode.db (opencode-<channel>
// .db for other channels), in WAL mode: opencode.db-wal holds what was
// written since the last checkpoint, opencode.db-shm indexes it. The
// tables (drizzle schemas packages/opencode/src/session/session.sql.ts
// and share/share.sql.ts; created by migration/<time>_<name>/
// migration.sql, later ones adding columns):
//
//   - session: id, project_id, parent_id, slug, directory, title,
//     version, share_url, summary_additions, summary_deletions,
//     summary_files, summary_diffs, revert (JSON), permission (JSON),
//     time_created, time_updated, time_compacting, time_archived; later
//     workspace_id, path, agent, model (JSON), cost and token totals.
//   - message: id, session_id, time_created, time_updated, data (the
//     message's info as JSON, without id and sessionID).
//   - part: id, message_id, session_id, time_created, time_updated, data
//     (the part as JSON, without id, messageID and sessionID).
//   - todo: session_id, content, status, priority, position, ....
//   - session_share (id, secret, url), project, permission, and tables
//     of later versions this reader does not look at.
//
// Mapping: each session is rebuilt as OpenCode's own `opencode export`
// rebuilds it from these rows, {"info": Session.fromRow(row), "messages":
// [{"info": {...data, id, sessionID}, "parts": [{...data, id,
// sessionID, messageID}]}]} with messages by (time_created, id) and
// parts by id, and imported as an export is (opencode.go). The to-do
// list is kept as the header's Extra "opencodeTodo"; summary_diffs (the
// changed files' contents) and session_share (a credential) are not
// imported. A session whose parent_id is a session of the database is
// its child. Sessions are read and stored one at a time, parents before
// their children.
//
// SQLite needs a driver, which this package does not bring (the root
// module stays free of it): package github.com/agentsession/session/
// importer/opencodedb, a module of its own, registers one with
// RegisterOpenCodeDB when imported (the agentsession CLI imports it).
// Without it, a database named alone is an error (ErrOpenCodeDatabase),
// and a directory import names it in Report.NotImported with that
// reason.
//
// The user's database is never opened in place: SQLite may write beside
// it (a -shm, a checkpoint of the -wal) or wait on OpenCode's locks.
// The database and its -wal (or -journal) are copied through the import
// root, each capped at OpenCodeMaxDBBytes, into a private temporary
// directory; the copy is taken again when the files changed while they
// were copied (OpenCode writing), and refused after three tries. The
// reader opens the copy read-only and removes it when done. The -shm is
// not read (SQLite rebuilds it from the copy).

package importer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	session "github.com/agentsession/session"
)

// ErrOpenCodeDatabase is the error of an OpenCode SQLite database when
// no reader of it is registered (see RegisterOpenCodeDB).
var ErrOpenCodeDatabase = errors.New("importer: an OpenCode SQLite database, which this program cannot read: " +
	"import it with the agentsession CLI, or from a program that imports package github.com/agentsession/session/importer/opencodedb")

// ErrOpenCodeDatabaseBusy is the error of a database that kept changing
// while it was copied: OpenCode was writing to it. Import it again when
// OpenCode is idle.
var ErrOpenCodeDatabaseBusy = errors.New("importer: the OpenCode database changed while it was copied (OpenCode is writing to it): import it again")

// OpenCodeMaxDBBytes caps an OpenCode database, and its -wal, copied for
// an import.
const OpenCodeMaxDBBytes = 16 << 30

// sqliteMagic opens every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// ErrNotSQLite is the error of a file that starts as an SQLite database
// does but whose header describes none (no valid page size, a size that
// is no whole number of pages, more bytes than its pages): refused from
// its first 100 bytes, before anything is copied.
var ErrNotSQLite = errors.New("importer: not an SQLite database past its first bytes")

// checkSQLiteHeader reads the 100-byte header of the database rel and
// refuses one that describes no database of the file's size.
func checkSQLiteHeader(rt *root, rel string) error {
	f, err := rt.open(rel, OpenCodeMaxDBBytes, true)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	var h [100]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return fmt.Errorf("%s: %w (a header of %d bytes)", rt.path(rel), ErrNotSQLite, st.Size())
	}
	be32 := func(b []byte) int64 { return int64(b[0])<<24 | int64(b[1])<<16 | int64(b[2])<<8 | int64(b[3]) }
	page := int64(h[16])<<8 | int64(h[17])
	if page == 1 {
		page = 65536
	}
	size := st.Size()
	switch {
	case !sniffSQLite(h[:]) || page < 512 || page&(page-1) != 0:
		return fmt.Errorf("%s: %w (page size %d)", rt.path(rel), ErrNotSQLite, page)
	case size%page != 0:
		return fmt.Errorf("%s: %w (%d bytes is no whole number of pages of %d)", rt.path(rel), ErrNotSQLite, size, page)
	}
	// The size in pages the header states is valid when written by a
	// SQLite that keeps it (3.7.0 on): its "version valid for" equals
	// its change counter. A file larger than that is not the database.
	if pages := be32(h[28:32]); pages > 0 && be32(h[92:96]) == be32(h[24:28]) && size > pages*page {
		return fmt.Errorf("%s: %w (%d bytes, its header counts %d pages of %d)", rt.path(rel), ErrNotSQLite, size, pages, page)
	}
	return nil
}

// OpenCodeDBReader reads the sessions of an OpenCode database: see
// RegisterOpenCodeDB.
type OpenCodeDBReader func(ctx context.Context, path string, yield func(export []byte, problems []error) error) error

var (
	dbMu     sync.Mutex
	dbReader OpenCodeDBReader
)

// RegisterOpenCodeDB makes Import read OpenCode's SQLite databases with
// read. Package github.com/agentsession/session/importer/opencodedb
// calls it when imported, which is how a program registers it:
//
//	import _ "github.com/agentsession/session/importer/opencodedb"
//
// read is given the path of a private, read-only copy of the database
// (its -wal beside it) and calls yield once per session, parents before
// their children, with the session as `opencode export` writes it (a
// JSON object {"info", "messages"}, and "todo": the to-do list) and the
// records of it that could not be read; it stops when yield returns an
// error, and returns it. A session it cannot read at all it gives as a
// nil export, its problems saying why; an error it returns (a database
// that is not OpenCode's, say) is reported for the file. The last
// registration wins.
func RegisterOpenCodeDB(read OpenCodeDBReader) {
	dbMu.Lock()
	dbReader = read
	dbMu.Unlock()
}

func openCodeDB() OpenCodeDBReader {
	dbMu.Lock()
	defer dbMu.Unlock()
	return dbReader
}

func sniffSQLite(head []byte) bool { return bytes.HasPrefix(head, []byte(sqliteMagic)) }

// dbSidecars are the files SQLite keeps beside a database: the ones read
// with it, then its shared-memory index, which is not.
var dbSidecars = []string{"-wal", "-journal", "-shm"}

// dbOf returns the database a sidecar file rel belongs to, and the
// sidecar's suffix.
func dbOf(rt *root, rel string) (db, suffix string, ok bool) {
	for _, s := range dbSidecars {
		if base, found := strings.CutSuffix(rel, s); found && base != "" && rt.isFile(base) {
			if head, err := rt.head(base, len(sqliteMagic)); err == nil && sniffSQLite(head) {
				return base, s, true
			}
		}
	}
	return "", "", false
}

func dbClaims(rt *root, rel string) bool {
	_, _, ok := dbOf(rt, rel)
	return ok
}

// dbOwned: a database is a file of its own when a reader is registered;
// its sidecars are read with it.
func dbOwned(rt *root, rel string) error {
	if db, suffix, ok := dbOf(rt, rel); ok {
		if suffix == "-shm" {
			return fmt.Errorf("%w: SQLite's shared-memory index of %s (not needed: SQLite rebuilds it)", ErrOpenCodeNotSession, rt.path(db))
		}
		return fmt.Errorf("%w (the %s of the database %s, read with it)", ErrNotRead, strings.TrimPrefix(suffix, "-"), rt.path(db))
	}
	if openCodeDB() == nil {
		return ErrOpenCodeDatabase
	}
	return nil
}

// readOpenCodeDB copies the database rel and gives its sessions, one at
// a time, to yield.
func readOpenCodeDB(ctx context.Context, rt *root, rel string, yield func(*Parsed, error)) error {
	read := openCodeDB()
	if read == nil {
		return ErrOpenCodeDatabase
	}
	dir, err := os.MkdirTemp("", "agentsession-opencode-")
	if err != nil {
		return fmt.Errorf("importer: a directory for the database's copy: %w", err)
	}
	defer os.RemoveAll(dir)
	copyPath, err := copyDB(ctx, rt, rel, dir)
	if err != nil {
		return err
	}
	source := rt.path(rel)
	headerOf := map[string]string{} // an OpenCode session id -> the id it imported as
	return read(ctx, copyPath, func(doc []byte, problems []error) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if doc == nil { // the session could not be read: problems say why
			yield(nil, fmt.Errorf("%w: %w", ErrOpenCodeRecord, errors.Join(problems...)))
			return nil
		}
		o := jsonObject(doc)
		p, err := parseExport(o, source)
		if err != nil {
			yield(nil, err)
			return nil
		}
		for _, pr := range problems {
			p.Malformed = append(p.Malformed, LineError{Path: source, Err: fmt.Errorf("%w: %w", ErrOpenCodeRecord, pr)})
		}
		if todo := o.raw("todo"); len(jsonArray(todo)) > 0 {
			p.Header.Extra.Set("opencodeTodo", compactRaw(todo))
		}
		info := o.jsonObj("info")
		if parent, ok := headerOf[info.str("parentID")]; ok && info.str("parentID") != "" {
			p.Header.ParentSession = parent // as a child of the export it is in
		}
		if id := info.str("id"); id != "" {
			headerOf[id] = p.Header.ID
		}
		yield(p, nil)
		return nil
	})
}

// copyDB copies the database rel of the root, and its -wal or -journal,
// into dir; it takes them again when they changed as they were copied.
// It returns the copy's path.
func copyDB(ctx context.Context, rt *root, rel, dir string) (string, error) {
	dst := filepath.Join(dir, "opencode.db")
	if err := checkSQLiteHeader(rt, rel); err != nil {
		return "", err
	}
	names := []string{rel, rel + "-wal", rel + "-journal"}
	for try := 0; try < 3; try++ {
		type stamp struct {
			size int64
			mod  int64
		}
		var before []stamp
		for i, name := range names {
			to := dst + strings.TrimPrefix(name, rel)
			os.Remove(to)
			st, err := copyFile(ctx, rt, name, to)
			switch {
			case i > 0 && errors.Is(err, fs.ErrNotExist):
				before = append(before, stamp{-1, 0})
				continue
			case err != nil:
				return "", fmt.Errorf("importer: %w", err)
			}
			before = append(before, stamp{st.Size(), st.ModTime().UnixNano()})
		}
		if copyDBHook != nil {
			copyDBHook(try)
		}
		same := true
		for i, name := range names {
			st, err := rt.check(name, false)
			now := stamp{-1, 0}
			if err == nil {
				now = stamp{st.Size(), st.ModTime().UnixNano()}
			} else if !errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("importer: %w", err)
			}
			same = same && now == before[i]
		}
		if same {
			return dst, nil
		}
	}
	return "", fmt.Errorf("%w: %s", ErrOpenCodeDatabaseBusy, rt.path(rel))
}

// copyDBHook, set by tests, runs after each copy of a database, before
// the files are looked at again.
var copyDBHook func(try int)

// copyFile copies the regular file rel of the root to the new file to,
// refusing one over OpenCodeMaxDBBytes; it returns the file's
// information as it was opened.
func copyFile(ctx context.Context, rt *root, rel, to string) (fs.FileInfo, error) {
	f, err := rt.open(rel, OpenCodeMaxDBBytes, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	n, err := sparseCopy(out, io.LimitReader(&ctxReader{ctx, f}, OpenCodeMaxDBBytes+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > OpenCodeMaxDBBytes {
		err = fmt.Errorf("%s: %w (it grew past the cap of %d bytes as it was copied)", rt.path(rel), session.ErrTooLarge, int64(OpenCodeMaxDBBytes))
	}
	return st, err
}

// ctxReader stops a copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// sparseCopy copies r to out, leaving a hole for each block of zeros (a
// database's free pages, a sparse file): the copy takes no more disk
// than the bytes it holds.
func sparseCopy(out *os.File, r io.Reader) (int64, error) {
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, err := io.ReadFull(r, buf)
		if k > 0 {
			chunk := buf[:k]
			if allZero(chunk) {
				_, werr := out.Seek(int64(k), io.SeekCurrent)
				if werr != nil {
					return n, werr
				}
			} else if _, werr := out.Write(chunk); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return n, out.Truncate(n)
		}
		if err != nil {
			return n, err
		}
	}
}

func allZero(b []byte) bool {
	for len(b) >= 8 {
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
