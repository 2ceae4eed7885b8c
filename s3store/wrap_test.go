package s3store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
	"github.com/agentsession/session/s3store"
	"github.com/agentsession/session/storetest"
)

func newBlobs(t testing.TB) *s3store.Blobs {
	t.Helper()
	b, err := s3store.OpenBlobs(context.Background(), options(t))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStoretestWithBlobs: another store with this package's blobs passes
// the whole suite, the blob cases on the bucket.
func TestStoretestWithBlobs(t *testing.T) {
	endpoint(t)
	storetest.Run(t, func(t *testing.T) session.Store {
		return s3store.WithBlobs(session.NewMemoryStore(), newBlobs(t))
	})
}

// screenshot is an image large enough to go to a blob.
var screenshot = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte("pixels"), 4096)...)

// saveScreenshot saves a turn whose user message holds screenshot.
func saveScreenshot(t *testing.T, store session.Store) string {
	t.Helper()
	ctx := context.Background()
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SaveTurn(ctx, []*session.Message{
		session.User(session.Text("what is this?"), session.Image("image/png", screenshot)),
		session.AssistantText("a screenshot"),
	}, nil); err != nil {
		t.Fatal(err)
	}
	return s.ID()
}

// imageBack opens session id and returns its first image's bytes.
func imageBack(t *testing.T, store session.Store, id string) string {
	t.Helper()
	s, err := session.Open(context.Background(), store, id)
	if err != nil {
		t.Fatal(err)
	}
	m := s.Context().Messages[0]
	if len(m.Content) < 2 || m.Content[1].Unresolved() {
		t.Fatalf("the image did not come back: %+v", m.Content)
	}
	return m.Content[1].Data
}

// TestWithBlobsOnFileStore: a FileStore's sessions with their images on
// the bucket: the file holds a reference, the image comes back on
// another store over the same files and bucket.
func TestWithBlobsOnFileStore(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	blobs := newBlobs(t)
	fs, err := session.OpenFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	id := saveScreenshot(t, s3store.WithBlobs(fs, blobs))
	var file []byte
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			file, _ = os.ReadFile(p)
		}
		return nil
	})
	ref := session.BlobRef(screenshot)
	if !bytes.Contains(file, []byte(ref)) {
		t.Fatalf("the session file does not refer to the blob %s", ref)
	}
	if _, err := blobs.GetBlob(ctx, ref); err != nil {
		t.Fatalf("the image is not on the bucket: %v", err)
	}
	other, err := session.OpenFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if got := imageBack(t, s3store.WithBlobs(other, blobs), id); got != session.Image("image/png", screenshot).Data {
		t.Fatal("the image read back differs")
	}
}

// TestWithBlobsOnPostgres: rows in PostgreSQL, images on the bucket (the
// production shape): the image comes back through another store, a
// collection keeps it while a session refers to it and frees it after.
func TestWithBlobsOnPostgres(t *testing.T) {
	dsn := os.Getenv("AGENTSESSION_PG_DSN")
	if dsn == "" {
		t.Skip("AGENTSESSION_PG_DSN is not set: pgstore with blobs on the bucket needs PostgreSQL too (.ci/run starts both)")
	}
	ctx := context.Background()
	pool := pgPool(t, dsn)
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	pgA, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	blobs := newBlobs(t)
	a := s3store.WithBlobs(pgA, blobs)
	id := saveScreenshot(t, a)
	pgB, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := s3store.WithBlobs(pgB, blobs)
	if got := imageBack(t, b, id); got != session.Image("image/png", screenshot).Data {
		t.Fatal("the image read back differs")
	}
	res, err := session.CollectBlobs(ctx, b, &session.CollectOptions{Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != 0 || res.Kept != 1 {
		t.Fatalf("a collection with the session alive: %+v", res)
	}
	if _, err := session.DeleteSession(ctx, b, id, nil); err != nil {
		t.Fatal(err)
	}
	if res, err = session.CollectBlobs(ctx, b, &session.CollectOptions{Grace: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := blobs.GetBlob(ctx, session.BlobRef(screenshot)); err == nil {
		t.Fatalf("the image outlived its session: %+v", res)
	}
}

// pgPool returns a pool on a schema of the test's own, dropped after.
func pgPool(t testing.TB, dsn string) *pgxpool.Pool {
	ctx := context.Background()
	var b [6]byte
	rand.Read(b[:])
	schema := "s3t_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(ctx, dsn); err == nil {
			c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			c.Close(ctx)
		}
	})
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
