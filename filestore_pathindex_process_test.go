package session_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/stretchr/testify/require"
)

// The path index is read by other processes than the one that wrote it
// (a resume is a new process): what it holds must not depend on the
// writer's process (a hash seeded per process, say). A child process
// builds the session and its index; this one opens by the path, and an
// append of an id the log holds (before the chain) is refused.

const pathIndexChildEnv = "AGENTSESSION_PATHINDEX_CHILD"

func TestPathIndexChild(t *testing.T) {
	dir := os.Getenv(pathIndexChildEnv)
	if dir == "" {
		t.Skip("run by TestFileStorePathIndexOtherProcess")
	}
	withPathIndexes(t)
	fs, id := indexedStore(t, dir, "linear")
	require.NoError(t, fs.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "id"), []byte(id), 0o600))
}

func TestFileStorePathIndexOtherProcess(t *testing.T) {
	withPathIndexes(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPathIndexChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), pathIndexChildEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	raw, err := os.ReadFile(filepath.Join(dir, "id"))
	require.NoError(t, err)
	id := string(raw)
	fs, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	defer fs.Close()
	checkPartial(t, fs, id, true)

	// The first entry lies before the chain: its id is taken.
	ctx := context.Background()
	log, err := fs.Load(ctx, id)
	require.NoError(t, err)
	s, err := session.Open(ctx, fs, id)
	require.NoError(t, err)
	defer s.Close()
	require.True(t, session.IsPartial(s))
	first := log.Entries[0].ID()
	dup, err := session.NewEntry(session.TypeCustom, first, s.LeafID(), time.Now(), map[string]any{"customType": "x"})
	require.NoError(t, err)
	require.ErrorIs(t, fs.Append(ctx, id, session.AppendOptions{}, dup), session.ErrConflict, "an id the log holds before the chain is refused")
}
