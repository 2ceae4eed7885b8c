package importer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// FuzzImportTree builds an import root holding a session file of every
// format whose ids (the ones readers could make paths of) come from the
// input, with links out of the root, FIFOs and an over-long line where
// the input's flags say, and imports it as a directory and file by file.
// Whatever the ids, nothing outside the root reaches the store, and
// every link and special file is named in the report.
func FuzzImportTree(f *testing.F) {
	f.Add("../outside/victim", "../../outside", uint16(0xffff), []byte("x"))
	f.Add("/etc/passwd", "..", uint16(0), []byte{})
	f.Add("s", "a1", uint16(0x5555), []byte(`{"parentUuid":null}`))
	f.Add(".", "./../outside/victim", uint16(0xaaaa), []byte("\n\n"))
	f.Add("victim/../../outside/victim", `..\outside`, uint16(0x0f0f), []byte(`{"sessionId":"../outside"}`))
	f.Add("ses_../../../outside", "msg_../..", uint16(0x00ff), []byte("{}"))
	f.Add("q/../other", "o1", uint16(0), []byte{})
	f.Add("./other", "o1", uint16(0x0100), []byte{})
	f.Add("ses_victim", "../../outside/oc/storage/session/prj_v/ses_victim", uint16(0xfe00), []byte{})
	f.Fuzz(func(t *testing.T, idA, idB string, flags uint16, extra []byte) {
		if len(idA) > 200 || len(idB) > 200 || len(extra) > 4096 {
			return
		}
		defer func(l int) { claudeMaxLineBytes = l }(claudeMaxLineBytes)
		claudeMaxLineBytes = 2 << 10
		base := t.TempDir()
		in, out := filepath.Join(base, "in"), filepath.Join(base, "outside")
		outsideTree(t, out)
		buildHostileTree(t, in, out, idA, idB, flags, extra)

		ctx := context.Background()
		targets := []string{in}
		ents, _ := os.ReadDir(in)
		for _, e := range ents {
			if e.Type().IsRegular() {
				targets = append(targets, filepath.Join(in, e.Name()))
			}
		}
		for _, target := range targets {
			store := session.NewMemoryStore()
			rep, _ := Import(ctx, store, target, nil)
			if rep == nil {
				continue
			}
			got := storeDump(t, ctx, store)
			if strings.Contains(got, canaryOut) {
				t.Fatalf("import of %s read outside its root (ids %q, %q; flags %#x)", target, idA, idB, flags)
			}
			// Another session's subagents, inside the root, are read
			// with that session only.
			if target != in && filepath.Base(target) != "other.jsonl" && idA != "other" && strings.Contains(got, canaryOther) {
				t.Fatalf("import of %s read another session's files (ids %q, %q; flags %#x)", target, idA, idB, flags)
			}
			if target == in {
				checkNamed(t, in, rep)
			}
		}
	})
}

const canaryOther = "CANARY-OTHER-SESSION-9d4e"

// buildHostileTree writes the root in: one session of each format with
// the ids given, and links, FIFOs and a long line where flags say.
func buildHostileTree(t *testing.T, in, out, idA, idB string, flags uint16, extra []byte) {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	bit := func(n int) bool { return flags&(1<<n) != 0 }
	long := ""
	if bit(0) {
		long = strings.Repeat("y", 3<<10)
	}
	// Claude Code: the file named for idA (when it can be a name), its
	// lines naming idA as their session, a subagent idB.
	stem := "claude"
	if _, err := elem(idA); err == nil && len(idA) < 100 {
		stem = idA
	}
	if stem == "." || strings.HasPrefix(stem, ".") {
		stem = "claude"
	}
	writeFile(t, filepath.Join(in, stem+".jsonl"),
		clLine("u-1", "", idA, "hello "+long),
		clLine("u-2", "u-1", idA, "again"),
		string(extra))
	if sub, err := elem(stem); err == nil {
		agentDir := filepath.Join(in, sub, "subagents")
		if bit(1) {
			symlink(t, filepath.Join(out, "victim", "subagents"), agentDir)
		} else {
			writeFile(t, filepath.Join(agentDir, "agent-a1.jsonl"), clAgentLine("a-1", idA, idB, "task"))
			if bit(2) {
				symlink(t, filepath.Join(out, "creds.json"), filepath.Join(agentDir, "agent-a1.meta.json"))
			}
			if bit(3) {
				symlink(t, filepath.Join(out, "victim", "subagents", "agent-v1.jsonl"), filepath.Join(agentDir, "agent-v9.jsonl"))
			}
			if bit(4) {
				mkfifo(t, filepath.Join(agentDir, "agent-f1.jsonl"))
			}
		}
	}
	// Another session, whose subagents no other file's ids may reach.
	writeFile(t, filepath.Join(in, "other.jsonl"), clLine("o-1", "", "other", "theirs"))
	writeFile(t, filepath.Join(in, "other", "subagents", "agent-o1.jsonl"), clAgentLine("oa-1", "other", "o1", canaryOther))
	if bit(5) {
		symlink(t, filepath.Join(out, "agent-v2.jsonl"), filepath.Join(in, "agent-v2.jsonl"))
	}
	if bit(6) {
		symlink(t, out, filepath.Join(in, "linked"))
	}
	if bit(7) {
		mkfifo(t, filepath.Join(in, "fifo.jsonl"))
	}
	// Codex: its payload id idA.
	writeFile(t, filepath.Join(in, "rollout.jsonl"),
		`{"timestamp":"2025-01-01T00:00:00Z","type":"session_meta","payload":{"id":`+q(idA)+`,"timestamp":"2025-01-01T00:00:00Z","cwd":"/x","originator":"codex_cli_rs","cli_version":"0.1"}}`,
		`{"timestamp":"2025-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi`+long+`"}]}}`,
		string(extra))
	// Dive: its header's id idA, forked from idB.
	writeFile(t, filepath.Join(in, "dive.jsonl"),
		`{"line_type":"header","data":{"id":`+q(idA)+`,"forked_from":`+q(idB)+`,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}}`,
		`{"line_type":"event","data":{"id":"evt-1","type":"turn","timestamp":"2026-01-01T00:00:01Z","messages":[{"role":"user","content":[{"type":"text","text":"hi`+long+`"}]}]}}`,
		string(extra))
	// OpenCode's export: its info's id idA, parent idB.
	writeFile(t, filepath.Join(in, "opencode.json"), fmt.Sprintf(
		`{"info":{"id":%s,"parentID":%s,"title":"t","directory":"/x","time":{"created":1,"updated":2}},"messages":[{"info":{"id":%s,"sessionID":%s,"role":"user","time":{"created":1}},"parts":[{"id":"prt_1","type":"text","text":"hi"}]}]}`,
		q(idA), q(idB), q(idB), q(idA)))
	// This module's export: its header's id idA.
	writeFile(t, filepath.Join(in, "export.json"), fmt.Sprintf(
		`{"format":"agentsession.export","version":1,"header":{"type":"session","version":3,"id":%s,"timestamp":"2026-01-01T00:00:00Z","cwd":"/x","parentSession":%s},"entries":[{"type":"message","id":"e1","parentId":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi","timestamp":1}}]}`,
		q(idA), q(idB)))
	if bit(8) {
		mkfifo(t, filepath.Join(in, "opencode-fifo.json"))
	}
	// OpenCode's storage tree: its session, messages and parts naming
	// idA and idB, with links out and FIFOs where bits 9 to 15 say.
	ocHostileTree(t, in, out, idA, idB, flags)
}
