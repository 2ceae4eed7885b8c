package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
)

// TestNotifyOnlyWhileListened: with no listening Store, writes send no
// notification (a plain LISTEN, not registered, hears none); with one,
// they do; a row of a listener that is not alive turns nothing on; a
// transaction under repeatable read notifies regardless.
func TestNotifyOnlyWhileListened(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	t.Cleanup(func() { _ = s.Close() })
	schema := schemaOf(t, pool)

	raw, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close(ctx)
	if _, err := raw.Exec(ctx, "LISTEN agentsession"); err != nil {
		t.Fatal(err)
	}
	// expect reads raw's next notification of this schema: kind and
	// session of a change, or a marker sent with pg_notify.
	expect := func(what string) {
		t.Helper()
		for {
			n, err := raw.WaitForNotification(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var p struct{ Schema, ID, Kind string }
			if json.Unmarshal([]byte(n.Payload), &p) != nil {
				if n.Payload == schema+" "+what {
					return
				}
				if len(n.Payload) > len(schema) && n.Payload[:len(schema)] == schema {
					t.Fatalf("got marker %q, want %s", n.Payload, what)
				}
				continue // another test's marker
			}
			if p.Schema != schema {
				continue // another test's change
			}
			if got := p.Kind + " " + p.ID; got != what {
				t.Fatalf("got %q, want %s", got, what)
			}
			return
		}
	}
	mark := func(m string) {
		t.Helper()
		if _, err := pool.Exec(ctx, `SELECT pg_notify('agentsession', $1)`, schema+" "+m); err != nil {
			t.Fatal(err)
		}
	}
	appendOne := func(st *pgstore.Store, id, eid string) {
		t.Helper()
		e, err := session.NewEntry("pgtest", eid, "", time.Now(), map[string]int{})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Append(ctx, id, session.AppendOptions{}, e); err != nil {
			t.Fatal(err)
		}
	}
	listeners := func() int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM agentsession_listeners`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// Nobody listens: every kind of write, silently.
	if err := s.Create(ctx, session.Header{ID: "x", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	appendOne(s, "x", "a1")
	if err := s.Archive(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if err := s.Unarchive(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, session.Header{ID: "gone", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	mark("m1")
	expect("m1")

	// A Store subscribes: its row is there, and writes notify.
	sub, err := s.Subscribe(ctx, session.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := listeners(); n != 1 {
		t.Fatalf("%d listeners while subscribed, want 1", n)
	}
	appendOne(s, "x", "a2")
	expect("appended x")
	if c := next(t, sub); c.Kind != session.ChangeAppended || c.Entries[0].ID != "a2" {
		t.Fatalf("change %+v", c)
	}
	sub.Close()
	if n := listeners(); n != 0 {
		t.Fatalf("%d listeners after the last subscription closed, want 0", n)
	}
	appendOne(s, "x", "a3")
	mark("m2")
	expect("m2")

	// A stale row: the pid of a backend alive but not listening (raw's),
	// as after a reused pid; then of one that is gone.
	if _, err := pool.Exec(ctx, `INSERT INTO agentsession_listeners (pid) VALUES ($1), (2147483647)`, raw.PgConn().PID()); err != nil {
		t.Fatal(err)
	}
	appendOne(s, "x", "a4")
	mark("m3")
	expect("m3")

	// The next listener deletes them.
	sub, err = s.Subscribe(ctx, session.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := listeners(); n != 1 {
		t.Fatalf("%d listeners after a new one started, want 1", n)
	}
	sub.Close()

	// Under repeatable read a write cannot tell, and notifies.
	cfg := pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = "repeatable read"
	rr, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	srr, err := pgstore.New(ctx, rr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srr.Archive(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	expect("archived x")
}

// TestSubscribeRacesAppends: while many goroutines append to many
// sessions, a Store subscribes again and again; every append committed
// after Subscribe returned comes on the subscription. Those are the
// entries past each session's count as read after Subscribe returned.
func TestSubscribeRacesAppends(t *testing.T) {
	const (
		writers = 12
		rounds  = 12
	)
	ctx := context.Background()
	s, pool := newStoreConns(t, writers+2)
	t.Cleanup(func() { _ = s.Close() })
	listener, err := pgstore.New(ctx, poolIn(t, schemaOf(t, pool), 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = listener.Close() })

	// Widen the race: each append sleeps at its commit, after it looked
	// for listeners and before its commit is visible, so that many are
	// in that window whenever Subscribe runs.
	if _, err := pool.Exec(ctx, `CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep(0.002); RETURN NULL; END $$;
		CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON agentsession_entries
		DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit()`); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		// Each writer owns two sessions and alternates between them.
		ids := [2]string{fmt.Sprintf("s%d-0", g), fmt.Sprintf("s%d-1", g)}
		for _, id := range ids {
			if err := s.Create(ctx, session.Header{ID: id, Cwd: "/w"}); err != nil {
				t.Fatal(err)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var parent [2]string
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := i % 2
				eid := fmt.Sprintf("g%d-%d", g, i)
				e, err := session.NewEntry("pgtest", eid, parent[k], time.Now(), map[string]int{"i": i})
				if err != nil {
					errs <- err
					return
				}
				if err := s.Append(ctx, ids[k], session.AppendOptions{}, e); err != nil {
					errs <- err
					return
				}
				parent[k] = eid
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
	}()

	for n := range rounds {
		time.Sleep(time.Duration(n%4) * 5 * time.Millisecond)
		sub, err := listener.Subscribe(ctx, session.SubscribeOptions{Buffer: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		// What was committed when Subscribe returned, or before.
		var base []byte
		if err := pool.QueryRow(ctx, `SELECT json_object_agg(id, entry_count) FROM agentsession_sessions`).Scan(&base); err != nil {
			t.Fatal(err)
		}
		// What was committed since: all of it must come. Wait until
		// there is some: appends that go in batches commit in bursts, a
		// batch's slow commits one after the other.
		want := map[string]bool{}
		for wait := time.Now().Add(10 * time.Second); len(want) == 0; {
			if time.Now().After(wait) {
				t.Fatalf("round %d: nothing was appended while subscribed", n)
			}
			time.Sleep(20 * time.Millisecond)
			rows, err := pool.Query(ctx, `SELECT e.entry_id FROM agentsession_entries e
				JOIN json_each_text($1::json) b ON b.key = e.session_id WHERE e.seq > b.value::integer`, base)
			if err != nil {
				t.Fatal(err)
			}
			var eid string
			if _, err := pgx.ForEachRow(rows, []any{&eid}, func() error { want[eid] = true; return nil }); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.After(10 * time.Second)
		for len(want) > 0 {
			select {
			case c, ok := <-sub.C():
				if !ok {
					t.Fatalf("round %d: the subscription ended", n)
				}
				switch c.Kind {
				case session.ChangeAppended:
					for _, e := range c.Entries {
						delete(want, e.ID)
					}
				case session.ChangeError:
					t.Fatalf("round %d: %v", n, c.Err)
				}
			case <-deadline:
				t.Fatalf("round %d: %d appends committed after Subscribe returned never came, e.g. %v", n, len(want), want)
			}
		}
		if d := sub.Dropped(); d != 0 {
			t.Fatalf("round %d: %d dropped", n, d)
		}
		sub.Close()
	}
}
