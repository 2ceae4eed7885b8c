//go:build cgo && sqlite3

package langchaingo_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/tmc/langchaingo/memory/sqlite3"
	"github.com/tmc/langchaingo/schema"
)

// langchaingo's SQLite history (github.com/mattn/go-sqlite3, cgo) joins
// the benchmarks with -tags sqlite3: in a file, as FileStore is, and in
// memory. Left out of the default build, which stays free of cgo and of
// compiling SQLite.
//
//	go test -tags sqlite3 -run '^$' -bench . -benchmem -count 6
func init() {
	backends = append(backends,
		backend{"langchaingo-sqlite3-file", func(b *testing.B) schema.ChatMessageHistory {
			return sqliteHistory(b, filepath.Join(b.TempDir(), "history.db"))
		}},
		backend{"langchaingo-sqlite3-memory", func(b *testing.B) schema.ChatMessageHistory {
			return sqliteHistory(b, ":memory:")
		}},
	)
}

func sqliteHistory(b *testing.B, addr string) schema.ChatMessageHistory {
	db, err := sql.Open("sqlite3", addr)
	if err != nil {
		b.Fatal(err)
	}
	// One connection: each connection to ":memory:" is a database of its own.
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { _ = db.Close() })
	return sqlite3.NewSqliteChatMessageHistory(
		sqlite3.WithDB(db),
		sqlite3.WithContext(context.Background()),
		sqlite3.WithSession("bench"),
		sqlite3.WithLimit(1<<20), // the default, 1000, would cut Messages short
	)
}
