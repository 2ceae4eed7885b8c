package pgstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/storekit"
)

// What the store keeps of a session's metadata and of its entries for
// listings (schema version 5): the session.InfoFold of the entries in
// the fold column, and the session's metadata (the header's, with the
// fold's updates applied) in the columns the filters of
// session.ListOptions read.

// metaRow is what the columns meta, project_id, user_id, app and
// metadata_pairs hold (bytea all: any string, NUL included).
type metaRow struct {
	meta                 []byte // session.Meta as JSON
	projectID, user, app []byte // UTF-8 bytes
	pairs                [][]byte
}

// metaOf returns the metadata columns of a session with header h and
// fold f, as f.Fill gives them.
func metaOf(h session.Header, f *session.InfoFold) metaRow {
	var info session.SessionInfo
	f.Fill(&info, h)
	m := session.Meta{ProjectID: info.ProjectID, AppVersion: info.AppVersion, User: info.User, App: info.App, Metadata: info.Metadata}
	raw, _ := json.Marshal(m) // strings always marshal
	return metaRow{meta: raw, projectID: utf8Bytes(m.ProjectID), user: utf8Bytes(m.User), app: utf8Bytes(m.App), pairs: pairsOf(m.Metadata)}
}

// pairsOf returns metadata as the metadata_pairs column holds it, one
// element per key: the key's length (a uvarint), the key, the value.
// Never nil (pgx would send NULL).
func pairsOf(md map[string]string) [][]byte {
	out := make([][]byte, 0, len(md))
	for k, v := range md {
		b := binary.AppendUvarint(make([]byte, 0, len(k)+len(v)+2), uint64(len(k)))
		out = append(out, append(append(b, k...), v...))
	}
	return out
}

// foldJSON returns f as the fold column keeps it.
func foldJSON(f *session.InfoFold) []byte {
	raw, err := json.Marshal(f)
	if err != nil {
		return []byte("{}") // InfoFold holds strings and a time
	}
	return raw
}

// readFold reads a fold column's value (NULL or unreadable: the empty
// fold).
func readFold(raw []byte) session.InfoFold {
	var f session.InfoFold
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &f)
	}
	return f
}

// emptyFold is the JSON of the empty fold.
var emptyFold = foldJSON(&session.InfoFold{})

// foldDelta folds entries alone. changes reports whether they change a
// fold in more than its first user message (which the append function
// sets itself when the fold has none); firstUser is that message's
// derived title ("" when the entries have no user message).
func foldDelta(entries []session.Entry) (changes bool, firstUser string) {
	var d session.InfoFold
	for _, e := range entries {
		d.Add(e)
	}
	firstUser, d.FirstUser = d.FirstUser, ""
	return !bytes.Equal(foldJSON(&d), emptyFold), firstUser
}

// headerOf decodes a stored header line; what cannot be read is a
// header with nothing in it.
func headerOf(line []byte) session.Header {
	var h session.Header
	_ = h.UnmarshalJSON(line)
	return h
}

// foldSessions computes the fold and metadata columns of the sessions
// that have no fold (those of a database migrated to version 5), in
// tx: each session's entries are read once, in order.
func foldSessions(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `SELECT id, header FROM agentsession_sessions WHERE fold IS NULL ORDER BY id`)
	if err != nil {
		return err
	}
	type row struct {
		id     string
		header []byte
	}
	todo, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.id, &x.header)
		return x, err
	})
	if err != nil {
		return err
	}
	for _, x := range todo {
		var f session.InfoFold
		rows, err := tx.Query(ctx, `SELECT raw FROM agentsession_entries WHERE session_id = $1 ORDER BY seq`, x.id)
		if err != nil {
			return err
		}
		var raw []byte
		_, err = pgx.ForEachRow(rows, []any{&raw}, func() error {
			if e, err := session.ParseEntry(raw); err == nil {
				f.Add(e)
			}
			return nil
		})
		if err != nil {
			return err
		}
		h := headerOf(x.header)
		m := metaOf(h, &f)
		// The title as Rewrite keeps it: the latest name, else the
		// header's (a row written by hand may lack it).
		title := storekit.StoredString(h.Title)
		if f.Name != "" {
			title = storekit.StoredString(f.Name)
		}
		if _, err := tx.Exec(ctx, `UPDATE agentsession_sessions SET
			fold = $2, first_user = $3, meta = $4, project_id = $5, user_id = $6, app = $7, metadata_pairs = $8,
			title_utf8 = $9 WHERE id = $1`,
			x.id, foldJSON(&f), utf8Bytes(f.FirstUser), m.meta, m.projectID, m.user, m.app, m.pairs, utf8Bytes(title)); err != nil {
			return err
		}
	}
	return nil
}

var _ session.Archiver = (*Store)(nil)

// Archive implements session.Archiver: the session is left out of
// listings that do not ask for archived ones (session.ListOptions
// Archived, OnlyArchived) from now on, and listings show since when
// (SessionInfo.ArchivedAt, by the server's clock). Neither the log nor
// the update time changes; the session opens and takes appends as
// before. Archiving an archived session changes nothing and keeps its
// first archive time. session.ErrNotFound for an unknown id.
func (s *Store) Archive(ctx context.Context, id string) error {
	return s.setArchived(ctx, id, true)
}

// Unarchive implements session.Archiver: it brings an archived session
// back into listings (nothing changes for one that is not archived).
func (s *Store) Unarchive(ctx context.Context, id string) error {
	return s.setArchived(ctx, id, false)
}

// Restore is Unarchive.
//
// Deprecated: use Unarchive, the name every store's session.Archiver
// has.
func (s *Store) Restore(ctx context.Context, id string) error {
	return s.Unarchive(ctx, id)
}

func (s *Store) setArchived(ctx context.Context, id string, archived bool) error {
	if err := session.ValidateID(id); err != nil {
		return err
	}
	what, q := "unarchive ", `WITH u AS (UPDATE agentsession_sessions SET archived_at = NULL
			WHERE id = $1 AND archived_at IS NOT NULL RETURNING id, entry_count, generation)
		SELECT agentsession_notify(id, 'unarchived', entry_count, entry_count, generation, $2) FROM u`
	if archived {
		what, q = "archive ", `WITH u AS (UPDATE agentsession_sessions SET archived_at = clock_timestamp()
			WHERE id = $1 AND archived_at IS NULL RETURNING id, entry_count, generation)
		SELECT agentsession_notify(id, 'archived', entry_count, entry_count, generation, $2) FROM u`
	}
	var got string
	err := s.pool.QueryRow(ctx, q, id, s.origin).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		// Archived (or not) already, or no such session.
		err = s.pool.QueryRow(ctx, `SELECT id FROM agentsession_sessions WHERE id = $1`, id).Scan(&got)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: session %s", session.ErrNotFound, id)
		}
	}
	return mapErr(ctx, err, what+id)
}

var _ session.CompactionMarker = (*Store)(nil)

// MarkCompacting implements session.CompactionMarker: the time is kept
// in the column compacting_at (microseconds, as every time the database
// keeps), beside the log, which does not change, nor does the update
// time. Subscribers get a session.ChangeCompacting. session.ErrNotFound
// for an unknown id.
func (s *Store) MarkCompacting(ctx context.Context, id string, since time.Time) error {
	if err := session.ValidateID(id); err != nil {
		return err
	}
	var at *time.Time
	if !since.IsZero() {
		t := since.UTC().Truncate(time.Microsecond)
		at = &t
	}
	var got string
	err := s.pool.QueryRow(ctx, `WITH u AS (UPDATE agentsession_sessions SET compacting_at = $2
			WHERE id = $1 RETURNING id, entry_count, generation)
		SELECT agentsession_notify(id, 'compacting', entry_count, entry_count, generation, $3, $2) FROM u`, id, at, s.origin).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: session %s", session.ErrNotFound, id)
	}
	return mapErr(ctx, err, "mark the compaction of "+id)
}

var _ session.SharedStateStore = (*Store)(nil)

// LoadState implements session.SharedStateStore: the state of owner in
// scope, read from agentsession_state (a row per key); an empty State
// when it has none. Values come back as PostgreSQL's jsonb writes them
// (the same JSON value; white space and the order of object members may
// differ from what was given).
func (s *Store) LoadState(ctx context.Context, scope session.StateScope, owner string) (session.State, error) {
	if err := session.CheckStateOwner(scope, owner); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT key, value::text FROM agentsession_state WHERE scope = $1 AND owner = $2`, string(scope), owner)
	if err != nil {
		return nil, mapErr(ctx, err, "load state")
	}
	st := session.State{}
	var k, v string
	_, err = pgx.ForEachRow(rows, []any{&k, &v}, func() error {
		st[k] = json.RawMessage(v)
		return nil
	})
	if err != nil {
		return nil, mapErr(ctx, err, "load state")
	}
	return st, nil
}

// UpdateState implements session.SharedStateStore: delta is applied in
// one statement (a null value deletes its key, others are inserted or
// replaced), so that it is atomic and concurrent updates of other keys,
// from any connection, are all kept; of two updates of one key the one
// that commits last wins. A value that is not JSON is refused before
// anything is sent.
func (s *Store) UpdateState(ctx context.Context, scope session.StateScope, owner string, delta session.State) error {
	if err := session.CheckStateOwner(scope, owner); err != nil {
		return err
	}
	var del, keys, vals []string
	for k, v := range delta {
		switch {
		case !json.Valid(v):
			return fmt.Errorf("pgstore: state %q: the value is not JSON", k)
		case strings.IndexByte(k, 0) >= 0:
			return fmt.Errorf("pgstore: state %q: a key cannot hold NUL", k)
		case string(bytes.TrimSpace(v)) == "null":
			del = append(del, k)
		default:
			keys, vals = append(keys, k), append(vals, string(v))
		}
	}
	if len(del) == 0 && len(keys) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `WITH del AS (
			DELETE FROM agentsession_state WHERE scope = $1 AND owner = $2 AND key = ANY ($3::text[]))
		INSERT INTO agentsession_state (scope, owner, key, value)
			SELECT $1, $2, t.k, t.v::jsonb FROM unnest($4::text[], $5::text[]) AS t (k, v)
		ON CONFLICT (scope, owner, key) DO UPDATE SET value = excluded.value`,
		string(scope), owner, del, keys, vals)
	return mapErr(ctx, err, "update state")
}
