package session_test

import (
	"bufio"
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestLockWaitHonoursContext: while another process holds a session
// file's lock, Open, Append, Load and Flush give up when their context
// ends and return its error, instead of waiting for the lock.
func TestLockWaitHonoursContext(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-held", Cwd: "/w"})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("q"))
	require.NoError(t, s.Close())
	path := sessionFileOf(t, root, "s-held")
	h, err := session.Open(ctx, store, "s-held") // before the other process locks
	require.NoError(t, err)

	cmd := child(t, "AGENTSESSION_CHILD=hold-lock", "AGENTSESSION_PATH="+path, "AGENTSESSION_HOLD=5s")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)

	other := openFS(t, root, nil) // another store: it must take the file lock
	calls := map[string]func(ctx context.Context) error{
		"Open": func(ctx context.Context) error { _, err := session.Open(ctx, other, "s-held"); return err },
		"Load": func(ctx context.Context) error { _, err := other.Load(ctx, "s-held"); return err },
		"Append": func(ctx context.Context) error {
			_, err := h.Append(ctx, session.UserText("waits"))
			return err
		},
	}
	for name, call := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		start := time.Now()
		err := call(ctx)
		took := time.Since(start)
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded, name)
		assert.Less(t, took, 2*time.Second, "%s waited %v for a lock held 5s", name, took)
	}
}

// holdLockChild holds an exclusive lock on a file for a while.
func holdLockChild(t *testing.T) {
	f, err := os.OpenFile(os.Getenv("AGENTSESSION_PATH"), os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, session.LockFile(f))
	os.Stdout.WriteString("locked\n")
	d, err := time.ParseDuration(os.Getenv("AGENTSESSION_HOLD"))
	require.NoError(t, err)
	time.Sleep(d)
}

// TestLockWaitInProcess: while one call of this process waits for a lock
// another holds (with no deadline), the other calls on the session, on
// the same handle, another handle or the store, still give up when their
// context ends: no lock of this process is waited for past it.
func TestLockWaitInProcess(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-inproc", Cwd: "/w"})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("q"))
	require.NoError(t, s.Flush(ctx)) // lets the write lease go
	other, err := session.Open(ctx, store, "s-inproc")
	require.NoError(t, err)
	// The lock held elsewhere (another open of the file: flock locks
	// belong to it, as another process's would).
	f, err := os.OpenFile(sessionFileOf(t, root, "s-inproc"), os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, session.LockFile(f))
	blocked := make(chan error, 1)
	go func() { // waits for the lock with no deadline, holding what it holds
		_, err := s.Append(ctx, session.UserText("waits"))
		blocked <- err
	}()
	time.Sleep(50 * time.Millisecond)
	calls := map[string]func(ctx context.Context) error{
		"the same handle's Append": func(ctx context.Context) error { _, err := s.Append(ctx, session.UserText("x")); return err },
		"the same handle's Flush":  func(ctx context.Context) error { return s.Flush(ctx) },
		"another handle's Append":  func(ctx context.Context) error { _, err := other.Append(ctx, session.UserText("x")); return err },
		"another handle's Reload":  func(ctx context.Context) error { return other.Reload(ctx) },
		"the store's Load":         func(ctx context.Context) error { _, err := store.Load(ctx, "s-inproc"); return err },
		"the store's Flush":        func(ctx context.Context) error { return store.Flush(ctx, "s-inproc") },
	}
	for name, call := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		err := call(ctx)
		took := time.Since(start)
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded, name)
		assert.Less(t, took, time.Second, "%s waited %v", name, took)
	}
	require.NoError(t, session.UnlockFile(f))
	require.NoError(t, <-blocked, "the call without a deadline goes on once the lock is free")
}
