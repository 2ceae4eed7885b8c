package session_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

// imageOf returns the data of the first image block of m.
func imageOf(t *testing.T, m *session.Message) string {
	t.Helper()
	for _, b := range m.Content {
		if b.Type == session.BlockImage {
			return b.Data
		}
	}
	t.Fatalf("no image in %s message", m.Role)
	return ""
}

func TestFileStoreBlobs(t *testing.T) {
	ctx := context.Background()
	for _, plain := range []bool{false, true} {
		name := "zstd"
		if plain {
			name = "plain"
		}
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "sessions")
			opts := &session.FileStoreOptions{PlainBlobs: plain}
			store := openFS(t, root, opts)
			half := randomBytes(t, 10_000)
			big := append(half, half...) // compressible: zstd stores it as a frame
			small := randomBytes(t, 300) // 400 bytes of base64: stays inline

			var ids []string
			for range 2 { // the same image in two sessions is stored once
				s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/w"})
				require.NoError(t, err)
				_, err = s.Append(ctx, session.User(session.Text("look"), session.Image("image/png", big), session.Image("image/gif", small)))
				require.NoError(t, err)
				require.NoError(t, s.Close())
				ids = append(ids, s.ID())
			}

			ref := session.BlobRef(big)
			line := string(mustRead(t, sessionFileOf(t, root, ids[0])))
			assert.Contains(t, line, `"data":"`+ref+`"`, "the large image is a reference in the file")
			assert.NotContains(t, line, base64.StdEncoding.EncodeToString(big)[:100])
			assert.Contains(t, line, base64.StdEncoding.EncodeToString(small), "the small image stays inline")

			blobDir := filepath.Join(root, ".blobs")
			files, err := os.ReadDir(blobDir)
			require.NoError(t, err)
			require.Len(t, files, 1, "one blob for the image of both sessions")
			blobFile := filepath.Join(blobDir, strings.TrimPrefix(ref, session.BlobPrefix))
			for path, want := range map[string]os.FileMode{blobDir: 0o700, blobFile: 0o600} {
				fi, err := os.Stat(path)
				require.NoError(t, err)
				assert.Equal(t, want, fi.Mode().Perm(), path)
			}
			stored := mustRead(t, blobFile)
			if plain {
				assert.Equal(t, big, stored, "plain blobs hold the bytes, as oh-my-pi writes them")
			} else {
				assert.True(t, bytes.HasPrefix(stored, []byte{0x28, 0xb5, 0x2f, 0xfd}), "zstd frame")
			}

			// Reopened on a new store, the references are resolved.
			for _, id := range ids {
				r, err := session.Open(ctx, openFS(t, root, opts), id)
				require.NoError(t, err)
				m := r.Context().Messages[0]
				assert.Equal(t, base64.StdEncoding.EncodeToString(big), imageOf(t, m))
				assert.Empty(t, r.Verify())
			}
		})
	}
}

// TestFileStoreBlobsFromOhMyPi: a reference oh-my-pi wrote, to a plain
// blob file named by its SHA-256, resolves.
func TestFileStoreBlobsFromOhMyPi(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	img := randomBytes(t, 5000)
	ref := session.BlobRef(img)
	require.NoError(t, os.MkdirAll(filepath.Join(base, "blobs"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(base, "blobs", strings.TrimPrefix(ref, session.BlobPrefix)), img, 0o600))
	dir := filepath.Join(root, "--w--")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	content := `{"type":"session","version":3,"id":"s-omp","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}` + "\n" +
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":[{"type":"image","data":"` + ref + `","mimeType":"image/png"}],"timestamp":1}}` + "\n"
	path := filepath.Join(dir, "2026-01-15T10-00-00-000Z_s-omp.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))

	store := openFS(t, root, nil)
	s, err := session.Open(ctx, store, "s-omp")
	require.NoError(t, err)
	assert.Equal(t, base64.StdEncoding.EncodeToString(img), imageOf(t, s.Context().Messages[0]))

	// A rewrite (as a prune does) writes the same line again.
	log, err := store.Load(ctx, "s-omp")
	require.NoError(t, err)
	require.NoError(t, store.Rewrite(ctx, "s-omp", session.RewriteOptions{}, log.Header, log.Entries))
	assert.Equal(t, content, string(mustRead(t, path)))
}

// TestFileStoreBadBlobs: a missing or corrupt blob leaves its reference
// in place; the session still opens and Verify reports it.
func TestFileStoreBadBlobs(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-blob", Cwd: "/w"})
	require.NoError(t, err)
	img := randomBytes(t, 4000)
	_, err = s.Append(ctx, session.User(session.Image("image/png", img)))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	ref := session.BlobRef(img)
	blobFile := filepath.Join(root, ".blobs", strings.TrimPrefix(ref, session.BlobPrefix))

	cases := map[string]func(){
		"missing": func() { require.NoError(t, os.Remove(blobFile)) },
		"corrupt": func() { require.NoError(t, os.WriteFile(blobFile, []byte("not the image"), 0o600)) },
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			damage()
			r, err := session.Open(ctx, openFS(t, root, nil), "s-blob")
			require.NoError(t, err)
			assert.Equal(t, ref, imageOf(t, r.Context().Messages[0]))
			findings := r.Verify()
			require.Len(t, findings, 1)
			assert.Equal(t, session.FindingUnresolvedBlob, findings[0].Kind)
		})
	}
}

func TestBlobDir(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "blobs")
	d := session.OpenBlobDir(dir, &session.BlobDirOptions{MaxBytes: 1 << 20})
	_, err := d.GetBlob(ctx, session.BlobRef([]byte("x")))
	assert.ErrorIs(t, err, session.ErrNotFound, "before the directory exists")

	data := bytes.Repeat([]byte("abc"), 1000)
	ref, err := d.PutBlob(ctx, data)
	require.NoError(t, err)
	assert.Equal(t, session.BlobRef(data), ref)
	again, err := d.PutBlob(ctx, data)
	require.NoError(t, err)
	assert.Equal(t, ref, again)
	got, err := d.GetBlob(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, data, got)

	for _, bad := range []string{"", "blob:sha256:", "blob:sha256:../../etc/passwd", "blob:sha256:" + strings.Repeat("A", 64),
		"blob:md5:" + strings.Repeat("a", 32), "blob:sha256:" + strings.Repeat("a", 63) + "/", strings.Repeat("a", 64)} {
		_, err := d.GetBlob(ctx, bad)
		assert.ErrorIs(t, err, session.ErrInvalidID, "%q", bad)
	}

	_, err = d.PutBlob(ctx, make([]byte, 2<<20))
	assert.Error(t, err, "larger than MaxBytes")

	// A zstd bomb: a small file that declares (and would decode to) more
	// than the limit is refused, not decoded.
	huge := make([]byte, 8<<20)
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	bomb := enc.EncodeAll(huge, nil)
	require.Less(t, len(bomb), 4096)
	name := strings.TrimPrefix(session.BlobRef(huge), session.BlobPrefix)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), bomb, 0o600))
	_, err = d.GetBlob(ctx, session.BlobRef(huge))
	assert.ErrorIs(t, err, session.ErrCorrupt)

	// A frame that hides its size is capped while decoding.
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithSingleSegment(false))
	require.NoError(t, err)
	_, err = w.Write(huge)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o600))
	_, err = d.GetBlob(ctx, session.BlobRef(huge))
	assert.ErrorIs(t, err, session.ErrCorrupt)
}

// TestFileStoreTruncatesLongStrings: strings over the limit are cut with
// a notice, to the limit with it (counted in UTF-16 code units, which
// are characters here); signatures are not cut.
func TestFileStoreTruncatesLongStrings(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	const limit = 1000
	store := openFS(t, root, &session.FileStoreOptions{MaxStringChars: limit})
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-long", Cwd: "/w"})
	require.NoError(t, err)
	long := strings.Repeat("é\"x\n", 600) // 2,400 characters, escaped in JSON
	sig := strings.Repeat("s", 3000)
	appendAll(t, s,
		session.UserText("run it"),
		session.Assistant(session.Thinking("hmm", sig), session.ToolCall("c1", "bash", []byte(`{"command":"cat big"}`))),
		session.ToolResult("c1", "bash", long),
	)
	require.NoError(t, s.Close())

	r, err := session.Open(ctx, openFS(t, root, nil), "s-long")
	require.NoError(t, err)
	msgs := r.Context().Messages
	got := msgs[2].Text()
	kept, ok := strings.CutSuffix(got, session.TruncationNotice)
	require.True(t, ok, "a notice: %q", got[len(got)-80:])
	assert.Equal(t, limit, utf8.RuneCountInString(got))
	assert.Equal(t, limit-len(session.TruncationNotice), utf8.RuneCountInString(kept))
	assert.True(t, strings.HasPrefix(long, kept))
	assert.Equal(t, sig, msgs[1].Content[0].ThinkingSignature, "signatures are never cut")

	// Not cut with the limit off.
	root2 := t.TempDir()
	s2, err := session.Create(ctx, openFS(t, root2, &session.FileStoreOptions{MaxStringChars: -1}), &session.CreateOptions{ID: "s-long", Cwd: "/w"})
	require.NoError(t, err)
	appendAll(t, s2, session.UserText(long))
	r2 := reopenFS(t, s2, root2)
	assert.Equal(t, long, r2.Context().Messages[0].Text())
}

// TestFileStoreRewriteKeepsForeignLines: a rewrite leaves lines the file
// held byte for byte, even over the size limits, and applies the limits
// to lines it did not hold.
func TestFileStoreRewriteKeepsForeignLines(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	img := base64.StdEncoding.EncodeToString(randomBytes(t, 3000))
	huge := strings.Repeat("z", 2000)
	dir := filepath.Join(root, "--w--")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	content := `{"type":"session","version":3,"id":"s-pi","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}` + "\n" +
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":[{"type":"image","data":"` + img + `","mimeType":"image/png"}],"timestamp":1}}` + "\n" +
		`{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-15T10:00:02.000Z","message":{"role":"user","content":"` + huge + `","timestamp":2}}` + "\n"
	path := filepath.Join(dir, "2026-01-15T10-00-00-000Z_s-pi.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))

	store := openFS(t, root, &session.FileStoreOptions{MaxStringChars: 1000})
	log, err := store.Load(ctx, "s-pi")
	require.NoError(t, err)
	extra, err := session.NewEntry(session.TypeCustomMessage, "a3", "a2", log.Entries[1].Time(), map[string]any{"customType": "note", "content": huge, "display": true})
	require.NoError(t, err)
	require.NoError(t, store.Rewrite(ctx, "s-pi", session.RewriteOptions{}, log.Header, append(log.Entries, extra)))
	data := string(mustRead(t, path))
	assert.True(t, strings.HasPrefix(data, content), "untouched lines stay byte for byte")
	assert.Contains(t, data[len(content):], `\n\n[Session persistence truncated large content]"`, "a new line gets the limits")
}

// TestBlobRepair: a blob file that was damaged (empty after a crash,
// garbage) is replaced by the next put of its content, so a new
// reference never points at bad bytes; stale temporary files of puts are
// removed when a store opens.
func TestBlobRepair(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	img := randomBytes(t, 3000)
	name := strings.TrimPrefix(session.BlobRef(img), session.BlobPrefix)
	blobs := filepath.Join(root, ".blobs")
	require.NoError(t, os.MkdirAll(blobs, 0o700))
	for _, damaged := range [][]byte{{}, []byte("garbage")} {
		require.NoError(t, os.WriteFile(filepath.Join(blobs, name), damaged, 0o600))
		store := openFS(t, root, nil)
		s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/w"})
		require.NoError(t, err)
		_, err = s.Append(ctx, session.User(session.Image("image/png", img)))
		require.NoError(t, err)
		require.NoError(t, s.Close())
		got, err := store.GetBlob(ctx, session.BlobRef(img))
		require.NoError(t, err, "the damaged blob was replaced")
		assert.Equal(t, img, got)
		r, err := session.Open(ctx, openFS(t, root, nil), s.ID())
		require.NoError(t, err)
		assert.Equal(t, base64.StdEncoding.EncodeToString(img), imageOf(t, r.Context().Messages[0]))
	}

	stale := filepath.Join(blobs, "."+name+".tmp-abc")
	require.NoError(t, os.WriteFile(stale, []byte("half"), 0o600))
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(stale, old, old))
	openFS(t, root, nil)
	_, err := os.Stat(stale)
	assert.ErrorIs(t, err, fs.ErrNotExist, "a stale temporary blob is removed")
}
