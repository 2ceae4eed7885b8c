package pgstore_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentsession/session"
)

// TestLZ4: on a server that has lz4, the entries' lines are compressed
// with it (schema version 8) and read back byte for byte; a server
// without it is migrated all the same, its lines compressed with pglz.
func TestLZ4(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	var method string
	if err := pool.QueryRow(ctx, `SELECT attcompression::text FROM pg_attribute
		WHERE attrelid = 'agentsession_entries'::regclass AND attname = 'raw'`).Scan(&method); err != nil {
		t.Fatal(err)
	}
	// Whether the server has lz4: a column of a temporary table tells.
	if _, err := pool.Exec(ctx, `CREATE TEMP TABLE lz4_probe (b bytea COMPRESSION lz4)`); err != nil {
		if method == "l" {
			t.Fatalf("raw is set to lz4 on a server that refuses it: %v", err)
		}
		t.Skipf("the server has no lz4 (%v); raw is compressed with %q", err, method)
	}
	if method != "l" {
		t.Fatalf("raw is compressed with %q, want lz4 (l)", method)
	}
	if err := s.Create(ctx, session.Header{ID: "big", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	e, err := session.NewEntry("pgtest", "e1", "", time.Unix(1700000000, 0), map[string]string{"text": strings.Repeat("compressible ", 1000)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "big", session.AppendOptions{}, e); err != nil {
		t.Fatal(err)
	}
	var used string
	if err := pool.QueryRow(ctx, `SELECT pg_column_compression(raw) FROM agentsession_entries WHERE session_id = 'big'`).Scan(&used); err != nil {
		t.Fatal(err)
	}
	if used != "lz4" {
		t.Fatalf("the line was compressed with %q, want lz4", used)
	}
	l, err := s.Load(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 1 || !bytes.Equal(l.Entries[0].JSON(), e.JSON()) {
		t.Fatal("the line came back changed")
	}
}
