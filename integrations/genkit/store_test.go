package genkitstore_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	gksession "github.com/firebase/genkit/go/core/x/session"

	session "github.com/agentsession/session"
	genkitstore "github.com/agentsession/session/integrations/genkit"
	"github.com/agentsession/session/storetest"
)

type chat struct {
	Turn  int      `json:"turn"`
	Notes []string `json:"notes,omitempty"`
}

func openFileStore(t *testing.T, root string) *session.FileStore {
	t.Helper()
	fs, err := session.OpenFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fs.Close() })
	return fs
}

func newAdapter[S any](t *testing.T, backing session.Store, opts *genkitstore.Options) *genkitstore.Store[S] {
	t.Helper()
	st, err := genkitstore.New[S](backing, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func save(t *testing.T, st *genkitstore.Store[chat], id string, turn int) {
	t.Helper()
	if err := st.Save(context.Background(), id, &gksession.Data[chat]{ID: id, State: chat{Turn: turn}}); err != nil {
		t.Fatalf("Save %q turn %d: %v", id, turn, err)
	}
}

func wantTurn(t *testing.T, st *genkitstore.Store[chat], id string, turn int) {
	t.Helper()
	d, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get %q: %v", id, err)
	}
	if d == nil || d.ID != id || d.State.Turn != turn {
		t.Fatalf("Get %q = %+v, want turn %d", id, d, turn)
	}
}

// backings are the agentsession stores every test of this file runs on.
func backings(t *testing.T) map[string]func(t *testing.T) session.Store {
	return map[string]func(t *testing.T) session.Store{
		"MemoryStore": func(*testing.T) session.Store { return session.NewMemoryStore() },
		"FileStore": func(t *testing.T) session.Store {
			return openFileStore(t, filepath.Join(t.TempDir(), "sessions"))
		},
		"pgstore": func(t *testing.T) session.Store {
			if os.Getenv(pgDSNEnv) == "" {
				t.Skip(pgDSNEnv + " is not set")
			}
			return pgBacking(t)
		},
	}
}

// TestSurvivesReopen: what Save stored is there for a new FileStore and
// Store on the same directory, with its history.
func TestSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	fs1, err := session.OpenFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	st1, err := genkitstore.New[chat](fs1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for turn := 1; turn <= 3; turn++ {
		save(t, st1, "user:42", turn)
	}
	if err := st1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fs1.Close(); err != nil {
		t.Fatal(err)
	}

	st2 := newAdapter[chat](t, openFileStore(t, root), nil)
	wantTurn(t, st2, "user:42", 3)
	hist, err := st2.History(ctx, "user:42")
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 3 {
		t.Fatalf("History holds %d values, want 3", len(hist))
	}
	for i, v := range hist {
		if v.Data.State.Turn != i+1 || v.EntryID == "" || v.Time.IsZero() {
			t.Errorf("History[%d] = %+v", i, v)
		}
	}
}

// TestHistoryOnPath: every Save's value stays on the session's path,
// where agentsession's StateAt reads it too.
func TestHistoryOnPath(t *testing.T) {
	for name, mk := range backings(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			backing := mk(t)
			st := newAdapter[chat](t, backing, nil)
			for turn := 1; turn <= 4; turn++ {
				save(t, st, "h", turn)
			}
			hist, err := st.History(ctx, "h")
			if err != nil {
				t.Fatal(err)
			}
			if len(hist) != 4 {
				t.Fatalf("History holds %d values, want 4", len(hist))
			}
			s, err := session.Open(ctx, backing, "h")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i, v := range hist {
				state, err := s.StateAt(v.EntryID)
				if err != nil {
					t.Fatal(err)
				}
				d, ok, err := session.Get[gksession.Data[chat]](state, genkitstore.DefaultStateKey)
				if err != nil || !ok || d.State.Turn != i+1 {
					t.Errorf("StateAt(%s) = %+v, %v, %v; want turn %d", v.EntryID, d, ok, err, i+1)
				}
			}
			none, err := st.History(ctx, "never saved")
			if err != nil || len(none) != 0 {
				t.Errorf("History of an unknown session = %v, %v", none, err)
			}
		})
	}
}

// TestHostileIDsRefused: ids no store can hold are refused by Get, Save
// and History with ErrInvalidID, and nothing is written.
func TestHostileIDsRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := newAdapter[chat](t, openFileStore(t, filepath.Join(dir, "sessions")), nil)
	before := listTree(t, dir)
	for _, id := range storetest.HostileIDs {
		if _, err := st.Get(ctx, id); !errors.Is(err, session.ErrInvalidID) {
			t.Errorf("Get(%q) = %v, want ErrInvalidID", id, err)
		}
		if err := st.Save(ctx, id, &gksession.Data[chat]{ID: id}); !errors.Is(err, session.ErrInvalidID) {
			t.Errorf("Save(%q) = %v, want ErrInvalidID", id, err)
		}
		if _, err := st.History(ctx, id); !errors.Is(err, session.ErrInvalidID) {
			t.Errorf("History(%q) = %v, want ErrInvalidID", id, err)
		}
	}
	if after := listTree(t, dir); !equal(before, after) {
		t.Errorf("hostile ids changed the directory: %v -> %v", before, after)
	}
}

// TestPathLikeIDsStayInside: ids that look like paths ("..", "../x",
// "a/b", "/abs" ...) are sessions like any other: each kept apart, in a
// file inside the store's directory, found again by a new store.
func TestPathLikeIDsStayInside(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "sessions")
	fs1 := openFileStore(t, root)
	st := newAdapter[chat](t, fs1, nil)
	for i, id := range storetest.HostIDs {
		save(t, st, id, i)
	}
	for _, p := range listTree(t, dir) {
		if p != "sessions" && p != "blobs" && !isUnder(p, "sessions") && !isUnder(p, "blobs") {
			t.Errorf("%s: written outside the store's directory", p)
		}
	}
	st2 := newAdapter[chat](t, openFileStore(t, root), nil)
	for i, id := range storetest.HostIDs {
		wantTurn(t, st2, id, i)
	}
}

// TestAnotherWriterSeen: a Store sees what another Store (here over
// another FileStore on the same directory, as another process would be)
// saved after it last looked, and its next Save goes on from there, on
// one path.
func TestAnotherWriterSeen(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	a := newAdapter[chat](t, openFileStore(t, root), nil)
	b := newAdapter[chat](t, openFileStore(t, root), nil)
	save(t, a, "s", 1)
	wantTurn(t, b, "s", 1)
	save(t, b, "s", 2)
	wantTurn(t, a, "s", 2)
	save(t, a, "s", 3)
	wantTurn(t, b, "s", 3)
	hist, err := b.History(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	var turns []int
	for _, v := range hist {
		turns = append(turns, v.Data.State.Turn)
	}
	if !equal(turns, []int{1, 2, 3}) {
		t.Errorf("History = %v, want [1 2 3] on one path", turns)
	}
}

// childEnv makes the test binary a child that saves one value.
const childEnv = "AGENTSESSION_GENKIT_CHILD"

// TestAnotherProcessSeen: a Save by another process is what Get returns
// next, through the session this Store holds open.
func TestAnotherProcessSeen(t *testing.T) {
	if dir := os.Getenv(childEnv); dir != "" {
		t.Skip("the child: see TestChildSaves")
	}
	root := filepath.Join(t.TempDir(), "sessions")
	st := newAdapter[chat](t, openFileStore(t, root), nil)
	save(t, st, "shared", 1)
	wantTurn(t, st, "shared", 1)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestChildSaves$", "-test.count", "1")
	cmd.Env = append(os.Environ(), childEnv+"="+root)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	wantTurn(t, st, "shared", 2)
	save(t, st, "shared", 3)
	wantTurn(t, newAdapter[chat](t, openFileStore(t, root), nil), "shared", 3)
}

// TestChildSaves is the child of TestAnotherProcessSeen.
func TestChildSaves(t *testing.T) {
	root := os.Getenv(childEnv)
	if root == "" {
		t.Skip("run by TestAnotherProcessSeen")
	}
	st := newAdapter[chat](t, openFileStore(t, root), nil)
	wantTurn(t, st, "shared", 1)
	save(t, st, "shared", 2)
}

// TestBadInput: each misuse is a typed error, and changes nothing.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	backing := session.NewMemoryStore()
	if _, err := genkitstore.New[chat](nil, nil); !errors.Is(err, genkitstore.ErrNilStore) {
		t.Errorf("New(nil) = %v", err)
	}
	for _, key := range []string{"user:x", "app:x"} {
		if _, err := genkitstore.New[chat](backing, &genkitstore.Options{StateKey: key}); !errors.Is(err, genkitstore.ErrStateKey) {
			t.Errorf("StateKey %q: %v", key, err)
		}
	}
	st := newAdapter[chat](t, backing, nil)
	if err := st.Save(ctx, "s", nil); !errors.Is(err, genkitstore.ErrNilData) {
		t.Errorf("Save(nil) = %v", err)
	}
	if d, err := st.Get(ctx, "s"); d != nil || err != nil {
		t.Errorf("Get after a refused Save = %v, %v", d, err)
	}

	// Data of another state type: ErrUndecodable, and the data stays.
	save(t, st, "s", 7)
	other := newAdapter[[]int](t, backing, nil)
	if _, err := other.Get(ctx, "s"); !errors.Is(err, genkitstore.ErrUndecodable) {
		t.Errorf("Get as another type = %v, want ErrUndecodable", err)
	}
	if _, err := other.History(ctx, "s"); !errors.Is(err, genkitstore.ErrUndecodable) {
		t.Errorf("History as another type = %v, want ErrUndecodable", err)
	}
	wantTurn(t, st, "s", 7)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := st.Get(canceled, "s"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a canceled context = %v", err)
	}
	if err := st.Save(canceled, "s", &gksession.Data[chat]{ID: "s"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Save with a canceled context = %v", err)
	}

	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "s"); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Get after Close = %v", err)
	}
	if err := st.Save(ctx, "s", &gksession.Data[chat]{ID: "s"}); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Save after Close = %v", err)
	}
	wantTurn(t, newAdapter[chat](t, backing, nil), "s", 7)
}

// TestSessionOfAnotherKind: a session of the id that holds no Genkit
// data (a conversation) reads as none; Save adds the data to it, and
// its entries stay.
func TestSessionOfAnotherKind(t *testing.T) {
	ctx := context.Background()
	backing := session.NewMemoryStore()
	s, err := session.Create(ctx, backing, &session.CreateOptions{ID: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, session.UserText("hello")); err != nil {
		t.Fatal(err)
	}
	st := newAdapter[chat](t, backing, nil)
	if d, err := st.Get(ctx, "chat"); d != nil || err != nil {
		t.Fatalf("Get = %v, %v; want none", d, err)
	}
	save(t, st, "chat", 1)
	wantTurn(t, st, "chat", 1)
	if err := s.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 2 {
		t.Errorf("the session holds %d entries, want its message and the data", s.Len())
	}
}

// TestManySessionsFewOpen: past MaxOpen the least recently used sessions
// are closed, and read again when asked.
func TestManySessionsFewOpen(t *testing.T) {
	for name, mk := range backings(t) {
		t.Run(name, func(t *testing.T) {
			st := newAdapter[chat](t, mk(t), &genkitstore.Options{MaxOpen: 2})
			for i := range 6 {
				save(t, st, "s"+strconv.Itoa(i), i)
			}
			for i := range 6 {
				wantTurn(t, st, "s"+strconv.Itoa(i), i)
				save(t, st, "s"+strconv.Itoa(i), i+10)
			}
			for i := range 6 {
				wantTurn(t, st, "s"+strconv.Itoa(i), i+10)
			}
		})
	}
}

// listTree lists the paths under dir, relative to it.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// isUnder reports whether the relative path p is dir or below it.
func isUnder(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestHostChangesSeen: what the host does to the session through
// agentsession (a state update of the key, a move of the leaf back to an
// earlier Save) is what Get returns next, though the Store knows the
// value it saved last.
func TestHostChangesSeen(t *testing.T) {
	for name, mk := range backings(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			backing := mk(t)
			st := newAdapter[chat](t, backing, nil)
			save(t, st, "s", 1)
			save(t, st, "s", 2)
			wantTurn(t, st, "s", 2)

			host, err := session.Open(ctx, backing, "s")
			if err != nil {
				t.Fatal(err)
			}
			defer host.Close()
			if err := session.SetState(ctx, host, genkitstore.DefaultStateKey, gksession.Data[chat]{ID: "s", State: chat{Turn: 3}}); err != nil {
				t.Fatal(err)
			}
			wantTurn(t, st, "s", 3)

			hist, err := st.History(ctx, "s")
			if err != nil || len(hist) != 3 {
				t.Fatalf("History = %v, %v", hist, err)
			}
			if err := host.Branch(ctx, hist[0].EntryID); err != nil {
				t.Fatal(err)
			}
			wantTurn(t, st, "s", 1)
			save(t, st, "s", 4)
			wantTurn(t, st, "s", 4)
			if hist, err = st.History(ctx, "s"); err != nil || len(hist) != 2 || hist[0].Data.State.Turn != 1 {
				t.Fatalf("History after the rewind = %v, %v; want turns 1 and 4", hist, err)
			}
		})
	}
}

// TestDeletedElsewhere: a session deleted through agentsession while the
// Store holds it open reads as none, and the next Save starts it again.
func TestDeletedElsewhere(t *testing.T) {
	for name, mk := range backings(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			backing := mk(t)
			st := newAdapter[chat](t, backing, nil)
			save(t, st, "s", 1)
			wantTurn(t, st, "s", 1)
			if _, err := session.DeleteSession(ctx, backing, "s", nil); err != nil {
				t.Fatal(err)
			}
			if d, err := st.Get(ctx, "s"); d != nil || err != nil {
				t.Fatalf("Get of a deleted session = %v, %v; want none", d, err)
			}
			save(t, st, "s", 2)
			wantTurn(t, newAdapter[chat](t, backing, nil), "s", 2)
			if hist, err := st.History(ctx, "s"); err != nil || len(hist) != 1 {
				t.Fatalf("History = %v, %v; want the one Save since the delete", hist, err)
			}
		})
	}
}

// TestPruneDropsSupersededValues: agentsession's Prune of the session
// drops the values later Saves replaced, but for the labeled ones; Get
// (through the Store that holds the session open, and a new one) still
// returns the latest, and History the values kept.
func TestPruneDropsSupersededValues(t *testing.T) {
	for name, mk := range backings(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			backing := mk(t)
			st := newAdapter[chat](t, backing, nil)
			for turn := 1; turn <= 5; turn++ {
				save(t, st, "s", turn)
			}
			hist, err := st.History(ctx, "s")
			if err != nil || len(hist) != 5 {
				t.Fatalf("History = %v, %v", hist, err)
			}
			host, err := session.Open(ctx, backing, "s")
			if err != nil {
				t.Fatal(err)
			}
			defer host.Close()
			if err := host.Label(ctx, hist[1].EntryID, "keep"); err != nil {
				t.Fatal(err)
			}
			if _, err := host.Prune(ctx, nil); err != nil {
				t.Fatal(err)
			}
			wantTurn(t, st, "s", 5)
			wantTurn(t, newAdapter[chat](t, backing, nil), "s", 5)
			hist, err = st.History(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			var turns []int
			for _, v := range hist {
				turns = append(turns, v.Data.State.Turn)
			}
			if !equal(turns, []int{2, 5}) {
				t.Errorf("History after Prune = %v, want [2 5] (the labeled value and the latest)", turns)
			}
			save(t, st, "s", 6)
			wantTurn(t, newAdapter[chat](t, backing, nil), "s", 6)
		})
	}
}
