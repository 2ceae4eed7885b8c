package session_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// countingBlobs counts the gets a BlobStore serves.
type countingBlobs struct {
	session.BlobStore
	gets atomic.Int64
}

func (c *countingBlobs) GetBlob(ctx context.Context, ref string) ([]byte, error) {
	c.gets.Add(1)
	return c.BlobStore.GetBlob(ctx, ref)
}

// TestBlobReferencesResolveOnce: a session that refers to one large blob
// again and again costs that blob once, not once per reference, in
// memory and in reads, and every reference reads back as the image.
func TestBlobReferencesResolveOnce(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-blobs", Cwd: "/w"})
	require.NoError(t, err)
	img := make([]byte, 2<<20)
	rand.Read(img)
	const refs = 30
	for range refs {
		_, err := s.Append(ctx, session.User(session.Text("look"), session.Image("image/png", img)))
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	file := mustRead(t, sessionFileOf(t, root, "s-blobs"))
	require.Less(t, len(file), 1<<20, "the images went to the blob store")

	var log *session.Log
	alloc := allocated(func() {
		var err error
		log, err = openFS(t, root, nil).Load(ctx, "s-blobs")
		require.NoError(t, err)
	})
	b64 := (len(img) + 2) / 3 * 4
	// The blob read, decoded and checked, and its base64 made once: a few
	// times its size, not thirty.
	assert.Less(t, alloc, uint64(8*b64), "loading %d references to one %d-byte blob allocated %d MB", refs, len(img), alloc>>20)
	require.Len(t, log.Entries, refs)
	for _, e := range log.Entries {
		m, err := e.Message()
		require.NoError(t, err)
		require.Len(t, m.Content, 2)
		assert.Equal(t, len(img), decodedLen(t, m.Content[1].Data), "the image reads back")
	}
	r, err := session.Open(ctx, openFS(t, root, nil), "s-blobs")
	require.NoError(t, err)
	for _, m := range r.Context().Messages {
		assert.False(t, strings.HasPrefix(m.Content[1].Data, session.BlobPrefix))
	}

	// Resolving by hand: one get per distinct blob.
	raw, err := session.DecodeLog(file, nil)
	require.NoError(t, err)
	blobs := &countingBlobs{BlobStore: session.OpenBlobDir(filepath.Join(root, ".blobs"), nil)}
	unresolved, err := session.ResolveBlobs(ctx, raw, blobs)
	require.NoError(t, err)
	assert.Empty(t, unresolved)
	assert.EqualValues(t, 1, blobs.gets.Load(), "gets for %d references to one blob", refs)
}

func decodedLen(t *testing.T, b64 string) int {
	t.Helper()
	data, err := base64.StdEncoding.DecodeString(b64)
	require.NoError(t, err)
	return len(data)
}

// TestBlobBombDecodedOnce: a blob that decodes past the limit (a zstd
// bomb), referred to many times, is decoded once, left unresolved, and
// reported for every reference.
func TestBlobBombDecodedOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// 64 MiB of zeros, compressed: a small file past the default limit
	// once decoded.
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	bomb := enc.EncodeAll(make([]byte, 65<<20), nil)
	ref := session.BlobPrefix + "ab" + strings.Repeat("0", 62)
	require.NoError(t, os.WriteFile(filepath.Join(dir, ref[len(session.BlobPrefix):]), bomb, 0o600))
	var lines []string
	lines = append(lines, `{"type":"session","version":3,"id":"s-bomb","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}`)
	parent := "null"
	for i := range 20 {
		id := "m" + string(rune('a'+i))
		lines = append(lines, `{"type":"message","id":"`+id+`","parentId":`+parent+`,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":[{"type":"image","data":"`+ref+`","mimeType":"image/png"}],"timestamp":1}}`)
		parent = `"` + id + `"`
	}
	log, err := session.DecodeLog([]byte(strings.Join(lines, "\n")+"\n"), nil)
	require.NoError(t, err)
	blobs := &countingBlobs{BlobStore: session.OpenBlobDir(dir, nil)}
	unresolved, err := session.ResolveBlobs(ctx, log, blobs)
	require.NoError(t, err)
	assert.Len(t, unresolved, 20, "every reference is reported")
	for _, u := range unresolved {
		assert.True(t, errors.Is(u, session.ErrCorrupt), "%v", u)
	}
	assert.EqualValues(t, 1, blobs.gets.Load(), "the bomb was decoded once")

	// The blob directory remembers it: the next load does not decode it
	// again (until the file changes).
	dirBlobs := session.OpenBlobDir(dir, nil)
	_, err = dirBlobs.GetBlob(ctx, ref)
	require.ErrorIs(t, err, session.ErrCorrupt)
	alloc := allocated(func() {
		_, err = dirBlobs.GetBlob(ctx, ref)
	})
	require.ErrorIs(t, err, session.ErrCorrupt)
	assert.Less(t, alloc, uint64(1<<20), "a known-bad blob was decoded again (%d bytes allocated)", alloc)
}

// TestResolvedBytesCapped: past Limits.MaxResolvedBytes of distinct blobs,
// a log's further references stay unresolved, reported with
// ErrTooLarge.
func TestResolvedBytesCapped(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-cap", Cwd: "/w"})
	require.NoError(t, err)
	for range 5 {
		img := make([]byte, 1<<20)
		rand.Read(img)
		_, err := s.Append(ctx, session.User(session.Image("image/png", img)))
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	capped := openFS(t, root, &session.FileStoreOptions{Limits: session.Limits{MaxResolvedBytes: 3<<20 + 1}})
	log, err := capped.Load(ctx, "s-cap")
	require.NoError(t, err)
	resolved := 0
	for _, e := range log.Entries {
		m, err := e.Message()
		require.NoError(t, err)
		if !strings.HasPrefix(m.Content[0].Data, session.BlobPrefix) {
			resolved++
		}
	}
	assert.Equal(t, 3, resolved, "three distinct megabyte blobs fit the cap")
	var found int
	for _, f := range session.Verify(log) {
		if f.Kind == session.FindingUnresolvedBlob {
			found++
		}
	}
	assert.Equal(t, 2, found)
}
