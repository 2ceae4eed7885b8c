package session_test

// A move is invisible to readers: a child process archives, compresses
// and unarchives a session over and over, while this one loads, opens,
// lists and appends to it through its own stores; not one read may find
// it missing, nor one append conflict. Bounded by the child's cycles,
// not by time.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestMoverChild is the child of TestMoveInvisibleToReaders: it moves
// session AGENTSESSION_ID of the store at AGENTSESSION_ROOT into the
// archive, compresses it, and brings it back, AGENTSESSION_CYCLES
// times. Only the conflicts the other process's appends make are
// expected (an append brings the session out of the archive: it is then
// not archived to compress); anything else fails the child.
func TestMoverChild(t *testing.T) {
	root := os.Getenv("AGENTSESSION_MOVER_ROOT")
	if root == "" {
		t.Skip("the child of TestMoveInvisibleToReaders")
	}
	ctx := context.Background()
	id := os.Getenv("AGENTSESSION_ID")
	cycles, err := strconv.Atoi(os.Getenv("AGENTSESSION_CYCLES"))
	require.NoError(t, err)
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	for i := range cycles {
		require.NoError(t, store.Archive(ctx, id), "cycle %d: archive", i)
		if err := store.CompressArchived(ctx, id); err != nil && !errors.Is(err, session.ErrConflict) {
			t.Fatalf("cycle %d: compress: %v", i, err)
		}
		if i%3 == 2 {
			// And once in a while through a store of its own, which
			// compresses as it archives.
			other, err := session.OpenFileStore(root, &session.FileStoreOptions{CompressArchive: true})
			require.NoError(t, err)
			require.NoError(t, other.Unarchive(ctx, id), "cycle %d: unarchive", i)
			require.NoError(t, other.Archive(ctx, id), "cycle %d: archive compressed", i)
			require.NoError(t, other.Close())
		}
		require.NoError(t, store.Unarchive(ctx, id), "cycle %d: unarchive", i)
	}
	fmt.Println("moved", cycles)
}

func TestMoveInvisibleToReaders(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	const id = "s-moved"
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w"})
	require.NoError(t, err)
	for i := range 20 {
		_, err := s.Append(ctx, session.UserText(fmt.Sprintf("turn %d", i)))
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())

	cycles := 300
	if session.RaceEnabled {
		cycles = 60
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMoverChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AGENTSESSION_MOVER_ROOT="+root, "AGENTSESSION_ID="+id, "AGENTSESSION_CYCLES="+strconv.Itoa(cycles))
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	reads, appends := 0, 0
	var childErr error
	for done := false; !done; {
		select {
		case childErr = <-exited:
			done = true // one more round, after the last move
		default:
		}
		// A store that has known the session all along, and one that
		// meets it afresh (another process starting).
		fresh, err := session.OpenFileStore(root, nil)
		require.NoError(t, err)
		for _, st := range []*session.FileStore{store, fresh} {
			log, err := st.Load(ctx, id)
			require.NoError(t, err, "Load, after %d reads", reads)
			require.NotEmpty(t, log.Entries)
			p, err := st.List(ctx, session.ListOptions{Archived: true})
			require.NoError(t, err)
			require.Len(t, p.Sessions, 1, "List, after %d reads: %v", reads, p.Sessions)
			require.Equal(t, id, p.Sessions[0].ID)
			s, err := session.Open(ctx, st, id)
			require.NoError(t, err, "Open, after %d reads", reads)
			reads += 3
			if reads%15 == 0 {
				_, err := s.Append(ctx, session.UserText(fmt.Sprintf("append %d", appends)))
				require.NoError(t, err, "append %d, after %d reads", appends, reads)
				appends++
			}
			require.NoError(t, s.Close(), "append %d, after %d reads", appends, reads)
		}
		require.NoError(t, fresh.Close())
	}
	require.NoError(t, childErr, "the mover")
	t.Logf("%d reads and %d appends beside %d moves", reads, appends, cycles)
	log, err := store.Load(ctx, id)
	require.NoError(t, err)
	n := 0
	for _, e := range log.Entries {
		if m, err := e.Message(); err == nil && m.Role == session.RoleUser {
			n++
		}
	}
	require.Equal(t, 20+appends, n, "every append is in the log, once")
}
