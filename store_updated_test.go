package session_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/redact"
)

// listedUpdated returns the Updated session id is listed with.
func listedUpdated(t *testing.T, store session.Store, id string) time.Time {
	t.Helper()
	p, err := store.List(context.Background(), session.ListOptions{Archived: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range p.Sessions {
		if info.ID == id {
			return info.Updated
		}
	}
	t.Fatalf("%s not listed", id)
	return time.Time{}
}

// TestSetUpdated: a store's session can be given an Updated of the
// past (an import's source's), which listings show, in a FileStore
// reopened and in another store on the same directory too, until the
// next write; a log changed since the mark is refused.
func TestSetUpdated(t *testing.T) {
	ctx := context.Background()
	old := time.Date(2024, 3, 1, 12, 30, 0, 123456789, time.UTC)
	root := filepath.Join(t.TempDir(), "s")
	fs, err := session.OpenFileStore(root, &session.FileStoreOptions{Sync: session.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { fs.Close() }()
	for _, tc := range []struct {
		name  string
		store session.Store
	}{{"file", fs}, {"memory", session.NewMemoryStore()}} {
		t.Run(tc.name, func(t *testing.T) {
			store := tc.store
			s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/w"})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SaveTurn(ctx, []*session.Message{session.UserText("hi"), session.AssistantText("hello")}, nil); err != nil {
				t.Fatal(err)
			}
			listedUpdated(t, store, s.ID()) // a listing entry made before
			log, err := store.Load(ctx, s.ID())
			if err != nil {
				t.Fatal(err)
			}
			stale := session.LogMark{Last: log.Entries[0].ID(), Entries: 1}
			if err := session.SetUpdated(ctx, store, s.ID(), stale, old); !errors.Is(err, session.ErrConflict) {
				t.Fatalf("a stale mark: %v, want ErrConflict", err)
			}
			if err := session.SetUpdated(ctx, store, "nope", session.MarkOf(log), old); !errors.Is(err, session.ErrNotFound) {
				t.Fatalf("no such session: %v, want ErrNotFound", err)
			}
			if err := session.SetUpdated(ctx, store, s.ID(), session.MarkOf(log), old); err != nil {
				t.Fatal(err)
			}
			if got := listedUpdated(t, store, s.ID()); !got.Equal(old) {
				t.Fatalf("listed as updated %s, want %s", got, old)
			}
			if tc.name == "file" {
				other, err := session.OpenFileStore(root, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := listedUpdated(t, other, s.ID())
				other.Close()
				if !got.Equal(old) {
					t.Fatalf("another store lists it as updated %s, want %s", got, old)
				}
				if err := fs.Close(); err != nil {
					t.Fatal(err)
				}
				if fs, err = session.OpenFileStore(root, nil); err != nil {
					t.Fatal(err)
				}
				store = fs
				if got := listedUpdated(t, store, s.ID()); !got.Equal(old) {
					t.Fatalf("reopened, listed as updated %s, want %s", got, old)
				}
				if s, err = session.Open(ctx, store, s.ID()); err != nil {
					t.Fatal(err)
				}
			}
			before := time.Now()
			if err := s.SaveTurn(ctx, []*session.Message{session.UserText("again")}, nil); err != nil {
				t.Fatal(err)
			}
			if got := listedUpdated(t, store, s.ID()); got.Before(before.Add(-time.Second)) {
				t.Fatalf("written to again, listed as updated %s", got)
			}
		})
	}
}

// TestSetUpdatedUnsupported: a store without the ability says so.
func TestSetUpdatedUnsupported(t *testing.T) {
	var store struct{ session.Store }
	store.Store = session.NewMemoryStore()
	err := session.SetUpdated(context.Background(), store, "x", session.LogMark{}, time.Now())
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("%v, want errors.ErrUnsupported", err)
	}
}

// TestSetUpdatedThroughWrappers: the time passes through every wrapper
// of the package (a redacting store, a tenant's view, an observer) to
// the store beneath, the listing through the wrapper shows it, and a
// stale mark is still refused there.
func TestSetUpdatedThroughWrappers(t *testing.T) {
	ctx := context.Background()
	old := time.Date(2024, 3, 1, 12, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		wrap func(t *testing.T, s session.Store) session.Store
	}{
		{"redact", func(t *testing.T, s session.Store) session.Store { return session.Redact(s, redact.New(nil)) }},
		{"user", func(t *testing.T, s session.Store) session.Store {
			u, err := session.ForUser(s, "alice")
			if err != nil {
				t.Fatal(err)
			}
			return u
		}},
		{"observed", func(t *testing.T, s session.Store) session.Store {
			return session.Observe(s, session.ObserverFunc(func(context.Context, session.Event) {}))
		}},
		{"user-over-redact", func(t *testing.T, s session.Store) session.Store {
			u, err := session.ForUser(session.Redact(s, redact.New(nil)), "bob")
			if err != nil {
				t.Fatal(err)
			}
			return u
		}},
	} {
		for _, base := range []string{"file", "memory"} {
			t.Run(tc.name+"/"+base, func(t *testing.T) {
				var inner session.Store = session.NewMemoryStore()
				if base == "file" {
					fs, err := session.OpenFileStore(filepath.Join(t.TempDir(), "s"), nil)
					if err != nil {
						t.Fatal(err)
					}
					defer fs.Close()
					inner = fs
				}
				store := tc.wrap(t, inner)
				s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/w"})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.SaveTurn(ctx, []*session.Message{session.UserText("hi"), session.AssistantText("hello")}, nil); err != nil {
					t.Fatal(err)
				}
				log, err := store.Load(ctx, s.ID())
				if err != nil {
					t.Fatal(err)
				}
				stale := session.LogMark{Last: log.Entries[0].ID(), Entries: 1}
				if err := session.SetUpdated(ctx, store, s.ID(), stale, old); !errors.Is(err, session.ErrConflict) {
					t.Fatalf("a stale mark: %v, want ErrConflict", err)
				}
				if err := session.SetUpdated(ctx, store, s.ID(), session.MarkOf(log), old); err != nil {
					t.Fatal(err)
				}
				if got := listedUpdated(t, store, s.ID()); !got.Equal(old) {
					t.Fatalf("listed as updated %s, want %s", got, old)
				}
			})
		}
	}
}

// TestSetUpdatedRefusesTimesAStoreCannotKeep: the zero time and times a
// file's clock cannot hold (before 1678, after 2262: the time would wrap
// to another century, a session from 1600 listed as from 2184) are
// refused by every store, and the session keeps its time.
func TestSetUpdatedRefusesTimesAStoreCannotKeep(t *testing.T) {
	ctx := context.Background()
	for _, base := range []string{"file", "memory"} {
		for _, bad := range []time.Time{{}, time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)} {
			t.Run(base+"/"+bad.Format("2006"), func(t *testing.T) {
				var store session.Store = session.NewMemoryStore()
				if base == "file" {
					fs, err := session.OpenFileStore(filepath.Join(t.TempDir(), "s"), nil)
					if err != nil {
						t.Fatal(err)
					}
					defer fs.Close()
					store = fs
				}
				s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/w"})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.SaveTurn(ctx, []*session.Message{session.UserText("hi"), session.AssistantText("hello")}, nil); err != nil {
					t.Fatal(err)
				}
				before := listedUpdated(t, store, s.ID())
				log, err := store.Load(ctx, s.ID())
				if err != nil {
					t.Fatal(err)
				}
				err = session.SetUpdated(ctx, store, s.ID(), session.MarkOf(log), bad)
				if !errors.Is(err, session.ErrBadTime) {
					t.Fatalf("SetUpdated(%v): %v, want ErrBadTime", bad, err)
				}
				if u, ok := store.(session.UpdatedSetter); ok {
					if err := u.SetUpdated(ctx, s.ID(), session.MarkOf(log), bad); !errors.Is(err, session.ErrBadTime) {
						t.Fatalf("the store's own SetUpdated(%v): %v, want ErrBadTime", bad, err)
					}
				}
				if got := listedUpdated(t, store, s.ID()); !got.Equal(before) {
					t.Fatalf("listed as updated %s after a refused time, want %s", got, before)
				}
			})
		}
	}
}
