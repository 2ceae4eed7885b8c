package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
)

// Schema version 10 keeps each session's longest line, so that an open
// by path refuses what Load refuses (a line over the store's
// MaxLineBytes anywhere in the session), whoever wrote the rows and
// whenever. A store with a lower limit than the writer's reads:
func TestLongestLine(t *testing.T) {
	ctx := context.Background()
	small := session.Limits{MaxLineBytes: 100_000}
	long := func(t *testing.T) []session.Entry {
		return padded(t, pathShapes(t)["several compactions"], "xu0", 200_000)
	}
	t.Run("rows written before version 10", func(t *testing.T) {
		// A version 8 database: the long line, long before the latest
		// compaction, is there when the migration runs.
		pool := poolIn(t, newSchema(t), 4)
		createVersion(t, pool, 8)
		insertSessionRow(t, pool, "before10")
		appendV8(t, pool, "before10", long(t)...)
		if err := pgstore.Migrate(ctx, pool); err != nil {
			t.Fatal(err)
		}
		// A store with the default limits reads it whole and fills the
		// places of its rows: an open after that goes by the path.
		pg, err := pgstore.New(ctx, pool, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer pg.Close()
		if _, err := pg.LoadPath(ctx, "before10"); err != nil {
			t.Fatal(err)
		}
		pgstore.WaitFills(pg)
		if pl, err := newStoreLimits(t, pool, session.Limits{}).LoadPath(ctx, "before10"); err != nil || pl.Complete {
			t.Fatalf("after the fill, an open by path: complete %v, %v", pl != nil && pl.Complete, err)
		}
		wantTooLarge(t, newStoreLimits(t, pool, small), "before10")
	})
	t.Run("appended", func(t *testing.T) {
		pg, pool := newStore(t)
		writeLog(t, pg, "appended", "one by one", long(t))
		wantTooLarge(t, newStoreLimits(t, pool, small), "appended")
	})
	t.Run("rewritten without it", func(t *testing.T) {
		// The longest is the new rows' after a Rewrite: the session
		// opens by its path again.
		pg, pool := newStore(t)
		writeLog(t, pg, "rewritten", "rewrite", long(t))
		wantTooLarge(t, newStoreLimits(t, pool, small), "rewritten")
		if err := pg.Rewrite(ctx, "rewritten", session.RewriteOptions{}, session.Header{ID: "rewritten", Cwd: "/w", Version: session.CurrentVersion}, pathShapes(t)["several compactions"]); err != nil {
			t.Fatal(err)
		}
		pl, err := newStoreLimits(t, pool, small).LoadPath(ctx, "rewritten")
		if err != nil || pl.Complete {
			t.Fatalf("after the rewrite, an open by path: complete %v, %v", pl != nil && pl.Complete, err)
		}
	})
}

// wantTooLarge checks that Load and an open of id in pg both refuse it
// with session.ErrTooLarge.
func wantTooLarge(t *testing.T, pg *pgstore.Store, id string) {
	t.Helper()
	ctx := context.Background()
	if _, err := pg.Load(ctx, id); !errors.Is(err, session.ErrTooLarge) {
		t.Fatalf("Load: %v, want ErrTooLarge", err)
	}
	if _, err := pg.LoadPath(ctx, id); !errors.Is(err, session.ErrTooLarge) {
		t.Fatalf("LoadPath: %v, want ErrTooLarge", err)
	}
	if s, err := session.Open(ctx, pg, id); !errors.Is(err, session.ErrTooLarge) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open: %v, want ErrTooLarge", err)
	}
}

// insertSessionRow adds session id's row as a version 8 package's
// Create would.
func insertSessionRow(t *testing.T, pool *pgxpool.Pool, id string) {
	t.Helper()
	hb, _ := session.Header{ID: id, Cwd: "/w", Version: session.CurrentVersion}.MarshalJSON()
	if _, err := pool.Exec(context.Background(), `INSERT INTO agentsession_sessions (id, header, cwd_utf8, title_utf8, parent_session_utf8, parent_id, updated_at, size)
		VALUES ($1, $2, '/w', '', '', '', clock_timestamp(), $3)`, id, hb, len(hb)+1); err != nil {
		t.Fatal(err)
	}
}

// appendV8 appends entries to session id as a version 8 package does
// (its function's signature, which later versions keep).
func appendV8(t *testing.T, pool *pgxpool.Pool, id string, entries ...session.Entry) {
	t.Helper()
	var res string
	if err := pool.QueryRow(context.Background(), `SELECT agentsession_append($1, '', false, $2, $3, NULL::bytea, 100, 100000, 100000000,
		NULL::bytea, NULL::bytea, NULL::bytea, NULL::bytea, NULL::bytea[], '')`, id, ids(entries), raws(entries)).Scan(&res); err != nil || res != "" {
		t.Fatalf("append: %q %v", res, err)
	}
}
