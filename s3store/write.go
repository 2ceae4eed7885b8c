package s3store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/s3store/internal/format"
	"github.com/agentsession/session/storekit"
)

// The writes: create, append, rewrite, delete, each a conditional put
// of the session's next part (claim) or of a new generation.

// Create implements session.Store.
func (s *Store) Create(ctx context.Context, h session.Header) error {
	return s.create(ctx, h, nil)
}

// CreateWithEntries implements session.EntryCreator: the session and
// its first entries appear in one step.
func (s *Store) CreateWithEntries(ctx context.Context, h session.Header, entries []session.Entry) error {
	if err := storekit.CheckEntries(entries); err != nil {
		return err
	}
	return s.create(ctx, h, entries)
}

func (s *Store) create(ctx context.Context, h session.Header, entries []session.Entry) error {
	entries, err := s.externalize(ctx, entries)
	if err != nil {
		return err
	}
	e, err := s.lock(ctx, h.ID)
	if err != nil {
		return err
	}
	defer s.unlock(e)
	if err := s.limits.CheckLog(h, entries); err != nil {
		return fmt.Errorf("s3store: create %s: %w", h.ID, err)
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return err
	}
	// The header as every reader will see it (strings as stored).
	read, err := session.DecodeLog(append(hdr, '\n'), &session.ReadOptions{Strict: true, Limits: s.limits})
	if err != nil {
		return fmt.Errorf("s3store: create %s: %w", h.ID, err)
	}
	for attempt := 0; ; attempt++ {
		st := &state{id: h.ID, inc: format.RandomHex(8), gen: format.NewGen(0), header: read.Header, hdrRaw: hdr, ids: map[string]int{}, size: int64(len(hdr)) + 1}
		now := time.Now().UTC()
		st.updated = now
		d := format.Descriptor{V: 1, Header: hdr, Updated: now}
		var written []string
		if len(entries) > 0 {
			sg, err := s.putSegment(ctx, st, entries)
			if err != nil {
				return err
			}
			d.Segments, d.Entries = []format.Segment{sg}, len(entries)
			written = append(written, format.LogDir(st.id, st.inc)+sg.Key)
		}
		st.desc = d
		st.add(entries)
		raw, _ := json.Marshal(d)
		dkey := format.PartKey(st.id, st.inc, st.gen, 0)
		if _, err := s.b.put(ctx, dkey, raw, writeCond{absent: true}); err != nil {
			return err
		}
		written = append(written, dkey)
		st.head = format.Head{V: 1, Inc: st.inc, Gen: st.gen, Info: st.info()}
		hraw, _ := json.Marshal(st.head)
		etag, err := s.b.put(ctx, format.HeadKey(h.ID), hraw, writeCond{absent: true})
		if err == nil {
			st.headETag, st.checked = etag, time.Now()
			e.st = st
			s.publish(h.ID, st, append([]session.Change{{Kind: session.ChangeCreated, Session: h.ID, Time: now}},
				session.ChangesOf(h.ID, entries, now)...)...)
			return nil
		}
		s.removeAll(written)
		if !errors.Is(err, errPrecondition) {
			return err
		}
		// The id is taken, unless by a session deleted half-way (its
		// head outlived its log's delete marker): finish that delete,
		// once, and create again.
		if attempt == 0 && s.finishDelete(ctx, h.ID) {
			continue
		}
		return fmt.Errorf("s3store: session %s: %w", h.ID, session.ErrExists)
	}
}

// finishDelete removes the head of a session whose log ends with a
// delete marker, and reports whether it did.
func (s *Store) finishDelete(ctx context.Context, id string) bool {
	_, etag, err := s.readHead(ctx, id)
	if err != nil {
		return false
	}
	if _, err := s.load(ctx, id); !errors.Is(err, session.ErrNotFound) {
		return false
	}
	return s.delHead(ctx, id, etag) == nil
}

func (s *Store) delHead(ctx context.Context, id, etag string) error {
	s.b.requests.add(opDelete)
	_, err := s.b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.b.name, Key: aws.String(s.b.key(format.HeadKey(id))), IfMatch: aws.String(etag)})
	if err != nil {
		return s.b.fail("delete", format.HeadKey(id), err)
	}
	return nil
}

// removeAll removes objects the store wrote and no one refers to (a
// lost race), as well as it can: what stays is garbage, never read.
func (s *Store) removeAll(keys []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, k := range keys {
		_ = s.b.del(ctx, k)
	}
}

// putSegment writes entries as a new segment of st's session.
func (s *Store) putSegment(ctx context.Context, st *state, entries []session.Entry) (format.Segment, error) {
	var buf []byte
	for _, e := range entries {
		buf = e.AppendJSON(buf)
		buf = append(buf, '\n')
	}
	sg := format.Segment{Key: "seg/" + format.RandomHex(12), Entries: len(entries), Bytes: int64(len(buf))}
	if _, err := s.b.put(ctx, format.LogDir(st.id, st.inc)+sg.Key, buf, writeCond{absent: true}); err != nil {
		return sg, err
	}
	return sg, nil
}

// Append implements session.Store. One request when the store's state
// of the session is current and no other writer came in between (two
// with the listing's update, three when it folds).
func (s *Store) Append(ctx context.Context, id string, opts session.AppendOptions, entries ...session.Entry) error {
	if err := storekit.CheckEntries(entries); err != nil {
		return err
	}
	entries, err := s.externalize(ctx, entries)
	if err != nil {
		return err
	}
	e, err := s.lock(ctx, id)
	if err != nil {
		return err
	}
	defer s.unlock(e)
	var st *state
	err = s.claim(ctx, e, func(cur *state) (format.PartHead, []session.Entry, error) {
		st = cur
		if done, err := retried(cur, entries); err != nil || done {
			return format.PartHead{}, nil, errDone(err)
		}
		if err := storekit.CheckAppend(opts, cur.last()); err != nil {
			return format.PartHead{}, nil, err
		}
		if err := s.limits.CheckAppend(cur.size, len(cur.entries), entries); err != nil {
			return format.PartHead{}, nil, fmt.Errorf("s3store: append to %s: %w", id, err)
		}
		return format.PartHead{K: format.PartAppend, T: time.Now().UTC()}, entries, nil
	})
	if errors.Is(err, errNothing) {
		return nil
	}
	if err != nil {
		return err
	}
	s.publish(id, st, session.ChangesOf(id, entries, st.updated)...)
	if st.parts >= s.opts.FoldParts {
		s.fold(ctx, st) // best effort: the append is in
	}
	s.refreshHead(ctx, st)
	return nil
}

// errNothing is what a claim's decide returns (through errDone) when
// the write is done already: a retried append.
var errNothing = errors.New("s3store: nothing to write")

func errDone(err error) error {
	if err != nil {
		return err
	}
	return errNothing
}

// claim writes the next part of e's session, the one decide returns for
// the session's current state: a conditional put of the next seq, which
// fails when another writer took it first; the store then reads what
// that writer wrote and asks decide again. This is the one point where
// writers are ordered.
//
// A decision not to write (a condition that fails, nothing to do, a
// retried append) is only taken on the log as it is: one made on the
// store's memory of it is made again after catching up.
func (s *Store) claim(ctx context.Context, e *entry, decide func(*state) (format.PartHead, []session.Entry, error)) error {
	caught := false
	for attempt := 0; ; attempt++ {
		st, err := s.known(ctx, e, false, caught)
		if err != nil {
			return err
		}
		ph, entries, err := decide(st)
		if err != nil {
			if !caught {
				caught = true
				continue
			}
			return err
		}
		data := format.EncodePart(ph, entries)
		seq := st.seq + 1
		pre := toldOf(st, "")
		st.pre = &pre
		_, err = s.b.put(ctx, format.PartKey(st.id, st.inc, st.gen, seq), data, writeCond{absent: true})
		if errors.Is(err, errPrecondition) {
			if err := ctx.Err(); err != nil {
				return err
			}
			if attempt > 0 {
				backoff(ctx, attempt)
			}
			caught = true
			continue // another writer took seq: read it, decide again
		}
		if err != nil {
			// The part may or may not be in (a reply lost): read again
			// next time.
			e.st = nil
			return err
		}
		if ph.K == format.PartDeleted {
			st.seq, st.deleted = seq, true
			return nil
		}
		if err := s.applyPart(ctx, st, seq, data); err != nil {
			e.st = nil
			return err
		}
		return nil
	}
}

// backoff waits a little, more after each lost race, so that writers
// contending for one session do not keep colliding.
func backoff(ctx context.Context, attempt int) {
	d := time.Duration(attempt) * 5 * time.Millisecond
	if d > 200*time.Millisecond {
		d = 200 * time.Millisecond
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// retried recognises an append of entries st holds already: all of them,
// with the same bytes, is a retry (done); some of them, or other bytes,
// is a conflict.
func retried(st *state, entries []session.Entry) (bool, error) {
	found := 0
	for _, e := range entries {
		if _, ok := st.ids[e.ID()]; ok {
			found++
		}
	}
	switch {
	case found == 0:
		return false, nil
	case found < len(entries):
		return false, fmt.Errorf("%w: an entry id of the append is already in session %s", session.ErrConflict, st.id)
	}
	for _, e := range entries {
		if string(st.entries[st.ids[e.ID()]].JSON()) != string(e.JSON()) {
			return false, fmt.Errorf("%w: the ids of the appended entries are in session %s with other content", session.ErrConflict, st.id)
		}
	}
	return true, nil
}

// Rewrite implements session.Store: a new generation with the new log,
// which becomes the session's when its marker takes the next seq, so
// that an append that came in between makes the rewrite fail (or, with
// no conditions, try again) rather than be dropped.
func (s *Store) Rewrite(ctx context.Context, id string, opts session.RewriteOptions, h session.Header, entries []session.Entry) error {
	if h.ID != id {
		return fmt.Errorf("s3store: rewrite of %s with a header for %s", id, h.ID)
	}
	for i, x := range entries {
		if x.IsZero() {
			return fmt.Errorf("s3store: rewrite with zero Entry at %d", i)
		}
	}
	if err := s.limits.CheckLog(h, entries); err != nil {
		return fmt.Errorf("s3store: rewrite of %s: %w", id, err)
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if entries, err = s.externalize(ctx, entries); err != nil {
		return err
	}
	// The new log as a reader will read it, refused before anything is
	// written if it cannot be read back.
	read, err := session.DecodeLog(append(append(hdr[:len(hdr):len(hdr)], '\n'), joinLines(entries)...), &session.ReadOptions{Strict: true, Limits: s.limits})
	if err != nil {
		return fmt.Errorf("s3store: rewrite of %s: %w", id, err)
	}
	e, err := s.lock(ctx, id)
	if err != nil {
		return err
	}
	defer s.unlock(e)
	caught := false
	for attempt := 0; ; attempt++ {
		st, err := s.known(ctx, e, false, caught)
		if err != nil {
			return err
		}
		if err := opts.Check(st.last(), len(st.entries)); err != nil {
			if !caught { // decided on the store's memory: again on the log
				caught = true
				continue
			}
			return err
		}
		now := time.Now().UTC()
		won, err := s.newGeneration(ctx, st, hdr, entries, now, read)
		if err != nil {
			return err
		}
		if !won {
			backoff(ctx, attempt+1)
			caught = true
			continue
		}
		s.publish(id, st, session.Change{Kind: session.ChangeRewritten, Session: id, Time: now})
		s.refreshHead(ctx, st)
		return nil
	}
}

// Delete implements session.Store: a delete marker at the next seq (no
// writer appends after it), then the head; the log's objects go after
// the grace (Purge).
func (s *Store) Delete(ctx context.Context, id string) error {
	return s.remove(ctx, id, nil)
}

// DeleteIfUnchanged implements session.ConditionalRemover.
func (s *Store) DeleteIfUnchanged(ctx context.Context, id string, seen session.LogMark) error {
	return s.remove(ctx, id, &seen)
}

func (s *Store) remove(ctx context.Context, id string, seen *session.LogMark) error {
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
		return format.PartHead{K: format.PartDeleted, T: time.Now().UTC()}, nil, nil
	})
	if errors.Is(err, session.ErrNotFound) {
		s.finishDelete(ctx, id) // a delete another writer left half-done
	}
	if err != nil {
		return err
	}
	e.st = nil
	// Deleted once the marker is in: told now, before the head goes, so
	// that the poller does not find the head gone first and tell it too.
	s.publish(id, nil, session.Change{Kind: session.ChangeDeleted, Session: id, Time: time.Now()})
	if err := s.delHead(ctx, id, st.headETag); err != nil && !errors.Is(err, errMissing) {
		// The head changed since it was read: read it and delete it if
		// it is still this session's.
		if h, etag, err2 := s.readHead(ctx, id); err2 == nil && h.Inc == st.inc {
			_ = s.delHead(ctx, id, etag)
		}
	}
	s.trash(ctx, id, st.inc)
	return nil
}
