package importer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// FuzzImportOpenCodeStorage: a storage tree whose session, message, part
// and to-do files hold any bytes, under any names the fuzzer picks
// (used where they can be a file's name), imports without a panic, as a
// directory and as the session's file named alone; what it stores opens;
// every file of the tree is imported or named. Each file is read whole
// under a cap (ocMaxRecordBytes), so memory is bounded by the input.
func FuzzImportOpenCodeStorage(f *testing.F) {
	b, err := os.ReadFile(ocExport)
	if err != nil {
		f.Fatal(err)
	}
	o := jsonObject(ocAscending(f, ocDropMessage(f, b, 8)))
	msgs := o.arr("messages")
	first := jsonObject(msgs[1])
	f.Add([]byte(o.raw("info")), []byte(first.raw("info")), []byte(first.arr("parts")[3]), []byte(`[{"content":"x","status":"pending","priority":"high","id":"1"}]`), "ses_4f2a9c1e7ffeAbCdEf0123456", "msg_1")
	f.Add([]byte(`{"id":"ses_a","projectID":"p","directory":"/x","parentID":"ses_a","time":{"created":1}}`), []byte(`{"role":"assistant","summary":true}`), []byte(`{"type":"text","text":"s"}`), []byte(`{}`), "ses_a", "msg_a")
	f.Add([]byte(`{"id":"../../x","projectID":1,"time":"now"}`), []byte(`[1,2]`), []byte(`{"type":"tool","state":{"status":"completed","input":"{\"a\":1}","attachments":[{"url":"data:image/png;base64,AAAA"}]}}`), []byte(`not json`), "..", "/abs")
	f.Add([]byte(`{"id":"ses_x"}`), []byte(`{"id":"msg_x","sessionID":"ses_y","role":"user","time":{"created":-1}}`), []byte(`{"id":"prt_x","messageID":"../msg_x","type":"compaction","tail_start_id":"msg_x"}`), []byte(`[null,"a",{"content":5}]`), strings.Repeat("s", 300), "msg_x")
	f.Fuzz(func(t *testing.T, info, msg, part, todo []byte, stem, mstem string) {
		if len(info)+len(msg)+len(part)+len(todo) > 64<<10 {
			return
		}
		name := func(s, def string) string {
			if _, err := elem(s); err != nil || len(s) > 100 || strings.HasPrefix(s, ".") || strings.ContainsAny(s, ":*?\"<>|") {
				return def
			}
			return s
		}
		stem, mstem = name(stem, "ses_f"), name(mstem, "msg_f")
		in := t.TempDir()
		st := filepath.Join(in, "storage")
		put := func(rel string, b []byte) {
			p := filepath.Join(st, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		sessionFile := filepath.Join("session", "prj", stem+".json")
		put(sessionFile, info)
		put(filepath.Join("message", stem, mstem+".json"), msg)
		put(filepath.Join("part", mstem, "prt_f.json"), part)
		put(filepath.Join("todo", stem+".json"), todo)
		put("migration", []byte("2"))
		ctx := context.Background()
		for _, target := range []string{in, filepath.Join(st, sessionFile)} {
			store := session.NewMemoryStore()
			rep, _ := Import(ctx, store, target, nil)
			if rep == nil {
				continue
			}
			for _, s := range append(rep.Imported, rep.Skipped...) {
				sess, err := session.Open(ctx, store, s.ID)
				if err != nil {
					t.Fatalf("open %s: %v", s.ID, err)
				}
				_ = sess.Context()
				sess.Close()
			}
			if target == in {
				checkNamed(t, in, rep)
			}
		}
	})
}
