package eino_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
)

// pgDSNEnv names a PostgreSQL server, as in pgstore's tests: with it the
// tests run on pgstore too (.ci/run starts one and sets it).
const pgDSNEnv = "AGENTSESSION_PG_DSN"

// pgBackend is the pgstore backend, when a server is named.
func pgBackend() (backend, bool) {
	if os.Getenv(pgDSNEnv) == "" {
		return backend{}, false
	}
	pools := map[session.Store]*pgxpool.Pool{}
	open := func(t testing.TB, pool *pgxpool.Pool) session.Store {
		s, err := pgstore.New(context.Background(), pool, nil)
		if err != nil {
			t.Fatal(err)
		}
		pools[s] = pool
		return s
	}
	return backend{"pgstore",
		func(t testing.TB) session.Store { return open(t, pgSchema(t)) },
		func(t testing.TB, old session.Store) session.Store { return open(t, pools[old]) },
	}, true
}

// pgSchema returns a pool on a schema of its own, migrated, dropped when
// t ends.
func pgSchema(t testing.TB) *pgxpool.Pool {
	ctx := context.Background()
	dsn := os.Getenv(pgDSNEnv)
	var b [6]byte
	rand.Read(b[:])
	schema := "eino_" + hex.EncodeToString(b[:])
	run := func(sql string) {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	run("CREATE SCHEMA " + schema)
	t.Cleanup(func() { run("DROP SCHEMA " + schema + " CASCADE") })
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	return pool
}
