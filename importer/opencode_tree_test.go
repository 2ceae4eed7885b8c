package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Test helpers that lay out an OpenCode export as OpenCode 1.1's storage
// tree: what Storage.write(key, value) leaves, JSON.stringify(value,
// null, 2) in <storage>/<key...>.json.

// ocIndent is raw as JSON.stringify(v, null, 2) writes it: the members
// in their order, two spaces an indent.
func ocIndent(t testing.TB, raw json.RawMessage) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		t.Fatalf("indent %s: %v", raw, err)
	}
	return b.Bytes()
}

// ocWriteTree writes the sessions of the exports in doc (one export or a
// list of them) as a storage tree at dir: session/<projectID>/<id>.json,
// message/<sessionID>/<id>.json, part/<messageID>/<id>.json, with the
// project file and the storage's migration marker OpenCode writes beside
// them. It returns the session files, by session id.
func ocWriteTree(t testing.TB, dir string, doc []byte) map[string]string {
	t.Helper()
	exports := jsonArray(doc)
	if exports == nil {
		exports = []json.RawMessage{doc}
	}
	put := func(rel string, b []byte) string {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	files := map[string]string{}
	for _, raw := range exports {
		o := jsonObject(raw)
		info := o.jsonObj("info")
		sid, proj := info.str("id"), orDefault(info.str("projectID"), "global")
		files[sid] = put("session/"+proj+"/"+sid+".json", ocIndent(t, o.raw("info")))
		put("project/"+proj+".json", []byte(fmt.Sprintf("{\n  \"id\": %q,\n  \"worktree\": \"/home/dev/web\",\n  \"vcs\": \"git\",\n  \"time\": {\n    \"created\": 1761600000000\n  }\n}", proj)))
		for _, m := range o.arr("messages") {
			mo := jsonObject(m)
			mid := mo.jsonObj("info").str("id")
			put("message/"+sid+"/"+mid+".json", ocIndent(t, mo.raw("info")))
			for _, pt := range mo.arr("parts") {
				put("part/"+mid+"/"+jsonObject(pt).str("id")+".json", ocIndent(t, pt))
			}
		}
	}
	put("migration", []byte("2"))
	return files
}

// ocAscending gives the messages and parts of an export (or a list of
// them) ids that sort in their order, as OpenCode's do (Identifier.
// ascending: the time, then a counter), so that the storage tree, which
// OpenCode lists by file name, holds them in the export's order. Every
// quoted occurrence of an old id (a part's messageID, an assistant's
// parentID, a compaction's tail_start_id) is renamed too.
func ocAscending(t testing.TB, doc []byte) []byte {
	t.Helper()
	exports := jsonArray(doc)
	if exports == nil {
		exports = []json.RawMessage{doc}
	}
	rename := map[string]string{}
	n := 0
	next := func(prefix, old string) {
		if old == "" || rename[old] != "" {
			return
		}
		n++
		rename[old] = fmt.Sprintf("%s_9a1b2c3d%04dAscendingIdForTest", prefix, n)
	}
	for _, raw := range exports {
		for _, m := range jsonObject(raw).arr("messages") {
			mo := jsonObject(m)
			next("msg", mo.jsonObj("info").str("id"))
			for _, pt := range mo.arr("parts") {
				next("prt", jsonObject(pt).str("id"))
			}
		}
	}
	olds := make([]string, 0, len(rename))
	for old := range rename {
		olds = append(olds, old)
	}
	sort.Slice(olds, func(i, j int) bool { return len(olds[i]) > len(olds[j]) })
	out := string(doc)
	for _, old := range olds {
		out = strings.ReplaceAll(out, `"`+old+`"`, `"`+rename[old]+`"`)
	}
	return []byte(out)
}

// ocDropMessage removes message i of a single export.
func ocDropMessage(t testing.TB, doc []byte, i int) []byte {
	t.Helper()
	var o map[string]json.RawMessage
	if err := json.Unmarshal(doc, &o); err != nil {
		t.Fatal(err)
	}
	msgs := jsonArray(o["messages"])
	msgs = append(msgs[:i:i], msgs[i+1:]...)
	// Rebuild the export with its members in their order.
	var b bytes.Buffer
	b.WriteString(`{"info":`)
	b.Write(o["info"])
	b.WriteString(`,"messages":`)
	m, _ := json.Marshal(msgs)
	b.Write(m)
	b.WriteString("}")
	return b.Bytes()
}
