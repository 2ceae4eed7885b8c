package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
	"github.com/agentsession/session/pgstore"
)

// bench --pg: the PostgreSQL row of the README's performance table, on
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

// runPGBench measures on the server dsn names, in a schema of its own
// that it creates and drops (the database needs CREATE for the user).
func runPGBench(ctx context.Context, dsn string, prog *progress) (_ *pgBenchResult, err error) {
	prog.set("bench: PostgreSQL", 0, 1)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("--pg: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "agentsession_bench_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return nil, fmt.Errorf("create schema %s: %w", schema, err)
	}
	defer func() {
		// Dropped whatever happened; a failure to drop is reported.
		if _, derr := conn.Exec(context.WithoutCancel(ctx), "DROP SCHEMA "+schema+" CASCADE"); derr != nil && err == nil {
			err = fmt.Errorf("drop schema %s: %w", schema, derr)
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
