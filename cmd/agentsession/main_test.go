package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/compattest"
	"github.com/agentsession/session/storekit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary stand in for the real command, so that
// exit statuses are checked on a real process.
func TestMain(m *testing.M) {
	if os.Getenv("AGENTSESSION_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func runCLI(args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return o.String(), e.String(), code
}

func write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

const header = `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}`

const sample = header + `
{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"list files"}],"timestamp":1}}
{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-15T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"running"},{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}},{"type":"toolCall","id":"c2","name":"bash","arguments":{"command":"pwd"}}],"api":"x","provider":"anthropic","model":"claude","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":2}}
{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-01-15T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"a.go"}],"isError":false,"timestamp":3}}
{"type":"label","id":"l1","parentId":"r1","timestamp":"2026-01-15T10:00:04.000Z","targetId":"u1","label":"start"}
{"type":"message","id":"u2","parentId":"l1","timestamp":"2026-01-15T10:00:05.000Z","message":{"role":"user","content":"thanks","timestamp":5}}
`

func TestContextText(t *testing.T) {
	p := write(t, "s.jsonl", sample)
	out, errOut, code := runCLI("context", p)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "session s1 · leaf u2 · thinking off · model anthropic/claude")
	assert.Contains(t, out, "[2] assistant (anthropic/claude, toolUse)\n    running\n    → bash {\"command\":\"ls\"} [c1]")
	assert.Contains(t, out, "[3] toolResult bash [c1]\n    a.go")
	assert.Contains(t, out, "note: 1 tool call without results")

	out, _, code = runCLI("context", "--for-model", p)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "[4] toolResult bash [c2] error (synthesized)")
	assert.Contains(t, out, "5 messages (as sent to a model)")
}

func TestContextJSON(t *testing.T) {
	p := write(t, "s.jsonl", sample)
	for _, args := range [][]string{{"context", "--json", p}, {"context", p, "--json"}} {
		out, errOut, code := runCLI(args...)
		require.Equal(t, 0, code, errOut)
		var got map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(out), &got), out)
		keys := []string{}
		for k := range got {
			keys = append(keys, k)
		}
		assert.ElementsMatch(t, []string{"leafId", "thinkingLevel", "model", "messages"}, keys)
		assert.JSONEq(t, `"u2"`, string(got["leafId"]))
		assert.JSONEq(t, `{"provider":"anthropic","modelId":"claude"}`, string(got["model"]))
		var msgs []json.RawMessage
		require.NoError(t, json.Unmarshal(got["messages"], &msgs))
		require.Len(t, msgs, 4)
		// Messages are the seed format's agent-message JSON, as written.
		assert.JSONEq(t, `{"role":"user","content":"thanks","timestamp":5}`, string(msgs[3]))
	}
	out, _, code := runCLI("context", "--json", "--for-model", "--leaf", "r1", p)
	require.Equal(t, 0, code)
	var got struct {
		LeafID   string           `json:"leafId"`
		Messages []map[string]any `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, "r1", got.LeafID)
	require.Len(t, got.Messages, 3, "at r1, c2 is still pending: nothing is synthesized at the end")

	_, errOut, code := runCLI("context", "--leaf", "nope", p)
	assert.Equal(t, 2, code)
	assert.Equal(t, "agentsession: "+p+": entry nope not found\n", errOut)
}

func TestContextJSONOnCompat(t *testing.T) {
	compattest.Need(t)
	out, errOut, code := runCLI("context", "--json", compattest.Path("03-compaction.jsonl"))
	require.Equal(t, 0, code, errOut)
	var got struct {
		LeafID   string           `json:"leafId"`
		Messages []map[string]any `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, "33e9dd37", got.LeafID)
	require.Len(t, got.Messages, 5)
	assert.Equal(t, map[string]any{"role": "compactionSummary", "summary": "Summary of Q1-Q5 (includes previous summary).", "tokensBefore": 51000.0, "timestamp": 1768471297000.0}, got.Messages[0])

	out, _, code = runCLI("context", "--json", compattest.Path("02-branching.jsonl"), "--leaf", "88a514ff")
	require.Equal(t, 0, code)
	got.Messages = nil
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, "branchSummary", got.Messages[2]["role"])
	assert.Equal(t, "b196328f", got.Messages[2]["fromId"])

	out, _, code = runCLI("context", "--json", compattest.Path("01-linear-all-entry-types.jsonl"))
	require.Equal(t, 0, code)
	got.Messages = nil
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, map[string]any{"role": "custom", "customType": "my-extension", "content": "Injected context from extension",
		"display": true, "details": map[string]any{"debug": false}, "timestamp": 1768471213000.0}, got.Messages[4])
}

func TestTree(t *testing.T) {
	p := write(t, "s.jsonl", sample)
	out, errOut, code := runCLI("tree", p)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, `u1 user: list files  [start]
  a1 assistant: running
    r1 toolResult bash: a.go
      l1 label u1=start
        u2 user: thanks  <- leaf
`, out)

	compattest.Need(t)
	out, _, code = runCLI("tree", "--compact", compattest.Path("02-branching.jsonl"))
	require.Equal(t, 0, code)
	assert.Contains(t, out, "- c1eb6dee user: Write a function add(a,b)\n  b196328f assistant: function add(a,b){return a+b}\n    - 730c7b4c user: Now make it TypeScript\n      420c42d5 assistant:")
	assert.Contains(t, out, "- f349254b user: Completely new root message\n  efac2ec8 assistant: OK, new root.  <- leaf")
}

func TestVerify(t *testing.T) {
	p := write(t, "clean.jsonl", header+"\n"+`{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"hi"}}`+"\n")
	out, _, code := runCLI("verify", p)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "1 entry, no findings")

	bad := sample + "{not json\n" + `{"type":"message","id":"x1","parentId":"gone","message":{"role":"user","content":"orphan"}}` + "\n" + `{"type":"custom","id":"u1","parentId":null}` + "\n" + `{"type":"mess`
	p = write(t, "bad.jsonl", bad)
	out, _, code = runCLI("verify", p)
	assert.Equal(t, 1, code)
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(out, p+": ", "")), "\n")
	assert.True(t, strings.HasPrefix(out, p+": error: line 7: "), out)
	assert.Equal(t, []string{
		"error: line 7: malformed-line: invalid JSON at offset 1: expected object key",
		"warning: line 10: torn-tail: invalid JSON at offset 13: unexpected end of string",
		"error: entry x1: missing-parent: parent gone not found; read as a root",
		"error: entry u1: duplicate-id: 2 entries have this id; the last one is used",
		"warning: entry a1: dangling-call: tool call c2 (bash) has no result",
		"7 entries; 3 errors, 2 warnings",
	}, lines)
}

func TestUnreadableFiles(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct {
		content string
		reason  string
	}{
		"empty.jsonl":     {"", "not a session file: empty file"},
		"noheader.jsonl":  {`{"type":"message","id":"a"}` + "\n" + header + "\n", `not a session file: line 1: no session header (its type is not "session")`},
		"garbage.jsonl":   {"\x00\x01binary", "not a session file: line 1: no session header (it is not valid JSON)"},
		"newer.jsonl":     {`{"type":"session","version":9,"id":"x"}` + "\n", "not a session file: format version 9 is newer than this tool supports (3)"},
		"blankfirst.json": {"\n" + header + "\n", "not a session file: line 1: no session header"},
	}
	for name, c := range cases {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(c.content), 0o600))
		old := time.Now().Add(-time.Hour).Truncate(time.Second)
		require.NoError(t, os.Chtimes(p, old, old))
		for _, cmd := range [][]string{{"context"}, {"context", "--json"}, {"tree"}, {"verify"}, {"checkpoints"}, {"compact"}, {"compact", "--dry-run"}, {"fork"}} {
			out, errOut, code := runCLI(append(cmd, p)...)
			assert.Equal(t, 2, code, "%s %v", name, cmd)
			assert.Empty(t, out)
			assert.Equal(t, "agentsession: "+p+": "+c.reason+"\n", errOut, "%s %v", name, cmd)
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, c.content, string(data), "the file is left as it was")
		st, err := os.Stat(p)
		require.NoError(t, err)
		assert.True(t, st.ModTime().Equal(old), "the file is not written")
	}
	_, errOut, code := runCLI("tree", filepath.Join(dir, "missing.jsonl"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "missing.jsonl: no such file or directory")
}

func TestUsage(t *testing.T) {
	_, errOut, code := runCLI()
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "usage:")
	_, errOut, code = runCLI("frobnicate", "x")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `unknown command "frobnicate"`)
	_, _, code = runCLI("tree")
	assert.Equal(t, 2, code)
	_, _, code = runCLI("tree", "--nope", "x")
	assert.Equal(t, 2, code)
	out, _, code := runCLI("help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "usage: agentsession COMMAND")
	assert.Regexp(t, `(?m)^  context +print the context`, out)
}

// TestExitStatusOfRealProcess runs the command as its own process.
func TestExitStatusOfRealProcess(t *testing.T) {
	p := write(t, "v9.jsonl", `{"type":"session","version":9,"id":"x"}`+"\n")
	cmd := exec.Command(os.Args[0], "context", p)
	cmd.Env = append(os.Environ(), "AGENTSESSION_TEST_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "%v", err)
	assert.Equal(t, 2, ee.ExitCode())
	assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())

	// The sample's dangling call is a warning: an error only with --strict.
	ok := write(t, "ok.jsonl", sample)
	cmd = exec.Command(os.Args[0], "verify", ok)
	cmd.Env = append(os.Environ(), "AGENTSESSION_TEST_MAIN=1")
	require.NoError(t, cmd.Run())
	cmd = exec.Command(os.Args[0], "verify", "--strict", ok)
	cmd.Env = append(os.Environ(), "AGENTSESSION_TEST_MAIN=1")
	err = cmd.Run()
	require.True(t, errors.As(err, &ee))
	assert.Equal(t, 1, ee.ExitCode(), "the sample has a dangling call")
}

func TestWarnsAboutSkippedLines(t *testing.T) {
	p := write(t, "bad.jsonl", sample+"{not json\n"+`{"type":"mess`)
	for _, cmd := range []string{"context", "tree"} {
		out, errOut, code := runCLI(cmd, p)
		require.Equal(t, 0, code, errOut)
		assert.NotEmpty(t, out)
		assert.Equal(t, "agentsession: warning: "+p+": 1 malformed line skipped, torn last line 8 ignored; run verify for details\n", errOut, cmd)
	}
	_, errOut, code := runCLI("context", write(t, "good.jsonl", sample))
	require.Equal(t, 0, code)
	assert.Empty(t, errOut)
}

// TestStoreSessions: the read commands find sessions of a FileStore by
// id, resolve their blob references, and verify --all checks the store.
func TestStoreSessions(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	img := bytes.Repeat([]byte{1, 2, 3, 4}, 1000)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-img", Cwd: "/w"})
	require.NoError(t, err)
	_, err = s.Append(ctx, session.User(session.Text("what is in this picture?"), session.Image("image/png", img)))
	require.NoError(t, err)
	_, err = s.Append(ctx, session.AssistantText("squares"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	s2, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-plain", Cwd: "/v"})
	require.NoError(t, err)
	_, err = s2.Append(ctx, session.UserText("hello"))
	require.NoError(t, err)
	require.NoError(t, s2.Close())
	require.NoError(t, store.Close())
	file := filepath.Join(root, storekit.CwdDir("/w"))
	matches, _ := filepath.Glob(filepath.Join(file, "*_s-img.jsonl"))
	require.Len(t, matches, 1)
	file = matches[0]
	before, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(before), session.BlobPrefix, "the image went to a blob")

	out, errOut, code := runCLI("context", "--json", "--root", root, "s-img")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, base64.StdEncoding.EncodeToString(img), "the blob is resolved")
	assert.NotContains(t, out, session.BlobPrefix)

	out, errOut, code = runCLI("verify", "--all", "--root", root)
	assert.Equal(t, exitOK, code, errOut)
	assert.Equal(t, 2, strings.Count(out, "no findings"), out)

	// A missing blob is a finding, and a warning for the other commands.
	require.NoError(t, os.RemoveAll(filepath.Join(root, ".blobs")))
	out, _, code = runCLI("verify", "--root", root, "s-img", "s-plain")
	assert.Equal(t, exitFindings, code)
	assert.Contains(t, out, "unresolved-blob")
	assert.Contains(t, out, "s-plain.jsonl: 1 entry, no findings")
	_, errOut, code = runCLI("tree", file)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, errOut, "1 image left as blob references")

	_, errOut, code = runCLI("context", "--root", root, "s-nope")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "no session s-nope")
	after, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, before, after, "nothing was written")
}

// TestArchivedSessionBlobs: an archived session's blob references are
// resolved from the store's blob directory, as a live one's.
func TestArchivedSessionBlobs(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	img := bytes.Repeat([]byte{5, 6, 7, 8}, 1000)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-old", Cwd: "/w"})
	require.NoError(t, err)
	_, err = s.Append(ctx, session.User(session.Image("image/png", img)))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, store.Archive(ctx, "s-old"))
	file, err := store.Path("s-old")
	require.NoError(t, err)
	require.NoError(t, store.Close())
	require.Contains(t, file, ".archive")

	out, errOut, code := runCLI("context", "--json", file)
	require.Equal(t, exitOK, code, errOut)
	assert.Empty(t, errOut)
	assert.Contains(t, out, base64.StdEncoding.EncodeToString(img), "the blob is resolved")
}

// seedLayout copies a corpus file into a FileStore layout under a new
// root and returns the root and the file.
func seedLayout(t *testing.T, name string) (root, file string) {
	t.Helper()
	compattest.Need(t)
	data, err := os.ReadFile(compattest.Path(name))
	require.NoError(t, err)
	log, err := session.DecodeLog(data, nil)
	require.NoError(t, err)
	root = filepath.Join(t.TempDir(), "sessions")
	dir := filepath.Join(root, storekit.CwdDir(log.Header.Cwd))
	require.NoError(t, os.MkdirAll(dir, 0o700))
	file = filepath.Join(dir, "2026-01-15T10-00-00-000Z_"+log.Header.ID+".jsonl")
	require.NoError(t, os.WriteFile(file, data, 0o600))
	return root, file
}

func TestCompactCommand(t *testing.T) {
	root, file := seedLayout(t, "03-compaction.jsonl")
	before, err := os.ReadFile(file)
	require.NoError(t, err)

	out, errOut, code := runCLI("compact", "--dry-run", "--keep-tokens", "4", file)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "would compact at leaf 33e9dd37")
	assert.Contains(t, out, "keep from:     entry a3992fbc")
	assert.Contains(t, out, "updates:       the previous compaction's summary")
	after, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, before, after, "--dry-run writes nothing")

	out, errOut, code = runCLI("compact", "--keep-tokens", "100000", file)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "nothing to compact")

	// By id, in the store at --root.
	out, errOut, code = runCLI("compact", "--keep-tokens", "4", "--root", root, "10a54adc-9ac2-41f3-83f1-0edd4d380029")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "compacted: 2 messages summarized, history kept from entry a3992fbc")
	after, err = os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after[:len(before)]), "the file was only appended to")

	out, errOut, code = runCLI("context", "--json", file)
	require.Equal(t, exitOK, code, errOut)
	var c struct {
		Messages []struct {
			Role    string `json:"role"`
			Summary string `json:"summary"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	require.Len(t, c.Messages, 3)
	assert.Equal(t, "compactionSummary", c.Messages[0].Role)
	assert.Contains(t, c.Messages[0].Summary, "summarized without a model")
	assert.Contains(t, c.Messages[0].Summary, "<read-files>\nf1.ts", "the earlier compaction's files carry over")

	// A file outside any store is compacted in place; nothing else is made.
	dir := t.TempDir()
	loose := filepath.Join(dir, "loose.jsonl")
	require.NoError(t, os.WriteFile(loose, before, 0o600))
	_, errOut, code = runCLI("compact", "--keep-tokens", "4", "--root", filepath.Join(dir, "nowhere"), loose)
	require.Equal(t, exitOK, code, errOut)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the file itself")
}

func TestForkCommand(t *testing.T) {
	root, file := seedLayout(t, "02-branching.jsonl")
	before, err := os.ReadFile(file)
	require.NoError(t, err)
	src, err := session.DecodeLog(before, nil)
	require.NoError(t, err)
	at := src.Entries[1].ID()

	out, errOut, code := runCLI("fork", "--at", at, "--title", "experiment", file)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "forked 2 entries to "+root)
	after, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the source is untouched")

	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	children, err := session.ListChildren(context.Background(), store, src.Header.ID)
	require.NoError(t, err)
	require.Len(t, children, 1)
	assert.Equal(t, "experiment", children[0].Title)
	assert.Equal(t, 2, children[0].Entries)
	path, err := store.Path(children[0].ID)
	require.NoError(t, err)
	assert.Contains(t, out, path)

	_, errOut, code = runCLI("fork", "--at", "nosuchentry", file)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "entry nosuchentry not found")
}

func TestCheckpointsCommand(t *testing.T) {
	p := write(t, "s.jsonl", sample)
	out, errOut, code := runCLI("checkpoints", p)
	require.Equal(t, exitOK, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Contains(t, lines[0], "NAME")
	assert.Contains(t, lines[1], "u1")
	assert.Contains(t, lines[1], "start (on the current path)")
}

// TestEditCommandsOnOlderVersions: compact refuses a version 2 file
// (appending would migrate it, which only migrate does); fork reads it
// as it is and leaves it so.
func TestEditCommandsOnOlderVersions(t *testing.T) {
	_, file := seedLayout(t, "09-v2-handmade.input.jsonl")
	before, err := os.ReadFile(file)
	require.NoError(t, err)

	_, errOut, code := runCLI("compact", "--keep-tokens", "1", file)
	assert.Equal(t, exitError, code)
	assert.Equal(t, "agentsession: "+file+": format version 2: run `agentsession migrate` on it first\n", errOut)

	out, errOut, code := runCLI("fork", file)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "forked")

	_, errOut, code = runCLI("compact", "--keep-tokens", "0", file)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "--keep-tokens must be positive")

	after, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "the file is left as it was")
	st, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}

// TestEscapingFileRefusedEverywhere: a session file in a store's layout
// whose directory is a symlink out of the store is refused by every
// command, with the same error, and nothing is created.
func TestEscapingFileRefusedEverywhere(t *testing.T) {
	ctx := context.Background()
	elsewhere, root := t.TempDir(), t.TempDir()
	store, err := session.OpenFileStore(elsewhere, nil)
	require.NoError(t, err)
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/w"})
	require.NoError(t, err)
	_, err = s.Append(ctx, session.UserText("hello"))
	require.NoError(t, err)
	real, err := store.Path(s.ID())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, store.Close())
	require.NoError(t, os.Symlink(filepath.Dir(real), filepath.Join(root, "--w--")))
	path := filepath.Join(root, "--w--", filepath.Base(real))
	for _, cmd := range [][]string{{"context", path}, {"tree", path}, {"verify", path}, {"checkpoints", path},
		{"fork", path}, {"compact", path}, {"compact", "--dry-run", path}} {
		_, errOut, code := runCLI(cmd...)
		assert.NotEqual(t, 0, code, "%v succeeded", cmd)
		assert.Contains(t, errOut, "path escapes from parent", "%v", cmd)
	}
	files, err := filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, []string{path}, files, "a fork was made")
	ents, err := os.ReadDir(root)
	require.NoError(t, err)
	assert.Len(t, ents, 1, "the store's root holds only the symlink")
}

// TestForkNothingRefused: a fork that would hold no entry is an error,
// never an empty success.
func TestForkNothingRefused(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/w"})
	require.NoError(t, err)
	_, err = s.Append(ctx, session.UserText("hello"))
	require.NoError(t, err)
	require.NoError(t, s.Branch(ctx, ""))
	path, err := store.Path(s.ID())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, store.Close())
	_, errOut, code := runCLI("fork", path)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, "nothing to fork")
	files, err := filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
	require.NoError(t, err)
	assert.Len(t, files, 1, "a fork was made")
}
