package session_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestRewriteTruncationReported: a rewrite's cuts are reported as an
// append's are, and a refusal names the session.
func TestRewriteTruncationReported(t *testing.T) {
	ctx := context.Background()
	mem := session.NewMemoryStore()
	s, err := session.Create(ctx, mem, &session.CreateOptions{ID: "r1"})
	require.NoError(t, err)
	appendAll(t, s, session.UserText(strings.Repeat("x", 2000)))
	log, err := mem.Load(ctx, "r1")
	require.NoError(t, err)

	var got []session.Truncation
	fs := openFS(t, t.TempDir(), &session.FileStoreOptions{MaxStringChars: 100, OnTruncate: func(tr session.Truncation) { got = append(got, tr) }})
	require.NoError(t, fs.Create(ctx, log.Header))
	require.NoError(t, fs.Rewrite(ctx, "r1", session.RewriteOptions{IfEmpty: true}, log.Header, log.Entries))
	l2, _ := fs.Load(ctx, "r1")
	m, _ := l2.Entries[0].Message()
	t.Logf("stored text truncated: %v", session.IsTruncated(m.Text()))
	assert.Len(t, got, 1, "the rewrite cut a string: OnTruncate should say so")

	fs2 := openFS(t, t.TempDir(), &session.FileStoreOptions{MaxStringChars: 100, RefuseTruncation: true})
	require.NoError(t, fs2.Create(ctx, log.Header))
	err = fs2.Rewrite(ctx, "r1", session.RewriteOptions{IfEmpty: true}, log.Header, log.Entries)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "session r1", err.Error())
}

// TestTruncationWriterKeepsWhole: the handle that wrote keeps the whole
// string; a reader of the file gets the cut one (as documented).
func TestTruncationWriterKeepsWhole(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	fs := openFS(t, root, &session.FileStoreOptions{MaxStringChars: 100})
	s, err := session.Create(ctx, fs, &session.CreateOptions{ID: "h"})
	require.NoError(t, err)
	appendAll(t, s, session.UserText(strings.Repeat("x", 2000)))
	msgs, _ := s.Messages(ctx)
	r, err := session.Open(ctx, openFS(t, root, &session.FileStoreOptions{MaxStringChars: 100}), "h")
	require.NoError(t, err)
	msgs2, _ := r.Messages(ctx)
	t.Logf("writer sees %d chars, a reopen %d", len(msgs[0].Text()), len(msgs2[0].Text()))
}

// TestRefuseTruncationStoresNothing: a refused write stores nothing, its
// blobs included.
func TestRefuseTruncationStoresNothing(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	fs := openFS(t, root, &session.FileStoreOptions{MaxStringChars: 100, RefuseTruncation: true})
	s, err := session.Create(ctx, fs, &session.CreateOptions{ID: "h"})
	require.NoError(t, err)
	img := make([]byte, 10000)
	for i := range img {
		img[i] = byte(i * 7)
	}
	_, err = s.Append(ctx, session.User(session.Image("image/png", img), session.Text(strings.Repeat("x", 2000))))
	require.ErrorIs(t, err, session.ErrTooLarge)
	ents, _ := os.ReadDir(filepath.Join(root, ".blobs"))
	assert.Empty(t, ents, "a refused write stores nothing, blobs included")
}
