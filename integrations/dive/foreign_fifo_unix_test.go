//go:build unix

package session_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A FIFO at a session's name in the directory is never waited on: Open,
// List and ImportDive pass by it or fail, and leave it where it is.
func TestFileStoreFIFOIsNotWaitedOn(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "victim.jsonl")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skip(err)
	}
	store := reopen(t, dir)
	for _, op := range []struct {
		name string
		do   func() error
	}{
		{"List", func() error { _, err := store.List(ctx, nil); return err }},
		{"Open", func() error { _, err := store.Open(ctx, "victim"); return err }},
		{"ImportDive", func() error { _, err := store.ImportDive(ctx, "victim"); return err }},
		{"ImportOnOpen", func() error { store.ImportOnOpen(true); _, err := store.Open(ctx, "victim"); return err }},
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
}
