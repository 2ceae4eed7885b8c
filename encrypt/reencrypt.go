package encrypt

import (
	"context"

	session "github.com/agentsession/session"
)

// Reencrypt seals session id again with the current key, if anything of
// it is sealed with another key or written in clear (the metadata
// entries excepted, which stay in clear), and reports whether it did.
// It reads the stored log and rewrites it in one conditional Rewrite,
// on the log it read: when another writer changed the session meanwhile
// it fails with session.ErrConflict and changes nothing; run it again.
// A log with lines that are not entries is refused (session.ErrCorrupt,
// see session.RewriteOptions.DropUnreadable): repair it first.
//
// A strict Store refuses a session holding anything in clear
// (*UnsealedError, nothing changed): sealing it would vouch for what
// anyone who can write the store beneath may have added. Seal a session
// written in clear before encryption with SealPlaintext. A lax Store
// seals what it finds in clear, whoever wrote it.
//
// It is how a key is retired: see the package documentation.
func (s *Store) Reencrypt(ctx context.Context, id string) (bool, error) {
	stored, err := s.Inner().Load(ctx, id)
	if err != nil {
		return false, err
	}
	if !s.stale(stored) {
		return false, nil
	}
	return s.rewriteSealed(ctx, id, stored, s.strict)
}

// stale reports whether a stored log holds anything not sealed with the
// current key.
func (s *Store) stale(l *session.Log) bool {
	cur := s.keys.Current()
	h := l.Header
	if h.Title != "" && titleKey(h.Title) != cur {
		return true
	}
	for _, f := range h.Extra {
		if f.Key != extraKeptInClear && f.Key != SealedType {
			return true // a member in clear
		}
	}
	if raw, ok := h.Extra.Get(SealedType); ok && boxKey(raw) != cur {
		return true
	}
	for _, e := range l.Entries {
		if !isMeta(e) && sealedKey(e) != cur {
			return true
		}
	}
	return false
}

// ReencryptAll runs Reencrypt on every session of the store, archived
// ones included, and returns how many it sealed again. It stops at the
// first error.
func (s *Store) ReencryptAll(ctx context.Context) (int, error) {
	var ids []string
	opts := session.ListOptions{Archived: true}
	for {
		p, err := s.Inner().List(ctx, opts)
		if err != nil {
			return 0, err
		}
		for _, info := range p.Sessions {
			ids = append(ids, info.ID)
		}
		if p.Next == "" {
			break
		}
		opts.Cursor = p.Next
	}
	done := 0
	for _, id := range ids {
		changed, err := s.Reencrypt(ctx, id)
		if err != nil {
			return done, err
		}
		if changed {
			done++
		}
	}
	return done, nil
}
