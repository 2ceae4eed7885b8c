package session

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// allowedFor is what may answer for an ability asked of store: the
// store itself, and, through a wrapper with an Unwrap method (which is
// transparent for what it does not implement), what may answer for the
// store beneath. A wrapper that transforms content (WrappedStore,
// RedactStore, UserStore) has no Unwrap: nothing beneath it may answer.
func allowedFor(store Store) []any {
	out := []any{store}
	if o, ok := store.(*ObservedStore); ok {
		out = append(out, allowedFor(o.store)...)
	}
	return out
}

func checkAbility[T any](t *testing.T, name string, store Store) {
	t.Helper()
	x, ok := findAbility[T](store)
	if !ok {
		return
	}
	for _, a := range allowedFor(store) {
		if any(x) == a {
			return
		}
	}
	t.Errorf("%s: the %T ability of %T is that of %T beneath it, around the wrapper's job", name, (*T)(nil), store, x)
}

// No ability of a wrapper that transforms content (a codec, redaction,
// a tenant's ids) is answered by the store beneath it: each is the
// wrapper's own method, or absent. An Unwrap method on WrappedStore,
// RedactStore or UserStore, or an ability found around them, fails
// this test.
func TestAbilitiesDoNotBypassWrappers(t *testing.T) {
	mem := NewMemoryStore()
	rs := Redact(mem, nil)
	us, err := ForUser(NewMemoryStore(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	noop := ObserverFunc(func(context.Context, Event) {})
	stores := map[string]Store{
		"WrappedStore":                   rs.WrappedStore,
		"RedactStore":                    rs,
		"UserStore":                      us,
		"Observe(RedactStore)":           Observe(rs, noop),
		"Observe(UserStore)":             Observe(us, noop),
		"Observe(Observe(WrappedStore))": Observe(Observe(Redact(NewMemoryStore(), nil).WrappedStore, noop), noop),
	}
	for name, s := range stores {
		checkAbility[TailLoader](t, name, s)
		checkAbility[EntryCreator](t, name, s)
		checkAbility[Flusher](t, name, s)
		checkAbility[SessionCloser](t, name, s)
		checkAbility[Archiver](t, name, s)
		checkAbility[CompactionMarker](t, name, s)
		checkAbility[ConditionalRemover](t, name, s)
		checkAbility[ArchiveCompressor](t, name, s)
		checkAbility[Subscriber](t, name, s)
		checkAbility[SharedStateStore](t, name, s)
		checkAbility[BlobStore](t, name, s)
		checkAbility[BlobBatcher](t, name, s)
		checkAbility[BlobPinner](t, name, s)
		checkAbility[BlobCollector](t, name, s)
		checkAbility[BlobSweeper](t, name, s)
		checkAbility[interface{ Hub() *Hub }](t, name, s)
		checkAbility[interface {
			unlistedSessions(context.Context) ([]string, []string, error)
		}](t, name, s)
	}
	// Blobs carry content a codec does not see: a WrappedStore keeps none
	// even over a store that does.
	if _, ok := BlobsOf(Observe(rs.WrappedStore, noop)); ok {
		t.Error("BlobsOf finds the blobs beneath a WrappedStore, around its codec")
	}
}

// Shared state written through an ObservedStore over a RedactStore is
// redacted: the ability is the RedactStore's, not the MemoryStore's
// beneath it.
func TestSharedStateThroughWrappersIsRedacted(t *testing.T) {
	ctx := context.Background()
	mem := NewMemoryStore()
	s := Observe(Redact(mem, nil), ObserverFunc(func(context.Context, Event) {}))
	ss, ok := findAbility[SharedStateStore](s)
	if !ok {
		t.Fatal("no SharedStateStore through Observe(Redact(MemoryStore))")
	}
	const secret = "AKIAQZA4RKNNGCWHCMWU"
	v, _ := json.Marshal("key " + secret)
	if err := ss.UpdateState(ctx, ScopeUser, "alice", State{"k": v}); err != nil {
		t.Fatal(err)
	}
	got, err := mem.LoadState(ctx, ScopeUser, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got["k"]), secret) {
		t.Fatalf("the store beneath keeps the secret: %s", got["k"])
	}
}

// hostWrapper is a host's own wrapper: it changes nothing and says so
// with Unwrap, implementing no ability itself.
type hostWrapper struct{ Store }

func (h hostWrapper) Unwrap() Store { return h.Store }

// countingStore stands for a store that buffers appends: it counts the
// Flush and CloseSession calls that reach it, and passes them on.
type countingStore struct {
	*FileStore
	flushes, closes int
}

func (c *countingStore) Flush(ctx context.Context, id string) error {
	c.flushes++
	return c.FileStore.Flush(ctx, id)
}

func (c *countingStore) CloseSession(id string) error {
	c.closes++
	return c.FileStore.CloseSession(id)
}

// A Session over a wrapper with Unwrap flushes and closes the store
// beneath it, as it finds every other ability: a Flush that stopped at
// the wrapper would leave the appends of SyncOnFlush not durable.
func TestSessionFlushesThroughUnwrap(t *testing.T) {
	ctx := context.Background()
	fs, err := OpenFileStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	c := &countingStore{FileStore: fs}
	for name, store := range map[string]Store{
		"hostWrapper":          hostWrapper{c},
		"Observe(hostWrapper)": Observe(hostWrapper{c}, ObserverFunc(func(context.Context, Event) {})),
	} {
		c.flushes, c.closes = 0, 0
		s, err := Create(ctx, store, &CreateOptions{Cwd: "/work"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, UserText("hi")); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if c.flushes != 1 {
			t.Errorf("%s: Session.Flush reached the store beneath %d times, want 1", name, c.flushes)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if c.flushes != 2 || c.closes != 1 {
			t.Errorf("%s: Session.Close: %d flushes, %d CloseSession beneath, want 2 and 1", name, c.flushes, c.closes)
		}
	}
}
