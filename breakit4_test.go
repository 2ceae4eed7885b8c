package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hostile tests of issue 40's changes (lazy tree read, List's entries
// under one lock, the path index sweep at Close, the path index bound).

const bk4ChildEnv = "AGENTSESSION_BK4_CHILD" // "<action> <root>"

// TestBreakit4Child is the other process of these tests.
func TestBreakit4Child(t *testing.T) {
	spec := os.Getenv(bk4ChildEnv)
	if spec == "" {
		t.Skip("run by the breakit4 tests")
	}
	action, root, _ := strings.Cut(spec, " ")
	ctx := context.Background()
	st, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer st.Close()
	switch action {
	case "create":
		for i := range 3 {
			s, err := session.Create(ctx, st, &session.CreateOptions{ID: fmt.Sprintf("bk-%d", i), Cwd: fmt.Sprintf("/w%d", i)})
			require.NoError(t, err)
			require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText("q"), session.AssistantText("a")}, nil))
			require.NoError(t, s.Close())
		}
	case "churn":
		// Appends, creates, archives, unarchives, deletes and rewrites
		// while the parent lists.
		for round := range 6 {
			for i := range 8 {
				id := fmt.Sprintf("c-%d", i)
				s, err := session.Open(ctx, st, id)
				require.NoError(t, err)
				require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText(fmt.Sprintf("r%d", round)), session.AssistantText("a")}, nil))
				if round == 2 && i == 1 {
					require.NoError(t, s.SetTitle(ctx, "retitled"))
				}
				require.NoError(t, s.Close())
			}
			s, err := session.Create(ctx, st, &session.CreateOptions{ID: fmt.Sprintf("n-%d", round), Cwd: "/new"})
			require.NoError(t, err)
			require.NoError(t, s.Close())
			switch round % 3 {
			case 0:
				require.NoError(t, st.Archive(ctx, "c-2"))
			case 1:
				require.NoError(t, st.Unarchive(ctx, "c-2"))
				require.NoError(t, st.Archive(ctx, fmt.Sprintf("n-%d", round-1)))
			case 2:
				require.NoError(t, st.Delete(ctx, fmt.Sprintf("n-%d", round)))
			}
		}
	default:
		t.Fatalf("unknown action %q", action)
	}
}

// bk4Child runs TestBreakit4Child with action on root, started; the
// returned channel gets its error when it ends.
func bk4Child(t *testing.T, action, root string) <-chan error {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBreakit4Child$", "-test.count=1")
	cmd.Env = append(os.Environ(), bk4ChildEnv+"="+action+" "+root)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%w: %s", err, out.String())
		}
		done <- err
	}()
	return done
}

// TestBreakit4LazyScanSeesOtherProcess: a store opened before another
// process made its sessions (and so, now, before it read the tree) finds
// them at its first call whichever it is: Create refuses an id made in
// another working directory, OpenPath a copy of a file the tree holds,
// Load finds it; and the listing index it saves at Close lists them all.
func TestBreakit4LazyScanSeesOtherProcess(t *testing.T) {
	ctx := context.Background()
	firsts := map[string]func(t *testing.T, st *session.FileStore, root string){
		"create": func(t *testing.T, st *session.FileStore, root string) {
			_, err := session.Create(ctx, st, &session.CreateOptions{ID: "bk-1", Cwd: "/elsewhere"})
			require.ErrorIs(t, err, session.ErrExists)
		},
		"open path": func(t *testing.T, st *session.FileStore, root string) {
			copy := filepath.Join(t.TempDir(), "copy.jsonl")
			data, err := os.ReadFile(sessionFileOf(t, root, "bk-1"))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(copy, data, 0o600))
			_, err = st.OpenPath(ctx, copy)
			require.ErrorIs(t, err, session.ErrExists)
		},
		"load": func(t *testing.T, st *session.FileStore, root string) {
			log, err := st.Load(ctx, "bk-2")
			require.NoError(t, err)
			assert.Len(t, log.Entries, 2)
		},
	}
	for name, first := range firsts {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			st, err := session.OpenFileStore(root, nil)
			require.NoError(t, err)
			require.NoError(t, <-bk4Child(t, "create", root))
			first(t, st, root)
			// A change of this store's, for the listing index to be saved.
			s, err := session.Create(ctx, st, &session.CreateOptions{ID: "mine", Cwd: "/w0"})
			require.NoError(t, err)
			require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText("q"), session.AssistantText("a")}, nil))
			require.NoError(t, s.Close())
			require.NoError(t, st.Close())
			data, err := os.ReadFile(filepath.Join(root, ".index"))
			require.NoError(t, err)
			var idx struct {
				Files []struct {
					ID string `json:"id"`
				} `json:"files"`
			}
			require.NoError(t, json.Unmarshal(data, &idx))
			var ids []string
			for _, f := range idx.Files {
				ids = append(ids, f.ID)
			}
			assert.ElementsMatch(t, []string{"bk-0", "bk-1", "bk-2", "mine"}, ids, "the listing index lost sessions")
		})
	}
}

// TestBreakit4ListUnderChurn: listings taken while another process
// appends, creates, archives, unarchives and deletes leave the store's
// listing entries right: once the other process is done, the store's
// listing, a new store's from the saved index, and a new store's without
// any index are the same.
func TestBreakit4ListUnderChurn(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer st.Close()
	for i := range 8 {
		s, err := session.Create(ctx, st, &session.CreateOptions{ID: fmt.Sprintf("c-%d", i), Cwd: fmt.Sprintf("/w%d", i%3)})
		require.NoError(t, err)
		require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText("first"), session.AssistantText("a")}, nil))
		require.NoError(t, s.Close())
	}
	done := bk4Child(t, "churn", root)
	opts := session.ListOptions{Archived: true}
	for running := true; running; {
		select {
		case err := <-done:
			require.NoError(t, err)
			running = false
		default:
		}
		_, err := st.List(ctx, opts)
		require.NoError(t, err)
	}
	got, err := st.List(ctx, opts)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	fromIndex := openFS(t, root, nil)
	viaIndex, err := fromIndex.List(ctx, opts)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(root, ".index")))
	fresh := openFS(t, root, nil)
	want, err := fresh.List(ctx, opts)
	require.NoError(t, err)
	norm := func(p *session.ListPage) []session.SessionInfo {
		out := make([]session.SessionInfo, len(p.Sessions))
		for i, info := range p.Sessions {
			info.ArchivedAt = time.Time{} // the archive mark's time is the store's record, not the file's
			out[i] = info
		}
		return out
	}
	brief := func(infos []session.SessionInfo) []string {
		var out []string
		for _, i := range infos {
			out = append(out, fmt.Sprintf("%s t=%q n=%d size=%d arch=%v upd=%s", i.ID, i.Title, i.Entries, i.Size, i.Archived, i.Updated.Format(time.RFC3339Nano)))
		}
		return out
	}
	assert.Equal(t, brief(norm(want)), brief(norm(got)), "the churned store's listing")
	// From the index, Updated is what the writing store recorded (its
	// own clock at the append), not the file's time: left out.
	noUpdated := func(infos []session.SessionInfo) []session.SessionInfo {
		for i := range infos {
			infos[i].Updated = time.Time{}
		}
		return infos
	}
	assert.Equal(t, brief(noUpdated(norm(want))), brief(noUpdated(norm(viaIndex))), "the listing from the saved index")
}

// TestBreakit4SweepSparesIndexOfSessionOpenedByPathInRoot: a session
// file in the store's root but outside its layout (here
// <root>/notes/x.jsonl), opened with OpenPath, gets a path index like any
// other; a store that lists the tree and closes an hour later removes
// it while the session is alive, and its next open reads it whole again.
func TestBreakit4SweepSparesIndexOfSessionOpenedByPathInRoot(t *testing.T) {
	t.Skip("accepted (filestore_pathsweep.go): the index of a session opened by path at a file of the tree outside the layout is taken for an orphan after an hour unchanged, and rebuilt at its next open")
	withPathIndexes(t)
	ctx := context.Background()
	root := t.TempDir()
	st, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	id := buildCompacted(t, st, "linear")
	require.NoError(t, st.Close())
	notes := filepath.Join(root, "notes")
	require.NoError(t, os.Mkdir(notes, 0o700))
	file := filepath.Join(notes, "x.jsonl")
	require.NoError(t, os.Rename(sessionFileOf(t, root, id), file))

	open := func() bool {
		st, err := session.OpenFileStore(root, nil)
		require.NoError(t, err)
		defer st.Close()
		s, err := st.OpenPath(ctx, file)
		require.NoError(t, err)
		partial := session.IsPartial(s)
		require.NoError(t, s.Close())
		session.WaitPathIndexes(st)
		return partial
	}
	require.False(t, open(), "the first open reads the whole file")
	require.True(t, open(), "the second open reads the path alone, through the index")
	index := filepath.Join(root, ".pathindex", fmt.Sprintf("%x", id))
	require.FileExists(t, index)
	age(t, index, time.Now().Add(-2*time.Hour))

	other, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	_, err = other.List(ctx, session.ListOptions{})
	require.NoError(t, err)
	require.NoError(t, other.Close())
	require.FileExists(t, index, "the sweep removed the index of a live session")
	assert.True(t, open(), "the index is used")
}

// TestBreakit4SweepTouchesOnlyOrphanIndexes: the sweep at Close removes
// an old orphan index and nothing else: not a symlink with an index's
// name (nor what it points to), not a directory with one, not
// names that are no index's (upper-case hex, odd length, "~" and the
// wrong length), not the index of a live long id ("~" and its hash),
// and nothing through a .pathindex that is a symlink out of the root.
func TestBreakit4SweepTouchesOnlyOrphanIndexes(t *testing.T) {
	withPathIndexes(t)
	ctx := context.Background()
	old := time.Now().Add(-2 * time.Hour)
	root := t.TempDir()
	long := strings.Repeat("l", 150) // over maxHexMark: a hashed index name
	st, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	s, err := session.Create(ctx, st, &session.CreateOptions{ID: long, Cwd: "/w"})
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText(fmt.Sprint("q", i)), session.AssistantText("a")}, nil))
	}
	leaf := s.LeafID()
	_, err = s.AppendCompaction(ctx, session.Compaction{Summary: "s", FirstKeptEntryID: leaf, TokensBefore: 1})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, st.Close())
	st, err = session.OpenFileStore(root, nil)
	require.NoError(t, err)
	s, err = session.Open(ctx, st, long)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	session.WaitPathIndexes(st)
	longIndex := session.PathIndexFile(st, long)
	require.NoError(t, st.Close())
	require.FileExists(t, longIndex)
	require.True(t, strings.HasPrefix(filepath.Base(longIndex), "~"))

	dir := filepath.Join(root, ".pathindex")
	outside := t.TempDir()
	target := filepath.Join(outside, "abcd")
	require.NoError(t, os.WriteFile(target, []byte("not ours"), 0o600))
	keep := []string{longIndex}
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
		keep = append(keep, p)
		return p
	}
	mk("ABCD")
	mk("abc")
	mk("~0123")
	mk("notes.txt")
	link := filepath.Join(dir, "6c696e6b")
	require.NoError(t, os.Symlink(target, link))
	keep = append(keep, link, target)
	sub := filepath.Join(dir, "6469")
	require.NoError(t, os.Mkdir(sub, 0o700))
	keep = append(keep, sub)
	orphan := filepath.Join(dir, "6f727068616e") // "orphan": no such session
	require.NoError(t, os.WriteFile(orphan, []byte("x"), 0o600))
	for _, p := range append(keep, orphan) {
		require.NoError(t, os.Chtimes(p, old, old))
	}

	other, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	_, err = other.List(ctx, session.ListOptions{Archived: true})
	require.NoError(t, err)
	require.NoError(t, other.Close())
	for _, p := range keep {
		_, err := os.Lstat(p)
		assert.NoError(t, err, "the sweep removed %s", p)
	}
	assert.NoFileExists(t, orphan, "an old orphan index stays")
	data, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "not ours", string(data))

	// .pathindex a symlink to a directory out of the root: nothing there
	// is touched.
	root2 := t.TempDir()
	ext := t.TempDir()
	victim := filepath.Join(ext, "6f727068616e")
	require.NoError(t, os.WriteFile(victim, []byte("x"), 0o600))
	require.NoError(t, os.Chtimes(victim, old, old))
	require.NoError(t, os.Symlink(ext, filepath.Join(root2, ".pathindex")))
	st2, err := session.OpenFileStore(root2, nil)
	require.NoError(t, err)
	_, err = st2.List(ctx, session.ListOptions{})
	require.NoError(t, err)
	require.NoError(t, st2.Close())
	assert.FileExists(t, victim, "the sweep followed .pathindex out of the root")
}

// TestBreakit4PathIndexOverBoundReadsWhole: an index file over the
// bound (written while the bound was larger) is not used: opens read
// the whole log and answer as a whole read.
func TestBreakit4PathIndexOverBoundReadsWhole(t *testing.T) {
	withPathIndexes(t)
	dir := t.TempDir()
	fs, id := indexedStore(t, dir, "linear")
	checkPartial(t, fs, id, true)
	require.NoError(t, fs.Close())
	fi, err := os.Stat(filepath.Join(dir, ".pathindex", fmt.Sprintf("%x", id)))
	require.NoError(t, err)
	old := session.SetMaxPathIndexBytes(fi.Size() - 1)
	t.Cleanup(func() { session.SetMaxPathIndexBytes(old) })
	fs2, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	defer fs2.Close()
	checkPartial(t, fs2, id, false)
}
