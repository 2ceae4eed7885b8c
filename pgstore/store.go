package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	session "github.com/agentsession/session"
)

// Options configures a Store. It has no fields yet; pass nil.
type Options struct{}

// Store keeps sessions in PostgreSQL. It implements session.Store and is
// safe for concurrent use by many goroutines, processes and machines.
type Store struct {
	pool *pgxpool.Pool
}

var _ session.Store = (*Store)(nil)

// New returns a Store on pool. It checks that the schema is at
// SchemaVersion (ErrSchema otherwise: run Migrate first). The pool stays
// the caller's to close.
func New(ctx context.Context, pool *pgxpool.Pool, opts *Options) (*Store, error) {
	v, err := schemaVersion(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if v != SchemaVersion {
		hint := "run pgstore.Migrate"
		if v > SchemaVersion {
			hint = "this package is older than the database"
		}
		return nil, fmt.Errorf("%w: the database has version %d, this package needs %d (%s)", ErrSchema, v, SchemaVersion, hint)
	}
	return &Store{pool: pool}, nil
}

// PostgreSQL error codes the store maps to the package's errors.
const (
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeUndefinedTable       = "42P01"
	codeUndefinedFunction    = "42883"
)

// mapErr turns database errors into the session package's sentinels
// where one fits, keeping the original in the chain.
func mapErr(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case codeSerializationFailure, codeDeadlockDetected:
			return fmt.Errorf("%w: %s: %w", session.ErrConflict, what, err)
		case codeUndefinedTable, codeUndefinedFunction:
			return fmt.Errorf("%w: %s: %w (run pgstore.Migrate)", ErrSchema, what, err)
		}
	}
	return fmt.Errorf("pgstore: %s: %w", what, err)
}

// Create implements session.Store.
func (s *Store) Create(ctx context.Context, h session.Header) error {
	if err := session.ValidateID(h.ID); err != nil {
		return err
	}
	hb, err := h.MarshalJSON()
	if err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO agentsession_sessions
		(id, header, cwd, title, parent_session, parent_id, created_at, updated_at, size)
		VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp(), $8)
		ON CONFLICT (id) DO NOTHING`,
		h.ID, hb, h.Cwd, h.Title, h.ParentSession, session.ParentID(h.ParentSession), created(h), len(hb)+1)
	if err != nil {
		return mapErr(err, "create "+h.ID)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: session %s", session.ErrExists, h.ID)
	}
	return nil
}

func created(h session.Header) *time.Time {
	if h.Timestamp.IsZero() {
		return nil
	}
	return &h.Timestamp
}

// check rejects zero entries and ids repeated within one append, as the
// other stores do, before anything is sent.
func check(entries []session.Entry) error {
	seen := make(map[string]struct{}, len(entries))
	for i, e := range entries {
		if e.IsZero() {
			return fmt.Errorf("pgstore: append of zero Entry at %d", i)
		}
		if _, dup := seen[e.ID()]; dup {
			return fmt.Errorf("%w: entry id %s appears twice in one append", session.ErrConflict, e.ID())
		}
		seen[e.ID()] = struct{}{}
	}
	return nil
}

// titleOf returns the name of the last session_info entry that sets one.
func titleOf(entries []session.Entry) (string, bool) {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Type() != session.TypeSessionInfo {
			continue
		}
		var n session.SessionName
		if entries[i].Decode(&n) == nil && strings.TrimSpace(n.Name) != "" {
			return strings.TrimSpace(n.Name), true
		}
	}
	return "", false
}

// Append implements session.Store. The entries, the conditions and the
// row update go in one statement (one round trip), a call of the
// agentsession_append function, which holds the session row's lock:
// appends to one session are serialised, appends to different sessions
// run in parallel.
func (s *Store) Append(ctx context.Context, id string, opts session.AppendOptions, entries ...session.Entry) error {
	if err := session.ValidateID(id); err != nil {
		return err
	}
	if err := check(entries); err != nil {
		return err
	}
	ids := make([]string, len(entries))
	raws := make([][]byte, len(entries))
	size := 0
	for i, e := range entries {
		ids[i] = e.ID()
		raws[i] = e.AppendJSON(nil)
		size += len(raws[i]) + 1
	}
	var title *string
	if t, ok := titleOf(entries); ok {
		title = &t
	}
	var res string
	err := s.pool.QueryRow(ctx, `SELECT agentsession_append($1, $2, $3, $4, $5, $6, $7)`,
		id, opts.IfLast, opts.IfEmpty, ids, raws, title, size).Scan(&res)
	if err != nil {
		return mapErr(err, "append to "+id)
	}
	why, arg, _ := strings.Cut(res, ":")
	switch why {
	case "":
		return nil
	case "notfound":
		return fmt.Errorf("%w: session %s", session.ErrNotFound, id)
	case "notempty":
		return fmt.Errorf("%w: session is not empty (last entry %s)", session.ErrConflict, arg)
	case "last":
		if arg == "" {
			return fmt.Errorf("%w: expected last entry %s, session is empty", session.ErrConflict, opts.IfLast)
		}
		return fmt.Errorf("%w: expected last entry %s, found %s", session.ErrConflict, opts.IfLast, arg)
	case "dup":
		return fmt.Errorf("%w: entry id %s is already in the session", session.ErrConflict, arg)
	}
	return fmt.Errorf("pgstore: append to %s: unexpected answer %q", id, res)
}

// Load implements session.Store. The header and the entries are read in
// one read-only snapshot, joined into a seed-format log and decoded the
// way a file is, so entries keep their bytes. A row that no longer
// parses is reported (session.ErrCorrupt with its line: seq + 1), never
// skipped.
func (s *Store) Load(ctx context.Context, id string) (*session.Log, error) {
	if err := session.ValidateID(id); err != nil {
		return nil, err
	}
	var data []byte
	bad := int64(0) // seq of a row that holds a newline, which no Entry has
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var size int64
		if err := tx.QueryRow(ctx, `SELECT header, size FROM agentsession_sessions WHERE id = $1`, id).Scan(&data, &size); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: session %s", session.ErrNotFound, id)
			}
			return err
		}
		data = append(append(make([]byte, 0, max(size, int64(len(data))+1)), data...), '\n')
		rows, err := tx.Query(ctx, `SELECT raw FROM agentsession_entries WHERE session_id = $1 ORDER BY seq`, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		binary := rows.FieldDescriptions()[0].Format == pgx.BinaryFormatCode
		for seq := int64(1); rows.Next(); seq++ {
			raw := rows.RawValues()[0]
			if !binary {
				// A text-protocol pool (simple protocol, as behind
				// PgBouncer): let pgx decode the hex form.
				raw = nil
				if err := rows.Scan(&raw); err != nil {
					return err
				}
			}
			if bad == 0 && bytes.IndexByte(raw, '\n') >= 0 {
				bad = seq
			}
			data = append(append(data, raw...), '\n')
		}
		return rows.Err()
	})
	if err != nil {
		if errors.Is(err, session.ErrNotFound) {
			return nil, err
		}
		return nil, mapErr(err, "load "+id)
	}
	if bad > 0 {
		// Only a row written around this package can hold one.
		return nil, &session.CorruptError{Line: int(bad) + 1, Err: fmt.Errorf("pgstore: session %s: entry %d spans several lines", id, bad)}
	}
	log, err := session.DecodeLog(data, &session.ReadOptions{Strict: true})
	if err != nil {
		return nil, fmt.Errorf("pgstore: session %s: %w", id, err)
	}
	return log, nil
}

// Rewrite implements session.Store: the header and all entries replaced
// in one transaction, under the session row's lock.
func (s *Store) Rewrite(ctx context.Context, id string, h session.Header, entries []session.Entry) error {
	if err := session.ValidateID(id); err != nil {
		return err
	}
	if h.ID != id {
		return fmt.Errorf("pgstore: rewrite of %s with a header for %s", id, h.ID)
	}
	hb, err := h.MarshalJSON()
	if err != nil {
		return err
	}
	size := len(hb) + 1
	for i, e := range entries {
		if e.IsZero() {
			return fmt.Errorf("pgstore: rewrite with zero Entry at %d", i)
		}
		size += e.Len() + 1
	}
	title := h.Title
	if t, ok := titleOf(entries); ok {
		title = t
	}
	last := ""
	if len(entries) > 0 {
		last = entries[len(entries)-1].ID()
	}
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM agentsession_sessions WHERE id = $1 FOR UPDATE`, id).Scan(&one); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: session %s", session.ErrNotFound, id)
			}
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM agentsession_entries WHERE session_id = $1`, id); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"agentsession_entries"}, []string{"session_id", "seq", "entry_id", "raw"},
			pgx.CopyFromSlice(len(entries), func(i int) ([]any, error) {
				return []any{id, int32(i + 1), entries[i].ID(), entries[i].AppendJSON(nil)}, nil
			}))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE agentsession_sessions SET
			header = $2, cwd = $3, title = $4, parent_session = $5, parent_id = $6, created_at = $7,
			entry_count = $8, last_entry = $9, size = $10, generation = generation + 1,
			updated_at = greatest(clock_timestamp(), updated_at + interval '1 microsecond')
			WHERE id = $1`,
			id, hb, h.Cwd, title, h.ParentSession, session.ParentID(h.ParentSession), created(h),
			len(entries), last, size)
		return err
	})
	if errors.Is(err, session.ErrNotFound) {
		return err
	}
	return mapErr(err, "rewrite "+id)
}

// Delete implements session.Store; the entries go with the session.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := session.ValidateID(id); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM agentsession_sessions WHERE id = $1`, id)
	if err != nil {
		return mapErr(err, "delete "+id)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: session %s", session.ErrNotFound, id)
	}
	return nil
}

// Archive hides a session from listings that do not ask for archived
// ones (session.ListOptions.Archived), as FileStore.Archive does; its
// entries stay and it opens as before.
func (s *Store) Archive(ctx context.Context, id string) error {
	return s.setArchived(ctx, id, true)
}

// Restore undoes Archive.
func (s *Store) Restore(ctx context.Context, id string) error {
	return s.setArchived(ctx, id, false)
}

func (s *Store) setArchived(ctx context.Context, id string, archived bool) error {
	if err := session.ValidateID(id); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE agentsession_sessions SET archived = $2 WHERE id = $1`, id, archived)
	if err != nil {
		return mapErr(err, "archive "+id)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: session %s", session.ErrNotFound, id)
	}
	return nil
}

// List implements session.Store. It reads session rows only, in the
// order of the (updated_at, id) index, a page at a time.
func (s *Store) List(ctx context.Context, opts session.ListOptions) (*session.ListPage, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = session.DefaultListLimit
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if opts.Cwd != "" {
		where = append(where, "cwd = "+arg(opts.Cwd))
	}
	if opts.ParentSession != "" {
		where = append(where, "parent_id = "+arg(session.ParentID(opts.ParentSession)))
	}
	// The database keeps microseconds: "after t" is "after t rounded
	// down", "before t" is "before t rounded up".
	if !opts.UpdatedAfter.IsZero() {
		where = append(where, "updated_at > "+arg(opts.UpdatedAfter.Truncate(time.Microsecond)))
	}
	if !opts.UpdatedBefore.IsZero() {
		where = append(where, "updated_at < "+arg(ceilMicro(opts.UpdatedBefore)))
	}
	if !opts.Archived {
		where = append(where, "NOT archived")
	}
	if opts.Cursor != "" {
		t, id, err := session.ParseCursor(opts.Cursor)
		if err != nil {
			return nil, err
		}
		where = append(where, fmt.Sprintf("(updated_at, id) < (%s, %s)", arg(ceilMicro(t)), arg(id)))
	}
	q := `SELECT id, title, cwd, created_at, updated_at, parent_session, entry_count, size, archived
		FROM agentsession_sessions`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY updated_at DESC, id DESC LIMIT " + arg(limit+1)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, mapErr(err, "list")
	}
	infos, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (session.SessionInfo, error) {
		var in session.SessionInfo
		var created *time.Time
		err := r.Scan(&in.ID, &in.Title, &in.Cwd, &created, &in.Updated, &in.ParentSession, &in.Entries, &in.Size, &in.Archived)
		if created != nil {
			in.Created = *created
		}
		return in, err
	})
	if err != nil {
		return nil, mapErr(err, "list")
	}
	p := &session.ListPage{Sessions: infos}
	if len(infos) > limit {
		p.Sessions = infos[:limit:limit]
		p.Next = session.Cursor(infos[limit-1])
	}
	return p, nil
}

// ceilMicro rounds t up to the microsecond.
func ceilMicro(t time.Time) time.Time {
	if u := t.Truncate(time.Microsecond); !u.Equal(t) {
		return u.Add(time.Microsecond)
	}
	return t
}
