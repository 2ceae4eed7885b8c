package session_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestFileStoreLongIDArchive: what a store derives from a long id's file
// name (archive marks and their temporary files) fits a file name.
func TestFileStoreLongIDArchive(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	for _, id := range []string{strings.Repeat("a", 200), strings.Repeat("é", 256)} {
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w"})
		require.NoError(t, err)
		appendAll(t, s, session.UserText("hi"))
		p, _ := store.Path(id)
		t.Logf("len(base)=%d", len(p)-len(root))
		require.NoError(t, store.Archive(ctx, id), "archive id of %d bytes", len(id))
		require.NoError(t, store.MarkCompacting(ctx, id, time.Now()))
		require.NoError(t, s.Close())
	}
}

// TestFileStoreLongIDDamagedHeader: a long id's session whose header line
// is damaged is reported as damaged, as a short id's is, not as missing.
func TestFileStoreLongIDDamagedHeader(t *testing.T) {
	ctx := context.Background()
	for _, id := range []string{"short", strings.Repeat("L", 300)} {
		root := t.TempDir()
		store := openFS(t, root, nil)
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w"})
		require.NoError(t, err)
		appendAll(t, s, session.UserText("hi"))
		p, _ := store.Path(id)
		require.NoError(t, s.Close())
		require.NoError(t, store.Close())
		data, _ := os.ReadFile(p)
		data[2] = '#' // damage the header line
		require.NoError(t, os.WriteFile(p, data, 0o600))
		store = openFS(t, root, nil)
		_, oerr := session.Open(ctx, store, id)
		_, cerr := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w"})
		t.Logf("id len %d: Open: %v | Create: %v", len(id), oerr, cerr)
		assert.False(t, errors.Is(oerr, session.ErrNotFound) && errors.Is(cerr, session.ErrExists), "Open says not found, Create says exists")
	}
}
