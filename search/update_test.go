package search_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/search"
	"github.com/stretchr/testify/require"
)

func TestUpdateIncremental(t *testing.T) {
	f := newFixture(t)
	a := f.session("alpha", [2]string{"alpha prompt", "alpha reply"})
	b := f.session("beta", [2]string{"beta prompt", "beta reply"})

	st := f.update()
	require.Equal(t, search.UpdateStats{Sessions: 2, Indexed: 2, Entries: 6}, st)

	// Nothing changed: nothing is read.
	st = f.update()
	require.Equal(t, search.UpdateStats{Sessions: 2, Unchanged: 2}, st)

	// A session that grew is read from where the index stopped.
	f.turn(a, "newer gizmo prompt", "newer reply")
	st = f.update()
	require.Equal(t, search.UpdateStats{Sessions: 2, Unchanged: 1, Appended: 1, Entries: 2}, st)
	require.Len(t, f.search("gizmo", nil), 1)
	require.Len(t, f.search("alpha", nil), 2, "the earlier entries are kept, once")

	// A new title is listed: the hits carry it.
	require.NoError(t, a.SetTitle(f.ctx, "renamed"))
	f.update()
	require.Equal(t, "renamed", f.search("gizmo", nil)[0].Title)

	// A rewritten session is indexed again whole, without duplicates.
	log, err := f.store.Load(f.ctx, a.ID())
	require.NoError(t, err)
	require.NoError(t, f.store.Rewrite(f.ctx, a.ID(), session.RewriteOptions{}, log.Header, log.Entries[:2]))
	st = f.update()
	require.Equal(t, 1, st.Indexed)
	require.Len(t, f.search("alpha", nil), 1)
	require.Empty(t, f.search("gizmo", nil))

	// A deleted session leaves the index.
	require.NoError(t, f.store.Delete(f.ctx, b.ID()))
	st = f.update()
	require.Equal(t, 1, st.Removed)
	require.Empty(t, f.search("beta", nil))
	checkIntegrity(t, f.path)
}

func TestUpdateArchived(t *testing.T) {
	f := newFixture(t)
	s := f.session("arch", [2]string{"archived armadillo", "ok"})
	require.NoError(t, f.store.Archive(f.ctx, s.ID()))
	st := f.update()
	require.Equal(t, 1, st.Indexed)
	require.Len(t, f.search("armadillo", nil), 1)
}

// What an update wrote is there after the index is closed and opened
// again, and the next update reads nothing.
func TestReopen(t *testing.T) {
	f := newFixture(t)
	f.session("keep", [2]string{"persistent porcupine", "ok"})
	f.update()
	require.NoError(t, f.idx.Close())
	f.idx = f.open()
	require.Len(t, f.search("porcupine", nil), 1)
	st := f.update()
	require.Equal(t, 1, st.Unchanged)
	require.Zero(t, st.Entries)
}

func TestUpdateCancelled(t *testing.T) {
	f := newFixture(t)
	for i := range 3 {
		f.session(fmt.Sprint("s", i), [2]string{"cancel me", "ok"})
	}
	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	_, err := f.idx.Update(ctx, f.store)
	require.ErrorIs(t, err, context.Canceled)
	st := f.update()
	require.Equal(t, 3, st.Sessions)
	require.Len(t, f.search("cancel", nil), 3)
}

// Several handles (connections of their own, as processes have) update
// and search one index at once; each entry is indexed once and the file
// stays sound.
func TestConcurrentHandles(t *testing.T) {
	f := newFixture(t)
	for i := range 20 {
		f.session(fmt.Sprint("s", i), [2]string{fmt.Sprintf("concurrent capybara %d", i), "ok"})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		idx := f.open()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				if _, err := idx.Update(f.ctx, f.store); err != nil {
					errs <- err
					return
				}
				if _, err := idx.Search(f.ctx, "capybara", nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, f.search("capybara", &search.SearchOptions{Limit: 100}), 20)
	checkIntegrity(t, f.path)
}

// Processes: the test binary, run again as helpers, updates the index at
// the same time as this process does.
func TestConcurrentProcesses(t *testing.T) {
	if root := os.Getenv("SEARCH_TEST_HELPER_ROOT"); root != "" {
		helperUpdate(t, root, os.Getenv("SEARCH_TEST_HELPER_INDEX"))
		return
	}
	if testing.Short() {
		t.Skip("starts processes")
	}
	f := newFixture(t)
	var grow []*session.Session
	for i := range 40 {
		s := f.session(fmt.Sprint("s", i), [2]string{fmt.Sprintf("process pelican %d", i), "reply"})
		if i < 10 {
			grow = append(grow, s)
		}
	}
	var cmds []*exec.Cmd
	outs := make([]*bytes.Buffer, 2)
	for i := range outs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SEARCH_TEST_HELPER_ROOT="+f.root, "SEARCH_TEST_HELPER_INDEX="+f.path)
		outs[i] = new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		require.NoError(t, cmd.Start())
		cmds = append(cmds, cmd)
	}
	for round := range 3 {
		// Sessions grow while the helpers update: their tails are
		// indexed by whichever process comes first, once.
		for _, s := range grow {
			f.turn(s, fmt.Sprintf("growing heron %d", round), "more")
		}
		f.update()
		f.search("pelican", nil)
	}
	for i, cmd := range cmds {
		require.NoError(t, cmd.Wait(), "helper %d:\n%s", i, outs[i])
	}
	f.update()
	require.Len(t, f.search("pelican", &search.SearchOptions{Limit: 100}), 40)
	require.Len(t, f.search("heron", &search.SearchOptions{Limit: 100}), 30)
	checkIntegrity(t, f.path)
}

func helperUpdate(t *testing.T, root, path string) {
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	idx, err := search.Open(path, nil)
	require.NoError(t, err)
	defer idx.Close()
	for range 3 {
		_, err := idx.Update(t.Context(), store)
		require.NoError(t, err)
		_, err = idx.Search(t.Context(), "pelican", nil)
		require.NoError(t, err)
	}
}

// checkIntegrity runs SQLite's and FTS5's own checks on the index file.
func checkIntegrity(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var ok string
	require.NoError(t, db.QueryRow(`PRAGMA integrity_check`).Scan(&ok))
	require.Equal(t, "ok", ok)
	_, err = db.Exec(`INSERT INTO text(text) VALUES ('integrity-check')`)
	require.NoError(t, err)
	var docs, texts int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM docs`).Scan(&docs))
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM text`).Scan(&texts))
	require.Equal(t, docs, texts)
}

// failingStore is a FileStore whose Load fails for one session, as a
// store does for a file it cannot read.
type failingStore struct {
	session.Store
	bad string
}

func (s failingStore) Load(ctx context.Context, id string) (*session.Log, error) {
	if id == s.bad {
		return nil, fmt.Errorf("%w: unreadable for the test", session.ErrCorrupt)
	}
	return s.Store.Load(ctx, id)
}

// A session the store cannot read is reported, and the others indexed.
func TestUpdateSessionError(t *testing.T) {
	f := newFixture(t)
	bad := f.session("bad", [2]string{"broken badger", "ok"})
	f.session("good", [2]string{"good badger", "ok"})
	st, err := f.idx.Update(f.ctx, failingStore{f.store, bad.ID()})
	var se *search.SessionError
	require.ErrorAs(t, err, &se)
	require.Equal(t, bad.ID(), se.ID)
	require.ErrorIs(t, err, session.ErrCorrupt)
	require.Equal(t, 1, st.Failed)
	require.Equal(t, 1, st.Indexed)
	require.Len(t, f.search("badger", nil), 1)

	// It is tried again, and indexed once it can be read.
	st = f.update()
	require.Equal(t, search.UpdateStats{Sessions: 2, Unchanged: 1, Indexed: 1, Entries: 3}, st)
	require.Len(t, f.search("badger", nil), 2)
}
