package session

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"
)

// Retried writes.
//
// A write can happen and its answer still be lost: a database commits and
// the connection drops, a context ends while a disk write completes. The
// caller cannot tell, and retries. So that the retry does not store the
// entries twice, an append whose entries are all in the log already, byte
// for byte, is taken for the retry of one that happened and succeeds
// without writing anything, whatever its conditions (they were decided
// for the first attempt, which may have changed what they see). Some of
// them stored and others not, or an id stored with other bytes, is
// ErrConflict, as before. The Session side keeps the entries of a failed
// write and sends the very same bytes again when the host retries the
// call (see pendingWrite).

// retried reports whether every one of entries is in the log already
// (exists), each the same bytes as stored (same compares them, once the
// ids were all found): the append is a retry of one that happened. None
// of them stored is (false, nil); anything in between is ErrConflict.
func retried(entries []Entry, exists func(e Entry) bool, same func() (bool, error)) (bool, error) {
	found := ""
	all := true
	for _, e := range entries {
		if exists(e) {
			if found == "" {
				found = e.id
			}
		} else {
			all = false
		}
	}
	switch {
	case found == "":
		return false, nil
	case !all:
		return false, fmt.Errorf("%w: entry id %s is already in the session", ErrConflict, found)
	}
	ok, err := same()
	if err != nil {
		return false, err
	}
	if !ok {
		return false, fmt.Errorf("%w: the ids of the appended entries are in the session with other content", ErrConflict)
	}
	return true, nil
}

// sameEntries compares the bytes of entries with the stored ones that
// stored returns for each id (false when there is none).
func sameEntries(entries []Entry, stored func(id string) ([]byte, bool)) bool {
	for _, e := range entries {
		b, ok := stored(e.id)
		if !ok || !bytes.Equal(b, e.bytes()) {
			return false
		}
	}
	return true
}

// draft is what one attempt of a Session write makes its entries from.
type draft struct {
	parent string        // the entry the first new one goes under; "" for a root
	now    time.Time     // the time of the write: the same in every attempt
	stamp  string        // now as entries write it
	newID  func() string // the id of the next new entry
}

// pendingWrite is a Session write that failed in a way that leaves its
// outcome unknown: the store may have written it all the same.
//
// When the host calls the same method again with the same arguments (its
// retry), the entries come out the same bytes if they are made with the
// same ids, parent and time: the Session tells a retry from another call
// that way, and sends the very entries of the first attempt, which the
// store accepts as the retry of an append that happened, or appends.
// Another call first finds out whether the write happened (a reload):
// if it did, the handle takes it in as if its answer had come (the leaf
// moves on to it) before the call goes ahead; if it did not, it is
// forgotten. A Reload takes it in as well.
type pendingWrite struct {
	parent    string
	now       time.Time
	entries   []Entry
	leafAfter func(added []int32) int32
	landed    bool // found in the store and taken in by a reload
}

// retryOf reports whether build, the write being made, is the retry of
// the pending write p: made with p's ids, parent and time, its entries
// are p's, byte for byte. Callers hold mu.
func (s *Session) retryOf(p *pendingWrite, build func(*draft) ([]Entry, error)) bool {
	k := 0
	d := &draft{parent: p.parent, now: p.now, stamp: s.stampAt(p.now), newID: func() string {
		k++
		if k <= len(p.entries) {
			return p.entries[k-1].id
		}
		return "" // more entries than p: not the same write
	}}
	entries, err := build(d)
	if err != nil || len(entries) != len(p.entries) {
		return false
	}
	for i, e := range entries {
		if !bytes.Equal(e.bytes(), p.entries[i].bytes()) {
			return false
		}
	}
	return true
}

// settle finds out, before a write other than its retry, whether the
// pending write happened, and then forgets it. Callers hold mu.
func (s *Session) settle(ctx context.Context) error {
	if !s.pending.landed {
		if err := s.reload(ctx); err != nil {
			return err // the store's error, as the write would have had it
		}
	}
	s.pending = nil
	return nil
}

// adoptPending takes in the pending write if a reload found it in the
// store, byte for byte: the leaf moves on to it as if the write had
// returned, unless the handle moved elsewhere meanwhile. Callers hold mu.
func (s *Session) adoptPending() {
	p := s.pending
	if p == nil || p.landed {
		return
	}
	idx := make([]int32, len(p.entries))
	for k, e := range p.entries {
		i, ok := s.t.lookup(e.id)
		if !ok || !bytes.Equal(s.t.nodes[i].e.bytes(), e.bytes()) {
			return
		}
		idx[k] = i
	}
	p.landed = true
	from := int32(-1)
	if p.parent != "" {
		var ok bool
		if from, ok = s.t.lookup(p.parent); !ok {
			return
		}
	}
	if s.leaf != from {
		return
	}
	to := idx[len(idx)-1]
	if p.leafAfter != nil {
		to = p.leafAfter(slices.Clone(idx))
	}
	s.pc, s.usage.leaf = nil, -2
	s.leaf = to
}
