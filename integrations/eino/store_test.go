package eino_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/compose"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/integrations/eino"
)

// Store is both frameworks' checkpoint store.
var (
	_ compose.CheckPointStore = (*eino.Store)(nil)
	_ adk.CheckPointStore     = (*eino.Store)(nil)
)

// backends opens a session.Store of each kind; reopen gives a fresh
// instance over what the last one kept (a new FileStore on the same
// directory, a new pgstore.Store on the same schema; the same
// MemoryStore). pgstore's only when AGENTSESSION_PG_DSN names a server.
type backend struct {
	name   string
	open   func(t testing.TB) session.Store
	reopen func(t testing.TB, old session.Store) session.Store
}

func backends(t testing.TB) []backend {
	bs := []backend{
		{"memory",
			func(testing.TB) session.Store { return session.NewMemoryStore() },
			func(_ testing.TB, old session.Store) session.Store { return old }},
		{"file",
			func(t testing.TB) session.Store { return openFiles(t, t.TempDir()) },
			func(t testing.TB, old session.Store) session.Store {
				return openFiles(t, old.(*session.FileStore).Root())
			}},
	}
	if pg, ok := pgBackend(); ok {
		bs = append(bs, pg)
	}
	return bs
}

func openFiles(t testing.TB, dir string) *session.FileStore {
	fs, err := session.OpenFileStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return fs
}

func newStore(t testing.TB, st session.Store) *eino.Store {
	s, err := eino.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// values are checkpoints of every shape the value encoding tells apart.
var values = map[string][]byte{
	"compact JSON":     []byte(`{"Channels":{"a":{"x":[1,2.50,"\u00e9"]}},"State":null}`),
	"JSON with spaces": []byte("{ \"a\" : 1 }\n"),
	"JSON with <&>":    []byte(`{"html":"<b>&</b>"}`),
	"JSON null":        []byte(`null`),
	"JSON string":      []byte(`"a string"`),
	"binary":           {0, 1, 2, 0xff, 0xfe, '\n', '"', '{'},
	"invalid UTF-8":    []byte("{\"a\":\"\xff\"}"),
	"empty":            {},
}

func TestSetGetExactBytesSurviveReopen(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			s := newStore(t, st)
			for name, v := range values {
				if err := s.Set(ctx, name, v); err != nil {
					t.Fatalf("Set %s: %v", name, err)
				}
				got, ok, err := s.Get(ctx, name)
				if err != nil || !ok || !bytes.Equal(got, v) {
					t.Fatalf("Get %s = %q, %v, %v; want %q", name, got, ok, err, v)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s2 := newStore(t, b.reopen(t, st))
			for name, v := range values {
				got, ok, err := s2.Get(ctx, name)
				if err != nil || !ok || !bytes.Equal(got, v) {
					t.Fatalf("after reopen, Get %s = %q, %v, %v; want %q", name, got, ok, err, v)
				}
			}
		})
	}
}

func TestGetOfUnsetCheckpointCreatesNothing(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			s := newStore(t, st)
			got, ok, err := s.Get(ctx, "never-set")
			if got != nil || ok || err != nil {
				t.Fatalf("Get = %q, %v, %v; want nil, false, nil", got, ok, err)
			}
			revs, err := s.History(ctx, "never-set")
			if len(revs) != 0 || err != nil {
				t.Fatalf("History = %v, %v", revs, err)
			}
			page, err := st.List(ctx, session.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Sessions) != 0 {
				t.Fatalf("Get created %d sessions", len(page.Sessions))
			}
			// A Set after the miss is seen.
			if err := s.Set(ctx, "never-set", []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			if got, ok, err := s.Get(ctx, "never-set"); string(got) != `{}` || !ok || err != nil {
				t.Fatalf("Get after Set = %q, %v, %v", got, ok, err)
			}
		})
	}
}

func TestInvalidCheckpointIDsAreRefused(t *testing.T) {
	ctx := context.Background()
	bad := []string{"", "a\nb", "nul\x00", "del\x7f", "bad \xff utf8", strings.Repeat("x", session.MaxIDLength)}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			s := newStore(t, st)
			for _, id := range bad {
				err := s.Set(ctx, id, []byte(`{}`))
				if !errors.Is(err, eino.ErrInvalidCheckPointID) || !errors.Is(err, session.ErrInvalidID) {
					t.Errorf("Set(%q) = %v; want ErrInvalidCheckPointID and session.ErrInvalidID", id, err)
				}
				_, ok, err := s.Get(ctx, id)
				if ok || !errors.Is(err, eino.ErrInvalidCheckPointID) {
					t.Errorf("Get(%q) = %v, %v; want ErrInvalidCheckPointID", id, ok, err)
				}
				if _, err := s.History(ctx, id); !errors.Is(err, eino.ErrInvalidCheckPointID) {
					t.Errorf("History(%q) = %v", id, err)
				}
			}
			page, err := st.List(ctx, session.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Sessions) != 0 {
				t.Fatalf("refused ids created %d sessions", len(page.Sessions))
			}
		})
	}
}

// Ids that look like paths are ids like any other: each its own
// checkpoint, and a FileStore keeps every one inside its directory.
func TestPathLikeIDsStayInsideTheDirectory(t *testing.T) {
	ctx := context.Background()
	ids := []string{"..", ".", "../x", "../../etc/passwd", "a/b", "/abs", `..\..\win`, "./.", "x/../../y", "~", "%2E%2E", ".hidden"}
	parent := t.TempDir()
	dir := filepath.Join(parent, "store")
	files := openFiles(t, dir)
	s := newStore(t, files)
	for i, id := range ids {
		if err := s.Set(ctx, id, fmt.Appendf(nil, `{"n":%d}`, i)); err != nil {
			t.Fatalf("Set(%q): %v", id, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(parent, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != parent && p != dir && !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Errorf("%s is outside the store's directory %s", p, dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/etc/passwd.jsonl"); err == nil {
		t.Error("a file was written at /etc/passwd.jsonl")
	}
	s2 := newStore(t, openFiles(t, dir))
	for i, id := range ids {
		got, ok, err := s2.Get(ctx, id)
		if want := fmt.Sprintf(`{"n":%d}`, i); string(got) != want || !ok || err != nil {
			t.Errorf("Get(%q) = %q, %v, %v; want %s", id, got, ok, err, want)
		}
	}
	page, err := files.List(ctx, session.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != len(ids) {
		t.Fatalf("%d sessions for %d ids", len(page.Sessions), len(ids))
	}
}

func TestHistoryKeepsEveryValueOnThePath(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			s := newStore(t, st)
			want := []string{`{"step":1}`, "\x00binary", `{"step":3}`}
			for _, v := range want {
				if err := s.Set(ctx, "thread", []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			s2 := newStore(t, b.reopen(t, st))
			revs, err := s2.History(ctx, "thread")
			if err != nil {
				t.Fatal(err)
			}
			if len(revs) != len(want) {
				t.Fatalf("%d revisions, want %d", len(revs), len(want))
			}
			sess, err := s2.Session(ctx, "thread")
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range revs {
				if string(r.Data) != want[i] || r.EntryID == "" || r.Time.IsZero() {
					t.Errorf("revision %d = %+v, want %q", i, r, want[i])
				}
				// Each is the state at its entry, as agentsession reads it.
				at, err := sess.StateAt(r.EntryID)
				if err != nil || at[eino.StateKey] == nil {
					t.Errorf("StateAt(%s) = %v, %v", r.EntryID, at, err)
				}
			}
			if sess.ID() != eino.DefaultPrefix+"thread" {
				t.Errorf("session id %q", sess.ID())
			}
		})
	}
}

func TestForeignStateValueIsCorruptAndNotOverwritten(t *testing.T) {
	ctx := context.Background()
	st := openFiles(t, t.TempDir())
	raw, _, err := session.OpenOrCreate(ctx, st, &session.CreateOptions{ID: eino.DefaultPrefix + "t"})
	if err != nil {
		t.Fatal(err)
	}
	for _, foreign := range []any{"a string", map[string]any{"json": 1, "base64": "AA=="}, map[string]any{"base64": "!!"}, map[string]any{"other": 1}} {
		if err := raw.UpdateState(ctx, map[string]any{eino.StateKey: foreign}); err != nil {
			t.Fatal(err)
		}
		s := newStore(t, st)
		if _, ok, err := s.Get(ctx, "t"); ok || !errors.Is(err, eino.ErrCorruptCheckPoint) {
			t.Fatalf("Get of %v = %v, %v; want ErrCorruptCheckPoint", foreign, ok, err)
		}
		if _, err := s.History(ctx, "t"); !errors.Is(err, eino.ErrCorruptCheckPoint) {
			t.Fatalf("History of %v = %v", foreign, err)
		}
		s.Close()
	}
	// The log keeps the foreign values; a Set goes after them.
	s := newStore(t, st)
	n := raw.Len()
	if err := s.Set(ctx, "t", []byte(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.Get(ctx, "t"); string(got) != `{"ok":true}` || !ok || err != nil {
		t.Fatalf("Get = %q, %v, %v", got, ok, err)
	}
	if err := raw.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if raw.Len() != n+1 {
		t.Fatalf("%d entries, want %d", raw.Len(), n+1)
	}
}

func TestClosedStoreFails(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, session.NewMemoryStore())
	if err := s.Set(ctx, "a", []byte(`1`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "a", []byte(`2`)); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("Set after Close = %v", err)
	}
	if _, _, err := s.Get(ctx, "a"); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("Get after Close = %v", err)
	}
}

func TestCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := newStore(t, session.NewMemoryStore())
	if err := s.Set(ctx, "a", []byte(`1`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Set = %v", err)
	}
	if _, _, err := s.Get(ctx, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get = %v", err)
	}
}

func TestNewRefusesBadArguments(t *testing.T) {
	if _, err := eino.New(nil, nil); err == nil {
		t.Error("New(nil) succeeded")
	}
	if _, err := eino.New(session.NewMemoryStore(), &eino.Options{Prefix: "bad\n"}); !errors.Is(err, session.ErrInvalidID) {
		t.Errorf("New with a bad prefix = %v", err)
	}
	s, err := eino.New(session.NewMemoryStore(), &eino.Options{Prefix: "graph/"})
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := s.SessionID("7"); id != "graph/7" {
		t.Errorf("SessionID = %q", id)
	}
}

// Several goroutines setting and getting checkpoints, some the same.
func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			s := newStore(t, st)
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 20 {
						id := fmt.Sprintf("cp-%d", (g+i)%4)
						if err := s.Set(ctx, id, fmt.Appendf(nil, `{"g":%d,"i":%d}`, g, i)); err != nil {
							t.Error(err)
							return
						}
						if _, ok, err := s.Get(ctx, id); !ok || err != nil {
							t.Error(ok, err)
							return
						}
					}
				})
			}
			wg.Wait()
			s.Close()
			s2 := newStore(t, b.reopen(t, st))
			total := 0
			for i := range 4 {
				revs, err := s2.History(ctx, fmt.Sprintf("cp-%d", i))
				if err != nil {
					t.Fatal(err)
				}
				total += len(revs)
			}
			if total != 8*20 {
				t.Fatalf("%d revisions kept, want %d", total, 8*20)
			}
		})
	}
}
