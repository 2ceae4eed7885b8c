package importer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// ocExportAndTree writes the export fixture at path (ids made ascending,
// as OpenCode's are; message drop, when >= 0, left out) as an export
// file and as a storage tree under a new directory: it returns the
// export's path, the storage directory and its session files by id.
func ocExportAndTree(t *testing.T, path string, drop int) (exp, storage string, files map[string]string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if drop >= 0 {
		b = ocDropMessage(t, b, drop)
	}
	b = ocAscending(t, b)
	dir := t.TempDir()
	exp = filepath.Join(dir, "export.json")
	if err := os.WriteFile(exp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	storage = filepath.Join(dir, "data", "opencode", "storage")
	files = ocWriteTree(t, storage, b)
	return exp, storage, files
}

// ocSessions imports path into a new MemoryStore and returns the store
// and the report.
func ocSessions(t *testing.T, path string) (*session.MemoryStore, *Report) {
	t.Helper()
	store := session.NewMemoryStore()
	rep, err := Import(context.Background(), store, path, nil)
	if err != nil {
		t.Fatalf("import %s: %v (report %+v)", path, err, rep)
	}
	return store, rep
}

// sameSessions fails unless the two stores hold the same sessions: the
// same ids, parents, titles and working directories, and the same
// entries byte for byte.
func sameSessions(t *testing.T, want, got session.Store) {
	t.Helper()
	ctx := context.Background()
	ids := func(s session.Store) []string {
		page, err := s.List(ctx, session.ListOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, i := range page.Sessions {
			out = append(out, i.ID)
		}
		sort.Strings(out)
		return out
	}
	wantIDs, gotIDs := ids(want), ids(got)
	if !reflect.DeepEqual(wantIDs, gotIDs) {
		t.Fatalf("sessions: got %v, want %v", gotIDs, wantIDs)
	}
	for _, id := range wantIDs {
		w, err := want.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		g, err := got.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		wh, gh := w.Header, g.Header
		if wh.ParentSession != gh.ParentSession || wh.Title != gh.Title || wh.Cwd != gh.Cwd || !wh.Timestamp.Equal(gh.Timestamp) {
			t.Errorf("%s: header %+v, want %+v", id, gh, wh)
		}
		if len(w.Entries) != len(g.Entries) {
			t.Errorf("%s: %d entries, want %d", id, len(g.Entries), len(w.Entries))
			continue
		}
		for i := range w.Entries {
			if string(w.Entries[i].JSON()) != string(g.Entries[i].JSON()) {
				t.Errorf("%s: entry %d:\n got %s\nwant %s", id, i, g.Entries[i].JSON(), w.Entries[i].JSON())
			}
		}
	}
}

// TestOpenCodeStorageImportsAsItsExport: OpenCode 1.1's storage tree
// (a session's info, its messages and their parts, each a file) imports
// as `opencode export` of the same session does, entry for entry:
// named as the storage directory, a directory above it, or one
// session's file. A subagent's session comes with its parent's.
func TestOpenCodeStorageImportsAsItsExport(t *testing.T) {
	for _, c := range []struct {
		name    string
		fixture string
		drop    int
	}{
		// Message 8 of the fixture is no object, which no storage file
		// can be; the rest is every part type the mapping knows.
		{"every part type", ocExport, 8},
		{"parent and child", ocParentChild, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			exp, storage, files := ocExportAndTree(t, c.fixture, c.drop)
			want, wantRep := ocSessions(t, exp)
			if len(wantRep.Imported) == 0 {
				t.Fatalf("the export imported nothing: %+v", wantRep)
			}
			for _, target := range []string{storage, filepath.Dir(filepath.Dir(storage))} {
				got, rep := ocSessions(t, target)
				if len(rep.Errors) != 0 || len(rep.Imported) != len(wantRep.Imported) {
					t.Fatalf("import of %s: %+v", target, rep)
				}
				sameSessions(t, want, got)
				for _, n := range rep.NotImported {
					if errors.Is(n.Err, ErrUnknownFormat) {
						t.Errorf("import of %s: %s is not named for what it is: %v", target, n.Path, n.Err)
					}
				}
			}
			// Each session's file on its own: that session, with its
			// subagents' sessions as children.
			for _, s := range wantRep.Imported {
				got, rep := ocSessions(t, files[s.ID])
				if s.ParentSession != "" && files[s.ParentSession] != "" {
					if len(rep.Imported) != 1 || rep.Imported[0].ID != s.ID || rep.Imported[0].ParentSession != s.ParentSession {
						t.Errorf("the child's file alone: %+v", rep.Imported)
					}
					continue
				}
				if len(rep.Imported) != len(wantRep.Imported) {
					t.Errorf("%s alone imported %+v, want its session and its children", files[s.ID], rep.Imported)
				}
				sameSessions(t, want, got)
			}
		})
	}
}

// TestOpenCodeStorageNamesTheRest: a directory import of an OpenCode
// data directory names every file of the tree it does not import, and
// why; the session's to-do list comes into its header.
func TestOpenCodeStorageNamesTheRest(t *testing.T) {
	exp, storage, files := ocExportAndTree(t, ocExport, 8)
	_ = exp
	sid := "ses_4f2a9c1e7ffeAbCdEf0123456"
	extra := map[string]string{
		"todo/" + sid + ".json":            `[{"content":"Fix the build","status":"completed","priority":"high","id":"1"}]`,
		"session_diff/" + sid + ".json":    `[{"file":"Makefile","before":"a","after":"b","additions":1,"deletions":1}]`,
		"session_share/" + sid + ".json":   `{"id":"shr_1","secret":"0b7c-secret","url":"https://opncd.ai/s/abc"}`,
		"permission/prj_1.json":            `[]`,
		"message/ses_gone/msg_orphan.json": `{"id":"msg_orphan","sessionID":"ses_gone","role":"user","time":{"created":1}}`,
		"part/msg_orphan/prt_orphan.json":  `{"id":"prt_orphan","sessionID":"ses_gone","messageID":"msg_orphan","type":"text","text":"orphan"}`,
	}
	for rel, body := range extra {
		writeFile(t, filepath.Join(storage, filepath.FromSlash(rel)), body)
	}
	data := filepath.Dir(storage)
	writeFile(t, filepath.Join(data, "auth.json"), `{"anthropic":{"type":"api","key":"sk-ant-not-read"}}`)

	store, rep := ocSessions(t, data)
	if len(rep.Imported) != 1 || rep.Imported[0].ID != sid {
		t.Fatalf("imported %+v", rep.Imported)
	}
	named := map[string]error{}
	for _, n := range rep.NotImported {
		named[n.Path] = n.Err
	}
	for _, rel := range []string{"session_diff/" + sid + ".json", "session_share/" + sid + ".json", "permission/prj_1.json",
		"project/prj_1.json", "migration", "message/ses_gone/msg_orphan.json", "part/msg_orphan/prt_orphan.json"} {
		p := filepath.Join(storage, filepath.FromSlash(rel))
		err, ok := named[p]
		switch {
		case !ok:
			t.Errorf("%s is not named in NotImported %v", rel, rep.NotImported)
		case errors.Is(err, ErrUnknownFormat):
			t.Errorf("%s: named as of no known format, not for what it is: %v", rel, err)
		}
	}
	if err := named[filepath.Join(storage, "session_share", sid+".json")]; err == nil || strings.Contains(err.Error(), "0b7c-secret") {
		t.Errorf("the share's reason: %v", err)
	}
	if _, ok := named[filepath.Join(data, "auth.json")]; !ok {
		t.Errorf("auth.json is not named")
	}
	for p := range named {
		if strings.HasPrefix(p, filepath.Join(storage, "todo")) || p == files[sid] {
			t.Errorf("%s was read, yet named as not: %v", p, named[p])
		}
	}
	log, err := store.Load(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := log.Header.Extra.Get("opencodeTodo"); !ok || !strings.Contains(string(v), "Fix the build") {
		t.Errorf("the to-do list is not in the header: %s", v)
	}
	if dump := storeDump(t, context.Background(), store); strings.Contains(dump, "0b7c-secret") || strings.Contains(dump, "sk-ant-not-read") {
		t.Errorf("a credential reached the store")
	}
}

// TestOpenCodeStoragePartsNotRead: one message or part file named on its
// own is no session: refused with a typed error that says what to
// import instead. A session file outside a storage tree is refused
// rather than imported as a session without messages.
func TestOpenCodeStoragePartsNotRead(t *testing.T) {
	_, storage, _ := ocExportAndTree(t, ocExport, 8)
	var msg, part string
	filepath.WalkDir(storage, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if strings.Contains(p, string(filepath.Separator)+"message"+string(filepath.Separator)) && msg == "" {
				msg = p
			}
			if strings.Contains(p, string(filepath.Separator)+"part"+string(filepath.Separator)) && part == "" {
				part = p
			}
		}
		return nil
	})
	for _, p := range []string{msg, part} {
		rep, err := Import(context.Background(), session.NewMemoryStore(), p, nil)
		if err == nil || !errors.Is(err, ErrOpenCodeNotSession) || len(rep.Imported) != 0 {
			t.Errorf("import of %s: %v, %+v", p, err, rep)
		}
	}
	lone := filepath.Join(t.TempDir(), "ses_lone.json")
	writeFile(t, lone, `{"id":"ses_lone","slug":"x","version":"1.1.0","projectID":"global","directory":"/x","title":"t","time":{"created":1,"updated":2}}`)
	rep, err := Import(context.Background(), session.NewMemoryStore(), lone, nil)
	if err == nil || !errors.Is(err, ErrOpenCodeNotSession) || len(rep.Imported) != 0 {
		t.Errorf("a session file outside its storage tree: %v, %+v", err, rep)
	}
}

// TestOpenCodeStoragePublic: the trees OpenCode's own tests of its
// storage conversion write (testdata/opencode/public, MIT; see
// PROVENANCE.md) import with the ids that conversion takes: the files'
// names, where a file lacks its ids or holds stale ones.
func TestOpenCodeStoragePublic(t *testing.T) {
	base := filepath.Join("testdata", "opencode", "public", "opencode-json-migration")
	for _, c := range []struct {
		dir, session, message, text string
		msgs                        int
	}{
		{"current", "ses_test456def", "msg_test789ghi", "Hello, world!", 1},
		{"legacy-without-ids", "ses_test456def", "msg_test789ghi", "Hello, world!", 1},
		{"stale-ids", "ses_test456def", "msg_realmsgid", "Hello", 1},
		{"stale-session-id", "ses_from_filename", "", "", 0},
	} {
		t.Run(c.dir, func(t *testing.T) {
			store, rep := ocSessions(t, filepath.Join(base, c.dir, "storage"))
			if len(rep.Imported) != 1 || rep.Imported[0].ID != c.session || len(rep.Errors) != 0 || rep.Imported[0].Entries != c.msgs {
				t.Fatalf("imported %+v, errors %v", rep.Imported, rep.Errors)
			}
			for _, n := range rep.NotImported {
				if !strings.HasSuffix(n.Path, "migration") && !strings.Contains(n.Path, "project") {
					t.Errorf("not imported: %s: %v", n.Path, n.Err)
				}
			}
			s := openImported(t, store, c.session)
			if s.Title() != "Test Session" || s.Header().Cwd != "/test/path" {
				t.Errorf("header %+v", s.Header())
			}
			if c.msgs == 0 {
				return
			}
			msgs := s.Context().Messages
			if len(msgs) != 1 || msgs[0].Text() != c.text {
				t.Fatalf("messages %+v", msgs)
			}
			if e := firstEntryOfType(t, s, session.TypeMessage); e.ID() != c.message {
				t.Errorf("the message's entry is %s, want %s (its file's name)", e.ID(), c.message)
			}
		})
	}
}

// BenchmarkImportOpenCodeStorage imports a storage tree of 20 sessions
// of 100 turns each (a prompt; an answer of two steps, reasoning and a
// tool call, then text): 4,000 message and 14,000 part files, 16,000
// entries, into a MemoryStore. -short: 2 sessions.
func BenchmarkImportOpenCodeStorage(b *testing.B) {
	sessions, turns := 20, 100
	if testing.Short() {
		sessions = 2
	}
	st := filepath.Join(b.TempDir(), "storage")
	n := 0
	id := func(prefix string) string { n++; return fmt.Sprintf("%s_%012x%014d", prefix, 0x9a1b2c3d0000+n, n) }
	put := func(rel, body string) {
		p := filepath.Join(st, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	put("migration", "2")
	for s := range sessions {
		sid := fmt.Sprintf("ses_4f2a9c1e7ffe%014d", s)
		put("session/prj_1/"+sid+".json", fmt.Sprintf("{\n  \"id\": %q,\n  \"slug\": \"brave-otter\",\n  \"version\": \"1.1.0\",\n  \"projectID\": \"prj_1\",\n  \"directory\": \"/home/dev/web\",\n  \"title\": \"Session %d\",\n  \"time\": {\n    \"created\": 1761700000000,\n    \"updated\": 1761700040000\n  }\n}", sid, s))
		for i := range turns {
			t0 := 1761700000000 + int64(i)*10000
			u := id("msg")
			put("message/"+sid+"/"+u+".json", fmt.Sprintf("{\n  \"id\": %q,\n  \"sessionID\": %q,\n  \"role\": \"user\",\n  \"time\": {\n    \"created\": %d\n  },\n  \"agent\": \"build\",\n  \"model\": {\n    \"providerID\": \"anthropic\",\n    \"modelID\": \"claude-sonnet-4-5\"\n  }\n}", u, sid, t0))
			put("part/"+u+"/"+id("prt")+".json", fmt.Sprintf("{\n  \"id\": \"x\",\n  \"messageID\": %q,\n  \"sessionID\": %q,\n  \"type\": \"text\",\n  \"text\": \"Step %d: read src/file%d.go and fix what fails.\"\n}", u, sid, i, i))
			a := id("msg")
			put("message/"+sid+"/"+a+".json", fmt.Sprintf("{\n  \"id\": %q,\n  \"sessionID\": %q,\n  \"role\": \"assistant\",\n  \"time\": {\n    \"created\": %d,\n    \"completed\": %d\n  },\n  \"parentID\": %q,\n  \"modelID\": \"claude-sonnet-4-5\",\n  \"providerID\": \"anthropic\",\n  \"mode\": \"build\",\n  \"path\": {\n    \"cwd\": \"/home/dev/web\",\n    \"root\": \"/home/dev/web\"\n  },\n  \"cost\": 0.0125,\n  \"tokens\": {\n    \"input\": 1200,\n    \"output\": 80,\n    \"reasoning\": 0,\n    \"cache\": {\n      \"read\": 500,\n      \"write\": 100\n    }\n  }\n}", a, sid, t0+100, t0+9000, u))
			parts := []string{
				`"type": "step-start",` + "\n  \"snapshot\": \"4b825dc642cb6eb9a060e54bf8d69288fbee4904\"",
				`"type": "reasoning",` + "\n  \"text\": \"The file needs reading first.\",\n  \"time\": {\n    \"start\": " + fmt.Sprint(t0+200) + ",\n    \"end\": " + fmt.Sprint(t0+300) + "\n  }",
				`"callID": "toolu_` + fmt.Sprint(n) + `",` + "\n  \"tool\": \"read\",\n  \"type\": \"tool\",\n  \"state\": {\n    \"status\": \"completed\",\n    \"input\": {\n      \"filePath\": \"/home/dev/web/src/file" + fmt.Sprint(i) + ".go\"\n    },\n    \"output\": \"package web\\n\\nfunc F() int { return 1 }\\n\",\n    \"title\": \"src/file.go\",\n    \"metadata\": {},\n    \"time\": {\n      \"start\": " + fmt.Sprint(t0+400) + ",\n      \"end\": " + fmt.Sprint(t0+500) + "\n    }\n  }",
				`"type": "step-finish",` + "\n  \"reason\": \"tool-calls\",\n  \"cost\": 0.01,\n  \"tokens\": {\n    \"input\": 1200,\n    \"output\": 40,\n    \"reasoning\": 0,\n    \"cache\": {\n      \"read\": 500,\n      \"write\": 100\n    }\n  }",
				`"type": "step-start"`,
				`"type": "text",` + "\n  \"text\": \"Fixed: F returns 1.\"",
				`"type": "step-finish",` + "\n  \"reason\": \"stop\",\n  \"cost\": 0.0025,\n  \"tokens\": {\n    \"input\": 1300,\n    \"output\": 40,\n    \"reasoning\": 0,\n    \"cache\": {\n      \"read\": 1700,\n      \"write\": 0\n    }\n  }",
			}
			for _, p := range parts {
				pid := id("prt")
				put("part/"+a+"/"+pid+".json", fmt.Sprintf("{\n  \"id\": %q,\n  \"messageID\": %q,\n  \"sessionID\": %q,\n  %s\n}", pid, a, sid, p))
			}
		}
	}
	b.ResetTimer()
	for range b.N {
		rep, err := Import(context.Background(), session.NewMemoryStore(), st, nil)
		if err != nil || len(rep.Imported) != sessions || rep.Imported[0].Entries != 4*turns || len(rep.Errors) != 0 {
			b.Fatalf("%+v, %v", rep, err)
		}
	}
	b.ReportMetric(float64(4*turns*sessions*b.N)/b.Elapsed().Seconds(), "entries/s")
	b.ReportMetric(float64(9*turns*sessions*b.N)/b.Elapsed().Seconds(), "files/s")
}

// TestOpenCodeStorageSessionCap: a session whose messages and parts
// would make an export over the cap is refused (session.ErrTooLarge),
// read no further than the cap, and the tree's other sessions import.
func TestOpenCodeStorageSessionCap(t *testing.T) {
	defer func(n int) { ocMaxSessionBytes = n }(ocMaxSessionBytes)
	ocMaxSessionBytes = 3000
	_, storage, _ := ocExportAndTree(t, ocParentChild, -1)
	big := filepath.Join(storage, "part", "msg_9a1b2c3d0001AscendingIdForTest")
	for i := range 5 {
		writeFile(t, filepath.Join(big, fmt.Sprintf("prt_9a1b2c3d0001%04d.json", i)),
			fmt.Sprintf(`{"id":"prt_9a1b2c3d0001%04d","type":"text","text":%q}`, i, strings.Repeat("x", 1000)))
	}
	store := session.NewMemoryStore()
	rep, _ := Import(context.Background(), store, storage, nil)
	if len(rep.Errors) != 1 || !errors.Is(rep.Errors[0].Err, session.ErrTooLarge) {
		t.Fatalf("errors %v", rep.Errors)
	}
	if len(rep.Imported) != 1 || rep.Imported[0].ID != "ses_childBBBBBBBBBBBBBBBBBBBB" {
		t.Errorf("imported %+v: the child's session, read alone when its parent's is refused, is expected", rep.Imported)
	}
}
