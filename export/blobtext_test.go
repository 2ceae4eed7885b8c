package export_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/export"
	"github.com/agentsession/session/redact"
)

// TestRedactWithholdsBlobsOfAnyText: a blob whose bytes hold a secret in
// a text redact.Redactor.Bytes takes for binary is withheld all the
// same: with a NUL byte, with control characters between fields, UTF-16
// without a byte order mark, UTF-32, a tar holding a .env. An image of
// random bytes, and text without a secret, are sent.
func TestRedactWithholdsBlobsOfAnyText(t *testing.T) {
	const secret = "db_password: Hd9BlobPassw0rd"
	u16 := func(s string) []byte {
		var b []byte
		for _, u := range utf16.Encode([]rune(s)) {
			b = binary.LittleEndian.AppendUint16(b, u)
		}
		return b
	}
	u32 := func(s string) []byte {
		var b []byte
		for _, r := range s {
			b = binary.BigEndian.AppendUint32(b, uint32(r))
		}
		return b
	}
	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	env := []byte(secret + "\n")
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "app/.env", Mode: 0o600, Size: int64(len(env))}))
	_, err := tw.Write(env)
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	img := []byte("\x89PNG\r\n\x1a\n")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 64 << 10 {
		img = append(img, byte(rng.Uint32()))
	}

	ctx := context.Background()
	store := session.NewMemoryStore()
	put := func(b []byte) string {
		ref, err := store.PutBlob(ctx, b)
		require.NoError(t, err)
		return ref
	}
	held := map[string]string{
		"NUL":             put([]byte("A=1\n\x00\n" + secret + "\n")),
		"FIX":             put([]byte("8=FIX.4.2\x0135=A\x01553=trader\x01554=" + "Hd9BlobPassw0rd\x01" + "\x01password=Hd9BlobPassw0rd\x01")),
		"UTF-16 no BOM":   put(u16("Пароль базы данных\r\n" + secret + "\r\n")),
		"UTF-32":          put(u32("конфиг\n" + secret + "\n")),
		"tar with a .env": put(tarball.Bytes()),
	}
	sent := map[string]string{
		"image": put(img),
		"text":  put([]byte("hello, nothing secret here\n")),
	}
	s, err := session.Create(ctx, store, nil)
	require.NoError(t, err)
	var refs []string
	for _, m := range []map[string]string{held, sent} {
		for _, ref := range m {
			refs = append(refs, ref)
		}
	}
	_, err = s.AppendCustom(ctx, "app.snapshot", map[string]any{"files": refs})
	require.NoError(t, err)
	envl, err := export.Build(ctx, s, &export.Options{Blobs: true, Redactor: redact.New(&redact.Options{Home: []string{}})})
	require.NoError(t, err)
	for name, ref := range held {
		assert.Contains(t, envl.WithheldBlobs, ref, name)
		assert.NotContains(t, envl.Blobs, ref, name)
	}
	for name, ref := range sent {
		assert.Contains(t, envl.Blobs, ref, name)
	}
}
