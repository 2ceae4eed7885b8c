package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/storetest"
)

// sweepFixture is a session of a sweep test: old ones are made first,
// then the clock's boundary is taken, then the young ones.
type sweepFixture struct {
	id, cwd, user string
	old           bool
	labeled       bool // a named checkpoint
	archived      bool
}

// sweepStore fills a MemoryStore with the fixtures and returns it with
// a time between the old sessions' updates (and archivings) and the
// young ones'.
func sweepStore(t *testing.T, fx []sweepFixture) (*session.MemoryStore, time.Time) {
	t.Helper()
	ctx := context.Background()
	store := session.NewMemoryStore()
	mk := func(f sweepFixture) {
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: f.id, Cwd: f.cwd, User: f.user})
		require.NoError(t, err)
		_, err = s.Append(ctx, session.UserText("hello from "+f.id))
		require.NoError(t, err)
		if f.labeled {
			_, err = s.Checkpoint(ctx, "keep-me")
			require.NoError(t, err)
		}
		require.NoError(t, s.Close())
		if f.archived {
			require.NoError(t, store.Archive(ctx, f.id))
		}
	}
	for _, f := range fx {
		if f.old {
			mk(f)
		}
	}
	time.Sleep(2 * time.Millisecond)
	boundary := time.Now()
	time.Sleep(2 * time.Millisecond)
	for _, f := range fx {
		if !f.old {
			mk(f)
		}
	}
	return store, boundary
}

func TestSweepPolicy(t *testing.T) {
	fx := []sweepFixture{
		{id: "a-old1", cwd: "/a", user: "ann", old: true},
		{id: "a-old2", cwd: "/a", user: "bob", old: true},
		{id: "a-new", cwd: "/a", user: "ann"},
		{id: "b-old1", cwd: "/b", user: "ann", old: true},
		{id: "b-old2", cwd: "/b", user: "bob", old: true},
		{id: "b-label", cwd: "/b", user: "bob", old: true, labeled: true},
		{id: "c-arch", cwd: "/c", old: true, archived: true},
	}
	const day = 24 * time.Hour
	type want struct {
		deleted, archived, skipped []string
		kept                       map[string]string
	}
	young := func(ids ...string) map[string]string {
		m := map[string]string{}
		for _, id := range ids {
			m[id] = session.KeptYoung
		}
		return m
	}
	with := func(m map[string]string, kv ...string) map[string]string {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name   string
		policy session.SweepPolicy
		want   want
	}{
		{"nothing expires without OlderThan", session.SweepPolicy{},
			want{kept: with(young("a-old1", "a-old2", "a-new", "b-old1", "b-old2", "b-label"), "c-arch", session.KeptArchived)}},
		{"expired deleted, labeled and archived kept", session.SweepPolicy{OlderThan: day},
			want{deleted: []string{"a-old1", "a-old2", "b-old1", "b-old2"},
				kept: with(young("a-new"), "b-label", session.KeptLabeled, "c-arch", session.KeptArchived)}},
		{"include labeled", session.SweepPolicy{OlderThan: day, IncludeLabeled: true},
			want{deleted: []string{"a-old1", "a-old2", "b-label", "b-old1", "b-old2"},
				kept: with(young("a-new"), "c-arch", session.KeptArchived)}},
		{"keep newest per cwd", session.SweepPolicy{OlderThan: day, KeepNewest: 2},
			// /a: a-new and a-old2 newest; /b: b-label (labeled anyway) and b-old2.
			want{deleted: []string{"a-old1", "b-old1"},
				kept: with(young("a-new"), "a-old2", session.KeptNewest, "b-old2", session.KeptNewest, "b-label", session.KeptNewest, "c-arch", session.KeptArchived)}},
		{"keep newest per user", session.SweepPolicy{OlderThan: day, KeepNewest: 1, GroupBy: session.GroupByUser},
			// ann: a-new; bob: b-label.
			want{deleted: []string{"a-old1", "a-old2", "b-old1", "b-old2"},
				kept: with(young("a-new"), "b-label", session.KeptNewest, "c-arch", session.KeptArchived)}},
		{"archive only, archived deleted later", session.SweepPolicy{OlderThan: day, ArchiveOnly: true, DeleteArchivedAfter: day},
			want{archived: []string{"a-old1", "a-old2", "b-old1", "b-old2"}, deleted: []string{"c-arch"},
				kept: with(young("a-new"), "b-label", session.KeptLabeled)}},
		{"archived kept within its time", session.SweepPolicy{OlderThan: day, ArchiveOnly: true, DeleteArchivedAfter: 2 * day},
			want{archived: []string{"a-old1", "a-old2", "b-old1", "b-old2"},
				kept: with(young("a-new", "c-arch"), "b-label", session.KeptLabeled)}},
	}
	for _, tc := range tests {
		for _, dry := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/dry=%v", tc.name, dry), func(t *testing.T) {
				ctx := context.Background()
				store, boundary := sweepStore(t, fx)
				before := listIDs(t, store)
				p := tc.policy
				p.DryRun = dry
				// Now: a day after the boundary, plus a hair.
				p.Now = func() time.Time { return boundary.Add(day + time.Microsecond) }
				var calls, last int
				p.Progress = func(done, total int) {
					calls++
					require.Equal(t, len(fx), total)
					require.GreaterOrEqual(t, done, last)
					last = done
				}
				res, err := session.Sweep(ctx, store, &p)
				require.NoError(t, err)
				require.Empty(t, res.Errors)
				require.Equal(t, len(fx), res.Listed)
				require.Equal(t, len(fx), last, "progress reached the end")
				slices.Sort(res.Deleted)
				slices.Sort(res.Archived)
				require.Equal(t, tc.want.deleted, nilIfEmpty(res.Deleted), "deleted")
				require.Equal(t, tc.want.archived, nilIfEmpty(res.Archived), "archived")
				require.Empty(t, res.Skipped)
				kept := map[string]string{}
				for _, k := range res.Kept {
					kept[k.ID] = k.Reason
				}
				require.Equal(t, tc.want.kept, kept, "kept")
				require.Equal(t, len(fx), len(res.Deleted)+len(res.Archived)+len(res.Kept))
				after := listIDs(t, store)
				if dry {
					require.Equal(t, before, after, "a dry run changes nothing")
					return
				}
				for _, id := range res.Deleted {
					_, err := store.Load(ctx, id)
					require.ErrorIs(t, err, session.ErrNotFound, id)
				}
				for _, id := range res.Archived {
					require.True(t, after[id], "%s archived", id)
				}
				for _, k := range res.Kept {
					_, ok := after[k.ID]
					require.True(t, ok, "%s kept", k.ID)
				}
			})
		}
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// listIDs maps every session of store to whether it is archived.
func listIDs(t *testing.T, store session.Store) map[string]bool {
	t.Helper()
	p, err := store.List(context.Background(), session.ListOptions{Archived: true, Limit: 1000})
	require.NoError(t, err)
	out := map[string]bool{}
	for _, in := range p.Sessions {
		out[in.ID] = in.Archived
	}
	return out
}

// TestSweepFreesBlobs: the blobs of deleted sessions go, those a kept
// session shares stay.
func TestSweepFreesBlobs(t *testing.T) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	shared, err := store.PutBlob(ctx, []byte("shared"))
	require.NoError(t, err)
	own, err := store.PutBlob(ctx, []byte("own"))
	require.NoError(t, err)
	say := func(id string, refs ...string) {
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w"})
		require.NoError(t, err)
		_, err = s.Append(ctx, session.UserText("see "+strings.Join(refs, " ")))
		require.NoError(t, err)
	}
	say("old", shared, own)
	time.Sleep(2 * time.Millisecond)
	boundary := time.Now()
	time.Sleep(2 * time.Millisecond)
	say("new", shared)
	res, err := session.Sweep(ctx, store, &session.SweepPolicy{OlderThan: time.Hour,
		Now: func() time.Time { return boundary.Add(time.Hour) }})
	require.NoError(t, err)
	require.Equal(t, []string{"old"}, res.Deleted)
	require.Equal(t, 1, res.Blobs)
	_, err = store.GetBlob(ctx, own)
	require.ErrorIs(t, err, session.ErrNotFound)
	_, err = store.GetBlob(ctx, shared)
	require.NoError(t, err)
}

// TestSweepChildren: a child session expires by its own time; deleting
// its parent leaves it.
func TestSweepChildren(t *testing.T) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	parent, err := session.Create(ctx, store, &session.CreateOptions{ID: "parent", Cwd: "/w"})
	require.NoError(t, err)
	_, err = parent.Append(ctx, session.UserText("hi"))
	require.NoError(t, err)
	time.Sleep(2 * time.Millisecond)
	boundary := time.Now()
	time.Sleep(2 * time.Millisecond)
	child, err := session.Create(ctx, store, &session.CreateOptions{ID: "child", Cwd: "/w", ParentSession: "parent"})
	require.NoError(t, err)
	_, err = child.Append(ctx, session.UserText("sub"))
	require.NoError(t, err)
	res, err := session.Sweep(ctx, store, &session.SweepPolicy{OlderThan: time.Hour,
		Now: func() time.Time { return boundary.Add(time.Hour) }})
	require.NoError(t, err)
	require.Equal(t, []string{"parent"}, res.Deleted)
	l, err := store.Load(ctx, "child")
	require.NoError(t, err)
	require.Equal(t, "parent", l.Header.ParentSession)
}

// TestSweepBesideAWriterProcess sweeps a FileStore while another process
// appends to half of its sessions, from the moment the sweep has listed
// them until it ends: the sessions it wrote are kept with every entry it
// was told were written; the others are gone, after a reopen too.
func TestSweepBesideAWriterProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	const n = 40
	var written, late []string
	for i := range n {
		id := fmt.Sprintf("s-%02d", i)
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w"})
		require.NoError(t, err)
		_, err = s.Append(ctx, session.UserText("first"))
		require.NoError(t, err)
		require.NoError(t, s.Close())
		switch i % 4 {
		case 1, 3:
			written = append(written, id)
		case 2:
			late = append(late, id)
		}
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSweepWriterChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AGENTSESSION_SWEEP_CHILD=1", "AGENTSESSION_ROOT="+root,
		"AGENTSESSION_DIR="+dir, "AGENTSESSION_IDS="+strings.Join(written, ","), "AGENTSESSION_LATE="+strings.Join(late, ","))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	require.NoError(t, cmd.Start())
	waitFile := func(name string) {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				return
			}
		}
		t.Fatalf("no %s from the writer", name)
	}
	started := false
	res, err := session.Sweep(ctx, store, &session.SweepPolicy{
		OlderThan: time.Hour,
		Now:       func() time.Time { return time.Now().Add(2 * time.Hour) },
		Progress: func(done, total int) {
			if started {
				return
			}
			started = true
			// Listed: let the writer go, and wait for its first round.
			require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o600))
			waitFile("ready")
		},
	})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stop"), nil, 0o600))
	require.NoError(t, cmd.Wait(), out.String())
	require.NoError(t, err)
	require.Empty(t, res.Errors)
	require.NoError(t, store.Close())

	acked := map[string]int{}
	gone := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		id, k, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(id, "s-") {
			continue
		}
		if k == "gone" {
			gone[id] = true
			continue
		}
		acked[id], _ = strconv.Atoi(k)
	}
	require.Len(t, acked, len(written)+len(late)-len(gone), out.String())
	store, err = session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	total, lateGone, lateKept := 0, 0, 0
	for i := range n {
		id := fmt.Sprintf("s-%02d", i)
		l, err := store.Load(ctx, id)
		if i%4 == 2 {
			// Appended to by the writer from some point of the sweep on,
			// or deleted before: either, but no acknowledged entry lost.
			if gone[id] {
				require.ErrorIs(t, err, session.ErrNotFound, id)
				require.Contains(t, res.Deleted, id)
				lateGone++
				continue
			}
			require.NoError(t, err, "%s, written during the sweep", id)
			require.Len(t, l.Entries, 1+acked[id], id)
			require.Contains(t, res.Skipped, id)
			lateKept++
			continue
		}
		if i%2 == 1 {
			require.NoError(t, err, "%s, written during the sweep", id)
			require.Len(t, l.Entries, 1+acked[id], id)
			require.Contains(t, res.Skipped, id)
			total += acked[id]
			continue
		}
		require.ErrorIs(t, err, session.ErrNotFound, id)
		require.Contains(t, res.Deleted, id)
	}
	t.Logf("%d sessions deleted, %d kept beside a process that appended %d entries to them meanwhile; of those it started on mid-sweep, %d were deleted first, %d written first and kept",
		len(res.Deleted), len(res.Skipped), total, lateGone, lateKept)
}

// TestSweepWriterChild is the writer of TestSweepBesideAWriterProcess,
// run as a process of its own; it does nothing in a normal run. It
// appends to each session once when told to go, says it is ready, and
// goes on appending until told to stop; it prints how many appends to
// each session succeeded.
func TestSweepWriterChild(t *testing.T) {
	if os.Getenv("AGENTSESSION_SWEEP_CHILD") == "" {
		t.Skip("run as a child process by TestSweepBesideAWriterProcess")
	}
	ctx := context.Background()
	dir := os.Getenv("AGENTSESSION_DIR")
	store, err := session.OpenFileStore(os.Getenv("AGENTSESSION_ROOT"), nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	ids := strings.Split(os.Getenv("AGENTSESSION_IDS"), ",")
	exists := func(name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }
	for !exists("go") {
		time.Sleep(time.Millisecond)
	}
	sessions := make([]*session.Session, len(ids))
	acked := make([]int, len(ids))
	step := func(i int) {
		if _, err := sessions[i].Append(ctx, session.UserText("more")); err != nil {
			if errors.Is(err, session.ErrNotFound) {
				panic(fmt.Sprintf("%s deleted under its writer: %v", ids[i], err))
			}
			panic(err)
		}
		acked[i]++
	}
	for i, id := range ids {
		if sessions[i], err = session.Open(ctx, store, id); err != nil {
			panic(err)
		}
		step(i)
	}
	for _, id := range ids {
		if err := store.Flush(ctx, id); err != nil {
			panic(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o600); err != nil {
		panic(err)
	}
	// The late sessions: opened, then appended to one by one while the
	// sweep acts, each either deleted first (gone) or written first.
	lateIDs := strings.Split(os.Getenv("AGENTSESSION_LATE"), ",")
	lateAcked := make([]int, len(lateIDs))
	lateSessions := make([]*session.Session, len(lateIDs))
	for i, id := range lateIDs {
		if lateSessions[i], err = session.Open(ctx, store, id); err != nil && !errors.Is(err, session.ErrNotFound) {
			panic(err)
		}
	}
	for r := 0; !exists("stop") && r < 500; r++ {
		for i := range ids {
			step(i)
		}
		if k := r % (2 * len(lateIDs)); k < len(lateIDs) && lateSessions[k] != nil && (lateAcked[k] > 0 || r >= k) {
			if _, err := lateSessions[k].Append(ctx, session.UserText("late")); errors.Is(err, session.ErrNotFound) {
				lateSessions[k].Close()
				lateSessions[k] = nil
			} else if err != nil {
				panic(err)
			} else {
				lateAcked[k]++
			}
		}
	}
	for i, id := range ids {
		if err := sessions[i].Close(); err != nil {
			panic(err)
		}
		fmt.Printf("%s %d\n", id, acked[i])
	}
	for i, id := range lateIDs {
		var err error
		if lateSessions[i] != nil {
			err = lateSessions[i].Close()
		}
		gone := lateSessions[i] == nil || errors.Is(err, session.ErrNotFound)
		switch {
		case gone && lateAcked[i] == 0:
			fmt.Printf("%s gone\n", id) // deleted before its first append
			continue
		case gone:
			panic(fmt.Sprintf("%s deleted after %d appends", id, lateAcked[i]))
		case err != nil:
			panic(err)
		}
		fmt.Printf("%s %d\n", id, lateAcked[i])
	}
}

// TestSweepThroughWrappers: the wrappers pass ConditionalRemover on, so
// that a sweep through them stays conditional (a stale mark is refused),
// and a sweep through a wrapper over a store without one falls back.
func TestSweepThroughWrappers(t *testing.T) {
	ctx := context.Background()
	nop := session.ObserverFunc(func(context.Context, session.Event) {})
	for _, tc := range []struct {
		name string
		wrap func(session.Store) session.Store
	}{
		{"observe", func(s session.Store) session.Store { return session.Observe(s, nop) }},
		{"user", func(s session.Store) session.Store {
			u, err := session.ForUser(s, "ann")
			require.NoError(t, err)
			return u
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := tc.wrap(session.NewMemoryStore())
			s, err := session.Create(ctx, store, &session.CreateOptions{ID: "w-1", Cwd: "/w"})
			require.NoError(t, err)
			_, err = s.Append(ctx, session.UserText("one"))
			require.NoError(t, err)
			stale := session.MarkOf(s.Log())
			_, err = s.Append(ctx, session.UserText("two"))
			require.NoError(t, err)
			cr, ok := store.(session.ConditionalRemover)
			require.True(t, ok)
			require.ErrorIs(t, cr.DeleteIfUnchanged(ctx, "w-1", stale), session.ErrConflict)
			require.ErrorIs(t, cr.ArchiveIfUnchanged(ctx, "w-1", stale), session.ErrConflict)
			require.NoError(t, cr.ArchiveIfUnchanged(ctx, "w-1", session.MarkOf(s.Log())))
			require.NoError(t, cr.DeleteIfUnchanged(ctx, "w-1", session.MarkOf(s.Log())))
			_, err = store.Load(ctx, "w-1")
			require.ErrorIs(t, err, session.ErrNotFound)
		})
	}
	// A wrapper over a store without ConditionalRemover: the sweep reads
	// again before the act instead.
	store := session.Observe(&storetest.LostReply{Store: session.NewMemoryStore()}, nop)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "w-2", Cwd: "/w"})
	require.NoError(t, err)
	_, err = s.Append(ctx, session.UserText("one"))
	require.NoError(t, err)
	require.ErrorIs(t, store.DeleteIfUnchanged(ctx, "w-2", session.MarkOf(s.Log())), errors.ErrUnsupported)
	res, err := session.Sweep(ctx, store, &session.SweepPolicy{OlderThan: time.Hour, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	require.NoError(t, err)
	require.Equal(t, []string{"w-2"}, res.Deleted)
}
