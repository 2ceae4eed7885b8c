package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
)

// replyDropper is a TCP proxy in front of the server that, once armed,
// stops passing the server's answers on from the moment a client sends
// an append: the server runs and commits it, the client hears nothing
// until the connection goes.
type replyDropper struct {
	ln       net.Listener
	target   string
	armed    atomic.Bool
	dropping atomic.Bool
	mu       sync.Mutex
	conns    []net.Conn
}

func newReplyDropper(t *testing.T, target string) *replyDropper {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &replyDropper{ln: ln, target: target}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	return p
}

func (p *replyDropper) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		go func() { // client to server: watch for the append
			buf := make([]byte, 64<<10)
			for {
				n, err := client.Read(buf)
				if n > 0 {
					if p.armed.Load() && bytes.Contains(buf[:n], []byte("agentsession_append")) {
						p.dropping.Store(true)
					}
					if _, werr := server.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			server.Close()
		}()
		go func() { // server to client, unless dropping
			buf := make([]byte, 64<<10)
			for {
				n, err := server.Read(buf)
				if n > 0 && !p.dropping.Load() {
					if _, werr := client.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			client.Close()
		}()
	}
}

// TestAppendCommittedThenBackendTerminated: an append commits, its
// answer never reaches the client, and the backend is terminated; the
// host's retry (of SaveTurn through a Session, of Store.Append directly)
// succeeds, and each entry is stored once.
func TestAppendCommittedThenBackendTerminated(t *testing.T) {
	ctx := context.Background()
	r := newLostRig(t, "lostreply_", 2)
	store := r.store

	// lose runs write with the proxy armed: once the server has
	// committed want entries in session id, its backend is terminated.
	lose := func(id string, want int, write func() error) error {
		r.proxy.armed.Store(true)
		done := make(chan error, 1)
		go func() { done <- write() }()
		r.terminateWhenCommitted(id, want)
		err := <-done
		r.disarm()
		return err
	}

	sess, err := session.Create(ctx, store, &session.CreateOptions{ID: "lost"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Append(ctx, session.UserText("hi")); err != nil {
		t.Fatal(err)
	}
	turn := []*session.Message{session.UserText("run it"), session.AssistantText("ran")}
	err = lose("lost", 3, func() error { return sess.SaveTurn(ctx, turn, nil) })
	if !errors.Is(err, pgstore.ErrUnavailable) {
		t.Fatalf("SaveTurn whose backend was terminated after commit: %v, want ErrUnavailable", err)
	}
	if err := sess.SaveTurn(ctx, turn, nil); err != nil {
		t.Fatalf("retried SaveTurn: %v", err)
	}
	if _, err := sess.Append(ctx, session.UserText("next")); err != nil {
		t.Fatal(err)
	}
	re, err := session.Open(ctx, store, "lost")
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range re.Context().Messages {
		texts = append(texts, m.Text())
	}
	if re.Len() != 4 || len(re.Leaves()) != 1 || len(texts) != 4 || texts[1] != "run it" || texts[3] != "next" {
		t.Fatalf("after the retry: %d entries, %d leaves, context %q", re.Len(), len(re.Leaves()), texts)
	}

	// The store alone: the same append again.
	if err := store.Create(ctx, session.Header{ID: "direct", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	e := stormEntry(t, "d1")
	err = lose("direct", 1, func() error { return store.Append(ctx, "direct", session.AppendOptions{IfEmpty: true}, e) })
	if !errors.Is(err, pgstore.ErrUnavailable) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Append whose backend was terminated after commit: %v", err)
	}
	if err := store.Append(ctx, "direct", session.AppendOptions{IfEmpty: true}, e); err != nil {
		t.Fatalf("retried Append: %v", err)
	}
	l, err := store.Load(ctx, "direct")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 1 {
		t.Fatalf("%d entries after the retry, want 1", len(l.Entries))
	}
}

// lostRig is a Store whose answers can be lost on the way back: its
// pool's connections go through a replyDropper (proxy). direct is a
// connection of its own to the same schema, which watches what commits
// and terminates the pool's backends.
type lostRig struct {
	t      *testing.T
	schema string
	app    string // the pool's application_name
	direct *pgx.Conn
	proxy  *replyDropper
	store  *pgstore.Store
}

// newLostRig makes a lostRig in a new schema, its pool of at most
// maxConns connections (pgxpool's default for 0) named prefix+schema.
func newLostRig(t *testing.T, prefix string, maxConns int32) *lostRig {
	t.Helper()
	ctx := context.Background()
	schema := newSchema(t)
	if err := pgstore.Migrate(ctx, poolIn(t, schema, 1)); err != nil {
		t.Fatal(err)
	}
	direct, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close(ctx) })
	app := prefix + schema
	cfg, proxy := proxiedConfig(t, schema, app)
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	store, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &lostRig{t: t, schema: schema, app: app, direct: direct, proxy: proxy, store: store}
}

// terminateWhenCommitted waits until the schema holds want entries (in
// session id, or in all sessions for ""), then terminates the pool's
// backends: an answer on its way back is lost.
func (r *lostRig) terminateWhenCommitted(id string, want int) {
	t, ctx := r.t, context.Background()
	t.Helper()
	q, args := `SELECT count(*) FROM `+r.schema+`.agentsession_entries`, []any{}
	if id != "" {
		q, args = q+` WHERE session_id = $1`, []any{id}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		if err := r.direct.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the append never committed (%d entries, want %d)", n, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var killed int
	if err := r.direct.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, r.app).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed == 0 {
		t.Fatal("no backend of the proxied pool to terminate")
	}
}

// disarm lets answers through again.
func (r *lostRig) disarm() {
	r.proxy.armed.Store(false)
	r.proxy.dropping.Store(false)
}

// proxiedConfig is a pool's configuration for schema whose connections
// go through a replyDropper, named app (application_name, to find the
// backend by), with the SQL in every message (one round trip per
// statement, the SQL in each) for the proxy to see the statements go by.
func proxiedConfig(t *testing.T, schema, app string) (*pgxpool.Config, *replyDropper) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newReplyDropper(t, net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))))
	host, port, _ := net.SplitHostPort(proxy.ln.Addr().String())
	p, _ := strconv.Atoi(port)
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = host, uint16(p)
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	return cfg, proxy
}
