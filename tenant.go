package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Tenants: one store shared by the users of a multi-user host, each of
// them seeing only their own sessions.

// UserStore is a view of a store for one user: what ForUser returns. Its
// session ids are the user's own: the same id names different sessions
// for two users, a user never lists, opens, changes or deletes another
// user's session through it, and learns nothing of theirs (a Create of an
// id another user has succeeds). In the store beneath, a session of user
// u with id x has the id "u.x" and u in its metadata (Meta.User).
//
// It passes on the abilities of the store beneath (archive, events,
// tail loads, flushes, blobs) restricted to the user, and shared state in
// the user's scope and the app scope. It has no Unwrap and no blob
// collection on purpose: a collection through one user's view would not
// see the other users' sessions, and would delete the blobs they refer
// to. Collect blobs on the store beneath.
type UserStore struct {
	store  Store
	user   string
	prefix string
}

var (
	_ Store            = (*UserStore)(nil)
	_ TailLoader       = (*UserStore)(nil)
	_ EntryCreator     = (*UserStore)(nil)
	_ Archiver         = (*UserStore)(nil)
	_ Subscriber       = (*UserStore)(nil)
	_ SharedStateStore = (*UserStore)(nil)
	_ BlobStore        = (*UserStore)(nil)
	_ Flusher          = (*UserStore)(nil)
	_ SessionCloser    = (*UserStore)(nil)
	_ CompactionMarker = (*UserStore)(nil)
)

// MarkCompacting implements CompactionMarker with the store's (nothing
// is recorded on a store without one).
func (u *UserStore) MarkCompacting(ctx context.Context, id string, since time.Time) error {
	in, err := u.inner(id)
	if err != nil {
		return err
	}
	return u.notFound(markCompacting(ctx, u.store, in, since), id)
}

// ForUser returns the view of store for user, whose name must be a valid
// id (ValidateID) without '.'. The ids of the user's sessions must be
// short enough that "user.id" is a valid id too.
func ForUser(store Store, user string) (*UserStore, error) {
	if err := ValidateID(user); err != nil || strings.Contains(user, ".") {
		return nil, fmt.Errorf("session: user %q: a user name is an id without '.': %w", user, ErrInvalidID)
	}
	return &UserStore{store: store, user: user, prefix: user + "."}, nil
}

// User returns the user the view is for.
func (u *UserStore) User() string { return u.user }

// inner returns the id of session id in the store beneath.
func (u *UserStore) inner(id string) (string, error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	in := u.prefix + id
	if err := ValidateID(in); err != nil {
		return "", fmt.Errorf("session: id %q is too long for user %q: %w", id, u.user, ErrInvalidID)
	}
	return in, nil
}

// outer returns the user's id of a session id of the store beneath, ok
// false for another user's.
func (u *UserStore) outer(id string) (string, bool) {
	if !strings.HasPrefix(id, u.prefix) {
		return "", false
	}
	return id[len(u.prefix):], true
}

// notFound keeps an error about the inner id from naming it.
func (u *UserStore) notFound(err error, id string) error {
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	return err
}

// header maps a header between the views: in=true to the store beneath.
func (u *UserStore) header(h Header, in bool) (Header, error) {
	h = h.Clone()
	if in {
		id, err := u.inner(h.ID)
		if err != nil {
			return h, err
		}
		h.ID = id
		if p := h.ParentSession; p != "" && ValidateID(p) == nil {
			if h.ParentSession, err = u.inner(p); err != nil {
				return h, err
			}
		}
		m := HeaderMeta(h)
		if m.User != "" && m.User != u.user {
			return h, fmt.Errorf("session: a session of user %q created through the view of %q", m.User, u.user)
		}
		m.User = u.user
		return h, setHeaderMeta(&h, m)
	}
	h.ID, _ = u.outer(h.ID)
	if p, ok := u.outer(h.ParentSession); ok {
		h.ParentSession = p
	}
	return h, nil
}

func (u *UserStore) log(l *Log) *Log {
	if l != nil {
		l.Header, _ = u.header(l.Header, false)
	}
	return l
}

// Create implements Store; the header's Meta.User is set to the user.
func (u *UserStore) Create(ctx context.Context, h Header) error {
	in, err := u.header(h, true)
	if err != nil {
		return err
	}
	err = u.store.Create(ctx, in)
	if errors.Is(err, ErrExists) {
		return fmt.Errorf("%w: session %s", ErrExists, h.ID)
	}
	return err
}

// CreateWithEntries implements EntryCreator, in one step when the store
// beneath can.
func (u *UserStore) CreateWithEntries(ctx context.Context, h Header, entries []Entry) error {
	in, err := u.header(h, true)
	if err != nil {
		return err
	}
	err = createWithEntries(ctx, u.store, in, entries)
	if errors.Is(err, ErrExists) {
		return fmt.Errorf("%w: session %s", ErrExists, h.ID)
	}
	return err
}

// Append implements Store.
func (u *UserStore) Append(ctx context.Context, id string, opts AppendOptions, entries ...Entry) error {
	in, err := u.inner(id)
	if err != nil {
		return err
	}
	return u.notFound(u.store.Append(ctx, in, opts, entries...), id)
}

// Load implements Store.
func (u *UserStore) Load(ctx context.Context, id string) (*Log, error) {
	in, err := u.inner(id)
	if err != nil {
		return nil, err
	}
	l, err := u.store.Load(ctx, in)
	return u.log(l), u.notFound(err, id)
}

// LoadTail implements TailLoader.
func (u *UserStore) LoadTail(ctx context.Context, id string, n int, last string) (*Log, error) {
	in, err := u.inner(id)
	if err != nil {
		return nil, err
	}
	l, err := loadTail(ctx, u.store, in, n, last)
	return u.log(l), u.notFound(err, id)
}

// Rewrite implements Store.
func (u *UserStore) Rewrite(ctx context.Context, id string, opts RewriteOptions, h Header, entries []Entry) error {
	in, err := u.inner(id)
	if err != nil {
		return err
	}
	if h.ID != id {
		return checkRewrite(id, h, entries)
	}
	hin, err := u.header(h, true)
	if err != nil {
		return err
	}
	return u.notFound(u.store.Rewrite(ctx, in, opts, hin, entries), id)
}

// List implements Store: the user's sessions only.
func (u *UserStore) List(ctx context.Context, opts ListOptions) (*ListPage, error) {
	if opts.User != "" && opts.User != u.user {
		return &ListPage{}, nil
	}
	opts.User = u.user
	if p := opts.ParentSession; p != "" {
		in, err := u.inner(p)
		if err != nil {
			return &ListPage{}, nil // no session of the user has it
		}
		opts.ParentSession = in
	}
	p, err := u.store.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := &ListPage{Next: p.Next, Sessions: make([]SessionInfo, 0, len(p.Sessions))}
	for _, info := range p.Sessions {
		id, ok := u.outer(info.ID)
		if !ok {
			continue // the metadata says the user's, the id does not
		}
		info.ID = id
		if p, ok := u.outer(info.ParentSession); ok {
			info.ParentSession = p
		}
		out.Sessions = append(out.Sessions, info)
	}
	return out, nil
}

// Delete implements Store.
func (u *UserStore) Delete(ctx context.Context, id string) error {
	in, err := u.inner(id)
	if err != nil {
		return err
	}
	return u.notFound(u.store.Delete(ctx, in), id)
}

// Archive implements Archiver with the store's (errors.ErrUnsupported
// when it has none).
func (u *UserStore) Archive(ctx context.Context, id string) error {
	in, err := u.inner(id)
	if err != nil {
		return err
	}
	return u.notFound(Archive(ctx, u.store, in), id)
}

// CompressArchived implements ArchiveCompressor with the store's (an
// error wrapping errors.ErrUnsupported when it has none), for the user's
// sessions only.
func (u *UserStore) CompressArchived(ctx context.Context, id string) error {
	in, err := u.inner(id)
	if err != nil {
		return err
	}
	return u.notFound(compressArchived(ctx, u.store, in), id)
}

// DeleteIfUnchanged implements ConditionalRemover with the store's (an
// error wrapping errors.ErrUnsupported when it has none), for the user's
// sessions only.
func (u *UserStore) DeleteIfUnchanged(ctx context.Context, id string, seen LogMark) error {
	in, err := u.inner(id)
	if err != nil {
		return err
	}
	cr, err := conditionalRemover(u.store)
	if err != nil {
		return err
	}
	return u.notFound(cr.DeleteIfUnchanged(ctx, in, seen), id)
}

// SetUpdated implements UpdatedSetter for the user's session id.
func (u *UserStore) SetUpdated(ctx context.Context, id string, seen LogMark, t time.Time) error {
	in, err := u.inner(id)
	if err != nil {
		return err
	}
	return u.notFound(SetUpdated(ctx, u.store, in, seen, t), id)
}

// ArchiveIfUnchanged implements ConditionalRemover like
// DeleteIfUnchanged.
func (u *UserStore) ArchiveIfUnchanged(ctx context.Context, id string, seen LogMark) error {
	in, err := u.inner(id)
	if err != nil {
		return err
	}
	cr, err := conditionalRemover(u.store)
	if err != nil {
		return err
	}
	return u.notFound(cr.ArchiveIfUnchanged(ctx, in, seen), id)
}

// Unarchive implements Archiver like Archive.
func (u *UserStore) Unarchive(ctx context.Context, id string) error {
	in, err := u.inner(id)
	if err != nil {
		return err
	}
	return u.notFound(Unarchive(ctx, u.store, in), id)
}

// Subscribe implements Subscriber: the changes of the user's sessions,
// with the user's ids. Dropped counts what this view dropped; the
// subscription beneath, which this view drains at once, drops only when
// it falls behind the store.
func (u *UserStore) Subscribe(ctx context.Context, opts SubscribeOptions) (*Subscription, error) {
	in := SubscribeOptions{Buffer: opts.Buffer}
	if opts.Session != "" {
		id, err := u.inner(opts.Session)
		if err != nil {
			return nil, err
		}
		in.Session = id
	}
	ctx, cancel := context.WithCancel(ctx)
	below, err := Subscribe(ctx, u.store, in)
	if err != nil {
		cancel()
		return nil, err
	}
	h := &Hub{OnLast: cancel}
	sub, err := h.Subscribe(ctx, opts)
	if err != nil {
		cancel()
		below.Close()
		return nil, err
	}
	go func() {
		defer sub.Close()
		for c := range below.C() {
			id, ok := u.outer(c.Session)
			if !ok {
				continue
			}
			c.Session = id
			h.Publish(c)
		}
	}()
	return sub, nil
}

// LoadState implements SharedStateStore for the user's scope (another
// user's is ErrNotFound) and the app scope.
func (u *UserStore) LoadState(ctx context.Context, scope StateScope, owner string) (State, error) {
	ss, err := u.shared(scope, owner)
	if err != nil {
		return nil, err
	}
	return ss.LoadState(ctx, scope, owner)
}

// UpdateState implements SharedStateStore like LoadState.
func (u *UserStore) UpdateState(ctx context.Context, scope StateScope, owner string, delta State) error {
	ss, err := u.shared(scope, owner)
	if err != nil {
		return err
	}
	return ss.UpdateState(ctx, scope, owner, delta)
}

func (u *UserStore) shared(scope StateScope, owner string) (SharedStateStore, error) {
	if scope == ScopeUser && owner != u.user {
		return nil, fmt.Errorf("%w: the state of user %q through the view of %q", ErrNotFound, owner, u.user)
	}
	return sharedStateOf(u.store)
}

// PutBlob implements BlobStore with the store's (errors.ErrUnsupported
// otherwise). Blobs are content-addressed and shared by every user: a
// reference tells nothing but the content it names.
func (u *UserStore) PutBlob(ctx context.Context, data []byte) (string, error) {
	b, err := blobStoreOf(u.store)
	if err != nil {
		return "", err
	}
	return b.PutBlob(ctx, data)
}

// GetBlob implements BlobStore like PutBlob.
func (u *UserStore) GetBlob(ctx context.Context, ref string) ([]byte, error) {
	b, err := blobStoreOf(u.store)
	if err != nil {
		return nil, err
	}
	return b.GetBlob(ctx, ref)
}

// Flush implements Flusher.
func (u *UserStore) Flush(ctx context.Context, id string) error {
	in, err := u.inner(id)
	if err != nil {
		return err
	}
	return u.notFound(flushStore(ctx, u.store, in), id)
}

// CloseSession implements SessionCloser.
func (u *UserStore) CloseSession(id string) error {
	in, err := u.inner(id)
	if err != nil {
		return err
	}
	return closeStoreSession(u.store, in)
}
