package session_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// storeKinds makes a fresh store of every kind this package ships, for
// tests that must hold on each.
func storeKinds(t *testing.T) map[string]func(t *testing.T) session.Store {
	return map[string]func(t *testing.T) session.Store{
		"memory": func(t *testing.T) session.Store { return session.NewMemoryStore() },
		"file":   func(t *testing.T) session.Store { return openFS(t, t.TempDir(), nil) },
		"observed": func(t *testing.T) session.Store {
			return session.Observe(openFS(t, t.TempDir(), nil), session.ObserverFunc(func(context.Context, session.Event) {}))
		},
	}
}

// prunable builds, on store, a session whose log Prune shrinks: turns,
// a compaction that keeps only the last of them.
func prunable(t *testing.T, store session.Store) *session.Session {
	t.Helper()
	ctx := context.Background()
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/w"})
	require.NoError(t, err)
	for k := range 6 {
		turn(t, s, k, "read", "a.go", 200)
	}
	_, err = s.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{KeepRecentTokens: 1})
	require.NoError(t, err)
	return s
}

// TestRewriteConditions: a rewrite decided on an old view fails with
// ErrConflict and changes nothing, on every store.
func TestRewriteConditions(t *testing.T) {
	ctx := context.Background()
	for name, newStore := range storeKinds(t) {
		t.Run(name, func(t *testing.T) {
			store := newStore(t)
			s2, err := session.Create(ctx, store, nil)
			require.NoError(t, err)
			es := appendAll(t, s2, session.UserText("one"), session.AssistantText("two"), session.UserText("three"))
			log, err := store.Load(ctx, s2.ID())
			require.NoError(t, err)
			kept := log.Entries[:1]
			for _, o := range []session.RewriteOptions{
				{IfEmpty: true},
				{IfLast: es[1].ID()},
				{IfLast: es[2].ID(), IfEntries: 2},
			} {
				err := store.Rewrite(ctx, s2.ID(), o, log.Header, kept)
				assert.ErrorIs(t, err, session.ErrConflict, "%+v", o)
				again, lerr := store.Load(ctx, s2.ID())
				require.NoError(t, lerr)
				assert.Len(t, again.Entries, 3, "%+v changed the log", o)
			}
			require.NoError(t, store.Rewrite(ctx, s2.ID(), session.RewriteOptions{IfLast: es[2].ID(), IfEntries: 3}, log.Header, kept))
			again, err := store.Load(ctx, s2.ID())
			require.NoError(t, err)
			assert.Len(t, again.Entries, 1)
		})
	}
}

// TestPruneRefusesUnreadableLines: a file with a line the lenient reader
// skipped is not pruned, unless the caller asks to drop such lines.
func TestPruneRefusesUnreadableLines(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s := prunable(t, store)
	path, err := store.Path(s.ID())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	// A damaged line in the middle of the file (line 4).
	data := mustRead(t, path)
	lines := strings.SplitAfter(string(data), "\n")
	lines = append(lines[:3], append([]string{`{"type":"message","id":` + "\x01broken\n"}, lines[3:]...)...)
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600))

	for _, how := range []string{"session", "store"} {
		store := openFS(t, root, nil)
		r, err := session.Open(ctx, store, s.ID())
		require.NoError(t, err)
		require.Len(t, r.Log().Malformed, 1)
		before := mustRead(t, path)
		if how == "session" {
			_, err = r.Prune(ctx, nil)
		} else {
			log := r.Log()
			err = store.Rewrite(ctx, r.ID(), session.RewriteOptions{IfLast: r.LeafID(), IfEntries: len(log.Entries)}, log.Header, log.Entries)
		}
		require.ErrorIs(t, err, session.ErrCorrupt, how)
		assert.Contains(t, err.Error(), "line 4", how)
		assert.Contains(t, err.Error(), path, "%s: the error names the file", how)
		assert.Equal(t, before, mustRead(t, path), "%s: the file was not touched", how)
	}

	// Asked to, it drops them.
	r, err := session.Open(ctx, openFS(t, root, nil), s.ID())
	require.NoError(t, err)
	res, err := r.Prune(ctx, &session.PruneOptions{DropUnreadable: true})
	require.NoError(t, err)
	assert.Positive(t, res.Dropped)
	assert.NotContains(t, string(mustRead(t, path)), "\x01broken")
}

// TestPruneRacingProcesses: writer processes append to a session while
// this one prunes and compacts it again and again; every append that
// returned in a writer is in the log at the end.
func TestPruneRacingProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	p := prunable(t, store)
	// The writers start from a checkpoint, which every prune keeps (a
	// handle that stands on an entry a prune drops, having appended
	// nothing yet, gets ErrConflict at its next append: see Prune).
	_, err := p.Checkpoint(ctx, "writers start here")
	require.NoError(t, err)
	const procs, handles, each = 2, 2, 100
	cmds := make([]*exec.Cmd, procs)
	outs := make([]bytes.Buffer, procs)
	gos := make([]io.WriteCloser, procs)
	done := make(chan error, procs)
	for k := range cmds {
		cmds[k] = child(t, "AGENTSESSION_CHILD=hammer", "AGENTSESSION_ROOT="+root, "AGENTSESSION_ID="+p.ID(),
			"AGENTSESSION_HANDLES="+strconv.Itoa(handles), "AGENTSESSION_EACH="+strconv.Itoa(each), "AGENTSESSION_READY=1")
		out, err := cmds[k].StdoutPipe()
		require.NoError(t, err)
		gos[k], err = cmds[k].StdinPipe()
		require.NoError(t, err)
		require.NoError(t, cmds[k].Start())
		r := bufio.NewReader(out)
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "ready\n", line)
		go func() {
			io.Copy(&outs[k], r) // what it says, until it exits
			err := cmds[k].Wait()
			if err != nil {
				err = fmt.Errorf("%w:\n%s", err, outs[k].String())
			}
			done <- err
		}()
	}
	for _, g := range gos {
		g.Write([]byte("go\n"))
	}
	prunes, finished := 0, 0
	for finished < procs {
		select {
		case err := <-done:
			require.NoError(t, err, "a writer process failed")
			finished++
			continue
		default:
		}
		res, err := p.Prune(ctx, nil)
		require.NoError(t, err)
		if res.Dropped > 0 {
			prunes++
		}
		turn(t, p, prunes, "read", "a.go", 100) // something to compact, and to prune next time
		_, err = p.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{KeepRecentTokens: 1})
		if err != nil && !errors.Is(err, session.ErrNothingToCompact) {
			require.NoError(t, err)
		}
	}
	log, err := openFS(t, root, nil).Load(ctx, p.ID())
	require.NoError(t, err)
	got := 0
	for _, e := range log.Entries {
		if m, err := e.Message(); err == nil && strings.HasPrefix(m.Text(), "handle ") {
			got++
		}
	}
	assert.Equal(t, procs*handles*each, got, "appends of the writer processes lost (%d prunes raced them)", prunes)
	t.Logf("%d prunes that dropped entries raced %d appends from %d processes", prunes, procs*handles*each, procs)
}
