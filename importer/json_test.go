package importer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/export"
	"github.com/agentsession/session/importer"
	"github.com/agentsession/session/internal/compattest"
	"github.com/agentsession/session/internal/longtest"
	"github.com/agentsession/session/internal/workload"
)

// corpusFiles lists the session logs of the compat corpus (every
// .jsonl: current, migrated and old-format inputs alike).
func corpusFiles(t *testing.T) []string {
	t.Helper()
	compattest.Need(t)
	files, err := filepath.Glob(compattest.Path("*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// stores are the fresh stores a round trip imports into; the FileStore
// one reopens its store before handing it back to be read.
var stores = []struct {
	name   string
	open   func(t *testing.T) session.Store
	reopen func(t *testing.T, s session.Store) session.Store
}{
	{"memory", func(t *testing.T) session.Store { return session.NewMemoryStore() },
		func(t *testing.T, s session.Store) session.Store { return s }},
	{"file", func(t *testing.T) session.Store {
		fs, err := session.OpenFileStore(t.TempDir(), nil)
		require.NoError(t, err)
		t.Cleanup(func() { fs.Close() })
		return fs
	}, func(t *testing.T, s session.Store) session.Store {
		fs := s.(*session.FileStore)
		require.NoError(t, fs.Close())
		again, err := session.OpenFileStore(fs.Root(), nil)
		require.NoError(t, err)
		t.Cleanup(func() { again.Close() })
		return again
	}},
}

// TestRoundTripCorpus exports every session of the compat corpus,
// imports the envelope into fresh stores and finds the same context at
// every leaf.
func TestRoundTripCorpus(t *testing.T) {
	ctx := context.Background()
	for _, f := range corpusFiles(t) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		log, err := session.DecodeLog(data, nil)
		require.NoError(t, err, f)
		src := session.OpenLog(log)
		for _, st := range stores {
			t.Run(filepath.Base(f)+"/"+st.name, func(t *testing.T) {
				roundTrip(t, ctx, src, st.open(t), st.reopen)
			})
		}
	}
}

// TestRoundTripW10k does the same on the standard 10,000-turn workload.
func TestRoundTripW10k(t *testing.T) {
	longtest.Skip(t, "round-trips the 10,000-entry workload through every store")
	if testing.Short() || raceEnabled {
		t.Skip("W10k round trip: not in -short nor under the race detector (it runs in go test without them)")
	}
	ctx := context.Background()
	src, err := workload.Session(ctx, session.NewMemoryStore(), workload.W10k)
	require.NoError(t, err)
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) { roundTrip(t, ctx, src, st.open(t), st.reopen) })
	}
}

func roundTrip(t *testing.T, ctx context.Context, src *session.Session, dst session.Store, reopen func(*testing.T, session.Store) session.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "export.json")
	writeEnvelope(t, src, path, nil)
	rep, err := importer.Import(ctx, dst, path, nil)
	require.NoError(t, err)
	require.Len(t, rep.Imported, 1)
	assert.Equal(t, importer.JSON, rep.Imported[0].Format)
	dst = reopen(t, dst)
	got, err := session.Open(ctx, dst, src.ID())
	require.NoError(t, err)
	sameContexts(t, src, got)
}

// sameContexts compares the contexts of a and b at every leaf, and at
// the current leaf, as JSON.
func sameContexts(t *testing.T, a, b *session.Session) {
	t.Helper()
	require.Equal(t, a.LeafID(), b.LeafID())
	require.Equal(t, a.Len(), b.Len())
	leaves := []string{a.LeafID()}
	for _, e := range a.Leaves() {
		leaves = append(leaves, e.ID())
	}
	for _, id := range leaves {
		ca, err := a.ContextAt(id)
		require.NoError(t, err)
		cb, err := b.ContextAt(id)
		require.NoError(t, err, id)
		ja, err := json.Marshal(ca)
		require.NoError(t, err)
		jb, err := json.Marshal(cb)
		require.NoError(t, err)
		require.True(t, bytes.Equal(ja, jb), "context at %s differs", id)
	}
}

func writeEnvelope(t *testing.T, s *session.Session, path string, opts *export.Options) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, export.JSON(context.Background(), f, s, opts))
	require.NoError(t, f.Close())
}

// newSession is a small session with a branch, on its own store.
func newSession(t *testing.T, text string) *session.Session {
	t.Helper()
	ctx := context.Background()
	s, err := session.Create(ctx, session.NewMemoryStore(), &session.CreateOptions{Cwd: "/w", Title: text})
	require.NoError(t, err)
	first, err := s.Append(ctx, session.UserText(text))
	require.NoError(t, err)
	_, err = s.Append(ctx, session.AssistantText("reply to "+text))
	require.NoError(t, err)
	require.NoError(t, s.Branch(ctx, first.ID()))
	_, err = s.Append(ctx, session.AssistantText("another reply to "+text))
	require.NoError(t, err)
	return s
}

// TestImportDirectory imports a directory of envelopes with a newer and a
// malformed one among them: each bad file is one error, the rest
// imports; a dry run writes nothing, and importing again skips them all.
func TestImportDirectory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var srcs []*session.Session
	for i, name := range []string{"a", "b", "c"} {
		s := newSession(t, name)
		srcs = append(srcs, s)
		writeEnvelope(t, s, filepath.Join(dir, name+".json"), nil)
		_ = i
	}
	newer := strings.Replace(readString(t, filepath.Join(dir, "a.json")), `"version":1`, `"version":99`, 1)
	writeFile(t, filepath.Join(dir, "sub", "newer.json"), newer)
	broken := strings.Replace(readString(t, filepath.Join(dir, "b.json")), `"type":"message"`, `"type":7`, 1)
	writeFile(t, filepath.Join(dir, "sub", "broken.json"), broken)
	writeFile(t, filepath.Join(dir, "notes.txt"), "not a session")

	store := session.NewMemoryStore()
	var progress []int
	rep, err := importer.Import(ctx, store, dir, &importer.Options{DryRun: true})
	require.NoError(t, err)
	assert.Len(t, rep.Imported, 3)
	assert.Len(t, rep.Errors, 2)
	page, err := store.List(ctx, session.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, page.Sessions, "a dry run writes nothing")

	rep, err = importer.Import(ctx, store, dir, &importer.Options{Progress: func(done, total int) { progress = append(progress, done, total) }})
	require.NoError(t, err)
	require.Len(t, rep.Imported, 3)
	assert.Empty(t, rep.Skipped)
	require.Len(t, rep.Errors, 2)
	assert.Equal(t, []int{1, 5, 2, 5, 3, 5, 4, 5, 5, 5}, progress)
	byPath := map[string]error{}
	for _, e := range rep.Errors {
		byPath[filepath.Base(e.Path)] = e.Err
	}
	assert.ErrorIs(t, byPath["newer.json"], export.ErrNewerVersion)
	var re *export.ReadError
	require.ErrorAs(t, byPath["broken.json"], &re)
	assert.Contains(t, re.Where, "entries[")
	for _, s := range srcs {
		got, err := session.Open(ctx, store, s.ID())
		require.NoError(t, err)
		sameContexts(t, s, got)
	}

	rep, err = importer.Import(ctx, store, dir, nil)
	require.NoError(t, err)
	assert.Empty(t, rep.Imported)
	assert.Len(t, rep.Skipped, 3, "importing again stores nothing twice")
}

// TestImportFileErrors: a single bad file is an error returned and
// listed; a foreign JSON file is not taken for an envelope.
func TestImportFileErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := newSession(t, "x")
	good := filepath.Join(dir, "good.json")
	writeEnvelope(t, s, good, nil)
	newer := filepath.Join(dir, "newer.json")
	writeFile(t, newer, strings.Replace(readString(t, good), `"version":1`, `"version":2`, 1))
	rep, err := importer.Import(ctx, session.NewMemoryStore(), newer, nil)
	require.ErrorIs(t, err, export.ErrNewerVersion)
	require.Len(t, rep.Errors, 1)
	assert.Equal(t, newer, rep.Errors[0].Path)

	foreign := filepath.Join(dir, "foreign.json")
	writeFile(t, foreign, `{"format":"something.else","version":1}`)
	_, err = importer.Detect(foreign)
	assert.ErrorIs(t, err, importer.ErrUnknownFormat)
	_, err = importer.Import(ctx, session.NewMemoryStore(), foreign, &importer.Options{Format: importer.JSON})
	assert.ErrorIs(t, err, export.ErrNotEnvelope)

	f, err := importer.Detect(good)
	require.NoError(t, err)
	assert.Equal(t, importer.JSON, f)
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}

// An empty file is no session of any format: a clear error, not EOF.
func TestImportEmptyFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "empty.jsonl")
	require.NoError(t, os.WriteFile(p, nil, 0o600))
	rep, err := importer.Import(context.Background(), session.NewMemoryStore(), p, nil)
	require.ErrorIs(t, err, importer.ErrUnknownFormat)
	require.Len(t, rep.Errors, 1)
	assert.Contains(t, rep.Errors[0].Error(), "empty")
}
