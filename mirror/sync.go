package mirror

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	session "github.com/agentsession/session"
)

// Result is what Sync did to one session.
type Result struct {
	Session string
	// CreatedRemote and CreatedLocal: the session was on one side only,
	// and was created on the other with all its entries.
	CreatedRemote, CreatedLocal bool
	// Pushed is how many local entries were appended to the remote copy,
	// Pulled how many remote entries to the local one.
	Pushed, Pulled int
	// Branched is how many local entries the remote copy did not have
	// when both sides had written since they last agreed: they were
	// appended to the remote copy as a branch (the remote's leaf kept),
	// and the local copy then took the remote's log.
	Branched int
	// Attempts is how many times the two logs were read: more than one
	// when a writer came in between.
	Attempts int
}

// Changed reports whether Sync wrote anything.
func (r Result) Changed() bool {
	return r.CreatedRemote || r.CreatedLocal || r.Pushed > 0 || r.Pulled > 0 || r.Branched > 0
}

// maxAttempts bounds the reads of Sync while writers keep coming in
// between its read and its write.
const maxAttempts = 20

// ErrDiverged is returned (wrapped, with session.ErrConflict) when the
// two copies hold an entry with the same id and different content: no
// merge keeps both, so Sync changes nothing.
var ErrDiverged = errors.New("mirror: the copies hold different entries under one id")

// Sync makes the local and remote copies of session id the same log,
// losing nothing either side holds:
//
//   - a session on one side only is created on the other;
//   - when one copy is the other's beginning, the rest is appended to it,
//     conditional on its last entry (session.AppendOptions.IfLast);
//   - when both were written since they last agreed, the remote copy
//     keeps its history and its leaf: the local entries it lacks are
//     appended to it as a branch (their parents are where the two
//     copies parted), with a leaf marker that keeps the remote's leaf;
//     then the local copy takes the remote's log, by a rewrite
//     conditional on the log it read.
//
// Every write is conditional on what was read, so a writer that comes
// in between (an agent appending on either side, another mirror) makes
// Sync read again, up to maxAttempts times (then session.ErrConflict).
// The headers are not merged: a created copy gets its source's header,
// and a local copy that takes the remote's log, the remote's.
func Sync(ctx context.Context, local, remote session.Store, id string) (Result, error) {
	res := Result{Session: id}
	for res.Attempts < maxAttempts {
		res.Attempts++
		if err := ctx.Err(); err != nil {
			return res, err
		}
		done, err := syncOnce(ctx, local, remote, id, &res)
		if err == nil && done {
			return res, nil
		}
		if err != nil && !errors.Is(err, session.ErrConflict) && !errors.Is(err, session.ErrExists) {
			return res, err
		}
		if errors.Is(err, ErrDiverged) {
			return res, err
		}
	}
	return res, fmt.Errorf("mirror: session %s: writers kept coming in between %d reads: %w", id, maxAttempts, session.ErrConflict)
}

// syncOnce reads both copies and makes one write that brings them
// closer; done when they were the same.
func syncOnce(ctx context.Context, local, remote session.Store, id string, res *Result) (done bool, err error) {
	l, lerr := load(ctx, local, id)
	r, rerr := load(ctx, remote, id)
	if lerr != nil {
		return false, fmt.Errorf("mirror: local copy of %s: %w", id, lerr)
	}
	if rerr != nil {
		return false, fmt.Errorf("mirror: remote copy of %s: %w", id, rerr)
	}
	switch {
	case l == nil && r == nil:
		return false, fmt.Errorf("mirror: session %s: %w", id, session.ErrNotFound)
	case r == nil:
		if err := create(ctx, remote, l); err != nil {
			return false, err
		}
		res.CreatedRemote, res.Pushed = true, res.Pushed+len(l.Entries)
		return false, nil
	case l == nil:
		if err := create(ctx, local, r); err != nil {
			return false, err
		}
		res.CreatedLocal, res.Pulled = true, res.Pulled+len(r.Entries)
		return false, nil
	}
	k := 0
	for k < len(l.Entries) && k < len(r.Entries) && l.Entries[k].ID() == r.Entries[k].ID() {
		if !bytes.Equal(l.Entries[k].JSON(), r.Entries[k].JSON()) {
			return false, fmt.Errorf("%w: entry %s of session %s (%w)", ErrDiverged, l.Entries[k].ID(), id, session.ErrConflict)
		}
		k++
	}
	switch {
	case k == len(l.Entries) && k == len(r.Entries):
		return true, nil
	case k == len(r.Entries): // the remote is behind
		if err := remote.Append(ctx, id, after(r.Entries), l.Entries[k:]...); err != nil {
			return false, err
		}
		res.Pushed += len(l.Entries) - k
		return false, nil
	case k == len(l.Entries): // the local copy is behind
		if err := local.Append(ctx, id, after(l.Entries), r.Entries[k:]...); err != nil {
			return false, err
		}
		res.Pulled += len(r.Entries) - k
		return false, nil
	}
	// Both wrote: the local entries the remote lacks go to it as a branch.
	inRemote := make(map[string]session.Entry, len(r.Entries))
	for _, e := range r.Entries[k:] {
		inRemote[e.ID()] = e
	}
	var branch []session.Entry
	for _, e := range l.Entries[k:] {
		if re, ok := inRemote[e.ID()]; ok {
			if !bytes.Equal(re.JSON(), e.JSON()) {
				return false, fmt.Errorf("%w: entry %s of session %s (%w)", ErrDiverged, e.ID(), id, session.ErrConflict)
			}
			continue
		}
		branch = append(branch, e)
	}
	merged := r.Entries
	if len(branch) > 0 {
		taken := func(s string) bool {
			_, ok := inRemote[s]
			return ok || has(l.Entries, s) || has(r.Entries[:k], s)
		}
		marker, err := session.NewLeafMarker(newID(taken), session.DefaultLeaf(r.Entries), time.Now().UTC())
		if err != nil {
			return false, err
		}
		add := append(branch, marker)
		if err := remote.Append(ctx, id, after(r.Entries), add...); err != nil {
			return false, err
		}
		res.Branched += len(branch)
		merged = append(append([]session.Entry(nil), r.Entries...), add...)
	}
	// The local copy takes the remote's log, which holds all of its own.
	opts := session.RewriteOptions{IfLast: lastID(l.Entries), IfEntries: len(l.Entries)}
	if err := local.Rewrite(ctx, id, opts, r.Header, merged); err != nil {
		return false, err
	}
	res.Pulled += len(merged) - len(l.Entries) // every local entry is in merged
	return false, nil
}

// load returns the log of id on store, nil when there is none.
func load(ctx context.Context, store session.Store, id string) (*session.Log, error) {
	log, err := store.Load(ctx, id)
	if errors.Is(err, session.ErrNotFound) {
		return nil, nil
	}
	return log, err
}

// create makes a copy of log on store, in one step where the store can.
func create(ctx context.Context, store session.Store, log *session.Log) error {
	if ec, ok := store.(session.EntryCreator); ok {
		return ec.CreateWithEntries(ctx, log.Header, log.Entries)
	}
	if err := store.Create(ctx, log.Header); err != nil {
		return err
	}
	if len(log.Entries) == 0 {
		return nil
	}
	return store.Append(ctx, log.Header.ID, session.AppendOptions{IfEmpty: true}, log.Entries...)
}

// after is the condition of an append to a copy that holds entries.
func after(entries []session.Entry) session.AppendOptions {
	if len(entries) == 0 {
		return session.AppendOptions{IfEmpty: true}
	}
	return session.AppendOptions{IfLast: lastID(entries)}
}

func lastID(entries []session.Entry) string {
	if len(entries) == 0 {
		return ""
	}
	return entries[len(entries)-1].ID()
}

func has(entries []session.Entry, id string) bool {
	for _, e := range entries {
		if e.ID() == id {
			return true
		}
	}
	return false
}

// newID returns an entry id of 8 hexadecimal digits that taken refuses.
func newID(taken func(string) bool) string {
	for {
		var b [4]byte
		rand.Read(b[:])
		if id := hex.EncodeToString(b[:]); !taken(id) {
			return id
		}
	}
}
