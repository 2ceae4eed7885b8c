package session_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
)

// seeded creates on store a session holding the first turns of W10k
// (about 6.7 KB a turn), written in one rewrite.
func seeded(t testing.TB, store session.Store, turns int) string {
	t.Helper()
	ctx := context.Background()
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/home/dev/project"})
	require.NoError(t, err)
	if turns > 0 {
		log, err := workload.Log(turns)
		require.NoError(t, err)
		require.NoError(t, store.Rewrite(ctx, s.ID(), session.RewriteOptions{IfEmpty: true}, s.Header(), log.Entries))
	}
	require.NoError(t, s.Close())
	return s.ID()
}

// loadCounter counts the loads a store serves, and those that read the
// whole log.
type loadCounter struct {
	loads, whole atomic.Int64
	size         int // entries from which a load counts as whole
}

func (c *loadCounter) Observe(_ context.Context, e session.Event) {
	if e.Op == session.OpLoad {
		c.loads.Add(1)
		if e.Entries >= c.size {
			c.whole.Add(1)
		}
	}
}

// hammer has handles (opened before any of them writes) append each
// messages to session id at once, and returns the errors. ready, when not
// nil, is called once the handles are open.
func hammer(t testing.TB, store session.Store, id string, handles, each int, ready func()) []error {
	t.Helper()
	ctx := context.Background()
	hs := make([]*session.Session, handles)
	for k := range hs {
		var err error
		hs[k], err = session.Open(ctx, store, id)
		require.NoError(t, err)
	}
	if ready != nil {
		ready()
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for k, h := range hs {
		wg.Go(func() {
			for i := range each {
				if _, err := h.Append(ctx, session.UserText(fmt.Sprintf("handle %d message %d", k, i))); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, h := range hs {
		require.NoError(t, h.Close())
	}
	return errs
}

// TestContendedAppends: handles in one process appending to one session
// all at once never fail, and catching up after losing a race never
// reads the whole log again.
func TestContendedAppends(t *testing.T) {
	cases := []struct {
		name    string
		turns   int
		handles int
		each    int
	}{
		{"small", 0, 8, 60},
		{"8MB", 1200, 8, 60},
	}
	for _, c := range cases {
		for _, kind := range []string{"memory", "file"} {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				var inner session.Store = session.NewMemoryStore()
				var fs *session.FileStore
				if kind == "file" {
					fs = openFS(t, t.TempDir(), nil)
					inner = fs
				}
				id := seeded(t, inner, c.turns)
				counter := &loadCounter{size: 3 * c.turns}
				store := session.Observe(inner, counter)
				var reads int64
				if fs != nil {
					reads = session.WholeReads(fs)
				}
				errs := hammer(t, store, id, c.handles, c.each, nil)
				if fs != nil && c.turns > 0 {
					// (A handle of an empty session reads it whole: it knows no
					// entry to read after.)
					assert.EqualValues(t, c.handles, session.WholeReads(fs)-reads, "whole-file reads: one per open, none to catch up")
				}
				assert.Empty(t, errs, "appends failed")
				log, err := store.Load(context.Background(), id)
				require.NoError(t, err)
				assert.Equal(t, 3*c.turns+c.handles*c.each, len(log.Entries))
				if c.turns > 0 {
					// The opens read the whole log once per handle, and the Load
					// above once; catching up reads only what is new.
					assert.EqualValues(t, c.handles+1, counter.whole.Load(), "whole-log reads (%d loads in all)", counter.loads.Load())
				}
			})
		}
	}
}

// TestContendedAppendsProcesses: writer processes, each with handles of
// its own, append to one session at once; none fails, nothing is lost.
func TestContendedAppendsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	root := t.TempDir()
	id := seeded(t, openFS(t, root, nil), 300)
	const procs, handles, each = 3, 3, 30
	cmds := make([]*exec.Cmd, procs)
	for p := range cmds {
		cmds[p] = child(t, "AGENTSESSION_CHILD=hammer", "AGENTSESSION_ROOT="+root, "AGENTSESSION_ID="+id,
			"AGENTSESSION_HANDLES="+strconv.Itoa(handles), "AGENTSESSION_EACH="+strconv.Itoa(each))
		require.NoError(t, cmds[p].Start())
	}
	for _, c := range cmds {
		require.NoError(t, c.Wait(), "a writer process failed")
	}
	log, err := openFS(t, root, nil).Load(context.Background(), id)
	require.NoError(t, err)
	assert.Len(t, log.Entries, 900+procs*handles*each)
	assert.Empty(t, log.Malformed)
}

// hammerChild is the child of TestContendedAppendsProcesses.
func hammerChild(t *testing.T) {
	store := openFS(t, os.Getenv("AGENTSESSION_ROOT"), nil)
	handles, _ := strconv.Atoi(os.Getenv("AGENTSESSION_HANDLES"))
	each, _ := strconv.Atoi(os.Getenv("AGENTSESSION_EACH"))
	var ready func()
	if os.Getenv("AGENTSESSION_READY") != "" {
		// Say so once the handles are open, and wait for the word to go.
		ready = func() {
			os.Stdout.WriteString("ready\n")
			bufio.NewReader(os.Stdin).ReadString('\n')
		}
	}
	for _, err := range hammer(t, store, os.Getenv("AGENTSESSION_ID"), handles, each, ready) {
		t.Error(err)
	}
}

// BenchmarkContendedAppends: 8 handles in one process append 1,000
// messages each to a 60 MB session (9,000 W10k turns) at once. It fails
// on any failed append; read ns/append (the opens of the handles
// included), and whole-reads: the whole-file reads besides the opens,
// which should be none.
func BenchmarkContendedAppends(b *testing.B) {
	const turns, handles, each = 9000, 8, 1000
	for b.Loop() {
		b.StopTimer()
		inner := openFS(b, b.TempDir(), nil)
		id := seeded(b, inner, turns)
		counter := &loadCounter{size: 3 * turns}
		store := session.Observe(inner, counter)
		reads := session.WholeReads(inner)
		b.StartTimer()
		errs := hammer(b, store, id, handles, each, nil)
		b.StopTimer()
		if len(errs) > 0 {
			b.Fatalf("%d of %d appends failed; the first: %v", len(errs), handles*each, errs[0])
		}
		b.ReportMetric(float64(session.WholeReads(inner)-reads-handles), "whole-reads")
		b.ReportMetric(float64(counter.loads.Load()), "loads")
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*handles*each), "ns/append")
}

// BenchmarkConflictRetry: the cost of an append that loses a race and
// retries, on a session of 1 MB and of 60 MB: handle B appends, then
// handle A, which still knows the log without B's entry, appends too
// (ErrConflict, catch up, retry). Read ns/op: it should not grow with
// the session. BenchmarkAppendNoConflict is the same append without the
// race, for comparison.
func BenchmarkConflictRetry(b *testing.B) {
	for _, c := range []struct {
		name  string
		turns int
	}{{"1MB", 150}, {"60MB", 9000}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			store := openFS(b, b.TempDir(), nil)
			id := seeded(b, store, c.turns)
			// Two stores on one root: their handles do not take turns, as in
			// two processes, so every append of A conflicts.
			other := openFS(b, store.Root(), nil)
			a, err := session.Open(ctx, store, id)
			require.NoError(b, err)
			bh, err := session.Open(ctx, other, id)
			require.NoError(b, err)
			msg := session.UserText("a short message")
			for b.Loop() {
				b.StopTimer()
				if _, err := bh.Append(ctx, msg); err != nil {
					b.Fatal(err)
				}
				// B lets its write lease go, so that A's time is the retry's,
				// not a wait for the lock.
				if err := bh.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := a.Append(ctx, msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendNoConflict is BenchmarkConflictRetry's append when the
// handle knows the log: one append, no retry.
func BenchmarkAppendNoConflict(b *testing.B) {
	ctx := context.Background()
	store := openFS(b, b.TempDir(), nil)
	id := seeded(b, store, 150)
	a, err := session.Open(ctx, store, id)
	require.NoError(b, err)
	msg := session.UserText("a short message")
	for b.Loop() {
		b.StopTimer()
		if err := a.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := a.Append(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
}
