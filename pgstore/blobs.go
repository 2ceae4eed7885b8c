package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	session "github.com/agentsession/session"
)

// Blobs: the content-addressed blobs of workspace snapshots, in the
// table agentsession_blobs (schema version 4), one row per content.

var (
	_ session.BlobStore     = (*Store)(nil)
	_ session.BlobCollector = (*Store)(nil)
	_ session.BlobSweeper   = (*Store)(nil)
)

// PutBlob implements session.BlobStore: one statement, which inserts the
// blob or, when a row of that reference is there already, sets its
// touched_at (the time a collection goes by, see CollectBlobs) and
// leaves its data. It pins the blob first (see pins.go): the
// collections of other Stores spare it until an append through this
// Store refers to it, ReleaseBlobs, or Close. A blob over the store's
// MaxBlobBytes is refused (*session.LimitError), and nothing is
// written.
func (s *Store) PutBlob(ctx context.Context, data []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if int64(len(data)) > s.maxBlob {
		return "", fmt.Errorf("pgstore: put blob: %w", &session.LimitError{What: "blob", Size: int64(len(data)), Limit: s.maxBlob})
	}
	ref := session.BlobRef(data)
	// Pinned before the row is inserted or refreshed (see pins.go).
	if err := s.pin(ctx, ref, data, false); err != nil {
		return "", err
	}
	if data == nil {
		data = []byte{} // NULL otherwise
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO agentsession_blobs (ref, data, size, touched_at)
		VALUES ($1, $2, $3, clock_timestamp())
		ON CONFLICT (ref) DO UPDATE SET touched_at = clock_timestamp()`, ref, data, len(data))
	if err != nil {
		return "", mapErr(ctx, err, "put blob "+ref)
	}
	return ref, nil
}

// GetBlob implements session.BlobStore: session.ErrNotFound when there is
// no such blob, session.ErrCorrupt (*session.CorruptError) when the
// stored bytes do not match the reference's SHA-256, or are larger than
// the store's MaxBlobBytes, and session.ErrInvalidID for a reference that
// is not one.
func (s *Store) GetBlob(ctx context.Context, ref string) ([]byte, error) {
	if err := session.ValidateBlobRef(ref); err != nil {
		return nil, err
	}
	var data []byte
	var size int64
	// One round trip; the data of a row over the limit is not sent (its
	// length is known without reading it).
	err := s.pool.QueryRow(ctx, `SELECT CASE WHEN octet_length(data) <= $2 THEN data END, octet_length(data)
		FROM agentsession_blobs WHERE ref = $1`, ref, s.maxBlob).Scan(&data, &size)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: blob %s", session.ErrNotFound, ref)
	}
	if err != nil {
		return nil, mapErr(ctx, err, "get blob "+ref)
	}
	if size > s.maxBlob {
		return nil, &session.CorruptError{Err: fmt.Errorf("pgstore: blob %s: %w", ref, &session.LimitError{What: "blob", Size: size, Limit: s.maxBlob})}
	}
	if session.BlobRef(data) != ref {
		return nil, &session.CorruptError{Err: fmt.Errorf("pgstore: blob %s: content does not match its SHA-256", ref)}
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// blobPage is how many blobs ListBlobs reads a query.
const blobPage = 1000

// ListBlobs implements session.BlobCollector: every blob, with its size
// and touched_at (by the server's clock), in pages of the primary key,
// no data read. fn runs between the queries, never while one holds a
// connection, so it may use the store.
func (s *Store) ListBlobs(ctx context.Context, fn func(session.BlobInfo) error) error {
	after := ""
	for {
		rows, err := s.pool.Query(ctx, `SELECT ref, size, touched_at FROM agentsession_blobs
			WHERE ref > $1 ORDER BY ref LIMIT $2`, after, blobPage)
		if err != nil {
			return mapErr(ctx, err, "list blobs")
		}
		infos, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (session.BlobInfo, error) {
			var b session.BlobInfo
			err := r.Scan(&b.Ref, &b.Size, &b.Touched)
			return b, err
		})
		if err != nil {
			return mapErr(ctx, err, "list blobs")
		}
		for _, b := range infos {
			if err := fn(b); err != nil {
				return err
			}
		}
		if len(infos) < blobPage {
			return nil
		}
		after = infos[len(infos)-1].Ref
	}
}

// DeleteBlob implements session.BlobCollector (session.ErrNotFound if
// there is no such blob). A collection uses DeleteBlobIfOlder.
func (s *Store) DeleteBlob(ctx context.Context, ref string) error {
	if err := session.ValidateBlobRef(ref); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM agentsession_blobs WHERE ref = $1`, ref)
	if err != nil {
		return mapErr(ctx, err, "delete blob "+ref)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: blob %s", session.ErrNotFound, ref)
	}
	return nil
}

// DeleteBlobIfOlder implements session.BlobSweeper: one DELETE
// conditional on touched_at and on the pins (see pins.go): no other
// connection than this Store's own holds the reference's lock, and this
// Store did not pin it with PinBlobs. Under READ COMMITTED a put that
// refreshed the row first makes the condition false when the DELETE
// gets the row; one that comes after the delete inserts the blob again.
func (s *Store) DeleteBlobIfOlder(ctx context.Context, ref string, cutoff time.Time) (bool, error) {
	if err := session.ValidateBlobRef(ref); err != nil {
		return false, err
	}
	held, pid := s.heldHere(ref)
	if held {
		return false, nil
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM agentsession_blobs WHERE ref = $1 AND touched_at < $2 AND `+pinnedSQL,
		ref, cutoff, int64(pid), pinKey(ref))
	if err != nil {
		return false, mapErr(ctx, err, "delete blob "+ref)
	}
	return tag.RowsAffected() > 0, nil
}
