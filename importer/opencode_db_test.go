package importer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// sqliteHead is the start of an SQLite database file (the rest of a
// page, here zeros, is not looked at without a driver).
var sqliteHead = "SQLite format 3\x00" + strings.Repeat("\x00", 84)

// sqlitePage is a database of one page of 512 bytes whose header is
// valid (checkSQLiteHeader), holding text after the header.
func sqlitePage(text string) string {
	h := []byte(sqliteHead)
	h[16], h[17] = 2, 0 // 512
	return string(h) + text + strings.Repeat("\x00", 512-len(h)-len(text))
}

// TestOpenCodeDatabaseWithoutDriver: a program that imports only this
// package cannot read OpenCode 1.2's SQLite database; a directory import
// still names it (and its -wal and -shm files) with a reason that says
// what reads it, and a database named on its own is an error saying so.
func TestOpenCodeDatabaseWithoutDriver(t *testing.T) {
	if openCodeDB() != nil {
		t.Skip("an OpenCode database reader is registered")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "opencode.db")
	writeFile(t, db, sqliteHead)
	writeFile(t, db+"-wal", "\x37\x7f\x06\x82 a write-ahead log")
	writeFile(t, db+"-shm", "shared memory")
	rep, err := Import(context.Background(), session.NewMemoryStore(), dir, nil)
	if !errors.Is(err, ErrNoSessions) {
		t.Fatalf("import of %s: %v", dir, err)
	}
	named := map[string]error{}
	for _, n := range rep.NotImported {
		named[n.Path] = n.Err
	}
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		err := named[p]
		if err == nil || errors.Is(err, ErrUnknownFormat) {
			t.Errorf("%s: %v (in %v)", p, err, rep.NotImported)
		}
	}
	if err := named[db]; !errors.Is(err, ErrOpenCodeDatabase) || !strings.Contains(err.Error(), "importer/opencodedb") {
		t.Errorf("the database's reason does not say what reads it: %v", err)
	}

	rep, err = Import(context.Background(), session.NewMemoryStore(), db, nil)
	if !errors.Is(err, ErrOpenCodeDatabase) || len(rep.Errors) != 1 {
		t.Errorf("import of the database alone: %v, %+v", err, rep)
	}
}

// TestOpenCodeDatabaseCopy: the database and its -wal are copied through
// the root; a copy taken while they change is taken again, and refused
// when they keep changing; a -wal that is a link or a FIFO, or a
// database over the cap, is refused without being read.
func TestOpenCodeDatabaseCopy(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (string, *root) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "opencode.db"), []byte(sqlitePage("pages")), 0o644); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "opencode.db-wal"), "frames")
		rt, err := openRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.close() })
		return dir, rt
	}
	read := func(t *testing.T, p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	grow := func(dir string, upTo int) func(int) {
		return func(try int) {
			if try < upTo {
				f, _ := os.OpenFile(filepath.Join(dir, "opencode.db-wal"), os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString(" more")
				f.Close()
			}
		}
	}
	defer func() { copyDBHook = nil }()

	t.Run("copied", func(t *testing.T) {
		_, rt := setup(t)
		out := t.TempDir()
		p, err := copyDB(ctx, rt, "opencode.db", out)
		if err != nil || read(t, p) != sqlitePage("pages") || read(t, p+"-wal") != "frames\n" {
			t.Fatalf("copy: %v", err)
		}
	})
	t.Run("taken again", func(t *testing.T) {
		dir, rt := setup(t)
		copyDBHook = grow(dir, 1)
		p, err := copyDB(ctx, rt, "opencode.db", t.TempDir())
		if err != nil || read(t, p+"-wal") != "frames\n more" {
			t.Fatalf("copy of a database written once as it was copied: %v", err)
		}
	})
	t.Run("busy", func(t *testing.T) {
		dir, rt := setup(t)
		copyDBHook = grow(dir, 100)
		if _, err := copyDB(ctx, rt, "opencode.db", t.TempDir()); !errors.Is(err, ErrOpenCodeDatabaseBusy) {
			t.Fatalf("copy of a database that keeps changing: %v", err)
		}
	})
	copyDBHook = nil
	t.Run("wal is a link", func(t *testing.T) {
		dir, rt := setup(t)
		os.Remove(filepath.Join(dir, "opencode.db-wal"))
		secret := filepath.Join(t.TempDir(), "secret")
		writeFile(t, secret, canaryOut)
		symlink(t, secret, filepath.Join(dir, "opencode.db-wal"))
		if _, err := copyDB(ctx, rt, "opencode.db", t.TempDir()); !errors.Is(err, ErrSymlink) {
			t.Fatalf("a -wal that is a link: %v", err)
		}
	})
	t.Run("wal is a FIFO", func(t *testing.T) {
		dir, rt := setup(t)
		os.Remove(filepath.Join(dir, "opencode.db-wal"))
		mkfifo(t, filepath.Join(dir, "opencode.db-wal"))
		if _, err := copyDB(ctx, rt, "opencode.db", t.TempDir()); !errors.Is(err, ErrNotRegular) {
			t.Fatalf("a -wal that is a FIFO: %v", err)
		}
	})
	t.Run("over the cap", func(t *testing.T) {
		dir, rt := setup(t)
		if err := os.Truncate(filepath.Join(dir, "opencode.db"), OpenCodeMaxDBBytes+1); err != nil {
			t.Skipf("no sparse file: %v", err)
		}
		if _, err := copyDB(ctx, rt, "opencode.db", t.TempDir()); !errors.Is(err, session.ErrTooLarge) {
			t.Fatalf("a database over the cap: %v", err)
		}
	})
}

// A file that starts as SQLite's but whose header describes no database
// of its size is refused from its first 100 bytes.
func TestSQLiteHeaderChecked(t *testing.T) {
	valid := sqlitePage("x")
	withPages := func(pages byte, size int) string {
		h := []byte(sqlitePage(""))
		h[31] = pages       // size in pages
		h[27], h[95] = 7, 7 // change counter = version valid for
		return string(h) + strings.Repeat("\x00", size-len(h))
	}
	for _, c := range []struct {
		name, data string
		ok         bool
	}{
		{"one valid page", valid, true},
		{"two pages, the header says two", withPages(2, 1024), true},
		{"no page size", sqliteHead + strings.Repeat("\x00", 412), false},
		{"page size not a power of two", sqliteHead[:16] + "\x03\x00" + sqliteHead[18:] + strings.Repeat("\x00", 668), false},
		{"no whole number of pages", valid + "tail", false},
		{"more pages than the header counts", withPages(1, 4096), false},
		{"shorter than a header", sqliteHead[:40], false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "opencode.db"), []byte(c.data), 0o644); err != nil {
				t.Fatal(err)
			}
			rt, err := openRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.close()
			err = checkSQLiteHeader(rt, "opencode.db")
			if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrNotSQLite)) {
				t.Fatalf("err %v", err)
			}
		})
	}
}
