package encrypt

import (
	"context"
	"errors"
	"fmt"

	session "github.com/agentsession/session"
)

// Strict mode: what is stored in clear where this package seals is
// refused, rather than read as the session's own.

// Options configures a Store (NewWithOptions). The zero value (or nil) is
// what New gives: the lax mode.
type Options struct {
	// Strict refuses, on every read, what is stored in clear where this
	// package seals: an entry that is not sealed (the metadata entries
	// excepted, which stay in clear by design), a header whose title or
	// members the session package does not model are in clear, a shared
	// state value in clear. Each is an *UnsealedError (ErrUnsealed,
	// session.ErrCorrupt) naming the session and the entry. Listings
	// show no title that is in clear. Reencrypt refuses to seal such a
	// session (it would vouch for what it cannot tell from an
	// intruder's), and SealPlaintext is the explicit migration of
	// sessions written in clear before the store was encrypted.
	//
	// Recommended: without it (the lax mode, New) anyone who can write
	// the files or rows beneath can add entries in clear (a user message,
	// an assistant reply, a title) that are read as genuine, and that
	// Reencrypt then seals. The lax mode exists for stores moving to
	// encryption, whose sessions are still partly in clear.
	Strict bool
}

// ErrUnsealed is what a strict Store reports of data stored in clear
// where it seals (see Options.Strict). errors.Is(err, session.ErrCorrupt)
// holds too.
var ErrUnsealed = errors.New("encrypt: stored in clear where a sealed value belongs")

// UnsealedError is data a strict Store found in clear where it seals:
// an entry of a session, its header, or a shared state value. It is
// ErrUnsealed and session.ErrCorrupt to errors.Is.
type UnsealedError struct {
	Session string // the session (for shared state, its scope and owner)
	Entry   string // the entry's id; "" for the header; "state <key>" for a state value
	What    string // what is in clear: "message entry", "title" ...
	Why     string // why it is refused, when more than its being in clear
}

func (e *UnsealedError) Error() string {
	where := "header"
	if e.Entry != "" {
		where = "entry " + e.Entry
	}
	why := e.Why
	if why == "" {
		why = "a strict store reads only what it sealed; SealPlaintext seals a session written in clear before encryption"
	}
	return fmt.Sprintf("encrypt: session %s: %s: %s stored in clear (%s)", e.Session, where, e.What, why)
}

// Unwrap returns ErrUnsealed and session.ErrCorrupt.
func (e *UnsealedError) Unwrap() []error { return []error{ErrUnsealed, session.ErrCorrupt} }

// NewWithOptions returns store seen through encryption with keys,
// configured by opts (nil: the lax mode, as New).
func NewWithOptions(store session.Store, keys *Keyring, opts *Options) (*Store, error) {
	s, err := New(store, keys)
	if err != nil {
		return nil, err
	}
	if opts != nil {
		s.strict = opts.Strict
	}
	return s, nil
}

// Strict reports whether the store refuses what is stored in clear (see
// Options.Strict).
func (s *Store) Strict() bool { return s.strict }

// clearInHeader returns what the stored header h holds in clear where
// the store seals ("" when nothing): a title, or members the session
// package does not model.
func clearInHeader(h session.Header) string {
	if h.Title != "" && !isSealedTitle(h.Title) {
		return "title"
	}
	for _, f := range h.Extra {
		if f.Key != extraKeptInClear && f.Key != SealedType {
			return fmt.Sprintf("header member %q", f.Key)
		}
	}
	return ""
}

// sealedInHeader reports whether the stored header h holds anything
// sealed.
func sealedInHeader(h session.Header) bool {
	if isSealedTitle(h.Title) {
		return true
	}
	_, ok := h.Extra.Get(SealedType)
	return ok
}

// isSealed reports whether the stored entry e holds a sealed entry
// (whether it opens or not).
func isSealed(e session.Entry) bool {
	_, ok := e.Field(sealedMember)
	return ok
}

// clearEntry returns the error for the stored entry e of session sess,
// which is in clear.
func clearEntry(sess string, e session.Entry, why string) error {
	return &UnsealedError{Session: sess, Entry: e.ID(), What: e.Type() + " entry", Why: why}
}

// SealPlaintext seals session id where it is in clear, and reports
// whether it changed anything: the migration of a session written before
// the store was encrypted, which a strict Store refuses to read until
// then. Like Reencrypt it reads the stored log and rewrites it, sealed
// with the current key, in one conditional Rewrite (session.ErrConflict
// when another writer changed the session meanwhile: run it again).
//
// What it trusts: everything it finds in clear, as the session's own.
// It cannot tell an entry written before the switch to encryption from
// one an intruder added to the files or rows since, so run it only on
// sessions known to have been written in clear, before anyone else could
// write the store, and never on a schedule. It refuses (*UnsealedError,
// nothing changed) what no writer of this package leaves: an entry in
// clear after a sealed one (a Store seals everything it writes, so the
// part in clear of a session comes first), an entry in clear in a
// session whose header was sealed (created or rewritten by a Store), a
// header with parts sealed and parts in clear.
func (s *Store) SealPlaintext(ctx context.Context, id string) (bool, error) {
	stored, err := s.Inner().Load(ctx, id)
	if err != nil {
		return false, err
	}
	h := stored.Header
	sealed := sealedInHeader(h)
	if what := clearInHeader(h); what != "" && sealed {
		return false, &UnsealedError{Session: id, What: what, Why: "the header is partly sealed: not written before encryption"}
	}
	for _, e := range stored.Entries {
		switch {
		case isMeta(e):
		case isSealed(e):
			sealed = true
		case sealed:
			return false, clearEntry(id, e, "after sealed data: not written before encryption")
		}
	}
	if !s.stale(stored) {
		return false, nil
	}
	return s.rewriteSealed(ctx, id, stored, false)
}

// rewriteSealed rewrites the stored log of session id sealed with the
// current key, conditional on that log; strict decodes it as a strict
// store reads.
func (s *Store) rewriteSealed(ctx context.Context, id string, stored *session.Log, strict bool) (bool, error) {
	n := len(stored.Entries)
	opts := session.RewriteOptions{IfEmpty: n == 0}
	if n > 0 {
		opts.IfLast, opts.IfEntries = stored.Entries[n-1].ID(), n
	}
	h, err := s.decodeHeader(stored.Header, strict)
	if err != nil {
		return false, err
	}
	entries := make([]session.Entry, n)
	for i, e := range stored.Entries {
		if entries[i], err = s.decodeEntry(id, e, strict); err != nil {
			return false, err
		}
	}
	if err := s.Rewrite(ctx, id, opts, h, entries); err != nil {
		return false, fmt.Errorf("encrypt: re-encrypting %s: %w", id, err)
	}
	return true, nil
}
