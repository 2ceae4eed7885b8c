package pgstore_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
)

// next returns the next change, failing the test when the subscription
// ends first. There is no deadline but the test's own: a test of
// events must not depend on timing.
func next(t testing.TB, sub *session.Subscription) session.Change {
	t.Helper()
	c, ok := <-sub.C()
	if !ok {
		t.Fatal("the subscription ended")
	}
	return c
}

// TestEvents: every kind of write, by this Store and by another one on
// its own pool (another replica), comes in commit order, appends with
// their entries; Remote tells the other store's apart.
func TestEvents(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	t.Cleanup(func() { _ = s.Close() })
	other, err := pgstore.New(ctx, poolIn(t, schemaOf(t, pool), 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := s.Subscribe(ctx, session.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := session.Create(ctx, s, &session.CreateOptions{ID: "ev", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if c := next(t, sub); c.Kind != session.ChangeCreated || c.Session != "ev" || c.Remote {
		t.Fatalf("created: %+v", c)
	}
	e1, err := h.Append(ctx, session.UserText("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if c := next(t, sub); c.Kind != session.ChangeAppended || len(c.Entries) != 1 || c.Entries[0].ID != e1.ID() || c.Entries[0].Role != session.RoleUser {
		t.Fatalf("appended: %+v", c)
	}
	if err := h.SetTitle(ctx, "T"); err != nil {
		t.Fatal(err)
	}
	if c := next(t, sub); c.Kind != session.ChangeAppended {
		t.Fatalf("title's append: %+v", c)
	}
	if c := next(t, sub); c.Kind != session.ChangeTitle || c.Title != "T" {
		t.Fatalf("title: %+v", c)
	}
	// Another replica's append, archive and compaction mark.
	oh, err := session.Open(ctx, other, "ev")
	if err != nil {
		t.Fatal(err)
	}
	e3, err := oh.Append(ctx, session.AssistantText("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if c := next(t, sub); c.Kind != session.ChangeAppended || !c.Remote || c.Entries[0].ID != e3.ID() {
		t.Fatalf("the other store's append: %+v", c)
	}
	if err := other.Archive(ctx, "ev"); err != nil {
		t.Fatal(err)
	}
	if err := other.Archive(ctx, "ev"); err != nil { // nothing changes: no event
		t.Fatal(err)
	}
	if c := next(t, sub); c.Kind != session.ChangeArchived || !c.Remote {
		t.Fatalf("archived: %+v", c)
	}
	since := time.Now().UTC().Truncate(time.Microsecond)
	if err := other.MarkCompacting(ctx, "ev", since); err != nil {
		t.Fatal(err)
	}
	if c := next(t, sub); c.Kind != session.ChangeCompacting || !c.Compacting.Equal(since) {
		t.Fatalf("compacting: %+v, want since %v", c, since)
	}
	if in := listed(t, s, session.ListOptions{Archived: true})["ev"]; !in.Compacting.Equal(since) {
		t.Fatalf("listed compacting %v", in.Compacting)
	}
	if err := s.Unarchive(ctx, "ev"); err != nil {
		t.Fatal(err)
	}
	if c := next(t, sub); c.Kind != session.ChangeUnarchived || c.Remote {
		t.Fatalf("unarchived: %+v", c)
	}
	l, err := s.Load(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Rewrite(ctx, "ev", session.RewriteOptions{IfLast: e3.ID(), IfEntries: 3}, l.Header, l.Entries[:1]); err != nil {
		t.Fatal(err)
	}
	if c := next(t, sub); c.Kind != session.ChangeRewritten {
		t.Fatalf("rewritten: %+v", c)
	}
	// After a rewrite, appends are counted from the new log.
	if err := s.Append(ctx, "ev", session.AppendOptions{}, userMsg(t, "after", e1.ID(), "again")); err != nil {
		t.Fatal(err)
	}
	if c := next(t, sub); c.Kind != session.ChangeAppended || len(c.Entries) != 1 || c.Entries[0].ID != "after" {
		t.Fatalf("append after the rewrite: %+v", c)
	}
	if err := other.Delete(ctx, "ev"); err != nil {
		t.Fatal(err)
	}
	if c := next(t, sub); c.Kind != session.ChangeDeleted || !c.Remote {
		t.Fatalf("deleted: %+v", c)
	}
	if d := sub.Dropped(); d != 0 {
		t.Fatalf("%d dropped", d)
	}
	// Close ends the subscription.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-sub.C(); ok {
		t.Fatal("a change after Close")
	}
	if _, err := s.Subscribe(ctx, session.SubscribeOptions{}); err == nil {
		t.Fatal("Subscribe after Close")
	}
}

// schemaOf returns the schema pool works in.
func schemaOf(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	var s string
	if err := pool.QueryRow(context.Background(), `SELECT current_schema()`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// The appender of TestEventsCrossProcess and BenchmarkEventLatency is
// this test binary run again with eventsEnv set to
// "<schema> <session> <entries> <pause in microseconds>".
const eventsEnv = "AGENTSESSION_PG_EVENTS"

// TestEventAppenderProcess appends the entries of a parent's test; it
// does nothing when run by itself. Each append holds one to three
// entries, chained; an entry's id is "e-<index>-<unix nanoseconds just
// before its append>".
func TestEventAppenderProcess(t *testing.T) {
	arg := os.Getenv(eventsEnv)
	if arg == "" {
		t.Skip("a child of TestEventsCrossProcess")
	}
	var schema, id string
	var n, pause int
	if _, err := fmt.Sscan(arg, &schema, &id, &n, &pause); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := pgstore.New(ctx, poolIn(t, schema, 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	parent := ""
	for i := 0; i < n; {
		k := min(1+i%3, n-i)
		now := time.Now().UnixNano()
		var es []session.Entry
		for j := range k {
			eid := fmt.Sprintf("e-%d-%d", i+j, now)
			e, err := session.NewEntry("pgtest", eid, parent, time.Now(), map[string]int{"i": i + j})
			if err != nil {
				t.Fatal(err)
			}
			es, parent = append(es, e), eid
		}
		if err := s.Append(ctx, id, session.AppendOptions{}, es...); err != nil {
			t.Fatal(err)
		}
		i += k
		if pause > 0 {
			time.Sleep(time.Duration(pause) * time.Microsecond)
		}
	}
	fmt.Println("DONE")
}

// appender starts the appender process and returns a wait for its end.
func appender(t testing.TB, schema, id string, n int, pause time.Duration) func() {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestEventAppenderProcess$", "-test.count", "1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d %d", eventsEnv, schema, id, n, pause.Microseconds()))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() {
		var text strings.Builder
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			text.WriteString(sc.Text() + "\n")
		}
		if err := cmd.Wait(); err != nil || !strings.Contains(text.String(), "DONE") {
			t.Fatalf("the appender: %v\n%s", err, text.String())
		}
	}
}

// collect reads the appends of sub until it has n entries, and returns
// their ids and when each came.
func collect(t testing.TB, sub *session.Subscription, n int) (ids []string, at []time.Time) {
	t.Helper()
	for len(ids) < n {
		c := next(t, sub)
		switch c.Kind {
		case session.ChangeAppended:
			now := time.Now()
			for _, e := range c.Entries {
				ids, at = append(ids, e.ID), append(at, now)
			}
		case session.ChangeError:
			t.Fatalf("error: %v", c.Err)
		}
	}
	return ids, at
}

// TestEventsCrossProcess: another process appends; this one, subscribed
// through its own Store, sees every entry once, in order, as remote.
func TestEventsCrossProcess(t *testing.T) {
	const n = 300
	ctx := context.Background()
	s, pool := newStore(t)
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Create(ctx, session.Header{ID: "x", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	sub, err := s.Subscribe(ctx, session.SubscribeOptions{Session: "x"})
	if err != nil {
		t.Fatal(err)
	}
	wait := appender(t, schemaOf(t, pool), "x", n, 0)
	ids, _ := collect(t, sub, n)
	wait()
	for i, id := range ids {
		if !strings.HasPrefix(id, fmt.Sprintf("e-%d-", i)) {
			t.Fatalf("entry %d is %s", i, id)
		}
	}
	if len(ids) != n || sub.Dropped() != 0 {
		t.Fatalf("%d entries, %d dropped", len(ids), sub.Dropped())
	}
}

// BenchmarkEventLatency: the time from an append in another process
// (just before its call) to its change on this process's subscription,
// through the server's notification and the read of the new entries.
// The appender pauses 1ms between appends, so that the figure is the
// latency of one append, not of a queue.
func BenchmarkEventLatency(b *testing.B) {
	ctx := context.Background()
	s, pool := newStore(b)
	b.Cleanup(func() { _ = s.Close() })
	id := "bench-" + strconv.Itoa(b.N)
	if err := s.Create(ctx, session.Header{ID: id, Cwd: "/w"}); err != nil {
		b.Fatal(err)
	}
	sub, err := s.Subscribe(ctx, session.SubscribeOptions{Session: id})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	wait := appender(b, schemaOf(b, pool), id, b.N, time.Millisecond)
	ids, at := collect(b, sub, b.N)
	b.StopTimer()
	wait()
	lat := make([]float64, len(ids))
	for i, eid := range ids {
		parts := strings.Split(eid, "-")
		sent, err := strconv.ParseInt(parts[len(parts)-1], 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		lat[i] = float64(at[i].UnixNano()-sent) / 1e3
	}
	sort.Float64s(lat)
	b.ReportMetric(lat[len(lat)/2], "p50-µs")
	b.ReportMetric(lat[min(len(lat)-1, len(lat)*99/100)], "p99-µs")
	b.ReportMetric(0, "ns/op")
}
