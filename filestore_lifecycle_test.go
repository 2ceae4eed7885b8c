package session_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// Issue 16 on a FileStore: listings fold metadata without loading
// entries, archive times, handles on deleted sessions, shared state.

// listAll lists every session of store matching opts (one page).
func listAll(t *testing.T, store session.Store, opts session.ListOptions) map[string]session.SessionInfo {
	t.Helper()
	opts.Limit = 1000
	p, err := store.List(context.Background(), opts)
	require.NoError(t, err)
	out := map[string]session.SessionInfo{}
	for _, info := range p.Sessions {
		out[info.ID] = info
	}
	return out
}

// metaFixture makes three sessions with metadata in their headers and
// in later entries.
func metaFixture(t *testing.T, store session.Store) {
	t.Helper()
	ctx := context.Background()
	a, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-a", Cwd: "/w", ProjectID: "p1", User: "ann", App: "app",
		AppVersion: "1.0", Metadata: map[string]string{"team": "red", "gone": "x"}})
	require.NoError(t, err)
	_, err = a.Append(ctx, session.UserText("How do I list files?\nsecond line"))
	require.NoError(t, err)
	p2 := "p2"
	require.NoError(t, a.UpdateMeta(ctx, session.MetaUpdate{ProjectID: &p2, Set: map[string]string{"tier": "gold"}, Delete: []string{"gone"}}))
	// A compaction running, kept beside the log.
	require.NoError(t, session.Store(store).(session.CompactionMarker).MarkCompacting(ctx, "s-a", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
	require.NoError(t, a.Close())

	b, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-b", Cwd: "/w", Title: "header title", User: "bob"})
	require.NoError(t, err)
	require.NoError(t, b.SaveTurn(ctx, []*session.Message{session.UserText("q"), reply("a")}, nil))
	require.NoError(t, b.SetTitle(ctx, "named"))
	require.NoError(t, b.Close())

	c, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-c", Cwd: "/w", User: "ann", Metadata: map[string]string{"team": "blue"}})
	require.NoError(t, err)
	require.NoError(t, c.Close())
}

func checkMetaFixture(t *testing.T, all map[string]session.SessionInfo) {
	t.Helper()
	require.Len(t, all, 3)
	a := all["s-a"]
	assert.Equal(t, "How do I list files?", a.Title)
	assert.True(t, a.TitleDerived)
	assert.Equal(t, "p2", a.ProjectID)
	assert.Equal(t, "1.0", a.AppVersion)
	assert.Equal(t, "ann", a.User)
	assert.Equal(t, "app", a.App)
	assert.Equal(t, map[string]string{"team": "red", "tier": "gold"}, a.Metadata)
	assert.Equal(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), a.Compacting)
	assert.Equal(t, 2, a.Entries)
	b := all["s-b"]
	assert.Equal(t, "named", b.Title)
	assert.False(t, b.TitleDerived)
	assert.Equal(t, "bob", b.User)
	assert.Equal(t, 3, b.Entries)
	assert.True(t, b.Compacting.IsZero())
	assert.Equal(t, "", all["s-c"].Title)
	assert.Equal(t, map[string]string{"team": "blue"}, all["s-c"].Metadata)
}

func TestFileStoreListMetadataWithoutLoading(t *testing.T) {
	root := t.TempDir()
	store := openFS(t, root, nil)
	metaFixture(t, store)
	checkMetaFixture(t, listAll(t, store, session.ListOptions{}))
	require.NoError(t, store.Close())

	// Another store lists from the index file: no session file is read.
	other := openFS(t, root, nil)
	before := session.ListReadBytes()
	checkMetaFixture(t, listAll(t, other, session.ListOptions{}))
	assert.Zero(t, session.ListReadBytes()-before, "listed from the index")

	// Without the index, the files are read once, and show the same.
	require.NoError(t, os.Remove(filepath.Join(root, ".index")))
	third := openFS(t, root, nil)
	checkMetaFixture(t, listAll(t, third, session.ListOptions{}))
	before = session.ListReadBytes()
	checkMetaFixture(t, listAll(t, third, session.ListOptions{}))
	assert.Zero(t, session.ListReadBytes()-before)

	// An update appended by another store is read from where the index
	// ends (only the new bytes), and folded in.
	s, err := session.Open(context.Background(), other, "s-c")
	require.NoError(t, err)
	p3 := "p3"
	require.NoError(t, s.UpdateMeta(context.Background(), session.MetaUpdate{ProjectID: &p3}))
	size := fileSize(t, other, "s-c")
	require.NoError(t, s.Close())
	before = session.ListReadBytes()
	got := listAll(t, third, session.ListOptions{})
	assert.Equal(t, "p3", got["s-c"].ProjectID)
	assert.Less(t, session.ListReadBytes()-before, size, "only what was appended was read")
}

func fileSize(t *testing.T, store *session.FileStore, id string) int64 {
	t.Helper()
	p, err := store.Path(id)
	require.NoError(t, err)
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return fi.Size()
}

func TestFileStoreListFilters(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	metaFixture(t, store)
	require.NoError(t, store.Archive(ctx, "s-c"))
	ids := func(opts session.ListOptions) []string {
		var out []string
		for id := range listAll(t, store, opts) {
			out = append(out, id)
		}
		return out
	}
	assert.ElementsMatch(t, []string{"s-a", "s-b"}, ids(session.ListOptions{}))
	assert.ElementsMatch(t, []string{"s-c"}, ids(session.ListOptions{OnlyArchived: true}))
	assert.ElementsMatch(t, []string{"s-a", "s-b", "s-c"}, ids(session.ListOptions{Archived: true}))
	assert.ElementsMatch(t, []string{"s-a"}, ids(session.ListOptions{ProjectID: "p2"}))
	assert.Empty(t, ids(session.ListOptions{ProjectID: "p1"}), "the header's value was updated")
	assert.ElementsMatch(t, []string{"s-a"}, ids(session.ListOptions{User: "ann"}))
	assert.ElementsMatch(t, []string{"s-a", "s-c"}, ids(session.ListOptions{User: "ann", Archived: true}))
	assert.ElementsMatch(t, []string{"s-a"}, ids(session.ListOptions{App: "app"}))
	assert.ElementsMatch(t, []string{"s-a"}, ids(session.ListOptions{Metadata: map[string]string{"team": "red", "tier": "gold"}}))
	assert.Empty(t, ids(session.ListOptions{Metadata: map[string]string{"team": "red", "tier": "silver"}}))
	assert.ElementsMatch(t, []string{"s-c"}, ids(session.ListOptions{Metadata: map[string]string{"team": "blue"}, OnlyArchived: true}))
}

func TestFileStoreArchiveTime(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-arch", Cwd: "/w"})
	require.NoError(t, err)
	_, err = s.Append(ctx, session.UserText("hello"))
	require.NoError(t, err)
	require.NoError(t, s.Flush(ctx))
	updated := listAll(t, store, session.ListOptions{})["s-arch"].Updated

	before := time.Now().UTC()
	require.NoError(t, store.Archive(ctx, "s-arch"))
	after := time.Now().UTC()
	info := listAll(t, store, session.ListOptions{OnlyArchived: true})["s-arch"]
	require.True(t, info.Archived)
	at := info.ArchivedAt
	assert.False(t, at.Before(before) || at.After(after), "archived at %v, between %v and %v", at, before, after)
	assert.Equal(t, updated, info.Updated, "archiving is no update")
	assert.Empty(t, listAll(t, store, session.ListOptions{}))

	// Archiving again changes nothing.
	require.NoError(t, store.Archive(ctx, "s-arch"))
	assert.Equal(t, at, listAll(t, store, session.ListOptions{OnlyArchived: true})["s-arch"].ArchivedAt)

	// The handle still writes, in the archive.
	_, err = s.Append(ctx, session.UserText("still here"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, store.Close())

	// A reopened store, from the index and then without it.
	for _, dropIndex := range []bool{false, true} {
		if dropIndex {
			require.NoError(t, os.Remove(filepath.Join(root, ".index")))
		}
		r := openFS(t, root, nil)
		info := listAll(t, r, session.ListOptions{Archived: true})["s-arch"]
		assert.True(t, info.Archived)
		assert.True(t, at.Equal(info.ArchivedAt), "dropIndex=%v: %v, want %v", dropIndex, info.ArchivedAt, at)
		assert.Equal(t, 2, info.Entries)
		require.NoError(t, r.Close())
	}

	// The mark is beside the file and nothing takes it for a session.
	r := openFS(t, root, nil)
	p, err := r.Path("s-arch")
	require.NoError(t, err)
	names, err := os.ReadDir(filepath.Dir(p))
	require.NoError(t, err)
	require.Len(t, names, 2, "the file and its mark")

	require.NoError(t, r.Unarchive(ctx, "s-arch"))
	require.NoError(t, r.Unarchive(ctx, "s-arch"), "unarchiving a live session changes nothing")
	info = listAll(t, r, session.ListOptions{})["s-arch"]
	assert.False(t, info.Archived)
	assert.True(t, info.ArchivedAt.IsZero())
	names, err = os.ReadDir(filepath.Dir(p))
	require.NoError(t, err)
	assert.Empty(t, names, "the mark went with the file")

	// Deleting an archived session takes its mark too.
	require.NoError(t, r.Archive(ctx, "s-arch"))
	require.NoError(t, r.Delete(ctx, "s-arch"))
	names, err = os.ReadDir(filepath.Dir(p))
	require.NoError(t, err)
	assert.Empty(t, names)
	assert.ErrorIs(t, r.Archive(ctx, "s-arch"), session.ErrNotFound)
}

func TestFileStoreArchivedByOlderVersion(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-old", Cwd: "/w"})
	require.NoError(t, err)
	p, err := store.Path(s.ID())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, store.Close())
	// Moved by hand, as an older version did: no mark.
	rel, err := filepath.Rel(root, p)
	require.NoError(t, err)
	to := filepath.Join(root, ".archive", rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o700))
	require.NoError(t, os.Rename(p, to))
	info := listAll(t, openFS(t, root, nil), session.ListOptions{OnlyArchived: true})["s-old"]
	assert.True(t, info.Archived)
	assert.True(t, info.ArchivedAt.IsZero(), "not known")
}

func TestFileStoreDeletedHandles(t *testing.T) {
	ctx := context.Background()
	for _, policy := range []session.SyncPolicy{session.SyncOnFlush, session.SyncNever, session.SyncEveryAppend} {
		t.Run(policy.String(), func(t *testing.T) {
			root := t.TempDir()
			store := openFS(t, root, &session.FileStoreOptions{Sync: policy})
			s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-del", Cwd: "/w"})
			require.NoError(t, err)
			_, err = s.Append(ctx, session.UserText("one"))
			require.NoError(t, err)
			// Another store in the process: as another process would be.
			other := openFS(t, root, &session.FileStoreOptions{Sync: policy})
			o, err := session.Open(ctx, other, "s-del")
			require.NoError(t, err)
			_, err = o.Append(ctx, session.UserText("two"))
			require.NoError(t, err)
			p, err := store.Path("s-del")
			require.NoError(t, err)

			require.NoError(t, store.Delete(ctx, "s-del"))
			for name, h := range map[string]*session.Session{"same store": s, "other store": o} {
				_, err = h.Append(ctx, session.UserText("after"))
				assert.ErrorIs(t, err, session.ErrNotFound, name)
				assert.ErrorIs(t, h.SaveTurn(ctx, []*session.Message{session.UserText("q"), reply("a")}, nil), session.ErrNotFound, name)
				assert.ErrorIs(t, h.Flush(ctx), session.ErrNotFound, name)
			}
			assert.NoFileExists(t, p, "no handle wrote it back")
			entries, err := os.ReadDir(filepath.Dir(p))
			require.NoError(t, err)
			assert.Empty(t, entries)
			assert.Empty(t, listAll(t, other, session.ListOptions{Archived: true}))
		})
	}
}

func TestFileStoreDeletedHandlesOtherProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-del2", Cwd: "/w"})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	p, err := store.Path("s-del2")
	require.NoError(t, err)

	cmd := child(t, "AGENTSESSION_CHILD=after-delete", "AGENTSESSION_ROOT="+root, "AGENTSESSION_ID=s-del2")
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	// The child holds the file open (and perhaps its write lease).
	require.NoError(t, store.Delete(ctx, "s-del2"))
	_, err = io.WriteString(in, "go\n")
	require.NoError(t, err)
	rest, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, cmd.Wait())
	assert.Equal(t, "append: true\nflush: true\n", strings.TrimSuffix(string(rest), "PASS\n"))
	assert.NoFileExists(t, p)
}

// afterDeleteChild appends to a session, waits for the parent to delete
// it, and reports whether its next append and flush fail with
// ErrNotFound.
func afterDeleteChild(t *testing.T) {
	ctx := context.Background()
	store, err := session.OpenFileStore(os.Getenv("AGENTSESSION_ROOT"), nil)
	if err != nil {
		panic(err)
	}
	s, err := session.Open(ctx, store, os.Getenv("AGENTSESSION_ID"))
	if err != nil {
		panic(err)
	}
	if _, err := s.Append(ctx, session.UserText("before")); err != nil {
		panic(err)
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		panic(err)
	}
	_, err = s.Append(ctx, session.UserText("after"))
	fmt.Printf("append: %v\n", errors.Is(err, session.ErrNotFound))
	fmt.Printf("flush: %v\n", errors.Is(s.Flush(ctx), session.ErrNotFound))
	_ = s.Close()
	_ = store.Close()
}

func TestFileStoreSharedState(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	st, err := store.LoadState(ctx, session.ScopeUser, "ann")
	require.NoError(t, err)
	assert.Empty(t, st)
	require.NoError(t, store.UpdateState(ctx, session.ScopeUser, "ann", session.State{"a": json.RawMessage(`1`), "b": json.RawMessage(`"x"`)}))
	require.NoError(t, store.UpdateState(ctx, session.ScopeUser, "ann", session.State{"a": json.RawMessage(`null`)}))
	long := strings.Repeat("Ü/..\\:", 100) // a name no file system takes as it is
	require.NoError(t, store.UpdateState(ctx, session.ScopeApp, long, session.State{"k": json.RawMessage(`true`)}))
	require.NoError(t, store.UpdateState(ctx, session.ScopeApp, "ANN", session.State{"k": json.RawMessage(`2`)}))

	r := openFS(t, root, nil)
	st, err = r.LoadState(ctx, session.ScopeUser, "ann")
	require.NoError(t, err)
	assert.Equal(t, session.State{"b": json.RawMessage(`"x"`)}, st)
	st, err = r.LoadState(ctx, session.ScopeApp, long)
	require.NoError(t, err)
	assert.Equal(t, session.State{"k": json.RawMessage(`true`)}, st)
	st, err = r.LoadState(ctx, session.ScopeApp, "ann")
	require.NoError(t, err)
	assert.Empty(t, st, "owners differ by case")
	st, err = r.LoadState(ctx, session.ScopeUser, "ANN")
	require.NoError(t, err)
	assert.Empty(t, st, "scopes are apart")
	_, err = r.LoadState(ctx, "team", "x")
	assert.Error(t, err)
	assert.ErrorIs(t, r.UpdateState(ctx, session.ScopeUser, "", session.State{"a": json.RawMessage(`1`)}), session.ErrNoSharedState)

	// Through a session: "user:" keys go to the store.
	s, err := session.Create(ctx, r, &session.CreateOptions{User: "ann", App: "ANN"})
	require.NoError(t, err)
	require.NoError(t, s.UpdateState(ctx, map[string]any{"user:c": 3, "own": "v"}))
	all, err := s.State(ctx)
	require.NoError(t, err)
	assert.Equal(t, session.State{"user:b": json.RawMessage(`"x"`), "user:c": json.RawMessage(`3`), "app:k": json.RawMessage(`2`), "own": json.RawMessage(`"v"`)}, all)
	require.NoError(t, s.Close())

	// A corrupt state file is an error, and stays as it was.
	var file string
	require.NoError(t, filepath.Walk(filepath.Join(root, ".state", "user"), func(p string, fi os.FileInfo, err error) error {
		if strings.HasSuffix(p, ".json") {
			file = p
		}
		return err
	}))
	require.NotEmpty(t, file)
	require.NoError(t, os.WriteFile(file, []byte(`{"owner":"ann","state":{`), 0o600))
	_, err = r.LoadState(ctx, session.ScopeUser, "ann")
	assert.ErrorIs(t, err, session.ErrCorrupt)
	assert.ErrorIs(t, r.UpdateState(ctx, session.ScopeUser, "ann", session.State{"z": json.RawMessage(`1`)}), session.ErrCorrupt)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, `{"owner":"ann","state":{`, string(data))
	// The state files are not sessions.
	assert.Len(t, listAll(t, r, session.ListOptions{}), 1)
}

func TestFileStoreSharedStateProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	const each = 60
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := child(t, "AGENTSESSION_CHILD=state", "AGENTSESSION_ROOT="+root, "AGENTSESSION_WRITER="+strconv.Itoa(w), "AGENTSESSION_EACH="+strconv.Itoa(each))
			errs[w] = cmd.Run()
		}()
	}
	// And this process too, meanwhile.
	for k := range each {
		require.NoError(t, store.UpdateState(ctx, session.ScopeUser, "shared", session.State{fmt.Sprintf("p-%d", k): json.RawMessage(strconv.Itoa(k))}))
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	st, err := store.LoadState(ctx, session.ScopeUser, "shared")
	require.NoError(t, err)
	assert.Len(t, st, 3*each, "no update lost")
	for w := range 2 {
		for k := range each {
			assert.Equal(t, strconv.Itoa(k), string(st[fmt.Sprintf("w%d-%d", w, k)]))
		}
	}
}

// stateChild updates keys of its own in one user's shared state.
func stateChild(t *testing.T) {
	ctx := context.Background()
	store, err := session.OpenFileStore(os.Getenv("AGENTSESSION_ROOT"), nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	w := os.Getenv("AGENTSESSION_WRITER")
	each, _ := strconv.Atoi(os.Getenv("AGENTSESSION_EACH"))
	for k := range each {
		if err := store.UpdateState(ctx, session.ScopeUser, "shared", session.State{fmt.Sprintf("w%s-%d", w, k): json.RawMessage(strconv.Itoa(k))}); err != nil {
			panic(err)
		}
	}
}
