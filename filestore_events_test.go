package session_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// Events on a FileStore: this process's changes and other processes',
// from the watcher of the root (fsnotify, or polling).

// collect receives the changes of sub until one of kind last, or ctx
// ends (a failure: nothing here is timed, the deadline only stops a
// broken test from hanging).
func collect(t *testing.T, ctx context.Context, sub *session.Subscription, last session.ChangeKind) []session.Change {
	t.Helper()
	var got []session.Change
	for {
		select {
		case c, ok := <-sub.C():
			require.True(t, ok, "the subscription ended")
			got = append(got, c)
			if c.Kind == last {
				return got
			}
		case <-ctx.Done():
			t.Fatalf("no %s change; got %v", last, kinds(got))
		}
	}
}

func kinds(cs []session.Change) []session.ChangeKind {
	var out []session.ChangeKind
	for _, c := range cs {
		out = append(out, c.Kind)
	}
	return out
}

// appendedIDs returns the ids of the entries of the ChangeAppended
// changes, in order.
func appendedIDs(cs []session.Change) []string {
	var out []string
	for _, c := range cs {
		if c.Kind == session.ChangeAppended {
			for _, e := range c.Entries {
				out = append(out, e.ID)
			}
		}
	}
	return out
}

// lifecycleKinds returns the kinds other than those of appends.
func lifecycleKinds(cs []session.Change) []session.ChangeKind {
	var out []session.ChangeKind
	for _, c := range cs {
		switch c.Kind {
		case session.ChangeCreated, session.ChangeArchived, session.ChangeUnarchived, session.ChangeDeleted, session.ChangeRewritten, session.ChangeTitle:
			out = append(out, c.Kind)
		}
	}
	return out
}

func watchModes() map[string]*session.FileStoreOptions {
	return map[string]*session.FileStoreOptions{"fsnotify": nil, "poll": {PollOnly: true, PollInterval: 5 * time.Millisecond}}
}

func TestFileStoreEventsOwnProcess(t *testing.T) {
	for name, opts := range watchModes() {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			store := openFS(t, t.TempDir(), opts)
			sub, err := session.Subscribe(ctx, store, session.SubscribeOptions{Session: "s-ev"})
			require.NoError(t, err)
			defer sub.Close()
			s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-ev", Cwd: "/w"})
			require.NoError(t, err)
			var want []string
			for k := range 20 {
				if k%4 == 0 {
					require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText("q" + strconv.Itoa(k)), reply("a"), reply("b")}, nil))
					continue
				}
				_, err := s.Append(ctx, session.UserText("m"+strconv.Itoa(k)))
				require.NoError(t, err)
			}
			require.NoError(t, s.SetTitle(ctx, "t"))
			require.NoError(t, s.Flush(ctx))
			log, err := store.Load(ctx, "s-ev")
			require.NoError(t, err)
			for _, e := range log.Entries {
				want = append(want, e.ID())
			}
			require.NoError(t, store.Archive(ctx, "s-ev"))
			require.NoError(t, store.Unarchive(ctx, "s-ev"))
			require.NoError(t, s.Close())
			require.NoError(t, store.Delete(ctx, "s-ev"))
			got := collect(t, ctx, sub, session.ChangeDeleted)
			assert.Equal(t, want, appendedIDs(got), "every entry once, in file order")
			assert.Equal(t, []session.ChangeKind{session.ChangeCreated, session.ChangeTitle, session.ChangeArchived, session.ChangeUnarchived, session.ChangeDeleted}, lifecycleKinds(got))
			for _, c := range got {
				assert.False(t, c.Remote, "%s is this process's", c.Kind)
			}
			assert.Zero(t, sub.Dropped())
		})
	}
}

func TestFileStoreEventsOtherProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for name, opts := range watchModes() {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			root := t.TempDir()
			store := openFS(t, root, opts)
			sub, err := session.Subscribe(ctx, store, session.SubscribeOptions{})
			require.NoError(t, err)
			defer sub.Close()
			cmd := child(t, "AGENTSESSION_CHILD=events", "AGENTSESSION_ROOT="+root, "AGENTSESSION_ID=s-remote", "AGENTSESSION_EACH=200")
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			var want []string
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if sc.Text() != "PASS" { // the child test's own
					want = append(want, sc.Text())
				}
			}
			require.NoError(t, cmd.Wait())
			got := collect(t, ctx, sub, session.ChangeDeleted)
			ids := appendedIDs(got)
			assert.Equal(t, len(want), len(ids))
			assert.Equal(t, want, ids, "every entry once, in file order")
			assert.Equal(t, []session.ChangeKind{session.ChangeCreated, session.ChangeTitle, session.ChangeRewritten, session.ChangeArchived, session.ChangeUnarchived, session.ChangeDeleted}, lifecycleKinds(got))
			for _, c := range got {
				assert.True(t, c.Remote, "%s is another process's", c.Kind)
				assert.Equal(t, "s-remote", c.Session)
			}
			assert.Zero(t, sub.Dropped())
		})
	}
}

// eventsChild writes a session as another agent process would: appends
// of one entry and turns of several, a title, a rewrite, an archive and
// back, a delete. It prints the ids of the entries in file order (before
// the rewrite) first.
func eventsChild(t *testing.T) {
	ctx := context.Background()
	store, err := session.OpenFileStore(os.Getenv("AGENTSESSION_ROOT"), nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	id := os.Getenv("AGENTSESSION_ID")
	each, _ := strconv.Atoi(os.Getenv("AGENTSESSION_EACH"))
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w"})
	if err != nil {
		panic(err)
	}
	for k := range each {
		if k%5 == 0 {
			err = s.SaveTurn(ctx, []*session.Message{session.UserText("q" + strconv.Itoa(k)), reply(strings.Repeat("a", k*50)), reply("b")}, nil)
		} else {
			_, err = s.Append(ctx, session.UserText(strings.Repeat("m", k*10)))
		}
		if err != nil {
			panic(err)
		}
		if k%7 == 0 {
			if err := s.Flush(ctx); err != nil {
				panic(err)
			}
		}
	}
	if err := s.SetTitle(ctx, "from the child"); err != nil {
		panic(err)
	}
	log, err := store.Load(ctx, id)
	if err != nil {
		panic(err)
	}
	var b strings.Builder
	for _, e := range log.Entries {
		b.WriteString(e.ID() + "\n")
	}
	os.Stdout.WriteString(b.String())
	h := log.Header
	h.Title = "rewritten"
	if err := store.Rewrite(ctx, id, session.RewriteOptions{}, h, log.Entries); err != nil {
		panic(err)
	}
	if err := s.Close(); err != nil {
		panic(err)
	}
	// Give the parent's watcher a look at each state: a move and a
	// delete in one breath may come as one notice (that is fine for a
	// subscriber, not for this test's exact list).
	for _, f := range []func(context.Context, string) error{store.Archive, store.Unarchive, store.Delete} {
		time.Sleep(100 * time.Millisecond)
		if err := f(ctx, id); err != nil {
			panic(err)
		}
	}
}

// BenchmarkFileStoreEventLatency measures how long an entry another
// process appends takes to reach a subscriber: the child appends one
// entry at a time, its id carrying the time of the append; the parent
// reports the 50th and 99th percentiles of append→event.
func BenchmarkFileStoreEventLatency(b *testing.B) {
	for name, opts := range watchModes() {
		if name == "poll" {
			opts = &session.FileStoreOptions{PollOnly: true} // the default interval
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			root := b.TempDir()
			store, err := session.OpenFileStore(root, opts)
			require.NoError(b, err)
			defer store.Close()
			sub, err := session.Subscribe(ctx, store, session.SubscribeOptions{Session: "s-lat"})
			require.NoError(b, err)
			defer sub.Close()
			cmd := child(b, "AGENTSESSION_CHILD=latency", "AGENTSESSION_ROOT="+root, "AGENTSESSION_ID=s-lat", "AGENTSESSION_EACH="+strconv.Itoa(b.N))
			require.NoError(b, cmd.Start())
			b.ResetTimer()
			lat := make([]time.Duration, 0, b.N)
			for len(lat) < b.N {
				c, ok := <-sub.C()
				if !ok {
					b.Fatal("subscription ended")
				}
				now := time.Now()
				if c.Kind != session.ChangeAppended {
					continue
				}
				for _, e := range c.Entries {
					ns, err := strconv.ParseInt(strings.TrimPrefix(e.ID, "lat-"), 10, 64)
					require.NoError(b, err)
					lat = append(lat, now.Sub(time.Unix(0, ns)))
				}
			}
			b.StopTimer()
			require.NoError(b, cmd.Wait())
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// latencyChild appends AGENTSESSION_EACH entries, one at a time a
// millisecond apart, each id "lat-<unix ns of the append>".
func latencyChild(t *testing.T) {
	ctx := context.Background()
	store, err := session.OpenFileStore(os.Getenv("AGENTSESSION_ROOT"), nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	id := os.Getenv("AGENTSESSION_ID")
	if err := store.Create(ctx, session.Header{ID: id, Cwd: "/w"}); err != nil {
		panic(err)
	}
	n, _ := strconv.Atoi(os.Getenv("AGENTSESSION_EACH"))
	last := ""
	for range n {
		time.Sleep(time.Millisecond)
		e, err := session.NewEntry(session.TypeCustom, fmt.Sprintf("lat-%d", time.Now().UnixNano()), last, time.Now(), session.Custom{CustomType: "lat"})
		if err != nil {
			panic(err)
		}
		if err := store.Append(ctx, id, session.AppendOptions{}, e); err != nil {
			panic(err)
		}
		last = e.ID()
	}
}
