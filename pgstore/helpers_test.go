package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentsession/session/pgstore"
)

// dsnEnv names the server the tests use; .ci/run starts one and sets it.
const dsnEnv = "AGENTSESSION_PG_DSN"

func dsn(t testing.TB) string {
	t.Helper()
	d := os.Getenv(dsnEnv)
	if d == "" {
		t.Skip(dsnEnv + " is not set: the PostgreSQL tests need a server (see docs/postgresql.md, \"Tests with and without PostgreSQL\")")
	}
	return d
}

// newSchema creates a schema of the test's own, dropped when it ends, so
// tests run in parallel on one database without seeing each other.
func newSchema(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatalf("connect to %s: %v", dsnEnv, err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, dsn(t))
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// poolIn returns a pool whose connections work in schema, closed when
// the test ends.
func poolIn(t testing.TB, schema string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// newStore returns a migrated Store in a schema of its own.
func newStore(t testing.TB) (*pgstore.Store, *pgxpool.Pool) {
	t.Helper()
	return newStoreConns(t, 8)
}

// newStoreConns is newStore on a pool of maxConns connections.
func newStoreConns(t testing.TB, maxConns int32) (*pgstore.Store, *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	pool := poolIn(t, newSchema(t), maxConns)
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, pool
}
