package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	session "github.com/agentsession/session"
)

// Events: every write of every replica sends a notification on the
// channel notifyChannel in its own transaction (see the migration of
// version 5), so that they come in commit order and only for committed
// work, when a listener of its schema is alive (version 6: a row in
// agentsession_listeners, see connect). A Store with subscribers listens on one connection of its own
// and turns each notification into session.Changes, reading the entries
// an append added from the table (never from the payload).

// notifyChannel is the channel of the notifications.
const notifyChannel = "agentsession"

// notice is a notification's payload, as agentsession_notify makes it.
type notice struct {
	Schema string     `json:"schema"`
	ID     string     `json:"id"`
	Kind   string     `json:"kind"`
	From   int        `json:"from"` // entry count before the change
	To     int        `json:"to"`   // and after it
	Gen    int64      `json:"gen"`  // the session's generation (bumped by every rewrite)
	Origin string     `json:"origin"`
	At     *time.Time `json:"at"` // of a compaction mark
}

// Reconnection backoff of the listener.
const (
	listenBackoffMin = 50 * time.Millisecond
	listenBackoffMax = 5 * time.Second
)

// events is the Store's subscribers and the listener that feeds them.
type events struct {
	st     *Store
	hub    session.Hub
	mu     sync.Mutex
	cur    *listener // running while anyone subscribes
	closed bool
}

func (ev *events) init(st *Store) {
	ev.st = st
	ev.hub.OnFirst = ev.start
	ev.hub.OnLast = ev.stop
}

// start starts the listener if none runs.
func (ev *events) start() {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.startLocked()
}

// startLocked starts a listener unless one runs (one whose first
// attempt failed has ended, and is replaced); it returns the current
// one, nil when the store is closed.
func (ev *events) startLocked() *listener {
	if ev.closed {
		return nil
	}
	if ev.cur != nil {
		select {
		case <-ev.cur.done:
		default:
			return ev.cur
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{st: ev.st, hub: &ev.hub, cancel: cancel, done: make(chan struct{}), ready: make(chan struct{}), seen: map[string]seen{}}
	ev.cur = l
	go l.run(ctx)
	return l
}

// stop stops the listener, unless a subscriber came meanwhile.
func (ev *events) stop() {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.cur == nil || (ev.hub.Active() && !ev.closed) {
		return
	}
	ev.cur.cancel()
	<-ev.cur.done
	ev.cur = nil
}

// running returns the listener, started again if it had ended.
func (ev *events) running() *listener {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return ev.startLocked()
}

var _ session.Subscriber = (*Store)(nil)

// Subscribe implements session.Subscriber: the changes of every
// session of the store's schema, made by this Store, by others in this
// process, and by other processes and machines alike (Change.Remote is
// set on those this Store did not make), in commit order. An append
// comes as session.ChangesOf gives it, with every entry once, in log
// order; the entries are read from the database after the notification,
// so that a change comes a few milliseconds after its commit.
//
// The first subscriber starts a listener on a connection of its own
// (made with the pool's configuration, not taken from it); Subscribe
// returns once it listens, or with its error (ErrUnavailable). When the
// listener loses its connection it publishes a session.ChangeError
// (Session ""; notifications may have been lost meanwhile: reload), and
// connects again with backoff; the appends it then hears of come with
// those it missed, when the session was not rewritten. The last
// subscriber to go, or Close, stops it.
func (s *Store) Subscribe(ctx context.Context, opts session.SubscribeOptions) (*session.Subscription, error) {
	s.ev.mu.Lock()
	closed := s.ev.closed
	s.ev.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("pgstore: subscribe: %w", session.ErrClosed)
	}
	sub, err := s.ev.hub.Subscribe(ctx, opts)
	if err != nil {
		return nil, err
	}
	l := s.ev.running()
	if l == nil {
		sub.Close()
		return nil, fmt.Errorf("pgstore: subscribe: %w", session.ErrClosed)
	}
	select {
	case <-l.ready:
	case <-ctx.Done():
		sub.Close()
		return nil, ctx.Err()
	}
	if l.err != nil {
		sub.Close()
		return nil, l.err
	}
	return sub, nil
}

// Hub returns the store's hub, where Sessions on it publish the changes
// they make themselves (session.ChangeOperation).
func (s *Store) Hub() *session.Hub { return &s.ev.hub }

// Close ends every subscription and stops the listener, and lets the
// Store's pins of blobs go (see PinBlobs). The pool stays the caller's;
// the store's other methods keep working (PutBlob pins nothing more).
func (s *Store) Close() error {
	s.fill.mu.Lock()
	s.fill.closed = true
	if s.fill.stop != nil {
		s.fill.stop()
	}
	s.fill.mu.Unlock()
	s.fill.wg.Wait() // the fills of places in flight (pathload.go)
	s.closePins()
	s.ev.mu.Lock()
	s.ev.closed = true
	s.ev.mu.Unlock()
	s.ev.hub.Close()
	s.ev.stop()
	return nil
}

// listener holds the connection that listens, and what it delivered of
// each session.
type listener struct {
	st     *Store
	hub    *session.Hub
	cancel context.CancelFunc
	done   chan struct{}
	ready  chan struct{} // closed once the first attempt to listen is over
	err    error         // that attempt's error, set before ready is closed
	// seen is written by the listener's goroutine under mu; tick is
	// closed (and replaced) at each write, for settle.
	mu   sync.Mutex
	seen map[string]seen
	tick chan struct{}
}

// note records what the listener delivered of session id (gone: the
// session is deleted).
func (l *listener) note(id string, sn seen, gone bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gone {
		delete(l.seen, id)
	} else {
		l.seen[id] = sn
	}
	if l.tick != nil {
		close(l.tick)
	}
	l.tick = make(chan struct{})
}

func (l *listener) seenOf(id string) (seen, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sn, ok := l.seen[id]
	return sn, ok
}

// settleWait bounds how long a delete waits for the listener (settle).
const settleWait = 2 * time.Second

// settle waits, briefly, until the listener has delivered the entries
// session id holds now (in its generation now): a delete that follows at
// once would leave the listener nothing to read them from. It is for the
// deletes this Store makes; another process's delete can still come
// before the listener reads what it appended just before.
func (s *Store) settle(ctx context.Context, id string) {
	s.ev.mu.Lock()
	l := s.ev.cur
	s.ev.mu.Unlock()
	if l == nil {
		return
	}
	var count int
	var gen int64
	if s.pool.QueryRow(ctx, `SELECT entry_count, generation FROM agentsession_sessions WHERE id = $1`, id).Scan(&count, &gen) != nil {
		return
	}
	timer := time.NewTimer(settleWait)
	defer timer.Stop()
	for {
		l.mu.Lock()
		sn, ok := l.seen[id]
		tick := l.tick
		if tick == nil {
			l.tick = make(chan struct{})
			tick = l.tick
		}
		l.mu.Unlock()
		if ok && sn.gen == gen && sn.count >= count {
			return
		}
		select {
		case <-tick:
		case <-l.done:
			return
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// seen is what the listener delivered of a session: its entries up to
// count, in generation gen.
type seen struct {
	gen   int64
	count int
}

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	first := true
	backoff := listenBackoffMin
	for {
		conn, err := l.connect(ctx)
		if err != nil {
			if first {
				l.err = mapErr(ctx, err, "listen")
				close(l.ready)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, listenBackoffMax)
			continue
		}
		if first {
			first = false
			close(l.ready)
		}
		backoff = listenBackoffMin
		err = l.listen(ctx, conn)
		if ctx.Err() != nil {
			unregister(conn) // stopped: the connection still works
		}
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		l.hub.Publish(session.Change{Kind: session.ChangeError, Time: time.Now(),
			Err: fmt.Errorf("%w: the listener lost its connection, and may have missed changes: %w", ErrUnavailable, err)})
	}
}

// connect opens the listener's connection and listens.
func (l *listener) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, l.st.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	// Each statement commits by itself, in this order (see the migration
	// of version 6): the lock that tells writers this listener lives, the
	// LISTEN, the row that makes them notify, then the gate, taken once
	// exclusively: it waits for the writes that looked for listeners
	// before the row was there, so that every write committed after this
	// returns either notifies or had committed before.
	for _, q := range []string{
		`SELECT pg_advisory_lock(` + listenerLock + `, pg_backend_pid())`,
		"LISTEN " + notifyChannel,
		`INSERT INTO agentsession_listeners (pid) VALUES (pg_backend_pid())
			ON CONFLICT (pid) DO UPDATE SET since = now()`,
		// The rows of listeners that died without deleting theirs: a
		// lock nobody holds (the try takes it until the statement ends).
		`DELETE FROM agentsession_listeners WHERE pid <> pg_backend_pid()
			AND pg_try_advisory_xact_lock_shared(` + listenerLock + `, pid)`,
		`SELECT pg_advisory_lock(` + gateLock + `, hashtext(current_schema()))`,
		`SELECT pg_advisory_unlock(` + gateLock + `, hashtext(current_schema()))`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = conn.Close(cctx)
			return nil, err
		}
	}
	return conn, nil
}

// The advisory locks of the listeners (see the migration of version 6),
// as agentsession_notify spells them: "al" and "ag" in ASCII.
const (
	listenerLock = "24940" // 0x616c, with the listener's pid: held while it lives
	gateLock     = "24935" // 0x6167, with the hash of the schema
)

// unregister deletes the listener's row before its connection closes
// (without it, the row would be stale, which costs writers a try of a
// lock until the next listener deletes it).
func unregister(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = conn.Exec(ctx, `DELETE FROM agentsession_listeners WHERE pid = pg_backend_pid()`)
}

// listen handles notifications until ctx ends or the connection fails.
func (l *listener) listen(ctx context.Context, conn *pgx.Conn) error {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var p notice
		if json.Unmarshal([]byte(n.Payload), &p) != nil || p.Schema != l.st.schema {
			continue // another schema's, or not ours
		}
		l.handle(ctx, p)
	}
}

// handle publishes the changes of one notification.
func (l *listener) handle(ctx context.Context, p notice) {
	c := session.Change{Session: p.ID, Time: time.Now(), Remote: p.Origin != l.st.origin}
	switch p.Kind {
	case "created":
		c.Kind = session.ChangeCreated
		l.note(p.ID, seen{gen: p.Gen}, false)
	case "appended":
		from := p.From
		if sn, ok := l.seenOf(p.ID); ok && sn.gen == p.Gen {
			if p.To <= sn.count {
				return // delivered already
			}
			from = sn.count // with what a lost connection hid, if anything
		}
		entries, err := l.st.entriesBetween(ctx, p.ID, p.Gen, from, p.To)
		l.note(p.ID, seen{gen: p.Gen, count: p.To}, false) // after the read: settle waits for it
		switch {
		case errors.Is(err, session.ErrConflict):
			// Rewritten (or deleted) since: what was appended is gone.
			c.Kind = session.ChangeRewritten
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			c.Kind, c.Err = session.ChangeError, err
		default:
			cs := session.ChangesOf(p.ID, entries, c.Time)
			for i := range cs {
				cs[i].Remote = c.Remote
			}
			l.hub.Publish(cs...)
			return
		}
	case "rewritten":
		c.Kind = session.ChangeRewritten
		l.note(p.ID, seen{gen: p.Gen, count: p.To}, false)
	case "deleted":
		c.Kind = session.ChangeDeleted
		l.note(p.ID, seen{}, true)
	case "compacting":
		c.Kind = session.ChangeCompacting
		if p.At != nil {
			c.Compacting = p.At.UTC()
		}
	case "archived":
		c.Kind = session.ChangeArchived
	case "unarchived":
		c.Kind = session.ChangeUnarchived
	default:
		return
	}
	l.hub.Publish(c)
}

// entriesBetween reads the entries of session id after the first from,
// up to the to-th, while it is in generation gen (session.ErrConflict
// when it is not, or they are not all there).
func (s *Store) entriesBetween(ctx context.Context, id string, gen int64, from, to int) ([]session.Entry, error) {
	rows, err := s.pool.Query(ctx, `SELECT e.raw FROM agentsession_sessions s
		JOIN agentsession_entries e ON e.session_id = s.id AND e.seq > $3 AND e.seq <= $4
		WHERE s.id = $1 AND s.generation = $2 ORDER BY e.seq`, id, gen, from, to)
	if err != nil {
		return nil, mapErr(ctx, err, "read the entries appended to "+id)
	}
	var raw []byte
	out := make([]session.Entry, 0, to-from)
	_, err = pgx.ForEachRow(rows, []any{&raw}, func() error {
		e, err := session.ParseEntry(raw)
		if err != nil {
			return &session.CorruptError{Line: from + len(out) + 2, Err: fmt.Errorf("pgstore: session %s: %w", id, err)}
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, mapErr(ctx, err, "read the entries appended to "+id)
	}
	if len(out) != to-from {
		return nil, fmt.Errorf("%w: session %s changed since entries %d to %d were appended", session.ErrConflict, id, from+1, to)
	}
	return out, nil
}
