package main

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// benchSchemas counts the schemas bench --pg creates on the server dsn
// names.
func benchSchemas(t *testing.T, dsn string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'agentsession\_bench\_%'`).Scan(&n))
	return n
}

// TestBenchPostgres runs bench --pg on the server AGENTSESSION_PG_DSN
// names (.ci/run starts one): the PostgreSQL figures are measured and
// printed, and the schema the run made is gone afterwards.
func TestBenchPostgres(t *testing.T) {
	dsn := os.Getenv("AGENTSESSION_PG_DSN")
	if dsn == "" {
		t.Skip("AGENTSESSION_PG_DSN is not set: bench --pg needs a PostgreSQL server (see docs/postgresql.md, \"Tests with and without PostgreSQL\")")
	}
	t.Setenv("AGENTSESSION_TEST_MAIN", "1") // bench measures the heap in a child process: this binary as main
	wsTree := tinyWSTree(t)
	before := benchSchemas(t, dsn)

	out, errOut, code := runCLI("bench", "--json", "--turns", "3", "--ws-tree", wsTree, "--pg", dsn)
	require.Equal(t, 0, code, errOut)
	var r struct {
		Postgres *pgBenchResult `json:"postgres"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.NotNil(t, r.Postgres, out)
	p := r.Postgres
	assert.Equal(t, pgAgents, p.Agents)
	assert.Equal(t, pgTurns, p.Turns)
	assert.Positive(t, p.EntriesPerSec)
	assert.Positive(t, p.TurnP50Ns)
	assert.Equal(t, before, benchSchemas(t, dsn), "bench --pg left its schema behind")

	out, errOut, code = runCLI("bench", "--turns", "3", "--ws-tree", wsTree, "--pg", dsn)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "PostgreSQL: 16 agents, a session each, 3000 turns")
	assert.Contains(t, out, "entries/s")
	assert.Equal(t, before, benchSchemas(t, dsn))
}

// TestBenchPostgresRefused: a server that does not answer, a DSN that
// does not parse and an empty one are errors that say so, before the
// disk is measured: the first is the check made before the measures.
func TestBenchPostgresRefused(t *testing.T) {
	for _, c := range []struct{ name, dsn, msg string }{
		{"no server", "postgres://nobody@127.0.0.1:1/none", "agentsession: bench: --pg: the server does not answer"},
		{"not a DSN", "postgres://a b@[::1", "agentsession bench: --pg:"},
		{"empty", "", "agentsession bench: --pg needs the DSN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runCLI("bench", "--json", "--turns", "3", "--pg", c.dsn)
			assert.Equal(t, exitError, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, c.msg)
		})
	}
}
