package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
	"github.com/agentsession/session/storekit"
	"github.com/agentsession/session/storetest"
)

func TestStoretest(t *testing.T) {
	dsn(t)
	storetest.Run(t, func(t *testing.T) session.Store {
		s, _ := newStore(t)
		return s
	})
}

// TestMigrate: replicas starting together migrate once; New refuses a
// database that is not migrated, or migrated by a newer version.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	pool := poolIn(t, schema, 4)
	if _, err := pgstore.New(ctx, pool, nil); !errors.Is(err, pgstore.ErrSchema) {
		t.Fatalf("New before Migrate: %v, want ErrSchema", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = pgstore.Migrate(ctx, poolIn(t, schema, 1)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	var versions []int32
	rows, err := pool.Query(ctx, `SELECT version FROM agentsession_schema ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v int32
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	var want []int32 // every migration, once
	for v := range pgstore.SchemaVersion {
		want = append(want, int32(v+1))
	}
	if rows.Err() != nil || !slices.Equal(versions, want) {
		t.Fatalf("versions recorded: %v (%v), want %v", versions, rows.Err(), want)
	}
	if _, err := pgstore.New(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}

	// A newer package migrated this database: leave it alone.
	if _, err := pool.Exec(ctx, `INSERT INTO agentsession_schema (version, name) VALUES ($1, 'future.sql')`, pgstore.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool); !errors.Is(err, pgstore.ErrSchema) {
		t.Fatalf("Migrate of a newer schema: %v, want ErrSchema", err)
	}
	if _, err := pgstore.New(ctx, pool, nil); !errors.Is(err, pgstore.ErrSchema) {
		t.Fatalf("New on a newer schema: %v, want ErrSchema", err)
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	for _, id := range storetest.HostileIDs {
		if _, err := s.Load(ctx, id); !errors.Is(err, session.ErrInvalidID) {
			t.Errorf("Load(%q): %v, want ErrInvalidID", id, err)
		}
		if err := s.Delete(ctx, id); !errors.Is(err, session.ErrInvalidID) {
			t.Errorf("Delete(%q): %v, want ErrInvalidID", id, err)
		}
		if err := s.Archive(ctx, id); !errors.Is(err, session.ErrInvalidID) {
			t.Errorf("Archive(%q): %v, want ErrInvalidID", id, err)
		}
	}
	if err := s.Archive(ctx, "missing"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Archive of a missing session: %v", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Load(canceled, "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("Load with a canceled context: %v", err)
	}
	// The schema dropped under a running store: ErrSchema, not a bare
	// driver error.
	if _, err := pool.Exec(ctx, `DROP TABLE agentsession_entries, agentsession_sessions`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, session.ListOptions{}); !errors.Is(err, pgstore.ErrSchema) {
		t.Errorf("List without tables: %v, want ErrSchema", err)
	}
}

func TestArchive(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	for _, id := range []string{"a", "b", "c"} {
		if err := s.Create(ctx, session.Header{ID: id, Cwd: "/w", Timestamp: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Archive(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	archived := "b"
	list := func(opts session.ListOptions) []string {
		t.Helper()
		p, err := s.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, in := range p.Sessions {
			ids = append(ids, in.ID)
			if in.Archived != (in.ID == archived) {
				t.Fatalf("%s archived = %v", in.ID, in.Archived)
			}
		}
		return ids
	}
	if got := list(session.ListOptions{}); !slices.Equal(got, []string{"c", "a"}) {
		t.Fatalf("default listing %v, want the archived session hidden", got)
	}
	if got := list(session.ListOptions{Archived: true}); !slices.Equal(got, []string{"c", "b", "a"}) {
		t.Fatalf("listing with archived %v", got)
	}
	if _, err := s.Load(ctx, "b"); err != nil {
		t.Fatalf("an archived session still loads: %v", err)
	}
	if err := s.Restore(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	archived = ""
	if got := list(session.ListOptions{}); !slices.Equal(got, []string{"c", "b", "a"}) {
		t.Fatalf("after Restore %v", got)
	}
}

// TestListReadsOnlySessions: List must not touch the entries table. It
// runs while another transaction holds that table's ACCESS EXCLUSIVE
// lock, which blocks every read of it.
func TestListReadsOnlySessions(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	sess, err := session.Create(ctx, s, &session.CreateOptions{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.SaveTurn(ctx, []*session.Message{session.UserText("q"), session.Assistant(session.Text("a"))}, nil); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE agentsession_entries IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	p, err := s.List(short, session.ListOptions{Cwd: "/w"})
	if err != nil {
		t.Fatalf("List while the entries table is locked: %v", err)
	}
	if len(p.Sessions) != 1 || p.Sessions[0].Entries != 2 {
		t.Fatalf("listing %+v", p.Sessions)
	}
	// The lock is real: a Load waits for it.
	blocked, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	if _, err := s.Load(blocked, sess.ID()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Load under the lock: %v, want it to wait", err)
	}
}

// TestFidelity: every entry of pi's fixtures, unknown types and fields
// included, comes back byte for byte, and so does the header.
func TestFidelity(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	h := session.Header{ID: "fidelity", Cwd: "/w", Timestamp: time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC)}
	h.Extra.Set("futureHeaderField", json.RawMessage(`{"z":[1,"\u00e9"]}`))
	if err := s.Create(ctx, h); err != nil {
		t.Fatal(err)
	}
	lines := [][]byte{
		[]byte(`{"type":"future_kind","id":"f1","parentId":null,"timestamp":"2026-01-15T10:00:00.000Z","payload":{"deep":[1,2.50,"\ud83d\ude00"]},"zz":null}`),
		[]byte(`{"type":"message","id":"f2","parentId":"f1","timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":"caf\u00e9 \"q\"","newField":true},"extra":1e3}`),
		[]byte(`{"id":"f3","type":"label","parentId":"f2","timestamp":"2026-01-15T10:00:02.000Z","targetId":"f2","label":"x"}`),
	}
	var entries []session.Entry
	for _, l := range lines {
		e, err := session.ParseEntry(l)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	if err := s.Append(ctx, "fidelity", session.AppendOptions{}, entries...); err != nil {
		t.Fatal(err)
	}
	l, err := s.Load(ctx, "fidelity")
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range l.Entries {
		if string(e.JSON()) != string(lines[i]) {
			t.Fatalf("entry %d:\n got %s\nwant %s", i, e.JSON(), lines[i])
		}
	}
	if v, ok := l.Header.Extra.Get("futureHeaderField"); !ok || string(v) != `{"z":[1,"\u00e9"]}` {
		t.Fatalf("header field: %s %v", v, ok)
	}
}

// TestCopyThroughPostgres moves pi's fixture sessions from a FileStore
// into PostgreSQL and back into a new FileStore: the contexts are
// identical and the file comes back line for line.
func TestCopyThroughPostgres(t *testing.T) {
	ctx := context.Background()
	pg, _ := newStore(t)
	const compat = "../../shared/compat/pi"
	if _, err := os.Stat(compat); err != nil {
		t.Skipf("compat corpus not found at %s: %v", compat, err)
	}
	for _, name := range []string{"01-linear-all-entry-types", "02-branching", "03-compaction", "05-labels", "06-createBranchedSession", "07-migrated-fixture-large-session"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(compat, name+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			src, id := fileStoreWith(t, data)
			if err := session.Copy(ctx, pg, src, id); err != nil {
				t.Fatal(err)
			}
			if err := session.Copy(ctx, pg, src, id); !errors.Is(err, session.ErrExists) {
				t.Fatalf("second copy: %v, want ErrExists", err)
			}
			back, err := session.OpenFileStore(t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer back.Close()
			if err := session.Copy(ctx, back, pg, id); err != nil {
				t.Fatal(err)
			}
			want := contexts(t, src, id)
			if got := contexts(t, pg, id); !equalMaps(got, want) {
				t.Fatalf("context in PostgreSQL differs")
			}
			if got := contexts(t, back, id); !equalMaps(got, want) {
				t.Fatalf("context after the round trip differs")
			}
			// Line for line, as the source store keeps it (a version 1
			// file, migrated when first read).
			if got, want := fileOf(t, back, id), fileOf(t, src, id); got != want {
				t.Fatalf("the file did not come back line for line")
			}
		})
	}
}

// fileStoreWith returns a FileStore holding the seed-format file data.
func fileStoreWith(t *testing.T, data []byte) (*session.FileStore, string) {
	t.Helper()
	log, err := session.DecodeLog(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir := filepath.Join(root, storekit.CwdDir(log.Header.Cwd))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "2026-01-15T10-00-00-000Z_"+log.Header.ID+".jsonl"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	fs, err := session.OpenFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return fs, log.Header.ID
}

func fileOf(t *testing.T, fs *session.FileStore, id string) string {
	t.Helper()
	path, err := fs.Path(id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// contexts returns the context, as JSON, at every entry of the session
// that ends a branch, and at its leaf.
func contexts(t *testing.T, store session.Store, id string) map[string]string {
	t.Helper()
	s, err := session.Open(context.Background(), store, id)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := map[string]string{}
	ends := append(s.Leaves(), session.Entry{})
	for _, e := range ends {
		at := e.ID()
		if e.IsZero() {
			at = s.LeafID()
		}
		if at == "" {
			continue
		}
		c, err := s.ContextAt(at)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		out[at] = string(b)
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestTextProtocol: a pool in simple-protocol mode (as behind PgBouncer)
// gets bytea in text form; loads still come back byte for byte, and an
// empty append is accepted as in the other stores.
func TestTextProtocol(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	if err := pgstore.Migrate(ctx, poolIn(t, schema, 2)); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, session.Header{ID: "text", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "text", session.AppendOptions{}); err != nil {
		t.Fatalf("empty append: %v", err)
	}
	line := []byte(`{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-15T10:00:00.000Z","message":{"role":"user","content":"caf\u00e9 \\ \"x\""}}`)
	e, err := session.ParseEntry(line)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "text", session.AppendOptions{IfEmpty: true}, e); err != nil {
		t.Fatal(err)
	}
	l, err := s.Load(ctx, "text")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 1 || string(l.Entries[0].JSON()) != string(line) {
		t.Fatalf("loaded %v", l.Entries)
	}
}
