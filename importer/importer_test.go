package importer_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/export"
	"github.com/agentsession/session/importer"
	"github.com/agentsession/session/internal/workload"
)

// failingStore is a real MemoryStore whose appends fail once the session
// holds limit entries: a disk that fills, a connection that drops.
type failingStore struct {
	*session.MemoryStore
	limit int
}

var errInjected = errors.New("injected: the disk is full")

func (s *failingStore) Append(ctx context.Context, id string, opts session.AppendOptions, entries ...session.Entry) error {
	log, err := s.MemoryStore.Load(ctx, id)
	if err != nil {
		return err
	}
	if len(log.Entries)+len(entries) > s.limit {
		return errInjected
	}
	return s.MemoryStore.Append(ctx, id, opts, entries...)
}

// TestImportResumes: an import that stopped half way (a write failed) is
// reported with how far it got, and importing again completes it.
func TestImportResumes(t *testing.T) {
	ctx := context.Background()
	src := chain(t, 2100) // three appends
	path := filepath.Join(t.TempDir(), "w.json")
	writeEnvelope(t, src, path, nil)

	mem := session.NewMemoryStore()
	store := &failingStore{MemoryStore: mem, limit: 1500}
	rep, err := importer.Import(ctx, store, path, nil)
	require.ErrorIs(t, err, errInjected)
	var pe *importer.PartialError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 1000, pe.Stored)
	assert.Equal(t, 2100, pe.Total)
	assert.Contains(t, err.Error(), "import again")
	require.Len(t, rep.Errors, 1)
	assert.Empty(t, rep.Imported)
	log, err := mem.Load(ctx, src.ID())
	require.NoError(t, err)
	assert.Len(t, log.Entries, 1000)

	rep, err = importer.Import(ctx, mem, path, nil)
	require.NoError(t, err)
	require.Len(t, rep.Imported, 1)
	assert.Equal(t, 1000, rep.Imported[0].Resumed)
	got, err := session.Open(ctx, mem, src.ID())
	require.NoError(t, err)
	sameContexts(t, src, got)

	rep, err = importer.Import(ctx, mem, path, nil)
	require.NoError(t, err)
	assert.Len(t, rep.Skipped, 1)
}

// chain is a session of n user messages, one after the other, built in
// one append.
func chain(t *testing.T, n int) *session.Session {
	ctx := context.Background()
	h := session.Header{ID: "chain", Timestamp: workload.Start, Cwd: "/w"}
	entries := make([]session.Entry, n)
	parent := ""
	for i := range entries {
		id := fmt.Sprintf("e%05d", i)
		e, err := session.NewEntry(session.TypeMessage, id, parent, workload.Start.Add(time.Duration(i)*time.Second),
			map[string]any{"message": session.UserText(fmt.Sprintf("message %d", i))})
		require.NoError(t, err)
		entries[i], parent = e, id
	}
	store := session.NewMemoryStore()
	require.NoError(t, store.Create(ctx, h))
	require.NoError(t, store.Append(ctx, h.ID, session.AppendOptions{}, entries...))
	s, err := session.Open(ctx, store, h.ID)
	require.NoError(t, err)
	return s
}

// TestImportConflict: a session of the same id with other content is
// reported, never overwritten.
func TestImportConflict(t *testing.T) {
	ctx := context.Background()
	src := newSession(t, "mine")
	path := filepath.Join(t.TempDir(), "e.json")
	writeEnvelope(t, src, path, nil)

	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, store session.Store)
	}{
		{"other entries", func(t *testing.T, store session.Store) {
			s, err := session.Create(ctx, store, &session.CreateOptions{ID: src.ID()})
			require.NoError(t, err)
			_, err = s.Append(ctx, session.UserText("theirs"))
			require.NoError(t, err)
		}},
		{"more entries", func(t *testing.T, store session.Store) {
			require.NoError(t, session.Copy(ctx, store, src.Store(), src.ID()))
			s, err := session.Open(ctx, store, src.ID())
			require.NoError(t, err)
			_, err = s.Append(ctx, session.UserText("and more"))
			require.NoError(t, err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := session.NewMemoryStore()
			tc.prepare(t, store)
			before, err := store.Load(ctx, src.ID())
			require.NoError(t, err)
			rep, err := importer.Import(ctx, store, path, nil)
			require.ErrorIs(t, err, session.ErrConflict)
			var ce *importer.ConflictError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, src.ID(), ce.ID)
			assert.Len(t, rep.Errors, 1)
			assert.Empty(t, rep.Imported)
			after, err := store.Load(ctx, src.ID())
			require.NoError(t, err)
			assert.Equal(t, entryJSON(before.Entries), entryJSON(after.Entries), "the stored session is untouched")
		})
	}
}

func entryJSON(es []session.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = string(e.JSON())
	}
	return out
}

// TestImportBlobs: an export with its blobs imports them into the
// target store, whose images then resolve; a store without blobs keeps
// the references and says so.
func TestImportBlobs(t *testing.T) {
	ctx := context.Background()
	srcStore := session.NewMemoryStore()
	png := []byte("\x89PNG\r\n\x1a\n a picture")
	ref, err := srcStore.PutBlob(ctx, png)
	require.NoError(t, err)
	s, err := session.Create(ctx, srcStore, nil)
	require.NoError(t, err)
	_, err = s.Append(ctx, session.User(session.Text("look"), session.ImageBase64("image/png", ref)))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "img.json")
	writeEnvelope(t, s, path, &export.Options{Blobs: true})

	fs, err := session.OpenFileStore(t.TempDir(), nil)
	require.NoError(t, err)
	defer fs.Close()
	rep, err := importer.Import(ctx, fs, path, nil)
	require.NoError(t, err)
	require.Len(t, rep.Imported, 1)
	assert.Equal(t, 1, rep.Imported[0].Blobs)
	got, err := fs.GetBlob(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, png, got)
	opened, err := session.Open(ctx, fs, s.ID())
	require.NoError(t, err)
	msgs := opened.Context().Messages
	require.Len(t, msgs, 1)
	assert.False(t, msgs[0].Content[1].Unresolved(), "the image resolves from the imported blob")

	// Importing again into the FileStore (data on one side, the
	// reference on the other) is a skip, not a conflict.
	rep, err = importer.Import(ctx, fs, path, nil)
	require.NoError(t, err)
	assert.Len(t, rep.Skipped, 1)
}

// TestSniff: the envelope is recognised by its format member, whatever
// the spacing; other JSON is not.
func TestSniff(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		text string
		ok   bool
	}{
		{`{"format":"agentsession.export","version":1}`, true},
		{"\n  {\n  \"format\" : \"agentsession.export\",\n \"version\": 1}", true},
		{`{"format":"agentsession.exported"}`, false},
		{`[{"format":"agentsession.export"}]`, false},
		{`{"type":"session","id":"x"}`, false},
		{``, false},
	} {
		p := filepath.Join(dir, "f.json")
		require.NoError(t, os.WriteFile(p, []byte(tc.text), 0o644))
		f, err := importer.Detect(p)
		if tc.ok {
			assert.NoError(t, err, tc.text)
			assert.Equal(t, importer.JSON, f)
		} else if err == nil {
			assert.NotEqual(t, importer.JSON, f, tc.text)
		}
	}
}

// FuzzImportJSON imports arbitrary bytes as an envelope into a
// MemoryStore: never a panic, and whatever imports opens again.
func FuzzImportJSON(f *testing.F) {
	s := newSessionF(f)
	var b strings.Builder
	require.NoError(f, export.JSON(context.Background(), &b, s, nil))
	f.Add([]byte(b.String()))
	f.Add([]byte(strings.Replace(b.String(), `"version":1`, `"version":3`, 1)))
	f.Add([]byte(`{"format":"agentsession.export","version":1,"header":{"type":"session","id":"a"},"entries":[{"type":"message","id":"x","parentId":"y"}]}`))
	f.Add([]byte(`{"format":"agentsession.export","version":1,"header":{"type":"session","id":"a"},"entries":[{"type":"m","id":"x"},{"type":"m","id":"x"}]}`))
	f.Add([]byte(`{"format":"agentsession.export","version":1,"header":{"type":"session","id":"../a"},"entries":[]}`))
	f.Add([]byte(`{"format":"agentsession.export","version":1,"header":{"type":"session","id":"a"},"blobs":{"blob:sha256:00":"AAAA"}}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		p := filepath.Join(dir, "fuzz.json")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		store := session.NewMemoryStore()
		rep, _ := importer.Import(context.Background(), store, p, &importer.Options{Format: importer.JSON})
		if rep == nil {
			return
		}
		for _, s := range rep.Imported {
			o, err := session.Open(context.Background(), store, s.ID)
			require.NoError(t, err)
			_ = o.Context()
		}
	})
}

func newSessionF(f *testing.F) *session.Session {
	ctx := context.Background()
	s, err := session.Create(ctx, session.NewMemoryStore(), &session.CreateOptions{Cwd: "/w"})
	require.NoError(f, err)
	_, err = s.Append(ctx, session.UserText("hello <b>&</b>"))
	require.NoError(f, err)
	_, err = s.Append(ctx, session.AssistantText("hi"))
	require.NoError(f, err)
	return s
}

// Exporting a session to a file and importing it into another store.
func ExampleImport() {
	ctx := context.Background()
	src, _ := session.Create(ctx, session.NewMemoryStore(), &session.CreateOptions{Cwd: "/home/dev/project"})
	src.Append(ctx, session.UserText("hello"))
	src.Append(ctx, session.AssistantText("hi"))

	dir, _ := os.MkdirTemp("", "import-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "session.json")
	f, _ := os.Create(path)
	export.JSON(ctx, f, src, nil)
	f.Close()

	dst := session.NewMemoryStore()
	rep, err := importer.Import(ctx, dst, path, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(rep.Imported), "imported:", rep.Imported[0].Format, rep.Imported[0].Entries, "entries")

	// A second import finds the session there already.
	rep, _ = importer.Import(ctx, dst, path, nil)
	fmt.Println(len(rep.Imported), "imported,", len(rep.Skipped), "skipped")

	s, _ := session.Open(ctx, dst, src.ID())
	fmt.Println(s.Context().Messages[1].Text())
	// Output:
	// 1 imported: json 2 entries
	// 0 imported, 1 skipped
	// hi
}

// TestImportRepeatedIDs: a log that repeats an entry id (files may)
// imports whole, in one rewrite, also when resuming.
func TestImportRepeatedIDs(t *testing.T) {
	ctx := context.Background()
	lines := []string{
		`{"type":"session","version":3,"id":"rep","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}`,
		`{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}`,
		`{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-15T10:00:02.000Z","message":{"role":"user","content":"two","timestamp":2}}`,
		`{"type":"message","id":"a","parentId":"b","timestamp":"2026-01-15T10:00:03.000Z","message":{"role":"user","content":"three","timestamp":3}}`,
	}
	log, err := session.DecodeLog([]byte(strings.Join(lines, "\n")+"\n"), nil)
	require.NoError(t, err)
	require.Len(t, log.Entries, 3)
	src := session.OpenLog(log)
	path := filepath.Join(t.TempDir(), "rep.json")
	writeEnvelope(t, src, path, nil)

	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			store := st.open(t)
			// An earlier import stored the first two.
			require.NoError(t, store.Create(ctx, log.Header))
			require.NoError(t, store.Append(ctx, "rep", session.AppendOptions{}, log.Entries[:2]...))
			rep, err := importer.Import(ctx, store, path, nil)
			require.NoError(t, err)
			require.Len(t, rep.Imported, 1)
			assert.Equal(t, 2, rep.Imported[0].Resumed)
			store = st.reopen(t, store)
			got, err := store.Load(ctx, "rep")
			require.NoError(t, err)
			assert.Equal(t, entryJSON(log.Entries), entryJSON(got.Entries))
		})
	}
}

// A dry run reads the store, without writing to it, so that it reports
// what the import would do: import, skip, resume or refuse.
func TestImportDryRunAsTheStoreStands(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	whole, other := filepath.Join(dir, "whole.json"), filepath.Join(dir, "other.json")
	src := chain(t, 10)
	writeEnvelope(t, src, whole, nil)
	store := session.NewMemoryStore()
	dry := &importer.Options{DryRun: true}

	rep, err := importer.Import(ctx, store, whole, dry)
	require.NoError(t, err)
	require.Len(t, rep.Imported, 1)
	_, err = store.Load(ctx, src.ID())
	require.ErrorIs(t, err, session.ErrNotFound, "a dry run writes nothing")

	// Half of it stored: the dry run says it would resume.
	env, err := export.Build(ctx, src, nil)
	require.NoError(t, err)
	require.NoError(t, store.Create(ctx, env.Header))
	require.NoError(t, store.Append(ctx, src.ID(), session.AppendOptions{}, env.Entries[:4]...))
	rep, err = importer.Import(ctx, store, whole, dry)
	require.NoError(t, err)
	require.Len(t, rep.Imported, 1)
	assert.Equal(t, 4, rep.Imported[0].Resumed)
	log, err := store.Load(ctx, src.ID())
	require.NoError(t, err)
	assert.Len(t, log.Entries, 4, "a dry run writes nothing")

	// All of it stored: skipped.
	_, err = importer.Import(ctx, store, whole, nil)
	require.NoError(t, err)
	rep, err = importer.Import(ctx, store, whole, dry)
	require.NoError(t, err)
	assert.Len(t, rep.Skipped, 1)

	// Other content under the id (fewer entries than stored): a
	// conflict, in the dry run too.
	writeEnvelope(t, chain(t, 5), other, nil)
	_, err = importer.Import(ctx, store, other, dry)
	require.ErrorIs(t, err, session.ErrConflict)
}

// In a directory, a forced format picks the files of that format; it
// does not make every file a session. A file of which nothing can be
// read is an error, not an empty session; a directory with no session
// file is an error; a symlink to a directory is walked.
func TestImportDirectoryEdges(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeEnvelope(t, chain(t, 3), filepath.Join(dir, "a.json"), nil)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.py"), []byte("print('hi')\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "junk.jsonl"), []byte("{\"x\":1}\nnot json\n"), 0o600))

	store := session.NewMemoryStore()
	rep, err := importer.Import(ctx, store, dir, &importer.Options{Format: importer.Claude})
	require.ErrorIs(t, err, importer.ErrNoSessions, "no Claude Code file here")
	assert.Empty(t, rep.Imported)

	rep, err = importer.Import(ctx, store, dir, &importer.Options{Format: importer.JSON})
	require.NoError(t, err)
	assert.Len(t, rep.Imported, 1)
	assert.Empty(t, rep.Errors, "notes.py and junk.jsonl are no JSON exports: left alone")

	// Forced on one file, a format that reads nothing of it: an error.
	_, err = importer.Import(ctx, store, filepath.Join(dir, "notes.py"), &importer.Options{Format: importer.Codex, DryRun: true})
	require.Error(t, err)

	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(dir, link))
	rep, err = importer.Import(ctx, session.NewMemoryStore(), link, &importer.Options{DryRun: true})
	require.NoError(t, err)
	assert.Len(t, rep.Imported, 1, "the symlinked directory is walked")

	_, err = importer.Import(ctx, store, t.TempDir(), nil)
	require.ErrorIs(t, err, importer.ErrNoSessions)
}

// A FileStore cuts strings past its MaxStringChars with a notice: a
// session stored so is the same as its import, and importing it again
// skips it rather than calling it a conflict.
func TestReimportTruncatedStrings(t *testing.T) {
	ctx := context.Background()
	src := session.New()
	_, err := src.Append(ctx, session.UserText(strings.Repeat("long tool output ", 40)))
	require.NoError(t, err)
	_, err = src.Append(ctx, session.AssistantText("ok"))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "s.json")
	writeEnvelope(t, src, path, nil)

	fs, err := session.OpenFileStore(t.TempDir(), &session.FileStoreOptions{MaxStringChars: 100})
	require.NoError(t, err)
	defer fs.Close()
	_, err = importer.Import(ctx, fs, path, nil)
	require.NoError(t, err)
	log, err := fs.Load(ctx, src.ID())
	require.NoError(t, err)
	m, err := log.Entries[0].Message()
	require.NoError(t, err)
	require.True(t, session.IsTruncated(m.Text()), "the store cut it")

	rep, err := importer.Import(ctx, fs, path, nil)
	require.NoError(t, err)
	assert.Len(t, rep.Skipped, 1)
}

// An entry whose long string a store cut is the same entry as its
// import whichever notice ends the string: session.TruncationNotice, or
// the notice versions before it wrote.
func TestReimportTruncatedStringsEitherNotice(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("long tool output ", 40)
	src := session.New()
	_, err := src.Append(ctx, session.UserText(long))
	require.NoError(t, err)
	_, err = src.Append(ctx, session.AssistantText("ok"))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "s.json")
	writeEnvelope(t, src, path, nil)
	for _, notice := range []string{session.TruncationNotice, "\n\n[agentsession: 580 characters truncated]"} {
		store := session.NewMemoryStore()
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: src.ID()})
		require.NoError(t, err)
		require.NoError(t, s.Close())
		entries := src.Log().Entries
		cut, err := session.ParseEntry([]byte(strings.Replace(string(entries[0].JSON()), long, long[:100]+strings.ReplaceAll(notice, "\n", `\n`), 1)))
		require.NoError(t, err)
		require.NoError(t, store.Append(ctx, src.ID(), session.AppendOptions{IfEmpty: true}, cut, entries[1]))

		rep, err := importer.Import(ctx, store, path, nil)
		require.NoError(t, err, "%q", notice)
		assert.Len(t, rep.Skipped, 1, "%q", notice)
	}
}
