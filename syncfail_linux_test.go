package session_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestFailedSync: on a disk that fails, a sync that fails takes back
// what it was to make durable: no other reader sees an append whose
// Append (SyncEveryAppend) or Flush (SyncOnFlush) failed, the error is
// latched, and after a remount the session opens with everything that
// was acknowledged as durable.
func TestFailedSync(t *testing.T) {
	ctx := context.Background()
	for _, policy := range []session.SyncPolicy{session.SyncEveryAppend, session.SyncOnFlush} {
		t.Run(policy.String(), func(t *testing.T) {
			dir, remount := faultyFS(t, "24m")
			root := filepath.Join(dir, "sessions")
			opts := &session.FileStoreOptions{Sync: policy, MaxStringChars: -1, BlobDir: filepath.Join(dir, "blobs")}
			store, err := session.OpenFileStore(root, opts)
			require.NoError(t, err)
			s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-sync", Cwd: "/w"})
			require.NoError(t, err)
			appendAll(t, s, session.UserText("kept"), session.AssistantText("kept too"))
			require.NoError(t, s.Flush(ctx))
			durable := s.Len()

			// More than the disk can take: written to the page cache, then
			// the sync fails.
			var blocks []session.Block
			for range 40 {
				blocks = append(blocks, session.Text(strings.Repeat("x", 1<<20)))
			}
			_, err = s.Append(ctx, session.User(blocks...))
			if policy == session.SyncOnFlush {
				require.NoError(t, err, "written, not yet synced")
				err = s.Flush(ctx)
			}
			require.ErrorIs(t, err, session.ErrWriteFailed, "the failed sync is reported")
			t.Logf("the failure: %v", err)

			// Taken back: another store (another process) does not see it.
			other, err := session.OpenFileStore(root, opts)
			require.NoError(t, err)
			log, err := other.Load(ctx, "s-sync")
			require.NoError(t, err)
			assert.Len(t, log.Entries, durable, "the append whose sync failed is visible to others")
			require.NoError(t, other.Close())
			// Latched: the handle refuses to go on.
			_, err = s.Append(ctx, session.UserText("after"))
			assert.ErrorIs(t, err, session.ErrWriteFailed)
			_ = s.Close()
			_ = store.Close()

			remount()
			again, err := session.OpenFileStore(root, opts)
			require.NoError(t, err)
			defer again.Close()
			r, err := session.Open(ctx, again, "s-sync")
			require.NoError(t, err, "the session opens after the remount")
			assert.Equal(t, durable, r.Len(), "what was acknowledged as durable is there, and nothing else")
		})
	}
}
