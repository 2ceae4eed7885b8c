package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"

	"github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
)

// stormLog tallies what the store's callers saw during TestBackendsTerminated.
type stormLog struct {
	mu          sync.Mutex
	ops         int
	ok          int
	conflict    int
	unavailable int
	panics      int
	firstPanic  string
	others      []error
	acked       map[string][]string // session -> ids of appends that returned nil
}

// note counts one call's outcome; it reports whether err is nil.
func (l *stormLog) note(err error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops++
	switch {
	case err == nil:
		l.ok++
	case errors.Is(err, pgstore.ErrUnavailable):
		l.unavailable++
	case errors.Is(err, session.ErrConflict):
		l.conflict++
	default:
		l.others = append(l.others, err)
	}
	return err == nil
}

func (l *stormLog) ack(sess, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acked[sess] = append(l.acked[sess], id)
}

// guard runs f, turning a panic into a count: false if f panicked.
func (l *stormLog) guard(f func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.panics++
			if l.firstPanic == "" {
				l.firstPanic = fmt.Sprintf("%v\n%s", r, debug.Stack())
			}
			ok = false
		}
	}()
	f()
	return true
}

func stormEntry(t *testing.T, id string) session.Entry {
	e, err := session.NewEntry("stormtest", id, "", time.Now(), map[string]string{"name": id})
	if err != nil {
		t.Error(err)
	}
	return e
}

// TestBackendsTerminated (issue item 11): Loads, Appends (through Session
// handles and directly), Rewrites and LoadTails run while another
// connection terminates every other backend of the database, again and
// again. No call panics; every error is ErrConflict or ErrUnavailable;
// afterwards the store works, every append that returned nil is in the
// log exactly once, and the logs decode.
func TestBackendsTerminated(t *testing.T) {
	const storm = 3 * time.Second
	ctx := context.Background()
	s, _ := newStoreConns(t, 8)
	for _, id := range []string{"handles", "direct"} {
		if err := s.Create(ctx, session.Header{ID: id, Cwd: "/storm"}); err != nil {
			t.Fatal(err)
		}
	}
	handles := make([]*session.Session, 2)
	for i := range handles {
		h, err := session.Open(ctx, s, "handles")
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		handles[i] = h
	}
	killer, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(ctx)

	l := &stormLog{acked: map[string][]string{}}
	// The calls get a context of their own: the storm's end must not
	// cancel them.
	opCtx, cancelOps := context.WithTimeout(ctx, 30*time.Second)
	defer cancelOps()
	stormCtx, stop := context.WithTimeout(ctx, storm)
	defer stop()
	var wg sync.WaitGroup
	// worker calls op until the storm ends; one that uses a Session
	// handle stops at its first panic (the handle's state is then
	// unknown), the others count on.
	worker := func(handle bool, op func(i int)) {
		wg.Go(func() {
			for i := 0; stormCtx.Err() == nil; i++ {
				if !l.guard(func() { op(i) }) && handle {
					return
				}
			}
		})
	}
	for w, h := range handles {
		worker(true, func(i int) {
			e, err := h.Append(opCtx, session.UserText(fmt.Sprintf("handle %d message %d", w, i)))
			if l.note(err) {
				l.ack("handles", e.ID())
			}
		})
	}
	for w := range 2 {
		worker(false, func(i int) {
			id := fmt.Sprintf("d%d-%d", w, i)
			if l.note(s.Append(opCtx, "direct", session.AppendOptions{}, stormEntry(t, id))) {
				l.ack("direct", id)
			}
		})
	}
	// A rewriter that adds an entry of its own and rewrites the log
	// without it, conditional on the log it read.
	worker(false, func(i int) {
		if !l.note(s.Append(opCtx, "direct", session.AppendOptions{}, stormEntry(t, fmt.Sprintf("tmp-%d", i)))) {
			return
		}
		log, err := s.Load(opCtx, "direct")
		if !l.note(err) {
			return
		}
		kept := slices.DeleteFunc(slices.Clone(log.Entries), func(e session.Entry) bool { return strings.HasPrefix(e.ID(), "tmp-") })
		last := log.Entries[len(log.Entries)-1].ID()
		l.note(s.Rewrite(opCtx, "direct", session.RewriteOptions{IfLast: last, IfEntries: len(log.Entries)}, log.Header, kept))
	})
	worker(false, func(i int) {
		_, err := s.Load(opCtx, []string{"handles", "direct"}[i%2])
		l.note(err)
	})
	// A reader that follows both logs with LoadTail, from the start
	// again when a rewrite makes it conflict.
	type mark struct {
		n    int
		last string
	}
	marks := map[string]mark{}
	worker(false, func(i int) {
		id := []string{"handles", "direct"}[i%2]
		m := marks[id]
		log, err := s.LoadTail(opCtx, id, m.n, m.last)
		switch {
		case errors.Is(err, session.ErrConflict):
			marks[id] = mark{}
		case err == nil && len(log.Entries) > 0:
			marks[id] = mark{m.n + len(log.Entries), log.Entries[len(log.Entries)-1].ID()}
		}
		l.note(err)
	})

	kills := 0
	for stormCtx.Err() == nil {
		var n int
		err := killer.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n)
		if err != nil {
			t.Fatalf("terminating backends: %v", err)
		}
		kills += n
		time.Sleep(time.Duration(50+rand.IntN(100)) * time.Millisecond)
	}
	wg.Wait()
	t.Logf("%d backends terminated; %d calls: %d nil, %d ErrConflict, %d ErrUnavailable, %d other errors, %d panics",
		kills, l.ops, l.ok, l.conflict, l.unavailable, len(l.others), l.panics)
	if kills == 0 {
		t.Fatal("no backend was terminated: the test tested nothing")
	}
	if l.panics > 0 {
		t.Errorf("%d calls panicked; the first:\n%s", l.panics, l.firstPanic)
	}
	for i, err := range l.others {
		if i == 5 {
			t.Errorf("... and %d more", len(l.others)-5)
			break
		}
		t.Errorf("error that is neither ErrConflict nor ErrUnavailable: %v", err)
	}

	// The storm is over: the store works again. Connections the pool
	// kept from before may fail once more each, with ErrUnavailable.
	deadline := time.Now().Add(10 * time.Second)
	settle := func(what string, f func() error) {
		t.Helper()
		for {
			err := f()
			if err == nil {
				return
			}
			if !errors.Is(err, pgstore.ErrUnavailable) || time.Now().After(deadline) {
				t.Fatalf("%s after the storm: %v", what, err)
			}
		}
	}
	settle("append", func() error { return s.Append(ctx, "direct", session.AppendOptions{}, stormEntry(t, "after")) })
	l.ack("direct", "after")
	for _, id := range []string{"handles", "direct"} {
		var log, tail *session.Log
		settle("load", func() (err error) { log, err = s.Load(ctx, id); return err })
		count := map[string]int{}
		for _, e := range log.Entries {
			count[e.ID()]++
		}
		for _, a := range l.acked[id] {
			if count[a] != 1 {
				t.Errorf("%s: acknowledged entry %s is in the log %d times", id, a, count[a])
			}
		}
		settle("LoadTail", func() (err error) { tail, err = s.LoadTail(ctx, id, 0, ""); return err })
		if len(tail.Entries) != len(log.Entries) {
			t.Fatalf("LoadTail of %s after the storm: %d entries, Load %d", id, len(tail.Entries), len(log.Entries))
		}
		var h *session.Session
		settle("open", func() (err error) { h, err = session.Open(ctx, s, id); return err })
		settle("session append", func() error { _, err := h.Append(ctx, session.UserText("after the storm")); return err })
		h.Close()
		t.Logf("%s: %d entries, %d acknowledged", id, len(log.Entries), len(l.acked[id]))
	}
}

// proxy forwards TCP connections to the test server, and can cut them
// and refuse new ones: a server that went away, and came back.
type proxy struct {
	target string
	mu     sync.Mutex
	addr   string
	ln     net.Listener
	conns  []net.Conn
	hang   bool // accept connections but forward nothing
}

func startProxy(t *testing.T) *proxy {
	t.Helper()
	cfg, err := pgconn.ParseConfig(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(cfg.Host, "/") {
		t.Skip("the test server is on a unix socket")
	}
	p := &proxy{target: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), addr: "127.0.0.1:0"}
	p.up(t, false)
	t.Cleanup(p.down)
	return p
}

// up listens again, at the same address.
func (p *proxy) up(t *testing.T, hang bool) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr, p.hang = ln, ln.Addr().String(), hang
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, c)
			hang := p.hang
			p.mu.Unlock()
			if hang {
				continue
			}
			go func() {
				s, err := net.Dial("tcp", p.target)
				if err != nil {
					c.Close()
					return
				}
				p.mu.Lock()
				p.conns = append(p.conns, s)
				p.mu.Unlock()
				go func() { io.Copy(s, c); s.Close() }()
				io.Copy(c, s)
				c.Close()
			}()
		}
	}()
}

// down closes the listener and every connection.
func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// pool returns a pool whose connections go through the proxy to schema.
func (p *proxy) pool(t *testing.T, schema string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(p.addr)
	n, _ := strconv.Atoi(port)
	cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Fallbacks = host, uint16(n), nil
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// storeCalls calls every method of the store (and New and Migrate on
// pool) with ctx, on the session "u".
func storeCalls(t *testing.T, ctx context.Context, s *pgstore.Store, pool *pgxpool.Pool) map[string]error {
	e := stormEntry(t, fmt.Sprintf("x-%d", time.Now().UnixNano()))
	h := session.Header{ID: "u", Cwd: "/w"}
	errs := map[string]error{
		"Create":  s.Create(ctx, session.Header{ID: "u2", Cwd: "/w"}),
		"Append":  s.Append(ctx, "u", session.AppendOptions{}, e),
		"Rewrite": s.Rewrite(ctx, "u", session.RewriteOptions{}, h, nil),
		"Archive": s.Archive(ctx, "u"),
		"Restore": s.Restore(ctx, "u"),
		"Delete":  s.Delete(ctx, "u2"),
		"Migrate": pgstore.Migrate(ctx, pool),
	}
	_, errs["Load"] = s.Load(ctx, "u")
	_, errs["LoadTail"] = s.LoadTail(ctx, "u", 0, "")
	_, errs["List"] = s.List(ctx, session.ListOptions{})
	_, errs["New"] = pgstore.New(ctx, pool, nil)
	data := []byte("a blob of the fault tests")
	_, errs["PutBlob"] = s.PutBlob(ctx, data)
	_, errs["GetBlob"] = s.GetBlob(ctx, session.BlobRef(data))
	errs["ListBlobs"] = s.ListBlobs(ctx, func(session.BlobInfo) error { return nil })
	_, errs["DeleteBlobIfOlder"] = s.DeleteBlobIfOlder(ctx, session.BlobRef(data), time.Unix(0, 0))
	errs["DeleteBlob"] = s.DeleteBlob(ctx, session.BlobRef([]byte("never put")))
	return errs
}

// TestUnavailable: with the server out of reach (connections cut, then
// refused) every call fails with ErrUnavailable, the driver's error in
// the chain; a server that accepts but never answers runs into the
// context's deadline (ctx.Err()); when the server is back the store
// works again; a closed pool is ErrUnavailable too.
func TestUnavailable(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	if err := pgstore.Migrate(ctx, poolIn(t, schema, 2)); err != nil {
		t.Fatal(err)
	}
	p := startProxy(t)
	pool := p.pool(t, schema)
	s, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, session.Header{ID: "u", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "u", session.AppendOptions{}, stormEntry(t, "e1")); err != nil {
		t.Fatal(err)
	}
	driverErr := func(err error) bool {
		var ce *pgconn.ConnectError
		var ne net.Error
		return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
			errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, puddle.ErrClosedPool)
	}
	unavailable := func(what string) {
		t.Helper()
		for round := range 2 { // cut connections first, refused ones next
			for name, err := range storeCalls(t, ctx, s, pool) {
				if !errors.Is(err, pgstore.ErrUnavailable) || !driverErr(err) {
					t.Errorf("%s, round %d: %s: %v, want ErrUnavailable and the driver's error", what, round, name, err)
				}
			}
		}
	}

	p.down()
	unavailable("server gone")
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	for name, err := range storeCalls(t, canceled, s, pool) {
		if err != context.Canceled {
			t.Errorf("server gone, context canceled: %s: %v, want ctx.Err()", name, err)
		}
	}

	p.up(t, true)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := s.Load(short, "u"); err != context.DeadlineExceeded {
		t.Errorf("Load from a server that does not answer: %v, want ctx.Err()", err)
	}
	p.down()

	p.up(t, false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.Load(ctx, "u")
		if err == nil {
			break
		}
		if !errors.Is(err, pgstore.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("Load once the server is back: %v", err)
		}
	}
	for name, err := range storeCalls(t, ctx, s, pool) {
		if err != nil && !((name == "Delete" || name == "DeleteBlob") && errors.Is(err, session.ErrNotFound)) {
			t.Errorf("server back: %s: %v", name, err)
		}
	}

	// A connection refused for good (no such database) is not a server
	// that is away for now.
	cfg := pool.Config()
	cfg.ConnConfig.Database = "agentsession_no_such_database"
	wrong, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	var pe *pgconn.PgError
	if _, err := pgstore.New(ctx, wrong, nil); errors.Is(err, pgstore.ErrUnavailable) || !errors.As(err, &pe) || pe.Code != "3D000" {
		t.Errorf("New on a database that does not exist: %v, want the server's error and not ErrUnavailable", err)
	}

	pool.Close()
	for name, err := range storeCalls(t, ctx, s, pool) {
		if !errors.Is(err, pgstore.ErrUnavailable) || !errors.Is(err, puddle.ErrClosedPool) {
			t.Errorf("pool closed: %s: %v, want ErrUnavailable", name, err)
		}
	}
}

// TestContextDone: a canceled or expired context gives ctx.Err() from
// every call.
func TestContextDone(t *testing.T) {
	s, pool := newStore(t)
	if err := s.Create(context.Background(), session.Header{ID: "u", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, ctx := range []context.Context{canceled, expired} {
		for name, err := range storeCalls(t, ctx, s, pool) {
			if err != ctx.Err() {
				t.Errorf("%s with ctx.Err() = %v: %v", name, ctx.Err(), err)
			}
		}
	}
}
