package session_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestFileStoreKeepsToItsRoot: with the default options, everything the
// store writes (sessions, blobs of large images, marks) is under the root
// it was given; sessions written with blobs beside the root (the earlier
// default, oh-my-pi's place) still read theirs.
func TestFileStoreKeepsToItsRoot(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	root := filepath.Join(parent, "sessions")
	img := session.Image("image/png", []byte(strings.Repeat("png!", 2000)))

	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "img"})
	require.NoError(t, err)
	appendAll(t, s, session.User(session.Text("look"), img))
	require.NoError(t, s.Close())
	require.NoError(t, store.Close())
	var outside []string
	require.NoError(t, filepath.WalkDir(parent, func(p string, d fs.DirEntry, err error) error {
		if p != parent && p != root && !strings.HasPrefix(p, root+string(filepath.Separator)) {
			outside = append(outside, p)
		}
		return err
	}))
	assert.Empty(t, outside, "written outside the root")
	blobs, err := filepath.Glob(filepath.Join(root, ".blobs", "*"))
	require.NoError(t, err)
	assert.Len(t, blobs, 1, "the image went to a blob under the root")

	// A session whose blobs are in <root>/../blobs, as written before.
	old := openFS(t, root, &session.FileStoreOptions{BlobDir: filepath.Join(parent, "blobs")})
	s, err = session.Create(ctx, old, &session.CreateOptions{ID: "old"})
	require.NoError(t, err)
	img2 := session.Image("image/gif", []byte(strings.Repeat("gif!", 2000)))
	appendAll(t, s, session.User(img2))
	require.NoError(t, s.Close())
	require.NoError(t, old.Close())
	s, err = session.Open(ctx, openFS(t, root, nil), "old")
	require.NoError(t, err)
	msgs, err := s.Messages(ctx)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	assert.Equal(t, img2.Data, msgs[0].Content[0].Data, "read from the earlier place")
	assert.Empty(t, s.Verify())
}
