package importer

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	session "github.com/agentsession/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// formatsOf returns the names of fs, in their order.
func formatsOf(fs []FormatInfo) []Format {
	out := make([]Format, len(fs))
	for i, f := range fs {
		out[i] = f.Format
	}
	return out
}

// TestFormatsInDetectionOrder: Formats lists the kinds of file in the
// order detection tries them, each saying what it reads; the OpenCode
// database only while a reader of it is registered.
func TestFormatsInDetectionOrder(t *testing.T) {
	require.Nil(t, openCodeDB(), "this package's tests register no database reader")
	fs := Formats()
	assert.Equal(t, []Format{Claude, Codex, Dive, JSON, OpenCode, OpenCode}, formatsOf(fs))
	for _, f := range fs {
		assert.NotEmpty(t, f.Reads, f.Format)
	}
	assert.Equal(t, []Format{Claude, Codex, Dive, JSON, OpenCode}, FormatNames())

	RegisterOpenCodeDB(func(context.Context, string, func([]byte, []error) error) error { return nil })
	defer RegisterOpenCodeDB(nil)
	with := Formats()
	assert.Equal(t, []Format{Claude, Codex, Dive, JSON, OpenCode, OpenCode, OpenCode}, formatsOf(with))
	assert.Contains(t, with[5].Reads, "SQLite")
	assert.Equal(t, []Format{Claude, Codex, Dive, JSON, OpenCode}, FormatNames())

	// The list is the caller's: changing it changes nothing here.
	with[0].Format = "x"
	assert.Equal(t, Claude, Formats()[0].Format)
}

// TestFormatsIsTheDetectionTable: Formats lists the very table
// detection walks (readers), in its order, and no file's init order.
func TestFormatsIsTheDetectionTable(t *testing.T) {
	RegisterOpenCodeDB(func(context.Context, string, func([]byte, []error) error) error { return nil })
	fs := Formats()
	RegisterOpenCodeDB(nil)
	require.Len(t, readers, len(fs))
	for i := range readers {
		assert.Equal(t, fs[i].Format, readers[i].format, "reader %d", i)
		assert.Equal(t, fs[i].Reads, readers[i].reads, "reader %d", i)
	}
	// Each format's file is detected as its own, the SQLite database
	// too (before a reader is registered, as one Import cannot read).
	dir := t.TempDir()
	files := map[Format]string{
		Claude: `{"parentUuid":null,"uuid":"u1","sessionId":"s1","type":"user","message":{"role":"user","content":"hi"},"timestamp":"2026-01-01T00:00:00Z"}` + "\n",
		Codex:  `{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"c1","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}}` + "\n",
		JSON:   `{"format":"agentsession.export","version":1}`,
	}
	for f, content := range files {
		p := filepath.Join(dir, string(f))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		got, err := Detect(p)
		require.NoError(t, err, f)
		assert.Equal(t, f, got)
	}
}

// TestImportRefusesAnUnknownFormat: an Options.Format that names no
// format is refused before anything is read, as ErrUnknownFormat, and
// the error names the formats there are.
func TestImportRefusesAnUnknownFormat(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(`{"format":"agentsession.export","version":1}`), 0o600))
	store := session.NewMemoryStore()
	for _, path := range []string{p, dir} {
		rep, err := Import(context.Background(), store, path, &Options{Format: "cursor"})
		require.ErrorIs(t, err, ErrUnknownFormat, path)
		assert.Nil(t, rep, path)
		assert.Contains(t, err.Error(), `"cursor"`)
		assert.Contains(t, err.Error(), "claude, codex, dive, json, opencode")
	}
}
