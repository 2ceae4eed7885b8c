package search

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	session "github.com/agentsession/session"
)

// UpdateStats says what an Update did.
type UpdateStats struct {
	Sessions  int // sessions the store lists, archived ones included
	Unchanged int // sessions whose fingerprint had not changed: not read
	Appended  int // sessions read from where the last update stopped
	Indexed   int // sessions (re)indexed whole: new, or rewritten
	Removed   int // sessions gone from the store, dropped from the index
	Entries   int // entries read and indexed
	// Unreadable counts the entries whose text could not be decoded (a
	// message entry whose message is not an object): they are not
	// searchable.
	Unreadable int
	// Failed counts the sessions the store could not read (see
	// SessionError).
	Failed int
	// Skipped counts sessions that vanished between the listing and the
	// read (deleted meanwhile); the next update drops them.
	Skipped int
}

// fingerprint is what the index remembers of a session: what List said
// of it when it was indexed, and where its indexed log ended.
type fingerprint struct {
	updated       int64 // SessionInfo.Updated, Unix nanoseconds
	entries       int   // SessionInfo.Entries
	size          int64 // SessionInfo.Size
	title, cwd    string
	indexed       int    // entries of the log indexed
	last          string // id of the last entry indexed
	seenThisRound bool
}

func (f *fingerprint) same(info session.SessionInfo) bool {
	return f.updated == info.Updated.UnixNano() && f.entries == info.Entries && f.size == info.Size &&
		f.title == info.Title && f.cwd == info.Cwd
}

// Update brings the index up to date with store: it lists every session
// (archived ones included), reads only those whose listing (update time,
// entry count, size, title) changed since the last Update, and drops
// the sessions the store no longer has. A session that only grew is read
// from where the last update stopped when the store can load a tail
// (session.TailLoader); one that was rewritten is indexed again whole.
//
// Each session is written in a transaction of its own: an Update that
// fails or is cancelled keeps what it did, and the next one goes on. A
// session the store cannot read is a *SessionError, returned with the
// stats once the other sessions are indexed.
// Two processes may update the same index at once; the second waits for
// the first's transactions (Options.BusyTimeout).
func (x *Index) Update(ctx context.Context, store session.Store) (UpdateStats, error) {
	var st UpdateStats
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return st, ErrClosed
	}
	known, err := x.fingerprints(ctx)
	if err != nil {
		return st, err
	}
	var failed []error
	opts := session.ListOptions{Archived: true, Limit: 500}
	for {
		page, err := store.List(ctx, opts)
		if err != nil {
			return st, fmt.Errorf("search: list the sessions: %w", err)
		}
		for _, info := range page.Sessions {
			st.Sessions++
			fp := known[info.ID]
			if fp != nil {
				fp.seenThisRound = true
				if fp.same(info) {
					st.Unchanged++
					continue
				}
			}
			err := x.indexSession(ctx, store, info, fp, &st)
			var se *SessionError
			if errors.As(err, &se) && ctx.Err() == nil {
				// One session the store cannot read does not keep the
				// others out; it is tried again by the next Update.
				st.Failed++
				failed = append(failed, err)
				continue
			}
			if err != nil {
				return st, err
			}
			if x.progress != nil {
				x.progress(st)
			}
		}
		if page.Next == "" {
			break
		}
		opts.Cursor = page.Next
	}
	for id, fp := range known {
		if fp.seenThisRound {
			continue
		}
		if err := x.write(ctx, func(tx *sql.Tx) error { return dropSession(ctx, tx, id) }); err != nil {
			return st, err
		}
		st.Removed++
		if x.progress != nil {
			x.progress(st)
		}
	}
	return st, errors.Join(failed...)
}

// SessionError is the error of an Update for a session the store could
// not read: the others are indexed all the same, and the session is
// tried again by the next Update. Update returns these joined (see
// errors.Join); errors.As finds the first.
type SessionError struct {
	ID  string
	Err error
}

func (e *SessionError) Error() string {
	return fmt.Sprintf("search: read session %s: %v", e.ID, e.Err)
}

func (e *SessionError) Unwrap() error { return e.Err }

// fingerprints reads what the index knows of every session.
func (x *Index) fingerprints(ctx context.Context) (map[string]*fingerprint, error) {
	rows, err := x.db.QueryContext(ctx, `SELECT id, updated, entries, size, title, cwd, indexed, last FROM sessions`)
	if err != nil {
		return nil, fmt.Errorf("search: read the index: %w", err)
	}
	defer rows.Close()
	known := map[string]*fingerprint{}
	for rows.Next() {
		var id string
		fp := new(fingerprint)
		if err := rows.Scan(&id, &fp.updated, &fp.entries, &fp.size, &fp.title, &fp.cwd, &fp.indexed, &fp.last); err != nil {
			return nil, fmt.Errorf("search: read the index: %w", err)
		}
		known[id] = fp
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: read the index: %w", err)
	}
	return known, nil
}

// indexSession reads the session (its tail when it only grew) and writes
// its entries and fingerprint.
func (x *Index) indexSession(ctx context.Context, store session.Store, info session.SessionInfo, fp *fingerprint, st *UpdateStats) error {
	var log *session.Log
	var err error
	from := 0
	if tl, ok := store.(session.TailLoader); ok && fp != nil && fp.indexed > 0 && info.Entries >= fp.indexed {
		// Any failure (ErrConflict: the log was rewritten) falls back to
		// reading the whole log, which reports what is wrong.
		if log, err = tl.LoadTail(ctx, info.ID, fp.indexed, fp.last); err == nil {
			from = fp.indexed
		} else {
			log = nil
		}
	}
	if log == nil {
		log, err = store.Load(ctx, info.ID)
	}
	if errors.Is(err, session.ErrNotFound) {
		st.Skipped++
		return nil
	}
	if err != nil {
		return &SessionError{ID: info.ID, Err: err}
	}
	docs := make([]doc, 0, len(log.Entries))
	for _, e := range log.Entries {
		d, ok, err := entryDoc(e, x.max)
		if err != nil {
			st.Unreadable++
		}
		if ok {
			docs = append(docs, d)
		}
	}
	last := ""
	if fp != nil && from > 0 {
		last = fp.last
	}
	if n := len(log.Entries); n > 0 {
		last = log.Entries[n-1].ID()
	}
	err = x.write(ctx, func(tx *sql.Tx) error {
		if from > 0 {
			// Another process may have indexed the tail since the
			// fingerprints were read: append only onto what was read.
			var indexed int
			var last string
			err := tx.QueryRowContext(ctx, `SELECT indexed, last FROM sessions WHERE id = ?`, info.ID).Scan(&indexed, &last)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if indexed != fp.indexed || last != fp.last {
				return errStale
			}
		}
		if from == 0 {
			if err := dropSession(ctx, tx, info.ID); err != nil {
				return err
			}
		}
		if err := insertDocs(ctx, tx, info.ID, docs); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO sessions (id, title, cwd, updated, entries, size, indexed, last)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			info.ID, info.Title, info.Cwd, info.Updated.UnixNano(), info.Entries, info.Size, from+len(log.Entries), last)
		return err
	})
	if errors.Is(err, errStale) {
		return x.indexSession(ctx, store, info, nil, st) // whole, as it is now
	}
	if err != nil {
		return err
	}
	if from > 0 {
		st.Appended++
	} else {
		st.Indexed++
	}
	st.Entries += len(log.Entries)
	return nil
}

// errStale says the index changed under an update, which then reads the
// session whole.
var errStale = errors.New("search: the index changed meanwhile")

// write runs fn in a write transaction.
func (x *Index) write(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("search: write the index: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		if errors.Is(err, errStale) {
			return err
		}
		return fmt.Errorf("search: write the index: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("search: write the index: %w", err)
	}
	return nil
}

// dropSession removes a session's entries and fingerprint.
func dropSession(ctx context.Context, tx *sql.Tx, id string) error {
	// An external content table is told what it indexed, to remove it.
	if _, err := tx.ExecContext(ctx, `INSERT INTO text (text, rowid, prompt, body)
		SELECT 'delete', rowid, `+indexedFunc+`(prompt), `+indexedFunc+`(body) FROM docs WHERE session = ?`, id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM docs WHERE session = ?`, id); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id)
	return err
}

// insertDocs adds a session's entries.
func insertDocs(ctx context.Context, tx *sql.Tx, id string, docs []doc) error {
	if len(docs) == 0 {
		return nil
	}
	meta, err := tx.PrepareContext(ctx, `INSERT INTO docs (session, entry, role, time, prompt, body) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer meta.Close()
	text, err := tx.PrepareContext(ctx, `INSERT INTO text (rowid, prompt, body) VALUES (?, ?, ?)`)
	if err != nil {
		return err
	}
	defer text.Close()
	for _, d := range docs {
		res, err := meta.ExecContext(ctx, id, d.entry, d.role, d.time.UnixMilli(), deflate(d.prompt), deflate(d.body))
		if err != nil {
			return err
		}
		rowid, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if _, err := text.ExecContext(ctx, rowid, segment(d.prompt), segment(d.body)); err != nil {
			return err
		}
	}
	return nil
}

// timeOf is an entry's time: its message's timestamp when it has one,
// else the entry's.
func timeOf(e session.Entry, m *session.Message) time.Time {
	if m != nil && m.Timestamp > 0 {
		return time.UnixMilli(m.Timestamp).UTC()
	}
	return e.Time()
}
