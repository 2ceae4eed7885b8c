package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"

	session "github.com/agentsession/session"
)

// Group commit of the appends of messages (leader and followers).
//
// Made alone, such an append is a call of agentsession_append: a round
// trip, some ten statements run by the server, and a commit. A Store
// keeps at most Options.AppendFlights appends or batches in flight; an
// append that finds them all out waits, and the appends that waited go
// together as soon as one is back: one call of agentsession_append_batch
// (schema version 7), one round trip, one transaction, one commit. An
// append that finds a flight free goes at once, alone, as before: no
// timer, and no latency added when the store is not busy.
//
// Each member keeps its own checks and its own answer: the function
// answers each as agentsession_append would have, in the order of the
// batch (a member sees what the members before it appended), and a
// refusal is an answer, not an error, so it changes nothing for the
// others. A member whose session row another transaction holds is
// answered "busy" and made alone (it waits for the lock; the batch does
// not). A database error aborts the transaction, and with it the whole
// batch, which then committed nothing: every member is then made alone,
// with its own context, and gets its own answer. When the connection
// breaks, every member gets that error, as an append alone would (it
// may or may not have been committed). No answer is given before the
// commit is confirmed.

// Bounds of a batch: it takes the appends waiting, in the order they
// came, up to maxGroup of them and maxGroupBytes of lines (at least one
// append, whatever its size).
const (
	maxGroup      = 64
	maxGroupBytes = 1 << 20
)

// defaultFlights is Options.AppendFlights' default.
const defaultFlights = 2

// group gathers the appends that wait for a batch.
type group struct {
	max    int // flights at most; 0: no limit, every append alone
	mu     sync.Mutex
	flying int // appends or batches in flight
	queue  []*pending

	// What happened, for the tests and the benchmarks: batches sent
	// (of two appends or more), the appends in them, the batches that
	// failed as a whole (their members then made alone), and the
	// members answered "busy".
	batches, batched, failed, busy atomic.Int64
}

// pending is an append of messages: a call of agentsession_append, or a
// member of a batch.
type pending struct {
	ctx       context.Context
	id        string // the session
	opts      session.AppendOptions
	ids       []string
	raws      [][]byte
	size      int    // bytes of the lines, newlines included
	title     []byte // nil: the title stays
	firstUser []byte // the derived title of a user message, nil if none
	places    appendPlaces
	done      chan answer
}

// answer is what the batch tells one of its members.
type answer struct {
	res   string
	err   error
	alone bool // make the append alone
}

// appendCall calls agentsession_append for an append of messages.
const appendCall = `SELECT agentsession_append($1, $2, $3, $4, $5, $6::bytea, $7, $8, $9,
		$10::bytea, $11::bytea, $12::bytea, $13::bytea, $14::bytea[], $15::text,
		$16::integer[], $17::text[], $18::smallint[], $19::text[])`

// batchCall calls agentsession_append_batch (migrations/0007, with the
// places of 0009).
const batchCall = `SELECT agentsession_append_batch($1, $2, $3, $4, $5, $6, $7::bytea[], $8, $9::bytea[], $10, $11, $12,
		$13::integer[], $14::text[], $15::smallint[], $16::text[])`

// appendGrouped makes the append p: alone when a flight is free, else
// in a batch. It returns the function's answer.
func (s *Store) appendGrouped(p *pending) (string, error) {
	g := &s.appends
	g.mu.Lock()
	if g.max == 0 || g.flying < g.max {
		g.flying++
		g.mu.Unlock()
		defer s.landed()
		return s.appendAlone(p.ctx, p)
	}
	p.done = make(chan answer, 1)
	g.queue = append(g.queue, p)
	g.mu.Unlock()
	select {
	case a := <-p.done:
		if a.alone {
			return s.appendAlone(p.ctx, p)
		}
		return a.res, a.err
	case <-p.ctx.Done():
		// A batch not yet sent leaves this append out; one in flight
		// goes on for the others, and may commit it (as an append
		// whose context ended may have been).
		return "", p.ctx.Err()
	}
}

// appendAlone makes the append p in its own implicit transaction.
func (s *Store) appendAlone(ctx context.Context, p *pending) (res string, err error) {
	err = s.pool.QueryRow(ctx, appendCall, p.id, p.opts.IfLast, p.opts.IfEmpty, p.ids, p.raws, p.title, p.size,
		int64(s.lim.MaxEntries), s.lim.MaxLogBytes, p.firstUser, []byte(nil), []byte(nil), []byte(nil), [][]byte(nil), s.origin,
		p.places.pidx, p.places.parents, p.places.flags, p.places.kept).Scan(&res)
	return res, err
}

// landed is called when an append or a batch in flight is back: the
// appends that waited meanwhile go, in batches, from a goroutine of
// their own, which keeps the flight (the caller of the append that
// landed returns at once).
func (s *Store) landed() {
	g := &s.appends
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		g.flying--
		return
	}
	go s.flush()
}

// flush sends the waiting appends in batches until none waits.
func (s *Store) flush() {
	g := &s.appends
	for {
		g.mu.Lock()
		batch := g.take()
		if len(batch) == 0 {
			g.flying--
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		s.send(batch)
	}
}

// take removes the next batch from the queue: the appends that waited
// longest, within the bounds, leaving out those whose callers have gone.
// Called with g.mu held.
func (g *group) take() []*pending {
	var batch []*pending
	size, n := 0, 0
	for _, p := range g.queue {
		if len(batch) == maxGroup || (len(batch) > 0 && size+p.size > maxGroupBytes) {
			break
		}
		n++
		if p.ctx.Err() != nil {
			continue // its caller returned ctx.Err(): never sent
		}
		batch = append(batch, p)
		size += p.size
	}
	rest := copy(g.queue, g.queue[n:])
	clear(g.queue[rest:])
	g.queue = g.queue[:rest]
	return batch
}

// send makes the appends of batch and answers each member.
func (s *Store) send(batch []*pending) {
	// The batch goes on until its members have all gone (each returns
	// at once when its own context ends), not only until one has.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var left atomic.Int64
	left.Store(int64(len(batch)))
	for _, p := range batch {
		stop := context.AfterFunc(p.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}

	if len(batch) == 1 {
		res, err := s.appendAlone(ctx, batch[0])
		batch[0].done <- answer{res: res, err: err}
		return
	}
	g := &s.appends
	g.batches.Add(1)
	g.batched.Add(int64(len(batch)))
	res, err := s.appendBatch(ctx, batch)
	// A statement the server refused rolled the batch back: nothing was
	// committed, every member is made alone. A broken connection leaves
	// the commit unknown: the error is every member's.
	var pe *pgconn.PgError
	failed := err != nil && errors.As(err, &pe) && !unavailable(err) && ctx.Err() == nil
	if failed {
		g.failed.Add(1)
	}
	for i, p := range batch {
		a := answer{err: err, alone: failed}
		if err == nil {
			a.res = res[i]
			if a.res == "busy" {
				g.busy.Add(1)
				a.alone = true
			}
		}
		p.done <- a
	}
}

// appendBatch makes the appends of batch in one call of
// agentsession_append_batch, and returns their answers once it has
// committed.
func (s *Store) appendBatch(ctx context.Context, batch []*pending) ([]string, error) {
	n := len(batch)
	sessions, ifLast := make([]string, n), make([]string, n)
	ifEmpty, counts := make([]bool, n), make([]int32, n)
	titles, sizes, firstUsers := make([][]byte, n), make([]int64, n), make([][]byte, n)
	ids, raws := []string{}, [][]byte{} // empty arrays, never NULL
	pl := appendPlaces{pidx: []int32{}, parents: []string{}, flags: []int16{}, kept: []*string{}}
	for i, p := range batch {
		sessions[i], ifLast[i], ifEmpty[i], counts[i] = p.id, p.opts.IfLast, p.opts.IfEmpty, int32(len(p.ids))
		titles[i], sizes[i], firstUsers[i] = p.title, int64(p.size), p.firstUser
		ids = append(ids, p.ids...)
		raws = append(raws, p.raws...)
		pl.pidx, pl.parents = append(pl.pidx, p.places.pidx...), append(pl.parents, p.places.parents...)
		pl.flags, pl.kept = append(pl.flags, p.places.flags...), append(pl.kept, p.places.kept...)
	}
	var res []*string
	err := s.pool.QueryRow(ctx, batchCall, sessions, ifLast, ifEmpty, counts, ids, raws, titles, sizes, firstUsers,
		int64(s.lim.MaxEntries), s.lim.MaxLogBytes, s.origin, pl.pidx, pl.parents, pl.flags, pl.kept).Scan(&res)
	if err != nil {
		return nil, err
	}
	if len(res) != n {
		return nil, fmt.Errorf("pgstore: %d answers to a batch of %d appends", len(res), n)
	}
	out := make([]string, n)
	for i, r := range res {
		if r == nil {
			return nil, fmt.Errorf("pgstore: no answer to append %d of a batch", i+1)
		}
		out[i] = *r
	}
	return out, nil
}
