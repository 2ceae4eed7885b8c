package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestContextReadsThePathAlone: context of a long session in a store's
// tree goes through the store, which reads the current path through the
// index the first run leaves: a line of the history before the
// compaction, made unreadable afterwards, is not read (a whole read
// stumbles on it), and the context printed is the same as before.
func TestContextReadsThePathAlone(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	s, err := session.Create(ctx, st, &session.CreateOptions{Cwd: "/w"})
	require.NoError(t, err)
	big := strings.Repeat("history ", 4<<10) // 32 KiB a turn: over a MiB in all, enough for an index
	var kept string
	for i := range 60 {
		require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText(big), session.AssistantText("ok")}, nil))
		if i == 54 {
			kept = s.LeafID()
		}
	}
	_, err = s.AppendCompaction(ctx, session.Compaction{Summary: "the first 55 turns", FirstKeptEntryID: kept, TokensBefore: 1})
	require.NoError(t, err)
	require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText("after"), session.AssistantText("done")}, nil))
	id, leaf := s.ID(), s.LeafID()
	require.NoError(t, s.Close())
	file, err := st.Path(id)
	require.NoError(t, err)
	require.NoError(t, st.Close())

	first, errOut, code := runCLI("context", "--json", "--root", root, id)
	require.Equal(t, 0, code, errOut)
	require.Empty(t, errOut)
	_, err = os.Stat(filepath.Join(root, ".pathindex", hex.EncodeToString([]byte(id))))
	require.NoError(t, err, "the store left no path index")
	whole, errOut, code := runCLI("context", "--json", "--leaf", leaf, file)
	require.Equal(t, 0, code, errOut)
	assert.JSONEq(t, whole, first, "the store's context is not the whole read's")

	// The first user message's line, long before the compaction's first
	// kept entry, made invalid JSON in place (its size and the file's
	// end unchanged).
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	at := bytes.Index(data, []byte(`"role":"user"`))
	require.Positive(t, at)
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("!"), int64(at))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	again, errOut, code := runCLI("context", "--json", id, "--root", root)
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, errOut)
	assert.JSONEq(t, first, again)
	_, errOut, _ = runCLI("context", "--json", "--leaf", leaf, file)
	assert.NotEmpty(t, errOut, "the whole read did not meet the broken line: the test shows nothing")
}
