//go:build unix

package main

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBreakit4ContextDoesNotWaitForLocks: the whole read takes no lock;
// through the store, context takes the session file's shared lock with
// no deadline, and waits for as long as another process holds the
// exclusive one (a stopped agent in its write lease, a script's flock).
func TestBreakit4ContextDoesNotWaitForLocks(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	id, file := bk4Session(t, root, 2)
	// Over a MiB, the size from which context tries the store.
	st, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	s, err := session.Open(context.Background(), st, id)
	require.NoError(t, err)
	for range 12 {
		require.NoError(t, s.SaveTurn(context.Background(), []*session.Message{session.UserText(strings.Repeat("x", 100<<10)), session.AssistantText("a")}, nil))
	}
	// A compaction: a log gets a path index from its first.
	_, err = s.AppendCompaction(context.Background(), session.Compaction{Summary: "s", FirstKeptEntryID: s.LeafID(), TokensBefore: 1})
	require.NoError(t, err)
	require.NoError(t, s.SaveTurn(context.Background(), []*session.Message{session.UserText("after"), session.AssistantText("b")}, nil))
	require.NoError(t, s.Close())
	require.NoError(t, st.Close())
	// A first run leaves the path index, so that the next reads through
	// the store, under the file's shared lock.
	_, errOut, code := runCLI("context", file)
	require.Equal(t, 0, code, errOut)
	_, err = os.Stat(filepath.Join(root, ".pathindex", hex.EncodeToString([]byte(id))))
	require.NoError(t, err, "no path index: the test would not read through the store")
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	done := make(chan int, 1)
	go func() {
		_, _, code := runCLI("context", file)
		done <- code
	}()
	select {
	case code := <-done:
		assert.Equal(t, 0, code)
	case <-time.After(time.Minute): // a bound on a hang, not a synchronisation
		require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_UN))
		<-done
		t.Fatal("context waited for another process's lock on the session file")
	}
}
