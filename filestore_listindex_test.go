package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// listIndexOfStore writes sessions of every kind a listing index
// records (header titles and metadata, a parent, names, derived titles,
// metadata set and removed, archived plain and compressed, a file that
// is not a session) into a store at root, lists them (which saves the
// index) and returns the index file's bytes.
func listIndexOfStore(t testing.TB, root string) []byte {
	t.Helper()
	ctx := context.Background()
	st, err := OpenFileStore(root, &FileStoreOptions{Sync: SyncNever, CompressArchive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ids []string
	for i := range 6 {
		opts := &CreateOptions{Cwd: fmt.Sprintf("/w/p%d", i%2), Title: []string{"", "héader \"title\"\n"}[i%2]}
		if i == 3 {
			opts.ParentSession = ids[0]
			opts.ProjectID, opts.Metadata = "proj", map[string]string{"a": "1", "ключ": "значение"}
		}
		s, err := Create(ctx, st, opts)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID())
		if _, err := s.Append(ctx, UserText(fmt.Sprintf("first question %d \u2028 <tag> &", i))); err != nil {
			t.Fatal(err)
		}
		switch i {
		case 1:
			if err := s.SetTitle(ctx, "a name\twith a tab"); err != nil {
				t.Fatal(err)
			}
		case 2, 3:
			app := "1.2.3"
			if err := s.UpdateMeta(ctx, MetaUpdate{AppVersion: &app, Set: map[string]string{"k": "v"}, Delete: []string{"a"}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Archive(ctx, ids[4]); err != nil {
		t.Fatal(err)
	}
	if err := st.Archive(ctx, ids[5]); err != nil {
		t.Fatal(err)
	}
	if err := st.CompressArchived(ctx, ids[5]); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "--w-p0--", "2026-01-01T00-00-00-000Z_notasession.jsonl"), []byte("not json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := st.List(ctx, ListOptions{Archived: true}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, indexName))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// decodeIndexAll collects what decode (decodeIndexFile or
// decodeIndexFast) gives of data, as an indexFile.
func decodeIndexAll(data []byte, decode func([]byte, func(), func(*indexRecord)) (int, bool)) (indexFile, bool) {
	f := indexFile{Files: []indexRecord{}} // none, whether none or null
	v, ok := decode(data, func() { f.Files = []indexRecord{} }, func(r *indexRecord) {
		f.Files = append(f.Files, *r)
	})
	f.Version = v
	return f, ok
}

// checkIndexDecode checks that decodeIndexFile reads data as
// json.Unmarshal does, and reports whether its fast path read it.
func checkIndexDecode(t *testing.T, data []byte) (fast bool) {
	t.Helper()
	var want indexFile
	werr := json.Unmarshal(data, &want)
	if want.Files == nil {
		want.Files = []indexRecord{} // no records, whether none or null
	}
	got, gok := decodeIndexAll(data, func(d []byte, start func(), each func(*indexRecord)) (int, bool) {
		v, err := decodeIndexFile(d, start, each)
		return v, err == nil
	})
	if gok != (werr == nil) {
		t.Fatalf("decodeIndexFile: ok %v, json.Unmarshal: %v, of\n%q", gok, werr, data)
	}
	fgot, fast := decodeIndexAll(data, decodeIndexFast)
	if fast && werr != nil {
		t.Fatalf("the fast path read what json.Unmarshal refuses (%v):\n%q", werr, data)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeIndexFile read\n%#v\njson.Unmarshal\n%#v\nof %q", got, want, data)
	}
	if fast && !reflect.DeepEqual(fgot, want) {
		t.Fatalf("the fast path read\n%#v\njson.Unmarshal\n%#v\nof %q", fgot, want, data)
	}
	return fast
}

// TestListIndexDecode checks that the index a store saves is read by the
// fast path (the listing of 10,000 sessions depends on it), as
// json.Unmarshal reads it, and that forms it does not write (keys in
// another case, given twice, unknown or null values) are read as
// json.Unmarshal reads them too.
func TestListIndexDecode(t *testing.T) {
	data := listIndexOfStore(t, t.TempDir())
	var f indexFile
	if err := json.Unmarshal(data, &f); err != nil || len(f.Files) != 7 {
		t.Fatalf("the index holds %d records (%v), want 7 (one not a session)", len(f.Files), err)
	}
	if !checkIndexDecode(t, data) {
		t.Fatalf("the fast path did not read the index a store saved:\n%s", data)
	}
	rec := `{"path":"--w--/a_x.jsonl","ino":1,"size":2,"mtime":3,"end":2,"lines":0,"ok":true,"created":"2026-01-01T00:00:00Z","fold":{},"entries":0,"updated":"2026-01-01T00:00:00+02:00"}`
	for _, c := range []struct {
		data string
		fast bool
	}{
		{`{"version":3,"files":[` + rec + `]}`, true},
		{` {"files":[` + rec + `,` + rec + `],"version":3} `, true},
		{`{"version":3,"files":[]}`, true},
		{`{"version":3}`, true},
		{`{}`, true},
		{`{"version":3,"files":null}`, false},
		{`{"Version":3,"files":[]}`, false},
		{`{"version":3,"version":2,"files":[]}`, false},
		{`{"version":3,"files":[{"path":"a","PATH":"b"}]}`, false},
		{`{"version":3,"files":[{"meta":null,"created":null}]}`, false},
		{`{"version":3,"files":[{"meta":{"projectId": "p" },"fold":{"metadata":{"k":null,"l":"v"},"projectId":""}}]}`, true},
		{`{"version":3,"files":[{"fold":{"metadata":{"k":"v","k":"w"}}}]}`, true},
		{`{"version":3,"files":[{"fold":{"name":"a","name":"b"}}]}`, false},
		{`{"version":3,"files":[{"ino":-1}]}`, false},
		{`{"version":3,"files":[{"ino":18446744073709551615}]}`, false},
		{`{"version":3,"files":[{"size":1.5}]}`, false},
		{`{"version":3,"files":[{"path":"\u00e9\ud800x"}]}`, true},
		{`{"version":3,"files":[{"path":"` + "\xff" + `"}]}`, true},
		{`{"version":3,"files":[{"created":"not a time"}]}`, false},
		{`{"version":3,"files":[{"unknown":1}]}`, false},
		{`{"version":3,"files":[]} x`, false},
		{`{"version":3,"files":[{"path":"a"}}`, false},
	} {
		if fast := checkIndexDecode(t, []byte(c.data)); fast != c.fast {
			t.Errorf("fast path %v, want %v, for %s", fast, c.fast, c.data)
		}
	}
}

// FuzzListIndexDecode checks decodeIndexFile against json.Unmarshal on
// any input: the same error or none, the same records.
func FuzzListIndexDecode(f *testing.F) {
	f.Add(listIndexOfStore(f, f.TempDir()))
	f.Add([]byte(`{"version":3,"files":[{"path":"p","fold":{"metadata":{"k":null}},"meta":{"a":[1,{}]},"archived":"2026-01-01T00:00:00.5Z"}]}`))
	f.Add([]byte(`{"version":3,"files":[{"path":"\u00e9\ud800x","ino":0,"lines":-3}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkIndexDecode(t, data)
	})
}
