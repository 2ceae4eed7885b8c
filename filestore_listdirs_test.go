package session

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestSortInfosIsCompareInfo checks sortInfos against sorting by
// compareInfo: times with and without a monotonic reading, the same
// instant in other locations, equal times told apart by id.
func TestSortInfosIsCompareInfo(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	now := time.Now() // a monotonic reading, as the store's tick gives
	east := time.FixedZone("east", 3*3600)
	var infos []SessionInfo
	for i := range 500 {
		var u time.Time
		switch i % 4 {
		case 0:
			u = now.Add(time.Duration(r.IntN(50)) * time.Millisecond)
		case 1:
			u = now.Round(0).Add(time.Duration(r.IntN(50)) * time.Millisecond)
		case 2:
			u = now.Round(0).Add(time.Duration(r.IntN(50)) * time.Millisecond).In(east)
		default:
			u = time.Unix(int64(r.IntN(3))-1, int64(r.IntN(3))) // before 1970 too
		}
		infos = append(infos, SessionInfo{ID: fmt.Sprintf("s%03d", r.IntN(400)), Updated: u})
	}
	check := func(infos []SessionInfo) {
		t.Helper()
		want := slices.Clone(infos)
		slices.SortStableFunc(want, compareInfo)
		got := sortInfos(infos)
		for k := range want {
			if compareInfo(got[k], want[k]) != 0 {
				t.Fatalf("at %d: %v %s, want %v %s", k, got[k].Updated, got[k].ID, want[k].Updated, want[k].ID)
			}
		}
	}
	check(infos)
	// And with no monotonic reading at all (a new store's listing).
	for k := range infos {
		infos[k].Updated = infos[k].Updated.Round(0)
	}
	check(infos)
}

// listAllOf lists every session, archived too, of a new store at root
// with GOMAXPROCS procs (so with as many goroutines reading files, up to
// listWorkers).
func listAllOf(t *testing.T, root string, procs int) []SessionInfo {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	st, err := OpenFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := st.List(context.Background(), ListOptions{Archived: true, Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	return p.Sessions
}

// TestListParallelSameAsOne lists a store of 400 sessions (several
// directories, some archived, one file a symbolic link to a file in
// another directory, which a directory's own root refuses) with one
// goroutine and with several, with and without the listing index: the
// same listing each time.
func TestListParallelSameAsOne(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st, err := OpenFileStore(root, &FileStoreOptions{Sync: SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 400 {
		s, err := Create(ctx, st, &CreateOptions{Cwd: fmt.Sprintf("/w/p%d", i%5)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, UserText(fmt.Sprintf("question %d", i))); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			if err := s.SetTitle(ctx, fmt.Sprintf("title %d", i)); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, s.ID())
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids[:40] {
		if err := st.Archive(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	linked, err := st.Path(ids[101])
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// The session's file moves to another directory, under a name that
	// is not a session's; its own name links to it.
	elsewhere := filepath.Join(root, "--w-p0--", "moved.data")
	if filepath.Dir(linked) == filepath.Dir(elsewhere) {
		t.Fatal("the linked session is in --w-p0--")
	}
	if err := os.Rename(linked, elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "--w-p0--", "moved.data"), linked); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	check := func(what string, got, want []SessionInfo) {
		t.Helper()
		if len(got) != 400 {
			t.Fatalf("%s: listed %d sessions, want 400", what, len(got))
		}
		for k := range want {
			g, w := got[k], want[k]
			g.Updated, w.Updated = g.Updated.UTC(), w.Updated.UTC()
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("%s: at %d\n%+v\nwant\n%+v", what, k, g, w)
			}
		}
	}
	for _, withIndex := range []bool{false, true} {
		if !withIndex {
			if err := os.Remove(filepath.Join(root, indexName)); err != nil {
				t.Fatal(err)
			}
		}
		one := listAllOf(t, root, 1)
		if !withIndex {
			if err := os.Remove(filepath.Join(root, indexName)); err != nil {
				t.Fatal(err)
			}
		}
		many := listAllOf(t, root, listWorkers)
		check(fmt.Sprintf("index %v", withIndex), many, one)
		if !slices.ContainsFunc(many, func(info SessionInfo) bool { return info.ID == ids[101] && info.Entries == 1 }) {
			t.Fatalf("index %v: the session whose file is a link is not listed", withIndex)
		}
	}
}
