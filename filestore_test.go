package session_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/compattest"
	"github.com/agentsession/session/internal/longtest"
	"github.com/agentsession/session/storekit"
	"github.com/agentsession/session/storetest"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openFS(t testing.TB, root string, opts *session.FileStoreOptions) *session.FileStore {
	t.Helper()
	s, err := session.OpenFileStore(root, opts)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestFileStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) session.Store {
		return openFS(t, filepath.Join(t.TempDir(), "sessions"), nil)
	})
}

// sessionFile returns the one session file under root.
func sessionFile(t *testing.T, root string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "--*--", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	return files[0]
}

func TestFileStoreLayoutAndPermissions(t *testing.T) {
	for _, umask := range []int{0, 0o022, 0o077, 0o277} {
		t.Run(fmt.Sprintf("umask %04o", umask), func(t *testing.T) {
			withUmask(t, umask)
			ctx := context.Background()
			base := t.TempDir()
			root := filepath.Join(base, "new", "sessions") // parents made too
			store := openFS(t, root, nil)
			s, err := session.Create(ctx, store, &session.CreateOptions{ID: "0198c7e2-1111-7000-8000-000000000001", Cwd: "/home/dev/my:proj"})
			require.NoError(t, err)
			_, err = s.Append(ctx, session.User(session.Text("hello"), session.Image("image/png", make([]byte, 2000))))
			require.NoError(t, err)
			require.NoError(t, s.Close())
			_, err = store.List(ctx, session.ListOptions{}) // writes the listing index
			require.NoError(t, err)

			file := sessionFile(t, root)
			dir := filepath.Base(filepath.Dir(file))
			assert.Equal(t, "--home-dev-my-proj--", dir)
			assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_0198c7e2-1111-7000-8000-000000000001\.jsonl$`, filepath.Base(file))
			blobs, err := filepath.Glob(filepath.Join(root, ".blobs", "*"))
			require.NoError(t, err)
			require.Len(t, blobs, 1)
			want := map[string]fs.FileMode{
				filepath.Join(base, "new"): 0o700, root: 0o700, filepath.Dir(file): 0o700, file: 0o600,
				filepath.Join(root, ".index"): 0o600, filepath.Join(root, ".blobs"): 0o700, blobs[0]: 0o600,
			}
			check := func() {
				for path, mode := range want {
					fi, err := os.Stat(path)
					require.NoError(t, err)
					assert.Equal(t, mode, fi.Mode().Perm(), path)
				}
			}
			check()
			require.NoError(t, store.Archive(ctx, s.ID()))
			delete(want, file)
			want[filepath.Join(root, ".archive")] = 0o700
			want[filepath.Join(root, ".archive", dir)] = 0o700
			check()
			data, err := os.ReadFile(filepath.Join(root, ".archive", dir, filepath.Base(file)))
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			require.Len(t, lines, 2)
			assert.Contains(t, lines[0], `"type":"session","version":3,"id":"0198c7e2-1111-7000-8000-000000000001"`)
			assert.Contains(t, lines[0], `"cwd":"/home/dev/my:proj"`)
		})
	}
}

// reopenFS closes s and its store, and opens the session again on a new
// store over the same root.
func reopenFS(t *testing.T, s *session.Session, root string) *session.Session {
	t.Helper()
	require.NoError(t, s.Close())
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	r, err := session.Open(context.Background(), store, s.ID())
	require.NoError(t, err)
	return r
}

func TestFileStoreLeafMovesSurviveReopen(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := session.Create(ctx, openFS(t, root, nil), nil)
	require.NoError(t, err)
	e := appendAll(t, s, session.UserText("q1"), reply("a1"), session.UserText("q2"), reply("a2"))
	moves := []struct {
		name string
		move func(s *session.Session) error
		leaf string
	}{
		{"branch", func(s *session.Session) error { return s.Branch(ctx, e[1].ID()) }, e[1].ID()},
		{"reset", func(s *session.Session) error { return s.Branch(ctx, "") }, ""},
		{"branch from reset", func(s *session.Session) error { return s.Branch(ctx, e[2].ID()) }, e[2].ID()},
		{"branch with summary", func(s *session.Session) error {
			_, err := s.BranchWithSummary(ctx, e[0].ID(), "tried q2", nil)
			return err
		}, ""},
	}
	outer := t
	for _, mv := range moves {
		t.Run(mv.name, func(t *testing.T) {
			require.NoError(t, mv.move(s))
			want := contextJSON(t, s.Context())
			leaf := s.LeafID()
			s = reopenFS(outer, s, root)
			if mv.leaf != "" {
				assert.Equal(t, mv.leaf, s.LeafID())
			}
			assert.Equal(t, leaf, s.LeafID())
			assert.Equal(t, want, contextJSON(t, s.Context()))

			// A seed reader: the last line of the file is the leaf.
			log, err := session.DecodeLog(mustRead(t, sessionFile(t, root)), &session.ReadOptions{Strict: true})
			require.NoError(t, err)
			seedLeaf := log.Entries[len(log.Entries)-1]
			seed, err := s.ContextAt(seedLeaf.ID())
			require.NoError(t, err)
			assert.Equal(t, texts(s.Context().Messages), texts(seed.Messages))
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

// copyInto puts a corpus file into a store tree as pi would have, and
// returns its path there.
func copyInto(t *testing.T, root, name string) string {
	t.Helper()
	data := mustRead(t, compattest.Path(name))
	log, err := session.DecodeLog(data, nil)
	require.NoError(t, err)
	dir := filepath.Join(root, storekit.CwdDir(log.Header.Cwd))
	require.NoError(t, os.MkdirAll(dir, 0o700))
	path := filepath.Join(dir, "2026-01-15T10-00-00-000Z_"+log.Header.ID+".jsonl")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// TestFileStoreFidelity opens every version-3 corpus file in a store,
// appends to it and rewrites it: the lines it had stay byte for byte.
func TestFileStoreFidelity(t *testing.T) {
	compattest.Need(t)
	files, err := filepath.Glob(compattest.Path("0[0-7]-*.jsonl"))
	require.NoError(t, err)
	ctx := context.Background()
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			path := copyInto(t, root, name)
			orig := mustRead(t, path)
			store := openFS(t, root, nil)
			s, err := store.OpenPath(ctx, path)
			require.NoError(t, err)
			want := contextJSON(t, s.Context())
			assert.Equal(t, orig, mustRead(t, path), "opening changed the file")

			_, err = s.Append(ctx, session.UserText("one more"))
			require.NoError(t, err)
			require.NoError(t, s.Flush(ctx))
			now := mustRead(t, path)
			require.True(t, bytes.HasPrefix(now, orig), "append changed earlier lines")

			// A rewrite of what was read writes the same bytes again.
			log, err := store.Load(ctx, s.ID())
			require.NoError(t, err)
			require.NoError(t, store.Rewrite(ctx, s.ID(), session.RewriteOptions{}, log.Header, log.Entries))
			assert.Equal(t, string(now), string(mustRead(t, path)))

			r := reopenFS(t, s, root)
			p := leafPath(r)
			c, err := r.ContextAt(p[len(p)-2].ID())
			require.NoError(t, err)
			assert.Equal(t, want, contextJSON(t, c))
		})
	}
}

// TestFileStoreMigrationOverLimits: a file of an older version that its
// migration would take past the store's limits (a line that gains its id
// and parent) is not migrated: opening it fails with a *LimitError that
// names it, and the file stays as it was.
func TestFileStoreMigrationOverLimits(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	msg := `{"type":"message","message":{"role":"user","content":"` + strings.Repeat("y", 80) + `"}}`
	data := []byte(`{"type":"session","id":"v1lim","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}` + "\n" + msg + "\n")
	dir := filepath.Join(root, storekit.CwdDir("/w"))
	require.NoError(t, os.MkdirAll(dir, 0o700))
	path := filepath.Join(dir, "2026-01-15T10-00-00-000Z_v1lim.jsonl")
	require.NoError(t, os.WriteFile(path, data, 0o600))

	store := openFS(t, root, &session.FileStoreOptions{Limits: session.Limits{MaxLineBytes: int64(len(msg) + 5)}})
	_, err := store.OpenPath(ctx, path)
	var le *session.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "line", le.What)
	assert.Equal(t, path, le.Path)
	assert.Equal(t, data, mustRead(t, path), "the file is not touched")

	// Under the default limits it migrates.
	_, err = openFS(t, root, nil).OpenPath(ctx, path)
	require.NoError(t, err)
	log, err := session.DecodeLog(mustRead(t, path), nil)
	require.NoError(t, err)
	assert.Zero(t, log.MigratedFrom)
	assert.Len(t, log.Entries, 1)
}

// TestMigrateFileCompressed: an older file compressed with zstd (which
// DecodeLog reads) is migrated from its bytes and written plain; the
// backup is the compressed file as it was.
func TestMigrateFileCompressed(t *testing.T) {
	ctx := context.Background()
	old := []byte(`{"type":"session","version":2,"id":"s-z","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}` + "\n" +
		`{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}` + "\n")
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	comp := enc.EncodeAll(old, nil)
	path := filepath.Join(t.TempDir(), "old.jsonl")
	require.NoError(t, os.WriteFile(path, comp, 0o600))

	from, err := session.MigrateFile(ctx, path, &session.MigrateFileOptions{Backup: true})
	require.NoError(t, err)
	assert.Equal(t, 2, from)
	log, err := session.DecodeLog(mustRead(t, path), &session.ReadOptions{Strict: true})
	require.NoError(t, err)
	assert.Zero(t, log.MigratedFrom)
	require.Len(t, log.Entries, 1)
	assert.Equal(t, "m1", log.Entries[0].ID())
	assert.False(t, bytes.HasPrefix(mustRead(t, path), comp[:4]), "written plain")
	assert.Equal(t, comp, mustRead(t, path+".bak"))
}

// TestFileStoreMigratesOldFiles opens pi's real v1 sessions and the
// handmade v1 and v2 files through a store: the file is rewritten in
// version 3, with pi's structure, and gives pi's context.
func TestFileStoreMigratesOldFiles(t *testing.T) {
	compattest.Need(t)
	ctx := context.Background()
	cases := []struct {
		input, migrated, expected string
		sameIDs                   bool
	}{
		{"real-v1-before-compaction.jsonl", "07-migrated-fixture-before-compaction.jsonl", "", false},
		{"real-v1-large-session.jsonl", "07-migrated-fixture-large-session.jsonl", "", false},
		{"08-v1-handmade.input.jsonl", "08-v1-handmade.migrated.jsonl", "08-v1-handmade.expected.json", false},
		{"09-v2-handmade.input.jsonl", "09-v2-handmade.migrated.jsonl", "09-v2-handmade.expected.json", true},
	}
	for _, tc := range cases {
		t.Run(tc.input, func(t *testing.T) {
			root := t.TempDir()
			path := copyInto(t, root, tc.input)
			store := openFS(t, root, nil)
			s, err := store.OpenPath(ctx, path)
			require.NoError(t, err)

			disk := mustRead(t, path)
			log, err := session.DecodeLog(disk, &session.ReadOptions{Strict: true})
			require.NoError(t, err, "the migrated file reads strictly")
			assert.Zero(t, log.MigratedFrom, "the file on disk is version 3")
			got := strings.Split(strings.TrimSuffix(string(disk), "\n"), "\n")
			want := compattest.FileLines(t, tc.migrated)
			if tc.sameIDs {
				assert.Equal(t, want, got)
			} else {
				assert.Equal(t, compattest.IDShape(t, want)[1:], compattest.IDShape(t, got)[1:])
			}
			// Reopening reads the file as it is now: the ids stay.
			r := reopenFS(t, s, root)
			assert.Equal(t, contextJSON(t, s.Context()), contextJSON(t, r.Context()))
			if tc.expected != "" {
				var wantCtx compattest.Normalized
				require.NoError(t, json.Unmarshal(mustRead(t, compattest.Path(tc.expected)), &wantCtx))
				gotCtx := compattest.Normalize(r.Context())
				if !tc.sameIDs {
					wantCtx.LeafID = gotCtx.LeafID
				}
				assert.Equal(t, compattest.JSON(t, wantCtx), compattest.JSON(t, gotCtx))
			} else {
				var exp struct {
					MessageCount int            `json:"messageCount"`
					Roles        map[string]int `json:"roles"`
					First3       []compattest.NormalizedMessage
				}
				require.NoError(t, json.Unmarshal(mustRead(t, compattest.Path(strings.TrimSuffix(tc.migrated, ".jsonl")+".expected.json")), &exp))
				msgs := r.Context().Messages
				assert.Len(t, msgs, exp.MessageCount)
				roles := map[string]int{}
				for _, m := range msgs {
					roles[m.Role]++
				}
				assert.Equal(t, exp.Roles, roles)
				for i, w := range exp.First3 {
					assert.Equal(t, compattest.JSON(t, w), compattest.JSON(t, compattest.NormalizeMessage(msgs[i])), "message %d", i)
				}
			}
		})
	}
}

// TestFileStoreUnreadableFiles: a file that cannot be read as a session
// gives an error naming it and is never written to.
func TestFileStoreUnreadableFiles(t *testing.T) {
	ctx := context.Background()
	header := `{"type":"session","version":3,"id":"s-bad","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}`
	entry := `{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":"hi"}}`
	cases := map[string]struct {
		content, reason string
		target          error
	}{
		"empty":              {"", "empty file", session.ErrCorrupt},
		"no header":          {entry + "\n", "no session header", session.ErrCorrupt},
		"header on line 2":   {"\n" + header + "\n" + entry + "\n", "no session header", session.ErrCorrupt},
		"newer version":      {strings.Replace(header, `"version":3`, `"version":9`, 1) + "\n" + entry + "\n", "format version 9", session.ErrUnsupportedVersion},
		"binary":             {"\x00\x01\x02garbage", "no session header", session.ErrCorrupt},
		"header for another": {strings.Replace(header, "s-bad", "s-other", 1) + "\n", "header names session", session.ErrCorrupt},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "--w--")
			require.NoError(t, os.MkdirAll(dir, 0o700))
			path := filepath.Join(dir, "2026-01-15T10-00-00-000Z_s-bad.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o600))
			old := time.Now().Add(-time.Hour)
			require.NoError(t, os.Chtimes(path, old, old))
			store := openFS(t, root, nil)

			_, err := session.Open(ctx, store, "s-bad")
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.target)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), tc.reason)
			e, _ := session.NewEntry(session.TypeCustom, "x1", "", time.Now(), session.Custom{CustomType: "x"})
			assert.Error(t, store.Append(ctx, "s-bad", session.AppendOptions{}, e))
			_, err = store.OpenPath(ctx, path)
			assert.Error(t, err)

			assert.Equal(t, tc.content, string(mustRead(t, path)), "the file was changed")
			fi, err := os.Stat(path)
			require.NoError(t, err)
			assert.True(t, fi.ModTime().Equal(old), "the file was written to")
			p, err := store.List(ctx, session.ListOptions{})
			require.NoError(t, err)
			assert.Empty(t, p.Sessions)
		})
	}
}

// TestFileStoreTornTail cuts a valid file at every byte of its last two
// lines: it opens with exactly the whole lines before the cut, and the
// next append leaves no fused line.
func TestFileStoreTornTail(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	s, err := session.Create(ctx, openFS(t, src, nil), &session.CreateOptions{ID: "s-torn", Cwd: "/w"})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("q1"), reply("a1"), session.UserText("q2 \"quoted\" ü"), reply("a2"))
	require.NoError(t, s.Close())
	full := mustRead(t, sessionFile(t, src))
	lines := bytes.SplitAfter(full, []byte("\n"))
	lines = lines[:len(lines)-1] // the empty rest after the last newline
	start := len(full) - len(lines[len(lines)-1]) - len(lines[len(lines)-2])

	for cut := start; cut < len(full); cut++ {
		data := full[:cut]
		whole := bytes.Count(data, []byte("\n")) - 1 // entries before the cut
		if last := data[bytes.LastIndexByte(data, '\n')+1:]; json.Valid(last) && len(last) > 0 {
			whole++ // a whole last line that only lacks its newline
		}
		root := t.TempDir()
		dir := filepath.Join(root, "--w--")
		require.NoError(t, os.MkdirAll(dir, 0o700))
		path := filepath.Join(dir, "2026-01-15T10-00-00-000Z_s-torn.jsonl")
		require.NoError(t, os.WriteFile(path, data, 0o600))

		store, err := session.OpenFileStore(root, nil)
		require.NoError(t, err)
		r, err := session.Open(ctx, store, "s-torn")
		require.NoError(t, err, "cut at %d", cut)
		require.Equal(t, whole, r.Len(), "cut at %d", cut)
		require.Equal(t, string(data), string(mustRead(t, path)), "opening changed the file")
		_, err = r.AppendEntry(ctx, session.TypeCustom, session.Custom{CustomType: "after-cut"})
		require.NoError(t, err, "cut at %d", cut)
		require.NoError(t, r.Close())
		require.NoError(t, store.Close())

		after := mustRead(t, path)
		log, err := session.DecodeLog(after, &session.ReadOptions{Strict: true})
		require.NoError(t, err, "cut at %d: %s", cut, after)
		require.Nil(t, log.Torn)
		require.Len(t, log.Entries, whole+1, "cut at %d", cut)
		require.Equal(t, "custom", log.Entries[whole].Type())
		require.True(t, bytes.HasPrefix(after, full[:bytes.LastIndexByte(data, '\n')+1]))
	}
}

// TestFileStoreRewriteElsewhere: a handle whose file another store (as
// another process would) replaced notices, reloads and appends after
// what the other wrote.
func TestFileStoreRewriteElsewhere(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	a, err := session.Create(ctx, openFS(t, root, nil), &session.CreateOptions{ID: "s-shared"})
	require.NoError(t, err)
	e := appendAll(t, a, session.UserText("q1"), reply("a1"), session.UserText("q2"), reply("a2"))

	other := openFS(t, root, nil)
	log, err := other.Load(ctx, "s-shared")
	require.NoError(t, err)
	h := log.Header
	h.Title = "pruned elsewhere"
	require.NoError(t, other.Rewrite(ctx, "s-shared", session.RewriteOptions{}, h, log.Entries)) // same last entry

	n := appendAll(t, a, session.UserText("q3"))
	assert.Equal(t, e[3].ID(), n[0].ParentID())
	assert.Equal(t, "pruned elsewhere", a.Header().Title, "the handle reloaded")
	r, err := session.Open(ctx, other, "s-shared")
	require.NoError(t, err)
	assert.Equal(t, 5, r.Len())
	assert.Equal(t, "pruned elsewhere", r.Header().Title)
}

func TestFileStoreHostileIDs(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	require.GreaterOrEqual(t, len(storetest.HostileIDs), 10)
	e, err := session.NewEntry(session.TypeCustom, "x1", "", time.Now(), session.Custom{CustomType: "x"})
	require.NoError(t, err)
	for _, id := range storetest.HostileIDs {
		h := session.Header{ID: id, Cwd: "/w"}
		assert.ErrorIs(t, store.Create(ctx, h), session.ErrInvalidID, "Create %q", id)
		_, err := store.Load(ctx, id)
		assert.ErrorIs(t, err, session.ErrInvalidID, "Load %q", id)
		assert.ErrorIs(t, store.Append(ctx, id, session.AppendOptions{}, e), session.ErrInvalidID, "Append %q", id)
		assert.ErrorIs(t, store.Rewrite(ctx, id, session.RewriteOptions{}, h, nil), session.ErrInvalidID, "Rewrite %q", id)
		assert.ErrorIs(t, store.Delete(ctx, id), session.ErrInvalidID, "Delete %q", id)
		assert.ErrorIs(t, store.Archive(ctx, id), session.ErrInvalidID, "Archive %q", id)
	}
	var names []string
	require.NoError(t, filepath.WalkDir(filepath.Dir(root), func(p string, d fs.DirEntry, err error) error {
		names = append(names, p)
		return err
	}))
	assert.Equal(t, []string{filepath.Dir(root), root}, names, "hostile ids touched the file system")
}

// TestFileStoreHostIDs: the ids hosts use become files under the root
// whose names hold safe bytes only, and a store opened afresh on the root
// finds each by its id; a long id's file names it in its header.
func TestFileStoreHostIDs(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	for _, id := range storetest.HostIDs {
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w"})
		require.NoError(t, err, "Create %q", id)
		appendAll(t, s, session.UserText("hello "+id))
		p, err := store.Path(id)
		require.NoError(t, err)
		rel, err := filepath.Rel(root, p)
		require.NoError(t, err)
		require.True(t, filepath.IsLocal(rel), "%q is stored outside the root, in %s", id, p)
		base := filepath.Base(p)
		assert.LessOrEqual(t, len(base), 255, "%q", id)
		assert.Regexp(t, `^[0-9TZ-]+_[A-Za-z0-9_%~-][A-Za-z0-9._%~-]*\.jsonl$`, base, "the file of %q", id)
		require.NoError(t, s.Close())
		// What a store derives from the file's name fits too.
		require.NoError(t, store.MarkCompacting(ctx, id, time.Now()), "mark %q", id)
		require.NoError(t, store.MarkCompacting(ctx, id, time.Time{}))
		require.NoError(t, store.Archive(ctx, id), "archive %q", id)
		require.NoError(t, store.Unarchive(ctx, id), "unarchive %q", id)
	}
	require.NoError(t, store.Close())
	again := openFS(t, root, nil)
	infos := listAll(t, again, session.ListOptions{})
	assert.Len(t, infos, len(storetest.HostIDs))
	for _, id := range storetest.HostIDs {
		s, err := session.Open(ctx, again, id)
		require.NoError(t, err, "reopen %q", id)
		msgs, err := s.Messages(ctx)
		require.NoError(t, err)
		require.Len(t, msgs, 1)
		assert.Equal(t, "hello "+id, msgs[0].Text())
		require.NoError(t, s.Close())
	}
}

func TestFileStoreListing(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	for i, cwd := range []string{"/a", "/b", "/a"} {
		time.Sleep(20 * time.Millisecond)
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: fmt.Sprintf("s-%d", i), Cwd: cwd})
		require.NoError(t, err)
		appendAll(t, s, session.UserText("q"), reply("a"))
	}
	time.Sleep(20 * time.Millisecond) // file times are as coarse as the file system's clock
	named, err := session.Open(ctx, store, "s-0")
	require.NoError(t, err)
	require.NoError(t, named.SetTitle(ctx, "The first"))

	// A fresh store (another process) sees the same listing.
	for _, st := range []*session.FileStore{store, openFS(t, root, nil)} {
		p, err := st.List(ctx, session.ListOptions{})
		require.NoError(t, err)
		require.Equal(t, []string{"s-0", "s-2", "s-1"}, infoIDs(p.Sessions))
		first := p.Sessions[0]
		assert.Equal(t, "The first", first.Title)
		assert.Equal(t, "/a", first.Cwd)
		assert.Equal(t, 3, first.Entries)
		fi, err := os.Stat(sessionFileOf(t, root, "s-0"))
		require.NoError(t, err)
		assert.Equal(t, fi.Size(), first.Size)
		p, err = st.List(ctx, session.ListOptions{Cwd: "/a"})
		require.NoError(t, err)
		assert.Equal(t, []string{"s-0", "s-2"}, infoIDs(p.Sessions))
	}

	// Continue opens the most recent of a cwd, or creates one.
	c, err := session.Continue(ctx, store, "/b")
	require.NoError(t, err)
	assert.Equal(t, "s-1", c.ID())
	c, err = session.Continue(ctx, store, "/new")
	require.NoError(t, err)
	assert.Zero(t, c.Len())
	assert.Equal(t, "/new", c.Header().Cwd)

	// Archived sessions leave default listings and come back on Restore.
	require.NoError(t, store.Archive(ctx, "s-2"))
	p, err := store.List(ctx, session.ListOptions{Cwd: "/a"})
	require.NoError(t, err)
	assert.Equal(t, []string{"s-0"}, infoIDs(p.Sessions))
	p, err = openFS(t, root, nil).List(ctx, session.ListOptions{Cwd: "/a", Archived: true})
	require.NoError(t, err)
	require.Equal(t, []string{"s-0", "s-2"}, infoIDs(p.Sessions), "archiving is no update")
	assert.True(t, p.Sessions[1].Archived)
	assert.False(t, p.Sessions[0].Archived)
	a, err := session.Open(ctx, store, "s-2")
	require.NoError(t, err, "archived sessions still open")
	assert.Equal(t, 2, a.Len())
	require.NoError(t, store.Restore(ctx, "s-2"))
	p, err = store.List(ctx, session.ListOptions{Cwd: "/a"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"s-0", "s-2"}, infoIDs(p.Sessions))
}

func infoIDs(infos []session.SessionInfo) []string {
	var out []string
	for _, i := range infos {
		out = append(out, i.ID)
	}
	return out
}

func sessionFileOf(t testing.TB, root, id string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "--*--", "*_"+id+".jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	return files[0]
}

// TestListReadsTheTreeOnce: a new store's first listing reads the tree
// once, not once at OpenFileStore and again in List (it must read it
// then, for sessions made since); a second listing reads it again.
func TestListReadsTheTreeOnce(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	for i := range 3 {
		_, err := session.Create(ctx, store, &session.CreateOptions{ID: fmt.Sprintf("s-%d", i), Cwd: fmt.Sprintf("/w%d", i)})
		require.NoError(t, err)
	}
	before := session.TreeScans()
	other := openFS(t, root, nil)
	assert.Zero(t, session.TreeScans()-before, "OpenFileStore read the tree")
	for want := int64(1); want <= 2; want++ {
		p, err := other.List(ctx, session.ListOptions{})
		require.NoError(t, err)
		assert.Len(t, p.Sessions, 3)
		assert.Equal(t, want, session.TreeScans()-before)
	}
}

func TestFileStoreTempFiles(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-tmp", Cwd: "/w"})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("q"))
	require.NoError(t, s.Close())
	dir := filepath.Dir(sessionFileOf(t, root, "s-tmp"))
	stale := filepath.Join(dir, ".2026-01-15T10-00-00-000Z_s-gone.jsonl.tmp-abc")
	fresh := filepath.Join(dir, ".2026-01-15T10-00-00-000Z_s-tmp.jsonl.tmp-def")
	for _, p := range []string{stale, fresh} {
		require.NoError(t, os.WriteFile(p, []byte(`{"type":"session","version":3,"id":"s-gone"}`+"\n"), 0o600))
	}
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(stale, old, old))

	other := openFS(t, root, nil)
	p, err := other.List(ctx, session.ListOptions{})
	require.NoError(t, err)
	_, err = os.Stat(stale)
	assert.ErrorIs(t, err, fs.ErrNotExist, "a stale temp file is removed by the store's first read of the tree")
	_, err = os.Stat(fresh)
	assert.NoError(t, err, "a recent temp file may be a live rewrite")
	assert.Equal(t, []string{"s-tmp"}, infoIDs(p.Sessions))
	_, err = other.Load(ctx, "s-gone")
	assert.ErrorIs(t, err, session.ErrNotFound)
}

func TestFileStoreSyncPolicies(t *testing.T) {
	ctx := context.Background()
	for _, p := range []session.SyncPolicy{session.SyncOnFlush, session.SyncNever, session.SyncEveryAppend} {
		t.Run(p.String(), func(t *testing.T) {
			root := t.TempDir()
			s, err := session.Create(ctx, openFS(t, root, &session.FileStoreOptions{Sync: p}), nil)
			require.NoError(t, err)
			require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText("q"), reply("a")}, nil))
			require.NoError(t, s.Flush(ctx))
			r := reopenFS(t, s, root)
			assert.Equal(t, 2, r.Len())
		})
	}
}

// ---- Child processes ----

// TestFileStoreChild is run by the tests below as a separate process
// (the test binary again); it does nothing in a normal run.
func TestFileStoreChild(t *testing.T) {
	role := os.Getenv("AGENTSESSION_CHILD")
	if role == "" {
		t.Skip("run as a child process by other tests")
	}
	ctx := context.Background()
	root, id := os.Getenv("AGENTSESSION_ROOT"), os.Getenv("AGENTSESSION_ID")
	switch role {
	case "hammer":
		hammerChild(t)
	case "close-latched":
		closeLatchedChild(t)
	case "hold-lock":
		holdLockChild(t)
	case "turn-crash":
		turnCrashChild(t)
	case "after-delete":
		afterDeleteChild(t)
	case "state":
		stateChild(t)
	case "events":
		eventsChild(t)
	case "latency":
		latencyChild(t)
	case "crash":
		// Append forever with the policy given, reporting each entry once
		// its append returned, until killed.
		policy := map[string]session.SyncPolicy{"every": session.SyncEveryAppend, "on-flush": session.SyncOnFlush, "never": session.SyncNever}[os.Getenv("AGENTSESSION_POLICY")]
		store, err := session.OpenFileStore(root, &session.FileStoreOptions{Sync: policy})
		if err != nil {
			panic(err)
		}
		s, err := session.Open(ctx, store, id)
		if err != nil {
			panic(err)
		}
		for i := 0; ; i++ {
			e, err := s.Append(ctx, session.UserText(strings.Repeat("x", i%3000)+strconv.Itoa(i)))
			if err != nil {
				panic(err)
			}
			os.Stdout.WriteString(e.ID() + "\n") // one write: a line is whole or absent
		}
	case "writer":
		writer, _ := strconv.Atoi(os.Getenv("AGENTSESSION_WRITER"))
		goroutines, _ := strconv.Atoi(os.Getenv("AGENTSESSION_GOROUTINES"))
		each, _ := strconv.Atoi(os.Getenv("AGENTSESSION_EACH"))
		store, err := session.OpenFileStore(root, nil)
		if err != nil {
			panic(err)
		}
		errs := make(chan error, goroutines)
		for g := range goroutines {
			go func() {
				for k := range each {
					id := fmt.Sprintf("w%d-g%d-%04d", writer, g, k)
					e, err := session.NewEntry(session.TypeCustom, id, "", time.Now(), map[string]any{"customType": "seq", "writer": writer*100 + g, "seq": k})
					if err == nil {
						err = store.Append(ctx, "s-multi", session.AppendOptions{}, e)
					}
					if err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range goroutines {
			if err := <-errs; err != nil {
				panic(err)
			}
		}
		if err := store.Close(); err != nil {
			panic(err)
		}
	case "turns":
		// Save turns through a Session handle of its own, as a second
		// agent process would.
		store, err := session.OpenFileStore(root, nil)
		if err != nil {
			panic(err)
		}
		s, err := session.Open(ctx, store, id)
		if err != nil {
			panic(err)
		}
		n, _ := strconv.Atoi(os.Getenv("AGENTSESSION_EACH"))
		for k := range n {
			turn := []*session.Message{
				session.UserText(fmt.Sprintf("child q%d", k)),
				session.AssistantText(fmt.Sprintf("child a%d", k)),
			}
			if err := s.SaveTurn(ctx, turn, nil); err != nil {
				panic(err)
			}
			if err := s.Flush(ctx); err != nil {
				panic(err)
			}
		}
		if err := s.Close(); err != nil {
			panic(err)
		}
		if err := store.Close(); err != nil {
			panic(err)
		}
	case "append-one", "rewrite":
		store, err := session.OpenFileStore(root, nil)
		if err != nil {
			panic(err)
		}
		log, err := store.Load(ctx, id)
		if err != nil {
			panic(err)
		}
		if role == "rewrite" {
			h := log.Header
			h.Title = "rewritten elsewhere"
			err = store.Rewrite(ctx, id, session.RewriteOptions{}, h, log.Entries)
		} else {
			var e session.Entry
			last := log.Entries[len(log.Entries)-1].ID()
			if e, err = session.NewEntry(session.TypeCustom, "other01", last, time.Now(), session.Custom{CustomType: "other"}); err == nil {
				err = store.Append(ctx, id, session.AppendOptions{IfLast: last}, e)
			}
		}
		if err != nil {
			panic(err)
		}
		if err := store.Close(); err != nil {
			panic(err)
		}
	case "fsize":
		// With the file size limit just above the file, writing a large
		// append fails: at once, or with SyncNever (which gathers appends
		// while its write lease lasts) at Flush. The file must stay as it
		// was and the error stay latched.
		signalIgnoreXFSZ()
		policy := map[string]session.SyncPolicy{"every": session.SyncEveryAppend, "on-flush": session.SyncOnFlush, "never": session.SyncNever}[os.Getenv("AGENTSESSION_POLICY")]
		store, err := session.OpenFileStore(root, &session.FileStoreOptions{MaxStringChars: -1, Sync: policy})
		if err != nil {
			panic(err)
		}
		s, err := session.Open(ctx, store, id)
		if err != nil {
			panic(err)
		}
		limit, _ := strconv.ParseInt(os.Getenv("AGENTSESSION_LIMIT"), 10, 64)
		if err := setFileSizeLimit(limit); err != nil {
			panic(err)
		}
		var err1 error
		if os.Getenv("AGENTSESSION_LARGE") == "1" {
			// An append of megabytes is written in pieces (a fork's): the
			// first ones fit under the limit, a later one does not.
			msgs := make([]*session.Message, 20)
			for i := range msgs {
				msgs[i] = session.UserText(strings.Repeat("z", 40<<10))
			}
			err1 = s.SaveTurn(ctx, msgs, nil)
		} else {
			_, err1 = s.Append(ctx, session.UserText(strings.Repeat("y", 64<<10)))
			if policy == session.SyncNever && err1 != nil {
				panic(err1) // gathered: the write comes at Flush
			}
		}
		if policy == session.SyncNever && err1 == nil {
			err1 = s.Flush(ctx)
		}
		_, err2 := s.Append(ctx, session.UserText("small"))
		err3 := s.Flush(ctx)
		// Another handle opening the session through the same store does
		// not clear the error for the first.
		_, err4 := session.Open(ctx, store, id)
		_, err5 := s.Append(ctx, session.UserText("after the other open"))
		fmt.Printf("%v\n%v\n%v\n%v\n", err1 != nil, err2 != nil && err2.Error() == err1.Error(), err3 != nil,
			err4 != nil && err5 != nil && err5.Error() == err1.Error())
		fmt.Println(err1)
	}
}

func child(t testing.TB, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFileStoreChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// TestFileStoreCrash kills a child that appends at random moments, for
// each sync policy: the file always opens, and every entry whose append
// returned is in it; with SyncNever, which gathers appends for a moment,
// what is missing of a round is only its last appends (a suffix), never
// one from before an entry that made it.
func TestFileStoreCrash(t *testing.T) {
	longtest.Skip(t, "kills a child appending, under each sync policy")
	if testing.Short() {
		t.Skip("spawns processes")
	}
	rounds := 40
	if n, err := strconv.Atoi(os.Getenv("AGENTSESSION_CRASH_ROUNDS")); err == nil {
		rounds = n
	}
	for _, policy := range []string{"every", "on-flush", "never"} {
		t.Run(policy, func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			store := openFS(t, root, nil)
			total, lost := 0, 0
			id := "s-crash"
			for round := range rounds {
				if round == 0 || policy == "never" {
					// With SyncNever the rounds run longer and write more:
					// each has a session of its own, so that the checks
					// do not read an ever longer file.
					id = fmt.Sprintf("s-crash-%d", round)
					s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w"})
					require.NoError(t, err)
					require.NoError(t, s.Close())
				}
				cmd := child(t, "AGENTSESSION_CHILD=crash", "AGENTSESSION_ROOT="+root, "AGENTSESSION_ID="+id, "AGENTSESSION_POLICY="+policy)
				cmd.Stderr = nil
				out, err := cmd.StdoutPipe()
				require.NoError(t, err)
				require.NoError(t, cmd.Start())
				sc := bufio.NewScanner(out)
				var acked []string
				want := 1 + (round*7919)%50 // entries to see before the kill
				for i := 0; i < want && sc.Scan(); i++ {
					acked = append(acked, sc.Text())
				}
				pause := time.Duration(round%5) * 300 * time.Microsecond
				if policy == "never" {
					pause += time.Duration(round%4) * 12 * time.Millisecond // past some write leases
				}
				time.Sleep(pause)
				require.NoError(t, cmd.Process.Kill())
				for sc.Scan() { // acknowledged before the kill landed
					acked = append(acked, sc.Text())
				}
				_ = cmd.Wait()

				log, err := store.Load(ctx, id)
				require.NoError(t, err, "round %d: the file does not open", round)
				require.Empty(t, log.Malformed, "round %d", round)
				have := map[string]bool{}
				for _, e := range log.Entries {
					have[e.ID()] = true
				}
				present := 0
				for present < len(acked) && have[acked[present]] {
					present++
				}
				for _, id := range acked[present:] {
					require.False(t, have[id], "round %d: entry %s is there, an earlier acknowledged one is not", round, id)
				}
				if policy != "never" {
					require.Equal(t, len(acked), present, "round %d: acknowledged entry %s lost", round, acked[min(present, len(acked)-1)])
				}
				total += len(acked)
				lost += len(acked) - present
			}
			t.Logf("%s: %d rounds, %d acknowledged entries, %d lost", policy, rounds, total, lost)
		})
	}
}

// TestFileStoreShortWrite lowers the file size limit in a child so that
// an append fails part way: the file keeps its length and the error is
// latched.
func TestFileStoreShortWrite(t *testing.T) {
	canLimitFileSize(t)
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-fsize", Cwd: "/w"})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("q"), reply("a"))
	require.NoError(t, s.Close())
	path := sessionFileOf(t, root, "s-fsize")
	before := mustRead(t, path)

	for _, c := range []struct {
		policy string
		large  bool
		room   int // bytes the file may grow by
	}{
		{"every", false, 4096}, {"on-flush", false, 4096}, {"never", false, 4096},
		{"every", true, 600 << 10}, {"on-flush", true, 600 << 10}, {"never", true, 600 << 10},
	} {
		name := c.policy
		if c.large {
			name += " large"
		}
		t.Run(name, func(t *testing.T) {
			large := "0"
			if c.large {
				large = "1"
			}
			cmd := child(t, "AGENTSESSION_CHILD=fsize", "AGENTSESSION_ROOT="+root, "AGENTSESSION_ID=s-fsize",
				"AGENTSESSION_LIMIT="+strconv.Itoa(len(before)+c.room), "AGENTSESSION_POLICY="+c.policy, "AGENTSESSION_LARGE="+large)
			out, err := cmd.Output()
			require.NoError(t, err)
			lines := strings.Split(string(out), "\n")
			assert.Equal(t, []string{"true", "true", "true", "true"}, lines[:4], "the failed write is reported; the next append, Flush and an open through the store return it: %s", out)
			assert.Contains(t, lines[4], path, "the error names the file")
			assert.Equal(t, string(before), string(mustRead(t, path)), "the failed append was rolled back")
			r, err := session.Open(ctx, openFS(t, root, nil), "s-fsize")
			require.NoError(t, err)
			assert.Equal(t, 2, r.Len())
		})
	}
}

// TestFileStoreMultiProcess appends from several processes with several
// goroutines each: nothing lost, nothing interleaved, each writer's order
// kept.
func TestFileStoreMultiProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	const procs, goroutines, each = 4, 4, 50
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	require.NoError(t, store.Create(ctx, session.Header{ID: "s-multi", Cwd: "/w"}))
	cmds := make([]*exec.Cmd, procs)
	for p := range procs {
		cmds[p] = child(t, "AGENTSESSION_CHILD=writer", "AGENTSESSION_ROOT="+root,
			"AGENTSESSION_WRITER="+strconv.Itoa(p), "AGENTSESSION_GOROUTINES="+strconv.Itoa(goroutines), "AGENTSESSION_EACH="+strconv.Itoa(each))
		require.NoError(t, cmds[p].Start())
	}
	for _, c := range cmds {
		require.NoError(t, c.Wait())
	}
	data := mustRead(t, sessionFileOf(t, root, "s-multi"))
	log, err := session.DecodeLog(data, &session.ReadOptions{Strict: true})
	require.NoError(t, err)
	require.Len(t, log.Entries, procs*goroutines*each)
	next := map[int]int{}
	for _, e := range log.Entries {
		var v struct{ Writer, Seq int }
		require.NoError(t, e.Decode(&v))
		require.Equal(t, next[v.Writer], v.Seq, "writer %d out of order", v.Writer)
		next[v.Writer]++
	}
	assert.Len(t, next, procs*goroutines)
}

// FuzzFileStoreLoad puts arbitrary bytes where a session file goes and
// opens it: no panic; a file that fails to open is left byte for byte;
// one that opens takes an append that reads back as its last entry.
func FuzzFileStoreLoad(f *testing.F) {
	h := `{"type":"session","version":3,"id":"s-fuzz","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}`
	f.Add([]byte(h + "\n"))
	f.Add([]byte(h + "\n" + `{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"hi"}}` + "\n{broken\n" + `{"type":"mess`))
	f.Add([]byte(strings.Replace(h, `"version":3`, `"version":1`, 1) + "\n" + `{"type":"message","message":{"role":"user","content":"hi"}}` + "\n"))
	f.Add([]byte(strings.Replace(h, `"version":3`, `"version":7`, 1) + "\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		root := t.TempDir()
		dir := filepath.Join(root, "--w--")
		require.NoError(t, os.MkdirAll(dir, 0o700))
		path := filepath.Join(dir, "2026-01-15T10-00-00-000Z_s-fuzz.jsonl")
		require.NoError(t, os.WriteFile(path, data, 0o600))
		store, err := session.OpenFileStore(root, &session.FileStoreOptions{Sync: session.SyncNever})
		require.NoError(t, err)
		defer store.Close()
		s, err := session.Open(ctx, store, "s-fuzz")
		if err != nil {
			require.Equal(t, data, mustRead(t, path), "a file that failed to open was changed")
			return
		}
		e, err := s.AppendEntry(ctx, session.TypeCustom, session.Custom{CustomType: "fuzz"})
		require.NoError(t, err)
		require.NoError(t, s.Flush(ctx))
		log, err := session.DecodeLog(mustRead(t, path), nil)
		require.NoError(t, err)
		require.Nil(t, log.Torn)
		require.NotEmpty(t, log.Entries)
		require.Equal(t, e.ID(), log.Entries[len(log.Entries)-1].ID())
	})
}

// TestFileStoreListingIndex: a new store (another process) lists from the
// index the last one saved, reading only what was appended since, and
// sees titles and counts that changed in between.
func TestFileStoreListingIndex(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	first := openFS(t, root, &session.FileStoreOptions{Sync: session.SyncNever})
	big := strings.Repeat("a long reply ", 5000)
	var ids []string
	for i := range 5 {
		s, err := session.Create(ctx, first, &session.CreateOptions{ID: fmt.Sprintf("s-idx-%d", i), Cwd: "/w"})
		require.NoError(t, err)
		for range 20 {
			appendAll(t, s, session.UserText("q"), reply(big))
		}
		require.NoError(t, s.Close())
		ids = append(ids, s.ID())
	}
	_, err := first.List(ctx, session.ListOptions{}) // saves the index
	require.NoError(t, err)
	require.NoError(t, first.Close())

	// Another process appends to one session and renames another.
	other := openFS(t, root, nil)
	s1, err := session.Open(ctx, other, "s-idx-1")
	require.NoError(t, err)
	appendAll(t, s1, session.UserText("one more"))
	require.NoError(t, s1.Close())
	s3, err := session.Open(ctx, other, "s-idx-3")
	require.NoError(t, err)
	require.NoError(t, s3.SetTitle(ctx, "Renamed"))
	require.NoError(t, s3.Close())
	require.NoError(t, other.Close())

	fresh := openFS(t, root, nil)
	before := session.ListReadBytes()
	p, err := fresh.List(ctx, session.ListOptions{})
	require.NoError(t, err)
	read := session.ListReadBytes() - before
	var total int64
	for _, info := range p.Sessions {
		total += info.Size
	}
	assert.Less(t, read, int64(4096), "the listing read %d of %d bytes", read, total)
	byID := map[string]session.SessionInfo{}
	for _, info := range p.Sessions {
		byID[info.ID] = info
	}
	require.Len(t, byID, 5)
	assert.Equal(t, 41, byID["s-idx-1"].Entries)
	assert.Equal(t, 41, byID["s-idx-3"].Entries)
	assert.Equal(t, "Renamed", byID["s-idx-3"].Title)
	assert.Equal(t, 40, byID["s-idx-0"].Entries)
	for _, id := range ids {
		fi, err := os.Stat(sessionFileOf(t, root, id))
		require.NoError(t, err)
		assert.Equal(t, fi.Size(), byID[id].Size, id)
	}
	assert.Contains(t, []string{"s-idx-3", "s-idx-1"}, p.Sessions[0].ID, "updated sessions first")

	// A damaged index is only a cache: the listing reads the files.
	require.NoError(t, os.WriteFile(filepath.Join(root, ".index"), []byte("{not json"), 0o600))
	before = session.ListReadBytes()
	p2, err := openFS(t, root, nil).List(ctx, session.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, total, session.ListReadBytes()-before, "every file read once")
	assert.ElementsMatch(t, infoIDs(p.Sessions), infoIDs(p2.Sessions))
	for _, info := range p2.Sessions {
		assert.Equal(t, byID[info.ID].Title, info.Title)
		assert.Equal(t, byID[info.ID].Entries, info.Entries)
	}
}

// TestFileStoreTwoProcessSessions: two processes save turns into one
// session through Session handles: nothing lost, no turn interleaved with
// another, and each sees the other's turns after a reload. A conditional
// append loses to another process's append with ErrConflict, and a handle
// whose file another process rewrote reloads before it appends.
func TestFileStoreTwoProcessSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-two", Cwd: "/w"})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("start"))

	const each = 200
	cmd := child(t, "AGENTSESSION_CHILD=turns", "AGENTSESSION_ROOT="+root, "AGENTSESSION_ID=s-two", "AGENTSESSION_EACH="+strconv.Itoa(each))
	require.NoError(t, cmd.Start())
	for k := range each {
		turn := []*session.Message{session.UserText(fmt.Sprintf("parent q%d", k)), session.AssistantText(fmt.Sprintf("parent a%d", k))}
		require.NoError(t, s.SaveTurn(ctx, turn, nil))
		require.NoError(t, s.Flush(ctx))
	}
	require.NoError(t, cmd.Wait())

	require.NoError(t, s.Reload(ctx))
	require.Equal(t, 1+4*each, s.Len(), "every entry of both processes")
	// Each turn is two consecutive entries, the answer under its question.
	seen := map[string]bool{}
	var prev session.Entry
	for e := range s.Entries() {
		m, err := e.Message()
		require.NoError(t, err)
		text := m.Text()
		seen[text] = true
		if strings.Contains(text, " a") {
			pm, err := prev.Message()
			require.NoError(t, err)
			assert.Equal(t, strings.Replace(text, " a", " q", 1), pm.Text(), "a turn was interleaved")
			assert.Equal(t, prev.ID(), e.ParentID())
		}
		prev = e
	}
	for k := range each {
		for _, who := range []string{"parent", "child"} {
			assert.True(t, seen[fmt.Sprintf("%s q%d", who, k)] && seen[fmt.Sprintf("%s a%d", who, k)], "%s turn %d lost", who, k)
		}
	}
	// The child's own branch is the leaf of a handle opened afresh (the
	// last entry), and the parent's handle kept its leaf.
	assert.Contains(t, texts(s.Context().Messages), fmt.Sprintf("assistant:parent a%d", each-1))

	// IfLast: another process appends first.
	log, err := store.Load(ctx, "s-two")
	require.NoError(t, err)
	last := log.Entries[len(log.Entries)-1].ID()
	require.NoError(t, child(t, "AGENTSESSION_CHILD=append-one", "AGENTSESSION_ROOT="+root, "AGENTSESSION_ID=s-two").Run())
	e, err := session.NewEntry(session.TypeCustom, "mine01", last, time.Now(), session.Custom{CustomType: "mine"})
	require.NoError(t, err)
	err = store.Append(ctx, "s-two", session.AppendOptions{IfLast: last}, e)
	assert.ErrorIs(t, err, session.ErrConflict)

	// A rewrite in another process: the handle notices and reloads.
	require.NoError(t, child(t, "AGENTSESSION_CHILD=rewrite", "AGENTSESSION_ROOT="+root, "AGENTSESSION_ID=s-two").Run())
	n := appendAll(t, s, session.UserText("after the rewrite"))
	assert.Equal(t, "rewritten elsewhere", s.Header().Title)
	require.NoError(t, s.Close())
	r := reopenFS(t, s, root)
	assert.Equal(t, n[0].ID(), r.LeafID())
	assert.Equal(t, 1+4*each+2, r.Len())
}

func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd on this system")
	}
	return len(fds)
}

// TestFileStoreOpenFiles: a closed Session lets its file go, and a store
// keeps at most MaxOpenFiles session files open, closing the least used
// and opening them again, with nothing lost.
func TestFileStoreOpenFiles(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, &session.FileStoreOptions{MaxOpenFiles: 3})
	before := openFDs(t)
	for i := range 100 {
		s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/w"})
		require.NoError(t, err)
		appendAll(t, s, session.UserText(fmt.Sprint("q", i)))
		require.NoError(t, s.Close())
	}
	assert.LessOrEqual(t, openFDs(t), before+1, "closed sessions keep no file open")

	// Eight sessions in use at once, appended to in turn.
	var open []*session.Session
	for range 8 {
		s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/v"})
		require.NoError(t, err)
		open = append(open, s)
	}
	for round := range 5 {
		for _, s := range open {
			appendAll(t, s, session.UserText(fmt.Sprint("round ", round)))
		}
		assert.LessOrEqual(t, openFDs(t), before+3+1, "round %d", round)
	}
	for _, s := range open {
		require.NoError(t, s.Close())
		r, err := session.Open(ctx, openFS(t, root, nil), s.ID())
		require.NoError(t, err)
		assert.Equal(t, 5, r.Len())
	}
}

// TestFileStoreConcurrentCreate: of several creates of one id at once,
// in one store or in several (as in several processes), exactly one
// succeeds and one file is left.
func TestFileStoreConcurrentCreate(t *testing.T) {
	ctx := context.Background()
	for _, stores := range []int{1, 4} {
		t.Run(fmt.Sprint(stores, " stores"), func(t *testing.T) {
			root := t.TempDir()
			var all []*session.FileStore
			for range stores {
				all = append(all, openFS(t, root, nil))
			}
			const n = 20
			errs := make(chan error, n)
			start := make(chan struct{})
			for i := range n {
				go func() {
					<-start
					errs <- all[i%stores].Create(ctx, session.Header{ID: "s-once", Cwd: "/w", Timestamp: time.Now().Add(time.Duration(i) * time.Millisecond)})
				}()
			}
			close(start)
			ok := 0
			for range n {
				if err := <-errs; err == nil {
					ok++
				} else {
					assert.ErrorIs(t, err, session.ErrExists)
				}
			}
			assert.Equal(t, 1, ok)
			files, err := filepath.Glob(filepath.Join(root, "--w--", "*_s-once.jsonl"))
			require.NoError(t, err)
			assert.Len(t, files, 1)
		})
	}
}

// TestFileStoreFidelityWhitespace: a rewrite keeps the lines of a file
// written with CRLF line ends and stray spaces byte for byte.
func TestFileStoreFidelityWhitespace(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "--w--")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	content := `{"type":"session","version":3,"id":"s-crlf","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}` + "\r\n" +
		`  {"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":"hi"}}` + " \r\n" +
		`{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-15T10:00:02.000Z","message":{"role":"assistant","content":[],"stopReason":"stop"}}` + "\t\r\n"
	path := filepath.Join(dir, "2026-01-15T10-00-00-000Z_s-crlf.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	store := openFS(t, root, nil)
	s, err := session.Open(ctx, store, "s-crlf")
	require.NoError(t, err)
	assert.Equal(t, "a2", s.LeafID())
	log, err := store.Load(ctx, "s-crlf")
	require.NoError(t, err)
	require.NoError(t, store.Rewrite(ctx, "s-crlf", session.RewriteOptions{}, log.Header, log.Entries))
	assert.Equal(t, content, string(mustRead(t, path)))
	appendAll(t, s, session.UserText("more"))
	require.NoError(t, s.Flush(ctx))
	assert.True(t, strings.HasPrefix(string(mustRead(t, path)), content))
}

// TestRewritesKeepTheFileMode: a rewrite (here a store's Rewrite, and
// MigrateFile) keeps the mode the file had, and MigrateFile's backup is
// the old file, with that mode, never replacing one already there.
func TestRewritesKeepTheFileMode(t *testing.T) {
	withUmask(t, 0o022)
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-mode", Cwd: "/w"})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("q"), reply("a"))
	require.NoError(t, s.Close())
	path := sessionFileOf(t, root, "s-mode")
	require.NoError(t, os.Chmod(path, 0o644))
	log, err := store.Load(ctx, "s-mode")
	require.NoError(t, err)
	require.NoError(t, store.Rewrite(ctx, "s-mode", session.RewriteOptions{}, log.Header, log.Entries[:1]))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), "Rewrite")

	v2 := filepath.Join(t.TempDir(), "old.jsonl")
	old := []byte(`{"type":"session","version":2,"id":"s-v2","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}` + "\n" +
		`{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}` + "\n")
	require.NoError(t, os.WriteFile(v2, old, 0o640))
	require.NoError(t, os.Chmod(v2, 0o640))
	from, err := session.MigrateFile(ctx, v2, &session.MigrateFileOptions{Backup: true})
	require.NoError(t, err)
	assert.Equal(t, 2, from)
	for _, p := range []string{v2, v2 + ".bak"} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), p)
	}
	assert.Equal(t, string(old), string(mustRead(t, v2+".bak")), "the backup is the file as it was")
	require.NoError(t, os.WriteFile(v2, old, 0o640))
	_, err = session.MigrateFile(ctx, v2, &session.MigrateFileOptions{Backup: true})
	assert.ErrorIs(t, err, fs.ErrExist, "a backup is never replaced")
	assert.Equal(t, string(old), string(mustRead(t, v2)), "and the file is left as it was")
}
