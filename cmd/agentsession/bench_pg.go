package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
	"github.com/agentsession/session/pgstore"
)

// bench --pg: the PostgreSQL row of the performance table (docs/performance.md), on
// the user's own server. It is pgstore's BenchmarkAppend/sessions, run
// once: pgAgents agents, each saving W10k turns to a session of its
// own, pgTurns turns among them, with the store's group commit.
const (
	pgAgents = 16
	pgTurns  = 3000
)

// pgBenchResult is the "postgres" object of bench's JSON.
type pgBenchResult struct {
	Agents        int     `json:"agents"`
	Turns         int     `json:"turns"`
	EntriesPerSec float64 `json:"entriesPerSec"`
	TurnP50Ns     int64   `json:"turnP50Ns"`
	TurnP99Ns     int64   `json:"turnP99Ns"`
}

// pgConnectTimeout bounds a connection to the server when the DSN sets
// no connect_timeout: a server that does not answer is an error, not a
// wait for the system's TCP timeout.
const pgConnectTimeout = 10 * time.Second

// pgConfig parses dsn for bench --pg.
func pgConfig(dsn string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = pgConnectTimeout
	}
	return cfg, nil
}

// pgPing checks that the server dsn names answers, before the disk's
// measures: a wrong DSN fails at once, not after them.
func pgPing(ctx context.Context, dsn string) error {
	cfg, err := pgConfig(dsn)
	if err != nil {
		return err
	}
	return pgExec(ctx, cfg.ConnConfig, "SELECT 1")
}

// runPGBench measures on the server dsn names, in a schema of its own
// that it creates and drops (the user needs CREATE on the database). The
// schema is dropped however the run ends, ctx's end (an interrupt)
// included; when it cannot be, the error names it.
func runPGBench(ctx context.Context, dsn string, prog *progress) (_ *pgBenchResult, err error) {
	prog.set("bench: PostgreSQL", 0, 1)
	cfg, err := pgConfig(dsn)
	if err != nil {
		return nil, err
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "agentsession_bench_" + hex.EncodeToString(b[:])
	admin := cfg.ConnConfig.Copy() // for the schema itself: no search_path into it
	if err := pgExec(ctx, admin, "CREATE SCHEMA "+schema); err != nil {
		return nil, fmt.Errorf("create schema %s: %w", schema, err)
	}
	defer func() {
		// On a connection of its own: the run's may be what failed.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if derr := pgExec(dctx, admin, "DROP SCHEMA "+schema+" CASCADE"); derr != nil {
			err = errors.Join(err, fmt.Errorf("drop schema %s (drop it with DROP SCHEMA %s CASCADE): %w", schema, schema, derr))
		}
	}()
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = pgAgents + 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if err := pgstore.Migrate(ctx, pool); err != nil {
		return nil, err
	}
	store, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	handles := make([]*session.Session, pgAgents)
	for g := range handles {
		if handles[g], err = session.Create(ctx, store, &session.CreateOptions{Cwd: "/bench"}); err != nil {
			return nil, err
		}
		defer handles[g].Close()
	}
	a, err := workload.SaveTurns(ctx, handles, pgTurns)
	if err != nil {
		return nil, err
	}
	prog.set("bench: PostgreSQL", 1, 1)
	return &pgBenchResult{
		Agents:        pgAgents,
		Turns:         pgTurns,
		EntriesPerSec: a.EntriesPerSec(),
		TurnP50Ns:     a.Quantile(0.5).Nanoseconds(),
		TurnP99Ns:     a.Quantile(0.99).Nanoseconds(),
	}, nil
}

// pgExec runs sql on a connection of its own, made from cc.
func pgExec(ctx context.Context, cc *pgx.ConnConfig, sql string) error {
	conn, err := pgx.ConnectConfig(ctx, cc.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}
