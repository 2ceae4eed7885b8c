package encrypt

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/names"
)

// Store is a session.Store that seals what it writes to the store
// beneath it and opens what it reads back: what New returns. See the
// package documentation for what is sealed and what stays in clear.
//
// Besides session.Store it has the abilities of session.WrappedStore
// (TailLoader, Archiver, CompactionMarker, Flusher, SessionCloser),
// passed on to the store beneath, and SharedStateStore with every value
// sealed. It is no BlobStore or Subscriber: the blobs and changes of the
// store beneath would show content, or name it, in clear.
type Store struct {
	*session.WrappedStore
	keys   *Keyring
	strict bool // Options.Strict

	mu      sync.Mutex
	derived map[string]derivedTitle
}

var (
	_ session.Store            = (*Store)(nil)
	_ session.TailLoader       = (*Store)(nil)
	_ session.Archiver         = (*Store)(nil)
	_ session.CompactionMarker = (*Store)(nil)
	_ session.Flusher          = (*Store)(nil)
	_ session.SessionCloser    = (*Store)(nil)
)

// derivedTitle is a title derived from a session's first user message,
// as of the listing it was derived for.
type derivedTitle struct {
	updated time.Time
	entries int
	title   string
}

// maxDerived bounds the derived titles a Store remembers.
const maxDerived = 10000

// New returns store seen through encryption with keys, in the lax mode:
// what is stored in clear (entries, a header, state values written
// before the store was encrypted, or by anyone who can write the store
// beneath) is read as it is, and Reencrypt seals it. NewWithOptions with
// Options.Strict, which refuses it, is the recommended setting.
func New(store session.Store, keys *Keyring) (*Store, error) {
	if store == nil || keys == nil {
		return nil, fmt.Errorf("encrypt: New needs a store and a keyring")
	}
	s := &Store{keys: keys, derived: map[string]derivedTitle{}}
	s.WrappedStore = session.WrapStore(store, codec{s})
	return s, nil
}

// Keys returns the store's keyring.
func (s *Store) Keys() *Keyring { return s.keys }

// codec is the session.StoreCodec of a Store.
type codec struct{ s *Store }

// extraKeptInClear is the header member of the metadata given at
// creation (session.HeaderMeta), which listings filter on.
const extraKeptInClear = "agentsession"

// EncodeHeader seals the title and the members the session package does
// not model; a copy of the metadata stays in clear.
func (c codec) EncodeHeader(_ context.Context, h session.Header) (session.Header, error) {
	k := c.s.keys
	if t := names.StoredString(h.Title); t != "" {
		var err error
		if h.Title, err = k.sealTitle(h.ID, t); err != nil {
			return h, err
		}
	}
	if len(h.Extra) == 0 {
		return h, nil
	}
	pairs := make([][2]json.RawMessage, 0, len(h.Extra))
	var kept session.Fields
	for _, f := range h.Extra {
		key, _ := json.Marshal(f.Key)
		pairs = append(pairs, [2]json.RawMessage{key, f.Value})
		if f.Key == extraKeptInClear {
			kept.Set(f.Key, f.Value)
		}
	}
	pt, err := json.Marshal(pairs)
	if err != nil {
		return h, fmt.Errorf("encrypt: header of %s: %w", h.ID, err)
	}
	b, err := k.sealBox("header", h.ID, pt)
	if err != nil {
		return h, err
	}
	raw, _ := json.Marshal(b)
	kept.Set(SealedType, raw)
	h.Extra = kept
	return h, nil
}

// DecodeHeader opens what EncodeHeader sealed. A title or members in
// clear are returned as they are, or refused by a strict store.
func (c codec) DecodeHeader(_ context.Context, h session.Header) (session.Header, error) {
	return c.s.decodeHeader(h, c.s.strict)
}

// decodeHeader is DecodeHeader, refusing what is in clear when strict.
func (s *Store) decodeHeader(h session.Header, strict bool) (session.Header, error) {
	if strict {
		if what := clearInHeader(h); what != "" {
			return h, &UnsealedError{Session: h.ID, What: what}
		}
	}
	k := s.keys
	if isSealedTitle(h.Title) {
		t, key, err := k.openTitle(h.ID, h.Title)
		if err != nil {
			return h, &OpenError{Session: h.ID, Key: key, Err: err}
		}
		h.Title = t
	}
	raw, ok := h.Extra.Get(SealedType)
	if !ok {
		return h, nil
	}
	pt, key, err := k.openBox(raw, "header", h.ID)
	if err != nil {
		return h, &OpenError{Session: h.ID, Key: key, Err: err}
	}
	var pairs [][2]json.RawMessage
	if err := json.Unmarshal(pt, &pairs); err != nil {
		return h, &OpenError{Session: h.ID, Key: key, Err: err}
	}
	extra := make(session.Fields, 0, len(pairs))
	for _, p := range pairs {
		var name string
		if err := json.Unmarshal(p[0], &name); err != nil {
			return h, &OpenError{Session: h.ID, Key: key, Err: err}
		}
		extra = append(extra, session.Field{Key: name, Value: p[1]})
	}
	h.Extra = extra
	return h, nil
}

func (c codec) EncodeEntry(_ context.Context, id string, e session.Entry) (session.Entry, error) {
	return c.s.keys.sealEntry(id, e)
}

func (c codec) DecodeEntry(_ context.Context, id string, e session.Entry) (session.Entry, error) {
	return c.s.decodeEntry(id, e, c.s.strict)
}

// decodeEntry opens the stored entry e of session id; one in clear is
// returned as it is, or refused when strict (the metadata entries, in
// clear by design, excepted).
func (s *Store) decodeEntry(id string, e session.Entry, strict bool) (session.Entry, error) {
	if strict && !isSealed(e) && !isMeta(e) {
		return session.Entry{}, clearEntry(id, e, "")
	}
	return s.keys.openEntry(id, e)
}

// DecodeInfo opens the title of a listing. A session with no title of
// its own lists the title derived from its first user message, which
// the store beneath cannot see: the session is loaded (once per change)
// to derive it. A title that cannot be opened lists as "" (Load reports
// why).
//
// A strict store lists no title in clear (from a header's title, a
// session_info entry's name or a user message in clear, none of which
// it wrote): the session is listed, with the title derived from what
// opens, if anything does (Load says what is refused).
func (c codec) DecodeInfo(ctx context.Context, info *session.SessionInfo) error {
	if isSealedTitle(info.Title) {
		t, _, err := c.s.keys.openTitle(info.ID, info.Title)
		if err != nil {
			t = ""
		}
		info.Title = t
		return nil
	}
	if c.s.strict {
		info.Title, info.TitleDerived = "", false
	}
	if info.Title != "" || info.Entries == 0 {
		return nil
	}
	t, err := c.s.derivedTitle(ctx, info)
	if err != nil {
		return err
	}
	info.Title, info.TitleDerived = t, t != ""
	return nil
}

// derivedTitle returns the title derived from the first user message of
// the listed session.
func (s *Store) derivedTitle(ctx context.Context, info *session.SessionInfo) (string, error) {
	s.mu.Lock()
	d, ok := s.derived[info.ID]
	s.mu.Unlock()
	if ok && d.entries == info.Entries && d.updated.Equal(info.Updated) {
		return d.title, nil
	}
	l, err := s.Load(ctx, info.ID)
	if err != nil {
		// Gone since the listing, or unreadable (Load says why): listed
		// without a title rather than failing the listing.
		return "", ctx.Err()
	}
	var f session.InfoFold
	for _, e := range l.Entries {
		f.Add(e)
	}
	s.mu.Lock()
	if len(s.derived) >= maxDerived {
		clear(s.derived)
	}
	s.derived[info.ID] = derivedTitle{updated: info.Updated, entries: info.Entries, title: f.FirstUser}
	s.mu.Unlock()
	return f.FirstUser, nil
}
