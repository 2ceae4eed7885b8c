package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two files written by Dive v1.26.0's own FileStore (copies of
// importer/testdata/dive/dive-suspended.jsonl and dive-torn.jsonl): a
// turn suspended on a call awaiting approval, and a file whose last
// line a crash cut short.
const (
	diveSuspended = `{"line_type":"header","data":{"id":"dive-suspended","title":"Deploy","created_at":"2026-11-27T20:11:02.046512822Z","updated_at":"2026-11-27T20:11:02.063412974Z","suspended":true,"pending_tool_calls":[{"id":"toolu_approve","name":"approve","input":{"target":"prod"},"prompt":"Approve the deploy of v2 to prod?","reason":"auth_required","metadata":{"approver":"alice","ttl":3600}}],"completed_tool_calls":[{"id":"toolu_lookup","name":"lookup","input":{"release":"v2"},"result":{"content":[{"type":"text","text":"v2: 14 commits"}],"display":"**v2**: 14 commits"}}]}}
{"line_type":"event","data":{"id":"evt-1795810262063196112-6","type":"turn","timestamp":"2026-11-27T20:11:02.063198445Z","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},{"id":"msg_s1","role":"assistant","content":[{"type":"text","text":"Hello."}]}],"usage":{"input_tokens":20,"output_tokens":5}}}
{"line_type":"event","data":{"id":"evt-1795810262063413054-7","type":"turn","timestamp":"2026-11-27T20:11:02.063412974Z","messages":[{"role":"user","content":[{"type":"text","text":"Deploy v2 to prod."}]},{"id":"msg_s2","role":"assistant","content":[{"type":"text","text":"Checking the release, then asking for approval."},{"type":"tool_use","id":"toolu_lookup","name":"lookup","input":{"release":"v2"}},{"type":"tool_use","id":"toolu_approve","name":"approve","input":{"target":"prod"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_lookup","content":[{"text":"v2: 14 commits","type":"text"}]}]}],"usage":{"input_tokens":90,"output_tokens":25},"metadata":{"suspended":true}}}
`
	diveTorn = `{"line_type":"header","data":{"id":"dive-torn","created_at":"2026-11-27T20:11:02.077855166Z","updated_at":"2026-11-27T20:11:02.077855166Z"}}
{"line_type":"event","data":{"id":"evt-1795810262084489025-13","type":"turn","timestamp":"2026-11-27T20:11:02.084489826Z","messages":[{"role":"user","content":[{"type":"text","text":"question 1"}]},{"id":"msg_t1","role":"assistant","content":[{"type":"text","text":"answer 1"}]}],"usage":{"input_tokens":10,"output_tokens":1}}}
{"line_type":"event","data":{"id":"evt-1795810262084600681-14","type":"turn","timestamp":"2026-11-27T20:11:02.084601292Z","messages":[{"role":"user","content":[{"type":"text","text":"question 2"}]},{"id":"msg_t2","role":"assistant","content":[{"type":"text","text":"answer 2"}]}],"usage":{"input_tokens":20,"output_tokens":2}}}
{"line_type":"event","data":{"id":"evt-1795810262084666769-15","type":"turn","timestamp":"2026-11-27T20:11:02.084667079Z","messages":[{"role":"user","content":[{"ty`
)

// import --from dive reads a Dive file; a directory of them is detected
// file by file; a second run skips what is stored; --json names the
// format and the torn line.
func TestImportDive(t *testing.T) {
	dir := t.TempDir()
	susp := filepath.Join(dir, "dive-suspended.jsonl")
	require.NoError(t, os.WriteFile(susp, []byte(diveSuspended), 0o600))
	root := filepath.Join(t.TempDir(), "store")

	stdout, errOut, code := runCLI("import", "--from", "dive", "--root", root, susp)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, stdout, "imported dive-suspended (dive, 6 entries) from "+susp)
	assert.Contains(t, stdout, "imported 1, skipped 0 (already in the store), errors 0, files not imported 0")

	// The directory: the torn file beside it is detected too, its cut
	// line reported with its number.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dive-torn.jsonl"), []byte(diveTorn), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a session\n"), 0o600))
	stdout, errOut, code = runCLI("import", "--json", "--root", root, dir)
	// notes.txt is named, and the status says a file was not imported.
	require.Equal(t, exitFindings, code, errOut)
	byID := map[string]importJSON{}
	var notImported []importJSON
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var o importJSON
		require.NoError(t, json.Unmarshal([]byte(l), &o), l)
		if o.Status == "not-imported" {
			notImported = append(notImported, o)
			continue
		}
		byID[o.ID] = o
	}
	require.Len(t, notImported, 1, stdout)
	assert.Equal(t, filepath.Join(dir, "notes.txt"), notImported[0].Source)
	assert.Contains(t, notImported[0].Error, "unknown session format")
	require.Len(t, byID, 2, stdout)
	assert.Equal(t, "skipped", byID["dive-suspended"].Status)
	torn := byID["dive-torn"]
	assert.Equal(t, "imported", torn.Status)
	assert.Equal(t, "dive", torn.Format)
	assert.Equal(t, 4, torn.Entries)
	require.Len(t, torn.Malformed, 1)
	assert.Contains(t, torn.Malformed[0], "dive-torn.jsonl:4: importer: dive: the last line is cut short")

	// What the store holds: the pending call still pending, suspended.
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	s, err := session.Open(context.Background(), store, "dive-suspended")
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, "Deploy", s.Title())
	c := s.Context()
	assert.Empty(t, c.Pending, "not for the agent to run again")
	require.Len(t, c.Suspended, 1)
	assert.Equal(t, "approve", c.Suspended[0].Name)

	// A file that is no Dive file, read as one, is an error of that file.
	junk := filepath.Join(t.TempDir(), "junk.jsonl")
	require.NoError(t, os.WriteFile(junk, []byte("hello\n"), 0o600))
	_, errOut, code = runCLI("import", "--from", "dive", "--root", root, junk)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "no record could be read as dive")
}
