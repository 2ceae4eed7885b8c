package session

// A session moved between the live and archive folders by another
// process is never missing to a reader: each reader below is stopped
// between its steps (a scan between its reading of the live folder and
// of the archive) while another store moves the session, and must still
// find it, in its old place or its new one. A move the reader's look
// holds back must wait for it (the moves lock), which the mover's hook
// tells; a move that is not held back completes in the gap, as it did
// before the fix.

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// inGap makes the next scan, once, run move (in another goroutine: a
// mover of another store, another process's view) between its reading
// of the live folder and of the archive, and go on once the move is
// done or waits for the scan to be over. It returns a wait for the move.
func inGap(t *testing.T, move func() error) (wait func()) {
	t.Helper()
	done := make(chan error, 1)
	blocked := make(chan struct{}, 1)
	testHookMoveWait = func() {
		select {
		case blocked <- struct{}{}:
		default:
		}
	}
	testHookScanGap = func() {
		testHookScanGap = nil
		go func() { done <- move() }()
		select {
		case err := <-done:
			done <- err // the move ran in the gap
		case <-blocked:
		}
	}
	t.Cleanup(func() { testHookScanGap, testHookMoveWait = nil, nil })
	return func() {
		t.Helper()
		if err := <-done; err != nil {
			t.Fatalf("the move: %v", err)
		}
	}
}

// moveFixture makes session s-m in a store at a new root, archived when
// archived is set, and returns the root and a second store on it, the
// mover.
func moveFixture(t *testing.T, archived bool) (root string, mover *FileStore) {
	t.Helper()
	ctx := context.Background()
	root = filepath.Join(t.TempDir(), "sessions")
	mover, err := OpenFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mover.Close() })
	if err := mover.Create(ctx, Header{ID: "s-m", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	if archived {
		if err := mover.Archive(ctx, "s-m"); err != nil {
			t.Fatal(err)
		}
	}
	return root, mover
}

func openReader(t *testing.T, root string) *FileStore {
	t.Helper()
	s, err := OpenFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestMoveInListScanGap: a listing whose scan is between the live folder
// and the archive while the session comes out of the archive lists it.
func TestMoveInListScanGap(t *testing.T) {
	ctx := context.Background()
	root, mover := moveFixture(t, true)
	reader := openReader(t, root)
	wait := inGap(t, func() error { return mover.Unarchive(ctx, "s-m") })
	p, err := reader.List(ctx, ListOptions{Archived: true})
	wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sessions) != 1 || p.Sessions[0].ID != "s-m" {
		t.Fatalf("listed %v while it was moved out of the archive, want s-m", p.Sessions)
	}
}

// TestMoveInLoadScanGap: a Load that finds the session gone from where
// its store saw it (unarchived by another process) looks again, and its
// scan is between the folders while the session goes back into the
// archive: it loads the session.
func TestMoveInLoadScanGap(t *testing.T) {
	ctx := context.Background()
	for _, open := range []bool{false, true} {
		root, mover := moveFixture(t, true)
		reader := openReader(t, root) // sees it archived
		if err := mover.Unarchive(ctx, "s-m"); err != nil {
			t.Fatal(err)
		}
		wait := inGap(t, func() error { return mover.Archive(ctx, "s-m") })
		var err error
		if open {
			_, err = Open(ctx, reader, "s-m")
		} else {
			_, err = reader.Load(ctx, "s-m")
		}
		wait()
		if errors.Is(err, ErrNotFound) {
			t.Fatalf("open %v: %v while it was moved back into the archive", open, err)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
