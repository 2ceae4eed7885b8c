package s3store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/s3store/internal/format"
)

// Archive, compaction marks and deletes: parts of the log like appends
// (so that they are ordered with them, and a conditional one is one
// step), which change no entry.

// Archive implements session.Archiver.
func (s *Store) Archive(ctx context.Context, id string) error {
	return s.archive(ctx, id, true, nil)
}

// Unarchive implements session.Archiver.
func (s *Store) Unarchive(ctx context.Context, id string) error {
	return s.archive(ctx, id, false, nil)
}

// ArchiveIfUnchanged implements session.ConditionalRemover.
func (s *Store) ArchiveIfUnchanged(ctx context.Context, id string, seen session.LogMark) error {
	return s.archive(ctx, id, true, &seen)
}

func (s *Store) archive(ctx context.Context, id string, on bool, seen *session.LogMark) error {
	e, err := s.lock(ctx, id)
	if err != nil {
		return err
	}
	defer s.unlock(e)
	var st *state
	err = s.claim(ctx, e, func(cur *state) (format.PartHead, []session.Entry, error) {
		st = cur
		if seen != nil {
			if err := seen.Check(id, cur.last(), len(cur.entries)); err != nil {
				return format.PartHead{}, nil, err
			}
		}
		if cur.archived == on {
			return format.PartHead{}, nil, errNothing
		}
		if on {
			return format.PartHead{K: format.PartArchive, T: time.Now().UTC()}, nil, nil
		}
		return format.PartHead{K: format.PartUnarchive, T: time.Now().UTC()}, nil, nil
	})
	if errors.Is(err, errNothing) {
		return nil
	}
	if err != nil {
		return err
	}
	kind := session.ChangeUnarchived
	if on {
		kind = session.ChangeArchived
	}
	s.publish(id, st, session.Change{Kind: kind, Session: id, Time: time.Now()})
	s.refreshHead(ctx, st)
	return nil
}

// MarkCompacting implements session.CompactionMarker.
func (s *Store) MarkCompacting(ctx context.Context, id string, since time.Time) error {
	e, err := s.lock(ctx, id)
	if err != nil {
		return err
	}
	defer s.unlock(e)
	var st *state
	since = since.UTC()
	err = s.claim(ctx, e, func(cur *state) (format.PartHead, []session.Entry, error) {
		st = cur
		if cur.compact.Equal(since) {
			return format.PartHead{}, nil, errNothing
		}
		return format.PartHead{K: format.PartCompacting, T: since}, nil, nil
	})
	if errors.Is(err, errNothing) {
		return nil
	}
	if err != nil {
		return err
	}
	s.publish(id, st, session.Change{Kind: session.ChangeCompacting, Session: id, Time: time.Now(), Compacting: since})
	s.refreshHead(ctx, st)
	return nil
}

// trash records the log of a deleted session for Purge.
func (s *Store) trash(ctx context.Context, id, inc string) {
	_, _ = s.b.put(ctx, "trash/"+format.EncID(id)+"/"+inc, []byte(time.Now().UTC().Format(time.RFC3339Nano)), writeCond{})
}

// Purge removes the objects of sessions deleted more than the grace
// (Options.Grace) ago. A delete leaves them for that long, so that a
// writer in another process that has not yet seen the delete finds the
// delete marker instead of writing where nobody reads; run Purge from
// time to time (a daily job). A bucket lifecycle rule cannot do it: an
// object's age does not tell a deleted session's objects from a live
// one's first generation. The generations a fold or rewrite replaced
// are removed by the session's later writes; retention (archiving and
// deleting sessions by age) is session.Sweep's, as on every store.
func (s *Store) Purge(ctx context.Context) error {
	type item struct{ rel, k, inc string }
	var due []item
	cutoff := time.Now().Add(-s.opts.Grace)
	err := s.b.list(ctx, "trash/", func(o listed) error {
		parts := strings.Split(strings.TrimPrefix(o.rel, "trash/"), "/")
		if len(parts) != 2 || o.mod.After(cutoff) {
			return nil
		}
		if format.IsKeyID(parts[0]) && parts[1] != "" && !strings.Contains(parts[1], ".") {
			due = append(due, item{o.rel, parts[0], parts[1]})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, it := range due {
		if o, err := s.b.get(ctx, "sessions/"+it.k); err == nil {
			var h format.Head
			if json.Unmarshal(o.data, &h) == nil && h.Inc == it.inc {
				continue // not deleted after all (its head is back): leave it
			}
		} else if !errors.Is(err, errMissing) {
			return err
		}
		var keys []string
		if err := s.b.list(ctx, "log/"+it.k+"/"+it.inc+"/", func(o listed) error { keys = append(keys, o.rel); return nil }); err != nil {
			return err
		}
		for _, k := range keys {
			if err := s.b.del(ctx, k); err != nil {
				return err
			}
		}
		if err := s.b.del(ctx, it.rel); err != nil {
			return err
		}
	}
	return nil
}

// publish hands the changes of a write of this store to its
// subscribers. st is the session's state after the write (nil when it
// deleted it); what it held before the write (st.pre) that subscribers
// were not told of, another process wrote, and the write's catching up
// found: it is told first, as the poller would have.
func (s *Store) publish(id string, st *state, cs ...session.Change) {
	s.mu.Lock()
	p := s.poll
	s.mu.Unlock()
	if p != nil {
		if st == nil {
			p.forget(id)
		} else {
			cs = append(p.caughtUp(st), cs...)
			p.seen(st, "")
		}
	}
	if len(cs) > 0 && s.hub.Active() {
		s.hub.Publish(cs...)
	}
}

// ---- shared state ----

// LoadState implements session.SharedStateStore.
func (s *Store) LoadState(ctx context.Context, scope session.StateScope, owner string) (session.State, error) {
	st, _, err := s.readState(ctx, scope, owner)
	return st, err
}

func stateKey(scope session.StateScope, owner string) string {
	return "state/" + format.EncID(string(scope)) + "/" + format.EncID(owner)
}

func (s *Store) readState(ctx context.Context, scope session.StateScope, owner string) (session.State, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	o, err := s.b.get(ctx, stateKey(scope, owner))
	if errors.Is(err, errMissing) {
		return session.State{}, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	st := session.State{}
	if err := json.Unmarshal(o.data, &st); err != nil {
		return nil, "", s.corrupt(stateKey(scope, owner), err)
	}
	return st, o.etag, nil
}

// UpdateState implements session.SharedStateStore: a read, then a put
// conditional on what was read, again until no other update came in
// between.
func (s *Store) UpdateState(ctx context.Context, scope session.StateScope, owner string, delta session.State) error {
	for attempt := 0; ; attempt++ {
		st, etag, err := s.readState(ctx, scope, owner)
		if err != nil {
			return err
		}
		for k, v := range delta {
			if string(v) == "null" || v == nil {
				delete(st, k)
			} else {
				st[k] = v
			}
		}
		raw, err := json.Marshal(st)
		if err != nil {
			return err
		}
		cond := writeCond{absent: etag == "", match: etag}
		_, err = s.b.put(ctx, stateKey(scope, owner), raw, cond)
		if errors.Is(err, errPrecondition) {
			backoff(ctx, attempt+1)
			continue
		}
		return err
	}
}

var _ session.SharedStateStore = (*Store)(nil)

// ---- the cache's order ----

// lruList orders the store's entries, most recently used last.
type lruList struct{ head, tail *entry }

func (l *lruList) remove(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else if l.head == e {
		l.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else if l.tail == e {
		l.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (l *lruList) touch(e *entry) {
	l.remove(e)
	e.prev = l.tail
	if l.tail != nil {
		l.tail.next = e
	}
	l.tail = e
	if l.head == nil {
		l.head = e
	}
}

func (l *lruList) oldest() *entry { return l.head }
