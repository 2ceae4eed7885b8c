package importer

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// Hostile OpenCode storage trees: ids in the files' contents that climb
// out of the tree or name another session's files, links out of the
// root where a directory or file of the tree is, FIFOs where files are
// read. Nothing outside the root may reach the store.

// ocOutside writes, beside the import root, what an OpenCode import
// must never read: a storage tree of a victim's session, every file of
// it holding the canary.
func ocOutside(t testing.TB, out string) {
	st := filepath.Join(out, "oc", "storage")
	writeFile(t, filepath.Join(st, "session", "prj_v", "ses_victim.json"),
		`{"id":"ses_victim","projectID":"prj_v","directory":"/v","title":"`+canaryOut+`","time":{"created":1,"updated":1}}`)
	writeFile(t, filepath.Join(st, "message", "ses_victim", "msg_victim.json"),
		`{"id":"msg_victim","sessionID":"ses_victim","role":"user","time":{"created":1}}`)
	writeFile(t, filepath.Join(st, "part", "msg_victim", "prt_victim.json"),
		`{"id":"prt_victim","sessionID":"ses_victim","messageID":"msg_victim","type":"text","text":"`+canaryOut+`"}`)
	writeFile(t, filepath.Join(st, "todo", "ses_victim.json"), `[{"content":"`+canaryOut+`","status":"pending","priority":"high","id":"1"}]`)
}

// ocHostileTree writes an OpenCode storage tree at in/oc/storage whose
// session, messages and parts carry the ids given (in their contents,
// and as file names where they can be one), with links out and FIFOs
// where flags say (bits 9 to 15).
func ocHostileTree(t testing.TB, in, out, idA, idB string, flags uint16) {
	ocOutside(t, out)
	bit := func(n int) bool { return flags&(1<<n) != 0 }
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	st := filepath.Join(in, "oc", "storage")
	victim := filepath.Join(out, "oc", "storage")
	sid, mid := "ses_mine", "msg_mine"
	if _, err := elem(idA); err == nil && len(idA) < 100 && !strings.HasPrefix(idA, ".") {
		sid = idA
	}
	writeFile(t, filepath.Join(st, "migration"), "2")
	writeFile(t, filepath.Join(st, "session", "prj_1", sid+".json"), fmt.Sprintf(
		`{"id":%s,"projectID":"prj_1","parentID":%s,"directory":"/x","title":"t","time":{"created":1,"updated":2}}`, q(idA), q(idB)))
	writeFile(t, filepath.Join(st, "session", "prj_1", "ses_kid.json"), fmt.Sprintf(
		`{"id":"ses_kid","projectID":"prj_1","parentID":%s,"directory":"/x","title":"kid","time":{"created":1,"updated":2}}`, q(idA)))
	// The message and part files name other sessions and messages (the
	// victim's, paths out) in their contents.
	writeFile(t, filepath.Join(st, "message", sid, mid+".json"), fmt.Sprintf(
		`{"id":%s,"sessionID":%s,"role":"user","time":{"created":1}}`, q(idB), q("../../../outside/oc/storage/message/ses_victim")))
	writeFile(t, filepath.Join(st, "part", mid, "prt_1.json"), fmt.Sprintf(
		`{"id":"prt_1","sessionID":%s,"messageID":%s,"type":"text","text":"hello"}`, q(idA), q("../../../outside/oc/storage/part/msg_victim")))
	if bit(9) {
		symlink(t, filepath.Join(victim, "message", "ses_victim"), filepath.Join(st, "message", "ses_kid"))
	}
	if bit(10) {
		symlink(t, filepath.Join(victim, "part", "msg_victim", "prt_victim.json"), filepath.Join(st, "part", mid, "prt_2.json"))
	}
	if bit(11) {
		symlink(t, filepath.Join(victim, "todo", "ses_victim.json"), filepath.Join(st, "todo", sid+".json"))
	}
	if bit(12) {
		mkfifo(t, filepath.Join(st, "part", mid, "prt_3.json"))
		mkfifo(t, filepath.Join(st, "message", sid, "msg_zfifo.json"))
	}
	if bit(13) {
		symlink(t, filepath.Join(victim, "session", "prj_v"), filepath.Join(st, "session", "prj_v"))
	}
	if bit(14) {
		// The message directory of a message of the session is the
		// victim's part directory.
		writeFile(t, filepath.Join(st, "message", sid, "msg_victim.json"), `{"id":"msg_victim","role":"user","time":{"created":2}}`)
		symlink(t, filepath.Join(victim, "part", "msg_victim"), filepath.Join(st, "part", "msg_victim"))
	}
	if bit(15) {
		mkfifo(t, filepath.Join(st, "todo", sid+".json"))
	}
}

// TestOpenCodeStorageStaysInside: whatever the ids of a storage tree's
// files and wherever its links point, an import of it (the directory, or
// a session's file) stores nothing from outside, does not hang on a
// FIFO, and names every link and FIFO it did not follow.
func TestOpenCodeStorageStaysInside(t *testing.T) {
	ids := [][2]string{
		{"ses_mine", "ses_kid"},
		{"../../../outside/oc/storage/session/prj_v/ses_victim", "/etc/passwd"},
		{"ses_victim", "../ses_victim"},
		{"..", "."},
		{strings.Repeat("ses_", 300), `..\..\outside`},
	}
	for i, id := range ids {
		for _, flags := range []uint16{0, 0xfe00, 1 << 9, 1 << 10, 1 << 11, 1 << 12, 1 << 13, 1 << 14, 1 << 15} {
			t.Run(fmt.Sprintf("ids%d/flags%#x", i, flags), func(t *testing.T) {
				base := t.TempDir()
				in, out := filepath.Join(base, "in"), filepath.Join(base, "outside")
				ocHostileTree(t, in, out, id[0], id[1], flags)
				sessions, _ := filepath.Glob(filepath.Join(in, "oc", "storage", "session", "prj_1", "*.json"))
				for _, target := range append([]string{in}, sessions...) {
					store := session.NewMemoryStore()
					rep, _ := Import(context.Background(), store, target, nil)
					if rep == nil {
						t.Fatalf("import of %s: no report", target)
					}
					if got := storeDump(t, context.Background(), store); strings.Contains(got, canaryOut) {
						t.Fatalf("import of %s read outside its root:\n%s", target, got)
					}
					if len(rep.Imported) == 0 && (flags&(1<<9) == 0 || !strings.HasSuffix(target, "ses_kid.json")) {
						t.Errorf("import of %s imported nothing: %v", target, rep.Errors)
					}
					if target == in {
						checkNamed(t, in, rep)
					}
				}
			})
		}
	}
}
