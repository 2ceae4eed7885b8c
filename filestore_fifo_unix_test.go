//go:build unix

package session_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

// A FIFO where a session file would be (put there by mistake or by
// someone hostile) is never waited on: a listing skips it, a load, an
// open, a delete and an archive fail or pass by it, and none blocks.
func TestFileStoreFIFOIsNotWaitedOn(t *testing.T) {
	ctx := context.Background()
	for _, layout := range []struct {
		name string
		l    session.Layout
		rel  string
	}{
		{"flat", session.LayoutFlat, "victim.jsonl"},
		{"seed", session.LayoutSeed, filepath.Join("--work--", "2025-01-01T00-00-00-000Z_victim.jsonl")},
	} {
		t.Run(layout.name, func(t *testing.T) {
			dir := t.TempDir()
			store, err := session.OpenFileStore(dir, &session.FileStoreOptions{Layout: layout.l})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			s, err := session.Create(ctx, store, &session.CreateOptions{ID: "mine", Cwd: "/work"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Append(ctx, session.UserText("kept")); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, layout.rel)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Skip(err)
			}
			for _, op := range []struct {
				name string
				do   func() error
			}{
				{"List", func() error {
					page, err := store.List(ctx, session.ListOptions{Archived: true})
					if err == nil && (len(page.Sessions) != 1 || page.Sessions[0].ID != "mine") {
						t.Errorf("listed %+v", page.Sessions)
					}
					return nil
				}},
				{"Load", func() error { _, err := store.Load(ctx, "victim"); return err }},
				{"Open", func() error { _, err := session.Open(ctx, store, "victim"); return err }},
				{"Archive", func() error { return store.Archive(ctx, "victim") }},
				{"Delete", func() error { return store.Delete(ctx, "victim") }},
			} {
				done := make(chan error, 1)
				go func() { done <- op.do() }()
				select {
				case <-done:
				case <-time.After(2 * time.Minute): // a hang, not a slow machine
					t.Fatalf("%s waits on the FIFO", op.name)
				}
			}
			if st, err := os.Lstat(path); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
				t.Errorf("the FIFO was removed or replaced: %v", err)
			}
			if _, err := session.Open(ctx, store, "mine"); err != nil {
				t.Errorf("the store's own session: %v", err)
			}
		})
	}
}

// A FIFO where the store keeps a file of its own (the moves lock, a
// blob, a state file) is not waited on either.
func TestFileStoreOwnFilesFIFO(t *testing.T) {
	ctx := context.Background()
	within := func(t *testing.T, what string, do func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); do() }()
		select {
		case <-done:
		case <-time.After(2 * time.Minute): // a hang, not a slow machine
			t.Fatalf("%s waits on the FIFO", what)
		}
	}
	t.Run("moves lock", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, ".archive"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(filepath.Join(dir, ".archive", ".moves"), 0o600); err != nil {
			t.Skip(err)
		}
		within(t, "open, list, load", func() {
			store, err := session.OpenFileStore(dir, nil)
			if err != nil {
				return
			}
			defer store.Close()
			s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s1", Cwd: "/w"})
			if err == nil {
				s.Append(ctx, session.UserText("hi"))
			}
			store.List(ctx, session.ListOptions{Archived: true})
			store.Load(ctx, "s1")
			store.Archive(ctx, "s1")
		})
	})
	t.Run("blob", func(t *testing.T) {
		dir := t.TempDir()
		store, err := session.OpenFileStore(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		data := []byte(strings.Repeat("blob bytes ", 200))
		ref, err := store.PutBlob(ctx, data)
		if err != nil {
			t.Fatal(err)
		}
		var path string
		filepath.WalkDir(filepath.Join(dir, ".blobs"), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				path = p
			}
			return nil
		})
		if path == "" {
			t.Fatal("no blob file")
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Skip(err)
		}
		within(t, "GetBlob", func() { store.GetBlob(ctx, ref) })
		within(t, "PutBlob", func() { store.PutBlob(ctx, data) })
		within(t, "CollectBlobs", func() { session.CollectBlobs(ctx, store, nil) })
	})
}
