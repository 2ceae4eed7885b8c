package workspace

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

var ctx = context.Background()

// spec describes a file of a test tree: content, or a symlink ("->"
// prefix), or an empty directory ("/" suffix on the path); mode defaults
// to 0644.
type spec struct {
	path, content string
	mode          fs.FileMode
}

func build(t testing.TB, dir string, specs ...spec) {
	t.Helper()
	for _, s := range specs {
		p := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(s.path, "/")))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasSuffix(s.path, "/"):
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(s.content, "->"):
			os.Remove(p)
			if err := os.Symlink(s.content[2:], p); err != nil {
				t.Fatal(err)
			}
		default:
			mode := s.mode
			if mode == 0 {
				mode = 0o644
			}
			if err := os.WriteFile(p, []byte(s.content), mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// state reads a tree as the tests compare it: path -> "file 644 <content>",
// "link <target>", "dir"; .git left out.
func state(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link " + target
		case fi.IsDir():
			out[rel] = "dir"
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = "file " + fi.Mode().Perm().String() + " " + string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func equalState(t testing.TB, got, want map[string]string) {
	t.Helper()
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	bad := 0
	for _, k := range keys {
		if got[k] != want[k] {
			t.Errorf("%q: got %.60q, want %.60q", k, got[k], want[k])
			if bad++; bad > 10 {
				t.FailNow()
			}
		}
	}
}

// open opens a workspace of a new temporary directory on a memory store,
// its clock ahead so that the stat cache trusts what is already there.
func open(t testing.TB, specs ...spec) (*Workspace, string, session.BlobStore) {
	t.Helper()
	dir := t.TempDir()
	build(t, dir, specs...)
	var store session.BlobStore = session.NewMemoryStore()
	w, err := Open(dir, &Options{Blobs: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, dir, store
}

// later moves the workspace's clock past the racy margin.
func later(w *Workspace) {
	w.mu.Lock()
	w.now = func() time.Time { return time.Now().Add(10 * time.Second) }
	w.mu.Unlock()
}

func snap(t testing.TB, w *Workspace) *Snapshot {
	t.Helper()
	s, err := w.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustStore() session.BlobStore { return session.NewMemoryStore() }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
