package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
)

// writeListSessions writes n sessions of turns W10k turns each into a
// FileStore at root, each with a first user message, a title or a
// metadata change of its own, and closes the store.
func writeListSessions(t testing.TB, root string, n, turns int) {
	t.Helper()
	ctx := context.Background()
	store, err := session.OpenFileStore(root, &session.FileStoreOptions{Sync: session.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for i := range n {
		s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: fmt.Sprintf("/work/project-%d", i%7)})
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 1 {
			// An assistant message before the first user message.
			if _, err := s.Append(ctx, session.AssistantText(fmt.Sprintf("hello from session %d", i))); err != nil {
				t.Fatal(err)
			}
		}
		first := session.UserText(fmt.Sprintf("session %d asks: %s", i, strings.Repeat(fmt.Sprintf("word%d ", i), 20)))
		if _, err := s.Append(ctx, first); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveTurn(ctx, workload.Messages(0, turns), nil); err != nil {
			t.Fatal(err)
		}
		switch i % 3 {
		case 0:
			if err := s.SetTitle(ctx, fmt.Sprintf("title of session %d %s", i, strings.Repeat("x", i%50))); err != nil {
				t.Fatal(err)
			}
		case 2:
			proj := fmt.Sprintf("project-%d", i)
			if err := s.UpdateMeta(ctx, session.MetaUpdate{ProjectID: &proj, Set: map[string]string{"k": fmt.Sprint(i)}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.SaveTurn(ctx, workload.Messages(turns, turns+1), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// listNewStore lists every session of a new store at root.
func listNewStore(t testing.TB, root string) map[string]session.SessionInfo {
	t.Helper()
	st, err := session.OpenFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := st.List(context.Background(), session.ListOptions{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]session.SessionInfo{}
	for _, info := range p.Sessions {
		info.Updated = info.Updated.UTC()
		out[info.ID] = info
	}
	return out
}

// TestListWithoutIndexSameAsWithIt lists sessions with no listing index
// (every file read whole, one after the other through the same pooled
// buffers) and checks every session's listing against the one made from
// the index the writing store left: titles, derived titles, metadata
// and counts from each file's own bytes, none from a file read before it.
func TestListWithoutIndexSameAsWithIt(t *testing.T) {
	root := t.TempDir()
	writeListSessions(t, root, 60, 2)
	withIndex := listNewStore(t, root) // the index the writer left
	if err := os.Remove(filepath.Join(root, ".index")); err != nil {
		t.Fatal(err)
	}
	without := listNewStore(t, root)
	if len(without) != 60 || len(withIndex) != 60 {
		t.Fatalf("listed %d without the index, %d with it, want 60", len(without), len(withIndex))
	}
	for id, want := range withIndex {
		got := without[id]
		// The writer's index has the time it last wrote, a listing
		// of the file its modification time.
		want.Updated = got.Updated
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Errorf("session %s:\nwithout the index %+v\nwith it           %+v", id, got, want)
		}
		if got.Title == "" || !strings.Contains(got.Title, "session") {
			t.Errorf("session %s: title %q", id, got.Title)
		}
	}
	// And once more from the index this listing saved.
	again := listNewStore(t, root)
	for id, want := range without {
		if got := again[id]; fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Errorf("session %s from the saved index:\n%+v\nwant %+v", id, got, want)
		}
	}
}

// TestListWithoutIndexAllocations bounds what a listing allocates for
// files no index describes: at most about what it reads (a line with an
// append's marker is read from a copy without it), not a copy of every
// line besides and two 64 KiB read buffers per file (it allocated 9
// times the files' bytes, 178 kB for each 20 kB session).
func TestListWithoutIndexAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 200 sessions")
	}
	if session.RaceEnabled {
		// The detector drops a sync.Pool's items at random: the reader
		// buffers the first listing made are then made again.
		t.Skip("counts allocations, which the race detector changes")
	}
	root := t.TempDir()
	writeListSessions(t, root, 200, 3)
	var files int64
	err := filepath.Walk(root, func(path string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(path, ".jsonl") {
			files += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	measure := func() uint64 {
		if err := os.Remove(filepath.Join(root, ".index")); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		st, err := session.OpenFileStore(root, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p, err := st.List(ctx, session.ListOptions{Limit: 1000})
		runtime.ReadMemStats(&after)
		if err != nil || len(p.Sessions) != 200 {
			t.Fatal(err, len(p.Sessions))
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	measure() // the pool's buffers made
	got := measure()
	if limit := 3 * uint64(files) / 2; got > limit {
		t.Errorf("a listing of %d bytes of sessions no index describes allocated %d bytes, over %d (1.5 times the files)", files, got, limit)
	}
	t.Logf("%d bytes of files, %d allocated (%.2f×)", files, got, float64(got)/float64(files))
}
