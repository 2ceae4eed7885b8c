package session_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// rawWriter is a compare-and-set writer of session id beside the handles,
// as the memrace workload has them: store.Append with IfLast, and on a
// conflict, what is new since the last entry it knows (LoadTail, so that
// the log's growth slows it no more than a handle), then again at once.
type rawWriter struct {
	store session.Store
	id    string
	name  string
	last  string
	known int
	n     int
	acked []string // the ids of its appends that landed
}

// append appends one entry, trying until it lands; conflicts counts the
// attempts another writer won.
func (w *rawWriter) append(ctx context.Context) (conflicts int, err error) {
	for {
		e, err := session.NewEntry("test.raw", fmt.Sprintf("%s-%d", w.name, w.n), w.last, time.Now(), map[string]int{"n": w.n})
		if err != nil {
			return conflicts, err
		}
		err = w.store.Append(ctx, w.id, session.AppendOptions{IfLast: w.last, IfEmpty: w.last == ""}, e)
		if err == nil {
			w.acked = append(w.acked, e.ID())
			w.last, w.known = e.ID(), w.known+1
			w.n++
			return conflicts, nil
		}
		if !errors.Is(err, session.ErrConflict) {
			return conflicts, err
		}
		conflicts++
		tail, err := w.store.(session.TailLoader).LoadTail(ctx, w.id, w.known, w.last)
		if err != nil {
			return conflicts, err
		}
		if k := len(tail.Entries); k > 0 {
			w.last, w.known = tail.Entries[k-1].ID(), w.known+k
		}
	}
}

// forcedRaces is a store on which, before each of the first lose
// attempts of every handle append (the attempts of one append share
// their parent and time), one of the raw writers, each a goroutine of
// its own, appends: the handle's attempt then loses its race, as it
// would to a faster writer, every time.
type forcedRaces struct {
	session.Store
	lose  int
	ask   []chan chan error // one per raw writer goroutine
	mu    sync.Mutex
	tries map[string]int
	next  int
}

func (f *forcedRaces) Append(ctx context.Context, id string, opts session.AppendOptions, entries ...session.Entry) error {
	if len(entries) > 0 && entries[0].Type() == session.TypeMessage {
		// The attempts of one append share their message (unique to
		// the handle and the append), parent and time; parent and time
		// alone are shared by two handles' first appends in one
		// millisecond.
		msg, _ := entries[0].Field("message")
		key := entries[0].ParentID() + "@" + entries[0].Timestamp() + "@" + string(msg)
		f.mu.Lock()
		try := f.tries[key]
		f.tries[key]++
		w := f.next % len(f.ask)
		f.next++
		f.mu.Unlock()
		if try < f.lose {
			done := make(chan error)
			f.ask[w] <- done
			if err := <-done; err != nil {
				return fmt.Errorf("raw writer: %w", err)
			}
		}
	}
	return f.Store.Append(ctx, id, opts, entries...)
}

func (f *forcedRaces) LoadTail(ctx context.Context, id string, n int, last string) (*session.Log, error) {
	return f.Store.(session.TailLoader).LoadTail(ctx, id, n, last)
}

// TestHandleAppendsBesideRawCompareAndSet: handles of one session append
// while raw compare-and-set writers append to the same session. A
// handle's append never gives up while the others make progress: every
// one of them lands, and so does every raw append acknowledged; nothing
// is lost or written twice. Counted, not timed; run it with -race too.
//
// forced: each handle append loses its first 40 attempts to a raw
// writer (more than the 32 after which a handle used to give up, which
// memrace saw under the race detector: 16 of 3,200).
//
// free: the raw writers run freely beside the handles, each landing
// being allowed rawPerHandle appends for every handle append that lands
// (so that they cannot starve the handles for ever); the first give-up
// stops the handles.
func TestHandleAppendsBesideRawCompareAndSet(t *testing.T) {
	for _, kind := range []string{"memory", "file"} {
		newStore := func(t *testing.T) session.Store {
			if kind == "file" {
				return openFS(t, t.TempDir(), nil)
			}
			return session.NewMemoryStore()
		}
		t.Run(kind+"/forced", func(t *testing.T) {
			ctx := context.Background()
			inner := newStore(t)
			id := seeded(t, inner, 0)
			const handles, each, raws, lose = 8, 5, 4, 40
			f := &forcedRaces{Store: inner, lose: lose, tries: map[string]int{}}
			ws := make([]*rawWriter, raws)
			var wg sync.WaitGroup
			for r := range ws {
				ws[r] = &rawWriter{store: inner, id: id, name: fmt.Sprintf("raw-%d", r)}
				ask := make(chan chan error)
				f.ask = append(f.ask, ask)
				wg.Go(func() {
					for done := range ask {
						_, err := ws[r].append(ctx)
						done <- err
					}
				})
			}
			errs := hammer(t, f, id, handles, each, nil)
			for _, ask := range f.ask {
				close(ask)
			}
			wg.Wait()
			if len(errs) > 0 {
				t.Fatalf("%d of %d handle appends gave up; the first: %v", len(errs), handles*each, errs[0])
			}
			checkContendedLog(t, inner, id, handles*each, ws)
			assert.Len(t, f.tries, handles*each)
			for key, n := range f.tries {
				assert.Equal(t, lose+1, n, "attempts of the append after %s", key)
			}
		})
		t.Run(kind+"/free", func(t *testing.T) {
			ctx := context.Background()
			store := newStore(t)
			id := seeded(t, store, 0)
			const handles, each, raws, rawPerHandle = 8, 50, 4, 40
			hs := make([]*session.Session, handles)
			for k := range hs {
				var err error
				hs[k], err = session.Open(ctx, store, id)
				require.NoError(t, err)
			}
			var mu sync.Mutex
			cond := sync.NewCond(&mu)
			tokens, finished := rawPerHandle, false
			take := func() bool {
				mu.Lock()
				defer mu.Unlock()
				for tokens == 0 && !finished {
					cond.Wait()
				}
				if finished {
					return false
				}
				tokens--
				return true
			}
			give := func(n int, end bool) {
				mu.Lock()
				tokens += n
				finished = finished || end
				mu.Unlock()
				cond.Broadcast()
			}
			ws := make([]*rawWriter, raws)
			rawErrs := make([]error, raws)
			var wg sync.WaitGroup
			for r := range ws {
				ws[r] = &rawWriter{store: store, id: id, name: fmt.Sprintf("raw-%d", r)}
				wg.Go(func() {
					for take() {
						if _, err := ws[r].append(ctx); err != nil {
							rawErrs[r] = err
							return
						}
					}
				})
			}
			var gaveUp atomic.Bool
			var firstErr atomic.Value
			var appended atomic.Int64
			var hw sync.WaitGroup
			for k, h := range hs {
				hw.Go(func() {
					for i := range each {
						if gaveUp.Load() {
							return
						}
						if _, err := h.Append(ctx, session.UserText(fmt.Sprintf("handle %d message %d", k, i))); err != nil {
							gaveUp.Store(true)
							firstErr.CompareAndSwap(nil, err)
							return
						}
						appended.Add(1)
						give(rawPerHandle, false)
					}
				})
			}
			hw.Wait()
			give(0, true)
			wg.Wait()
			for _, h := range hs {
				require.NoError(t, h.Close())
			}
			require.NoError(t, errors.Join(rawErrs...))
			if err, _ := firstErr.Load().(error); err != nil {
				t.Fatalf("a handle's append gave up after %d landed: %v", appended.Load(), err)
			}
			checkContendedLog(t, store, id, handles*each, ws)
		})
	}
}

// checkContendedLog checks that session id holds msgs messages, and every
// append the raw writers acknowledged, each once, and nothing else.
func checkContendedLog(t *testing.T, store session.Store, id string, msgs int, ws []*rawWriter) {
	t.Helper()
	log, err := store.Load(context.Background(), id)
	require.NoError(t, err)
	seen := map[string]bool{}
	got := 0
	for _, e := range log.Entries {
		require.False(t, seen[e.ID()], "entry %s twice", e.ID())
		seen[e.ID()] = true
		if e.Type() == session.TypeMessage {
			got++
		}
	}
	assert.Equal(t, msgs, got, "every handle append is in the log")
	raw := 0
	for _, w := range ws {
		raw += len(w.acked)
		for _, id := range w.acked {
			assert.True(t, seen[id], "acknowledged raw append %s is in the log", id)
		}
	}
	assert.Equal(t, raw, len(log.Entries)-got, "raw appends in the log, and nothing else")
	t.Logf("%d handle appends beside %d raw ones", got, raw)
}
