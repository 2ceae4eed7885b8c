package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	session "github.com/agentsession/session"
)

var _ session.ConditionalRemover = (*Store)(nil)

// DeleteIfUnchanged implements session.ConditionalRemover: one DELETE
// whose WHERE compares the row's last entry and entry count with seen,
// under the row lock every append takes, so an append that committed
// first makes it delete nothing (session.ErrConflict).
func (s *Store) DeleteIfUnchanged(ctx context.Context, id string, seen session.LogMark) error {
	if err := session.ValidateID(id); err != nil {
		return err
	}
	s.settle(ctx, id) // let this Store's subscribers read what it deletes
	var got string
	err := s.pool.QueryRow(ctx, `WITH d AS (DELETE FROM agentsession_sessions
			WHERE id = $1 AND last_entry = $3 AND entry_count = $4
			RETURNING id, entry_count, generation)
		SELECT agentsession_notify(id, 'deleted', entry_count, entry_count, generation, $2) FROM d`,
		id, s.origin, seen.Last, seen.Entries).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return s.whyUnchanged(ctx, id, seen, "delete")
	}
	return mapErr(ctx, err, "delete "+id)
}

// ArchiveIfUnchanged implements session.ConditionalRemover: one UPDATE
// with the same condition as DeleteIfUnchanged's. Archiving an archived
// session that is unchanged changes nothing.
func (s *Store) ArchiveIfUnchanged(ctx context.Context, id string, seen session.LogMark) error {
	if err := session.ValidateID(id); err != nil {
		return err
	}
	var got string
	err := s.pool.QueryRow(ctx, `WITH u AS (UPDATE agentsession_sessions SET archived_at = clock_timestamp()
			WHERE id = $1 AND archived_at IS NULL AND last_entry = $3 AND entry_count = $4
			RETURNING id, entry_count, generation)
		SELECT agentsession_notify(id, 'archived', entry_count, entry_count, generation, $2) FROM u`,
		id, s.origin, seen.Last, seen.Entries).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.whyUnchanged(ctx, id, seen, "archive")
		if errors.Is(err, errArchived) {
			return nil
		}
		return err
	}
	return mapErr(ctx, err, "archive "+id)
}

var errArchived = errors.New("already archived")

// whyUnchanged says why a conditional delete or archive of id touched no
// row: session.ErrNotFound, session.ErrConflict, or errArchived for an
// unchanged session archived already.
func (s *Store) whyUnchanged(ctx context.Context, id string, seen session.LogMark, what string) error {
	var (
		last     string
		n        int
		archived bool
	)
	err := s.pool.QueryRow(ctx, `SELECT last_entry, entry_count, archived_at IS NOT NULL
		FROM agentsession_sessions WHERE id = $1`, id).Scan(&last, &n, &archived)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: session %s", session.ErrNotFound, id)
	}
	if err != nil {
		return mapErr(ctx, err, what+" "+id)
	}
	if err := seen.Check(id, last, n); err != nil {
		return err
	}
	if archived && what == "archive" {
		return errArchived
	}
	// Changed and changed back between the two statements: as good as
	// changed.
	return fmt.Errorf("%w: session %s changed during the %s", session.ErrConflict, id, what)
}

var _ session.UpdatedSetter = (*Store)(nil)

// SetUpdated implements session.UpdatedSetter: one UPDATE of the row's
// updated_at, with DeleteIfUnchanged's condition, so an append that
// committed first makes it change nothing (session.ErrConflict). The
// next append sets updated_at from the clock again.
func (s *Store) SetUpdated(ctx context.Context, id string, seen session.LogMark, t time.Time) error {
	if err := session.ValidateID(id); err != nil {
		return err
	}
	if t.IsZero() { // the rest of the range session.SetUpdated refuses fits in a timestamptz
		return fmt.Errorf("pgstore: set the updated time of %s to the zero time: %w", id, session.ErrBadTime)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE agentsession_sessions SET updated_at = $2
		WHERE id = $1 AND last_entry = $3 AND entry_count = $4`, id, t, seen.Last, seen.Entries)
	if err != nil {
		return mapErr(ctx, err, "set the updated time of "+id)
	}
	if tag.RowsAffected() == 0 {
		return s.whyUnchanged(ctx, id, seen, "update")
	}
	return nil
}
