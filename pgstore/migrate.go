package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SchemaVersion is the version of the schema this package reads and
// writes: the number of the last file in migrations/.
const SchemaVersion = 10

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the first key of the advisory lock Migrate holds (the
// second is the hash of the schema): "as" in ASCII.
const migrationLock = 0x6173

// ErrSchema means the database schema is not the one this package
// expects: missing or older (run Migrate) or newer (upgrade the package).
var ErrSchema = errors.New("pgstore: schema version mismatch")

// goSteps are the parts of migrations that SQL cannot do, run in the
// migration's transaction after its SQL: version 5 folds the entries of
// every session (see foldSessions).
var goSteps = map[int]func(context.Context, pgx.Tx) error{
	5: foldSessions,
}

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		num, _, _ := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("pgstore: migration %s: no version number", name)
		}
		sql, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: base, sql: string(sql)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("pgstore: migration %s out of sequence", m.name)
		}
	}
	return out, nil
}

// Migrate creates the schema in the connection's current schema (the
// first of its search_path) or upgrades it to SchemaVersion. It is safe
// to call from every replica at startup: one transaction under an
// advisory lock applies what is missing, and the others wait and then
// find nothing to do. A schema newer than this package is left alone
// (ErrSchema). When the database cannot be reached the error is
// ErrUnavailable, and nothing was applied: it is one transaction.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	// Read committed whatever the server's default: a transaction that
	// waited for the lock must see what the holder committed.
	err = pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		// The lock comes first: CREATE TABLE IF NOT EXISTS races with
		// itself in concurrent transactions.
		var schema *string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return err
		}
		if schema == nil {
			return errors.New("the connection has no current schema (check search_path)")
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, migrationLock, *schema); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS agentsession_schema (
			version    integer     PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM agentsession_schema`).Scan(&have); err != nil {
			return err
		}
		if have > SchemaVersion {
			return fmt.Errorf("%w: the database has version %d, this package knows %d", ErrSchema, have, SchemaVersion)
		}
		if have < 0 {
			return fmt.Errorf("%w: the database records version %d", ErrSchema, have)
		}
		for _, m := range ms[have:] {
			// No arguments: pgx sends it with the simple protocol, which
			// runs a file of several statements.
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if step := goSteps[m.version]; step != nil {
				if err := step(ctx, tx); err != nil {
					return fmt.Errorf("migration %s: %w", m.name, err)
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO agentsession_schema (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return err
			}
		}
		return nil
	})
	return mapErr(ctx, err, "migrate")
}

// schemaVersion reads the version Migrate recorded, 0 when there is none.
// It looks in the current schema only, where Migrate creates the tables,
// not in a schema later on the search_path.
func schemaVersion(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var table *string
	if err := pool.QueryRow(ctx, `SELECT to_regclass(quote_ident(current_schema()) || '.agentsession_schema')::text`).Scan(&table); err != nil {
		return 0, err
	}
	if table == nil {
		return 0, nil
	}
	var v int
	err := pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+*table).Scan(&v)
	return v, err
}
