package session

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"
)

// Several writers on one session.
//
// Every write of a Session is conditional on the last entry it knows of.
// When another writer got there first the store says ErrConflict; the
// handle then learns what was written (LoadTail: only what is new) and
// tries again. Three things keep that from starving a writer:
//
//   - Handles of one session in one process take turns (writerLocks):
//     a handle loses at most one race to the others in its process, and
//     learns from it what they wrote.
//   - A conflict whose catching up shows what another writer wrote (in
//     another process, on another Store value over the same files or
//     database, or a raw compare-and-set Append beside the handles) is
//     retried at once, as often as it takes: each one means another
//     writer made progress, so the handle never gives up while they do
//     (until ctx ends). A FileStore keeps the loser's file lock for its
//     retry, so that against other processes the retry wins.
//   - A conflict that teaches the handle nothing new is waited out with
//     a randomized, growing pause, and only such conflicts, in a row,
//     end the write (maxConflictRetries).
//   - Catching up reads only the entries after those the handle knows, so
//     a retry costs the same on a session of any size.

// maxConflictRetries bounds the conflicts in a row of one write that
// taught it nothing new (see stalls); with the pauses between them they
// span about a second. Conflicts explained by other writers' progress
// are not counted: a handle retries those as long as they come.
const maxConflictRetries = 32

// stalls counts the conflicts in a row of one write after which
// catching up found nothing new: neither more entries nor another last
// one. A conflict explained by another writer's entries resets it.
type stalls struct {
	n     int
	nodes int
	last  string
}

// before notes what the handle knows before it catches up.
func (c *stalls) before(s *Session) { c.nodes, c.last = len(s.t.nodes), s.last }

// after counts the conflict as a stall unless catching up changed what
// the handle knows.
func (c *stalls) after(s *Session) {
	if len(s.t.nodes) != c.nodes || s.last != c.last {
		c.n = 0
		return
	}
	c.n++
}

// Pauses between attempts after a conflict: from minBackoff, doubling, up
// to maxBackoff, each drawn at random from its upper half.
const (
	minBackoff = 200 * time.Microsecond
	maxBackoff = 50 * time.Millisecond
)

// backoff waits before attempt (1-based: the first retry does not wait),
// or until ctx is done.
func backoff(ctx context.Context, attempt int) error {
	if attempt < 2 {
		return ctx.Err()
	}
	d := minBackoff << min(attempt-2, 16)
	d = min(d, maxBackoff)
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// conflictErr is what a write reports when the store kept refusing it
// with nothing new written (stalled conflicts in a row).
func conflictErr(attempts, stalled int, err error) error {
	return fmt.Errorf("session: gave up after %d attempts, the last %d refused with nothing new written by another writer: %w", attempts, stalled, err)
}

// writerKey names one session of one store, for writerLocks.
type writerKey struct {
	store Store
	id    string
}

// writerLocks orders the writes of the handles of one session in this
// process. The locks live only while a write holds or waits for them.
var writerLocks keyedLocks

type keyedLocks struct {
	shards [16]lockShard
}

type lockShard struct {
	mu   sync.Mutex
	m    map[writerKey]*keyedLock
	free *keyedLock // one let go, for the next key: a lock costs no allocation
}

type keyedLock struct {
	mu   sync.Mutex
	refs int
}

var lockSeed = maphash.MakeSeed()

// heldTurn is a lock of keyedLocks, held; the zero value holds nothing.
// A value, not a closure, so that taking a turn allocates nothing.
type heldTurn struct {
	sh  *lockShard
	k   *keyedLock
	key writerKey
}

// lock takes the lock of key, or gives up when ctx ends.
func (l *keyedLocks) lock(ctx context.Context, key writerKey) (heldTurn, error) {
	sh := &l.shards[maphash.String(lockSeed, key.id)%uint64(len(l.shards))]
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = map[writerKey]*keyedLock{}
	}
	k := sh.m[key]
	if k == nil {
		if k = sh.free; k != nil {
			sh.free = nil
		} else {
			k = &keyedLock{}
		}
		sh.m[key] = k
	}
	k.refs++
	sh.mu.Unlock()
	t := heldTurn{sh: sh, k: k, key: key}
	if err := lockCtx(ctx, &k.mu); err != nil {
		t.release()
		return heldTurn{}, err
	}
	return t, nil
}

// unlock lets the lock go, for the next in line.
func (t heldTurn) unlock() {
	if t.k == nil {
		return
	}
	t.k.mu.Unlock()
	t.release()
}

// release drops the reference the holder or waiter took; the last one
// removes the key (its lock, unlocked, is kept for reuse).
func (t heldTurn) release() {
	sh := t.sh
	sh.mu.Lock()
	if t.k.refs--; t.k.refs == 0 {
		delete(sh.m, t.key)
		sh.free = t.k
	}
	sh.mu.Unlock()
}

// writerKeyOf is the key of session id of store for writerLocks: the
// store under any wrappers (an ObservedStore), so handles on different
// wrappers of one store take turns too. ok is false for a store that
// cannot be a map key (its type is not comparable).
func writerKeyOf(store Store, id string) (writerKey, bool) {
	store = innermost(store)
	if t := reflect.TypeOf(store); t == nil || !t.Comparable() {
		return writerKey{}, false
	}
	return writerKey{store: store, id: id}, true
}

// takeTurn waits for the other handles of the session in this process to
// finish their writes, or for ctx to end, and returns the turn, for the
// caller to unlock.
func (s *Session) takeTurn(ctx context.Context) (heldTurn, error) {
	if !s.keyed {
		return heldTurn{}, nil
	}
	return writerLocks.lock(ctx, s.key)
}

// reload reads what other writers changed, keeping the leaf where it is
// if that entry still exists: only the entries after those the handle
// knows when the log still starts with them (TailLoader), the whole log
// otherwise. Callers hold mu.
func (s *Session) reload(ctx context.Context) error {
	var log *Log
	if s.deferred {
		var err error
		if log, err = s.reloadDeferred(ctx); log == nil || err != nil {
			return err
		}
	} else if n := len(s.t.nodes); n > 0 && !s.pathOnly {
		tail, err := loadTail(ctx, s.store, s.id, n, s.last)
		switch {
		case err == nil:
			if s.addSuffix(tail.Entries) {
				s.header = tail.Header
				s.last = s.t.nodes[len(s.t.nodes)-1].e.id
				s.malformed = mergeLines(s.malformed, tail.Malformed)
				s.partial = mergeLines(s.partial, tail.Partial)
				s.zeroed = mergeLines(s.zeroed, tail.Zeroed)
				s.torn = tail.Torn
				s.blobErrs = append(s.blobErrs, tail.Unresolved...)
				s.adoptPending()
				return nil
			}
		case !errors.Is(err, ErrConflict):
			return err
		}
	}
	if log == nil {
		var err error
		if log, err = s.store.Load(ctx, s.id); err != nil {
			return err
		}
	}
	leafID := s.leafID()
	s.reset(log)
	if leafID != "" {
		if i, ok := s.t.lookup(leafID); ok {
			s.leaf = i
		}
	} else {
		s.leaf = -1
	}
	s.adoptPending()
	return nil
}

// mergeLines adds to known the lines of more it does not hold yet (a
// tail read again from the same entry reports the same lines again).
func mergeLines(known, more []LineError) []LineError {
	last := 0
	if len(known) > 0 {
		last = known[len(known)-1].Line
	}
	for _, l := range more {
		if l.Line > last || l.Line == 0 {
			known = append(known, l)
		}
	}
	return known
}

// lockCtx locks mu, giving up with ctx's error when ctx ends first. The
// usual case, a free lock, costs a TryLock; a ctx that never ends waits
// as Lock does; otherwise the lock is tried again after growing pauses.
func lockCtx(ctx context.Context, mu *sync.Mutex) error {
	if mu.TryLock() {
		return nil
	}
	if ctx.Done() == nil {
		mu.Lock()
		return nil
	}
	wait := 10 * time.Microsecond
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if mu.TryLock() {
			return nil
		}
		wait = min(2*wait, time.Millisecond)
		t.Reset(wait)
	}
}
