package search

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, FTS5 compiled in
)

// Errors of the package; they are wrapped with %w, test with errors.Is.
var (
	// ErrEmptyQuery says a query holds nothing to search for: no word
	// with a letter or a digit in it.
	ErrEmptyQuery = errors.New("search: the query has no words to search for")
	// ErrQueryTooLong says a query is over MaxQueryBytes or
	// MaxQueryTerms.
	ErrQueryTooLong = errors.New("search: the query is too long")
	// ErrClosed is the error of any call on a closed Index.
	ErrClosed = errors.New("search: index is closed")
	// ErrNotIndex says the file at the index path is not an index this
	// package can use: not an SQLite database, or one holding other
	// tables. Open never overwrites such a file.
	ErrNotIndex = errors.New("search: not a search index")
)

// schemaVersion is the version of the tables below and of the text
// they index. An index of another version is a cache made by another
// release: Open drops and rebuilds it. Version 2 segments CJK text
// (segment.go): an index of version 1 holds whole CJK runs as tokens,
// and would miss the words inside them. Version 3 also segments a CJK
// character from a symbol beside it (an emoji), which version 2 left in
// one token with it; the deletes of an external content table must name
// the tokens the text was indexed with, so an index of version 2 is
// rebuilt too.
const schemaVersion = 3

// appID marks the SQLite file as this package's (PRAGMA application_id).
const appID = 0x41535358 // "ASSX"

var schema = []string{
	`CREATE TABLE IF NOT EXISTS sessions (
		id TEXT PRIMARY KEY,
		title TEXT NOT NULL,
		cwd TEXT NOT NULL,
		updated INTEGER NOT NULL,
		entries INTEGER NOT NULL,
		size INTEGER NOT NULL,
		indexed INTEGER NOT NULL,
		last TEXT NOT NULL
	) WITHOUT ROWID`,
	// docs holds each indexed entry: where it is, and its text deflated
	// (compress.go); its rowid is the rowid of the entry in text.
	`CREATE TABLE IF NOT EXISTS docs (
		rowid INTEGER PRIMARY KEY,
		session TEXT NOT NULL,
		entry TEXT NOT NULL,
		role TEXT NOT NULL,
		time INTEGER NOT NULL,
		prompt BLOB,
		body BLOB
	)`,
	`CREATE INDEX IF NOT EXISTS docs_session ON docs(session)`,
	`CREATE VIEW IF NOT EXISTS text_content (rowid, prompt, body) AS
		SELECT rowid, ` + indexedFunc + `(prompt), ` + indexedFunc + `(body) FROM docs`,
	// text is the full-text index; its text is read from text_content
	// (for snippets, and for deletes) and is not kept twice.
	`CREATE VIRTUAL TABLE IF NOT EXISTS text USING fts5(
		prompt, body, content = 'text_content', content_rowid = 'rowid',
		tokenize = 'unicode61 remove_diacritics 2'
	)`,
}

// DefaultMaxEntryText is how much of one entry's text is indexed when
// Options.MaxEntryText is 0.
const DefaultMaxEntryText = 64 << 10

// DefaultBusyTimeout is how long a call waits for another process
// writing the index when Options.BusyTimeout is 0, in milliseconds.
const DefaultBusyTimeout = 30_000

// Options configures an Index. The zero value (or nil) is ready to use.
type Options struct {
	// MaxEntryText caps the bytes of text indexed per entry (0:
	// DefaultMaxEntryText); the rest of a longer tool output is not
	// searchable. It bounds the index and the memory of an update.
	MaxEntryText int
	// BusyTimeout is how long, in milliseconds, a call waits for another
	// process that holds the index's write lock (0: DefaultBusyTimeout).
	BusyTimeout int
	// Progress, when set, is called by Update after each session it
	// reads or drops, with the counts so far (a progress line).
	Progress func(UpdateStats)
}

// Index is a full-text index of the sessions of one store, kept in an
// SQLite file. It is safe for concurrent use, and several processes may
// use the same file at once.
type Index struct {
	db       *sql.DB
	path     string
	max      int
	progress func(UpdateStats)

	mu     sync.Mutex // serializes Update within the process
	closed bool
}

// DefaultPath is where the index of the FileStore rooted at root is kept
// when the caller has no place of its own: a file named after a hash of
// root's absolute path under os.UserCacheDir()/agentsession/search. The
// index is a cache, rebuilt from the store whenever it is missing, so it
// lives with the user's caches, not inside the store.
func DefaultPath(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("search: %w", err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("search: no place for the index: %w", err)
	}
	sum := sha256.Sum256([]byte(filepath.Clean(abs)))
	return filepath.Join(cache, "agentsession", "search", hex.EncodeToString(sum[:8])+".sqlite"), nil
}

// Open opens the index at path, creating the file and its directory if
// they do not exist. A file of an older schema is rebuilt empty (the next
// Update fills it); a file that is not an index fails with ErrNotIndex.
func Open(path string, opts *Options) (*Index, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxEntryText <= 0 {
		o.MaxEntryText = DefaultMaxEntryText
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if path == "" {
		return nil, errors.New("search: Open with an empty path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(o.BusyTimeout)+")")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("search: open %s: %w", path, err)
	}
	x := &Index{db: db, path: path, max: o.MaxEntryText, progress: o.Progress}
	if err := x.init(context.Background()); err != nil {
		db.Close()
		return nil, err
	}
	return x, nil
}

// init checks what the file holds and creates the tables, in one
// write transaction so that two processes opening a new file agree.
func (x *Index) init(ctx context.Context) error {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return x.notIndex(err)
	}
	defer tx.Rollback()
	var id, version, tables int
	if err := tx.QueryRowContext(ctx, "PRAGMA application_id").Scan(&id); err != nil {
		return x.notIndex(err)
	}
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return x.notIndex(err)
	}
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
		return x.notIndex(err)
	}
	switch {
	case id == 0 && tables == 0: // a new file
	case id != appID:
		return fmt.Errorf("%w: %s is an SQLite database of something else", ErrNotIndex, x.path)
	case version != schemaVersion:
		for _, drop := range []string{"DROP TABLE IF EXISTS text", "DROP VIEW IF EXISTS text_content", "DROP TABLE IF EXISTS docs", "DROP TABLE IF EXISTS sessions"} {
			if _, err := tx.ExecContext(ctx, drop); err != nil {
				return fmt.Errorf("search: rebuild %s: %w", x.path, err)
			}
		}
	}
	stmts := append([]string{
		"PRAGMA application_id = " + strconv.Itoa(appID),
		"PRAGMA user_version = " + strconv.Itoa(schemaVersion),
	}, schema...)
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("search: create %s: %w", x.path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("search: create %s: %w", x.path, err)
	}
	// WAL lets searches read while another process updates, and is kept
	// in the file; set only once the file is known to be an index.
	if _, err := x.db.ExecContext(ctx, "PRAGMA journal_mode = WAL"); err != nil {
		return fmt.Errorf("search: %s: %w", x.path, err)
	}
	return nil
}

// notIndex explains a failure to read the file as a database.
func (x *Index) notIndex(err error) error {
	return fmt.Errorf("%w: %s: %v", ErrNotIndex, x.path, err)
}

// Path returns the file the index is kept in.
func (x *Index) Path() string { return x.path }

// Close closes the index. Calls after it fail with ErrClosed.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	return x.db.Close()
}

func (x *Index) isClosed() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.closed
}
