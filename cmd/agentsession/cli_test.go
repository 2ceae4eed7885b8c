package main

import (
	"bytes"
	"context"
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runTTY runs the command as runCLI does, as if stdout and stderr were
// the terminal term says.
func runTTY(term terminal, args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	code = runTerm(args, &o, &e, term)
	return o.String(), e.String(), code
}

// testStore makes a store under a new directory with a session per id,
// titled "title <id>", in cwd /w, one second apart, and returns its root.
func testStore(t *testing.T, ids ...string) string {
	t.Helper()
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	for _, id := range ids {
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w", Title: "title " + id})
		require.NoError(t, err)
		_, err = s.Append(ctx, session.UserText("hello "+id))
		require.NoError(t, err)
		_, err = s.Append(ctx, session.AssistantText("hi"))
		require.NoError(t, err)
		require.NoError(t, s.Close())
	}
	return root
}

// ---- 1. Builds and vets off Linux ----

// The builds off Linux (darwin, windows, freebsd on amd64 and arm64) are
// .ci/run's, with the whole module: a test here would make every
// "go test ./..." of a newcomer cross-compile the module six times.

// ---- 2. --json everywhere, camelCase, numbers as numbers, documented ----

var camel = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// jsonKeys collects the keys of every object in v, but for the messages
// of context, which are the seed format's own JSON, and the keys of
// show's state and metadata, which are the host's.
func jsonKeys(v any, keys map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			keys[k] = true
			if k != "messages" && k != "state" && k != "metadata" {
				jsonKeys(x, keys)
			}
		}
	case []any:
		for _, x := range v {
			jsonKeys(x, keys)
		}
	}
}

// decodeJSON reads one JSON document or JSON Lines.
func decodeJSON(t *testing.T, out string) []any {
	t.Helper()
	var docs []any
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var v any
		require.NoError(t, dec.Decode(&v), out)
		docs = append(docs, v)
	}
	require.NotEmpty(t, docs, "no JSON printed")
	return docs
}

func TestJSONEverywhere(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(sample), 0o600))
	root, croot := testStore(t, "s-one"), testStore(t, "s-two")
	v2 := write(t, "v2.jsonl", v2File)
	ws := newWSFixture(t)
	wsTree := tinyWSTree(t)
	runs := map[string][][]string{
		"context":     {{"context", "--json", p}},
		"tree":        {{"tree", "--json", p}},
		"verify":      {{"verify", "--json", p}},
		"checkpoints": {{"checkpoints", "--json", p}},
		"snapshots":   {{"snapshots", "--json", ws.file}},
		"diff":        {{"diff", "--json", ws.file}, {"diff", "--json", "--dir", ws.proj, ws.file}},
		"restore":     {{"restore", "--json", "--dry-run", "--to", ws.e1, "--dir", ws.proj, ws.file}},
		"ls":          {{"ls", "--json", "--all", "--root", root}},
		"search":      {{"search", "--json", "--root", root, "--index", filepath.Join(dir, "index.sqlite"), "hello"}},
		"compact":     {{"compact", "--json", "--dry-run", "--keep-tokens", "1", p}, {"compact", "--json", "--keep-tokens", "1", "--root", croot, "s-two"}},
		"fork":        {{"fork", "--json", "--out", filepath.Join(dir, "forks"), p}},
		"migrate":     {{"migrate", "--json", v2}},
		"version":     {{"version", "--json"}},
		"bench":       {{"bench", "--json", "--turns", "3", "--ws-tree", wsTree}, {"bench", "--json", "--busy", "--turns", "3", "--ws-tree", wsTree}},
	}
	lc := newLCFixture(t)
	lcDel := newLCFixture(t)
	for name, args := range map[string][]string{
		"show":      {"show", "--json", "p-parent"},
		"stats":     {"stats", "--json", "--daily"},
		"title":     {"title", "--json", "p-parent", "T"},
		"label":     {"label", "--json", "c-child", lc.user, "L"},
		"rewind":    {"rewind", "--json", "g-grand", lc.user},
		"archive":   {"archive", "--json", "o-other"},
		"unarchive": {"unarchive", "--json", "o-other"},
	} {
		runs[name] = [][]string{append(args, "--root", lc.root)}
	}
	// The runs go in any order: import reads an export made here.
	exp := writeExport(t, lc.root, "p-parent")
	runs["export"] = [][]string{{"export", "--json", "--root", lc.root, "-o", filepath.Join(dir, "p.json"), "p-parent"}}
	runs["import"] = [][]string{{"import", "--json", "--root", filepath.Join(dir, "imported"), exp}}
	runs["gc"] = [][]string{{"gc", "--json", "--dry-run", "--older-than", "30d", "--root", lc.root}}
	runs["mirror"] = [][]string{{"mirror", "--json", "--root", root, "--to", "file://" + filepath.Join(dir, "remote")}}
	runs["delete"] = [][]string{{"delete", "--json", "--yes", "--children", "--root", lcDel.root, "c-child"}, {"delete", "--json", "--dry-run", "--root", lcDel.root, "p-parent"}}
	if testing.Short() {
		delete(runs, "bench")
	} else {
		t.Setenv("AGENTSESSION_TEST_MAIN", "1") // bench measures in a child process: this binary as main
	}
	for _, cmd := range commands {
		if cmd.hidden || cmd.name == "help" {
			continue
		}
		assert.NotZero(t, cmd.common&withJSON, "%s takes no --json", cmd.name)
		if cmd.name == "watch" {
			continue // it runs until interrupted: TestWatch checks its JSON
		}
		if _, ok := runs[cmd.name]; !ok && !(testing.Short() && cmd.name == "bench") {
			t.Errorf("no --json run of %s in this test", cmd.name)
		}
	}
	for name, list := range runs {
		doc := docSection(name)
		for _, args := range list {
			out, errOut, code := runCLI(args...)
			require.Equal(t, exitOK, code, "%v: %s", args, errOut)
			keys := map[string]bool{}
			for _, d := range decodeJSON(t, out) {
				jsonKeys(d, keys)
			}
			for k := range keys {
				assert.Regexp(t, camel, k, "%v", args)
				assert.Contains(t, doc, `"`+k+`"`, "%s --json prints %q, which its section of the package doc does not name", name, k)
			}
		}
	}

	// ls names sessions as the store does, in camelCase.
	out, _, _ := runCLI("ls", "--json", "--all", "--root", root)
	var info map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &info))
	assert.Equal(t, "s-one", info["id"])
	assert.Equal(t, 2.0, info["entries"])
	assert.Equal(t, false, info["archived"])
	assert.FileExists(t, info["path"].(string))

	// bench's ratios are numbers.
	if !testing.Short() {
		out, _, _ = runCLI("bench", "--json", "--turns", "3", "--ws-tree", wsTree)
		var b map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &b))
		for _, k := range []string{"openContextPerReadFloor", "fsyncTurnPerRawFdatasync", "fileBytes", "openNs", "writeThroughNsPerEntry", "writeFloorNsPerEntry", "writeThroughPerFloor", "forkNs", "forkFloorNs", "forkPerFloor", "compactNs", "procs"} {
			assert.IsType(t, 0.0, b[k], k)
		}
		for _, k := range []string{"writeThroughNsPerEntry", "forkNs", "forkFloorNs", "forkPerFloor", "compactNs", "procs", "heapSharedBytes", "heapLiveBytes", "resumeNs", "resumeTurns", "resumeMessages"} {
			assert.Positive(t, b[k], "measured: %s", k)
		}
		// The heap with a Context() copy held holds what the shared one
		// does and the copy; both are far below a wrapped subtraction.
		assert.LessOrEqual(t, b["heapSharedBytes"], b["heapLiveBytes"])
		assert.Less(t, b["heapLiveBytes"], float64(1<<30))
		assert.Equal(t, false, b["busy"])
		ws, ok := b["workspace"].(map[string]any)
		require.True(t, ok, "the workspace section: %v", b["workspace"])
		for _, k := range []string{"snapshotFirstNs", "diff10Ns", "storedBytes"} {
			assert.IsType(t, 0.0, ws[k], k)
		}
	}
}

// TestDocIsTheHelp: the package doc lists every command's usage as the
// table has it, and each command's --help is its section of the doc.
func TestDocIsTheHelp(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	text := f.Doc.Text()
	for _, cmd := range commands {
		if cmd.hidden {
			continue
		}
		assert.Contains(t, text, "\tagentsession "+cmd.name+" "+cmd.usage+"\n", "the doc's usage of %s", cmd.name)
		assert.Contains(t, text, "\n# "+cmd.name+"\n", "the doc has no section for %s", cmd.name)
		out, _, code := runCLI(cmd.name, "--help")
		assert.Equal(t, exitOK, code)
		assert.NotEmpty(t, cmd.help, cmd.name)
		assert.Contains(t, out, cmd.help)
	}
}

// ---- 3. Commands that write say where ----

const v2File = `{"type":"session","version":2,"id":"v2","timestamp":"2025-12-01T00:00:00.000Z","cwd":"/w"}
{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2025-12-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}}
`

func TestForkDestination(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	t.Setenv("AGENTSESSION_ROOT", "")
	loose := write(t, "loose.jsonl", sample)

	// A file outside any store, with no destination: refused, nothing made.
	out, errOut, code := runCLI("fork", loose)
	assert.Equal(t, exitError, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, loose+": not in a session store")
	assert.Contains(t, errOut, "--out DIR")
	ents, err := os.ReadDir(home)
	require.NoError(t, err)
	assert.Empty(t, ents, "nothing written to the default store")

	// --out DIR: the fork goes there, and says where, with its id.
	dest := filepath.Join(t.TempDir(), "forks")
	out, errOut, code = runCLI("fork", "--json", "--out", dest, loose)
	require.Equal(t, exitOK, code, errOut)
	var f struct{ Source, SourceID, At, Path, ID, Title string }
	require.NoError(t, json.Unmarshal([]byte(out), &f))
	assert.Equal(t, loose, f.Source)
	assert.Equal(t, "s1", f.SourceID)
	assert.Equal(t, "u2", f.At)
	assert.NotEmpty(t, f.ID)
	assert.Equal(t, dest, filepath.Dir(filepath.Dir(f.Path)))
	assert.Equal(t, "_"+f.ID+".jsonl", f.Path[strings.LastIndex(f.Path, "_"):])
	assert.FileExists(t, f.Path)

	// An explicit --root is a destination too.
	root := filepath.Join(t.TempDir(), "r")
	out, errOut, code = runCLI("fork", "--root", root, loose)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "forked 4 entries to "+root)

	// A file of a store goes beside it, whatever $AGENTSESSION_ROOT says.
	t.Setenv("AGENTSESSION_ROOT", filepath.Join(home, "elsewhere"))
	sroot := testStore(t, "s-src")
	src := sessionFiles(sroot)["s-src"]
	out, errOut, code = runCLI("fork", src)
	require.Equal(t, exitOK, code, errOut)
	m := regexp.MustCompile(`forked 2 entries to (\S+) \(session (\S+)\)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	assert.Equal(t, filepath.Dir(src), filepath.Dir(m[1]), "beside the source")
	assert.NoDirExists(t, filepath.Join(home, "elsewhere"))
}

func TestWritersSayWhatTheyChanged(t *testing.T) {
	root := testStore(t, "s-c")
	file := sessionFiles(root)["s-c"]
	out, errOut, code := runCLI("compact", "--keep-tokens", "1", "--root", root, "s-c")
	require.Equal(t, exitOK, code, errOut)
	assert.Regexp(t, `^`+regexp.QuoteMeta(file)+`: compacted: 1 message summarized, history kept from entry \S+; context ~\d+ tokens before, ~\d+ after; new leaf \S+\n$`, out)

	v2 := write(t, "v2.jsonl", v2File)
	out, errOut, code = runCLI("migrate", v2)
	require.Equal(t, exitOK, code, errOut)
	assert.Regexp(t, `^`+regexp.QuoteMeta(v2)+`: migrated from version 2 to 3, rewritten in place \(mode 0[0-7]{3} kept\)\n$`, out)
	out, _, code = runCLI("migrate", v2)
	require.Equal(t, exitOK, code)
	assert.Equal(t, v2+": already version 3, left as it is\n", out)
}

// ---- 4. Ids: prefixes, checkpoint names, ambiguity ----

func TestSessionIDPrefixes(t *testing.T) {
	ctx := context.Background()
	root := testStore(t, "abc", "abcd", "abxy", "zzz-archived")
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	require.NoError(t, store.Archive(ctx, "zzz-archived"))
	require.NoError(t, store.Close())

	// Exact wins over prefix; a unique prefix resolves; archived included.
	for arg, want := range map[string]string{"abc": "abc", "abcd": "abcd", "abx": "abxy", "zz": "zzz-archived"} {
		out, errOut, code := runCLI("context", "--root", root, arg)
		require.Equal(t, exitOK, code, "%s: %s", arg, errOut)
		assert.Contains(t, out, "session "+want+" ·", arg)
	}
	out, errOut, code := runCLI("verify", "--root", root, "zz")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "zzz-archived.jsonl: 2 entries, no findings")

	// An ambiguous prefix lists the candidates: id, updated, title.
	out, errOut, code = runCLI("tree", "--root", root, "ab")
	assert.Equal(t, exitError, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, `session id prefix "ab" is ambiguous: 3 match`)
	for _, id := range []string{"abc", "abcd", "abxy"} {
		assert.Regexp(t, `\n  `+id+` +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +title `+id+`\n`, errOut+"\n")
	}
	_, errOut, code = runCLI("context", "--root", root, "nope")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "no session nope in "+root)
}

func TestEntryPrefixesAndCheckpointNames(t *testing.T) {
	// Entries u1, a1, r1, l1 (labels u1 "start"), u2; add one whose id
	// begins like another's, and one named like an entry's prefix.
	p := write(t, "s.jsonl", sample+
		`{"type":"message","id":"a1b","parentId":"u2","timestamp":"2026-01-15T10:00:06.000Z","message":{"role":"user","content":"more","timestamp":6}}`+"\n"+
		`{"type":"label","id":"l2","parentId":"a1b","timestamp":"2026-01-15T10:00:07.000Z","targetId":"r1","label":"u"}`+"\n")
	leafOf := func(args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(append([]string{"context", "--json", p}, args...)...)
		require.Equal(t, exitOK, code, "%v: %s", args, errOut)
		var c struct{ LeafID string }
		require.NoError(t, json.Unmarshal([]byte(out), &c))
		return c.LeafID
	}
	assert.Equal(t, "a1", leafOf("--leaf", "a1"), "an exact id wins over a prefix of a1b")
	assert.Equal(t, "a1b", leafOf("--leaf", "a1b"))
	assert.Equal(t, "u1", leafOf("--leaf", "start"), "a checkpoint name")
	assert.Equal(t, "r1", leafOf("--leaf", "u"), "a checkpoint name wins over the prefix of u1 and u2")
	assert.Equal(t, "r1", leafOf("--leaf", "r"), "a unique prefix")

	_, errOut, code := runCLI("context", "--leaf", "l", p)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, `entry id prefix "l" is ambiguous: 2 match`)
	assert.Regexp(t, `\n  l1 +\S+ \S+ +label u1=start`, errOut)
	assert.Regexp(t, `\n  l2 +\S+ \S+ +label r1=u`, errOut)

	// fork --at takes them too.
	out, errOut, code := runCLI("fork", "--json", "--at", "start", "--out", t.TempDir(), p)
	require.Equal(t, exitOK, code, errOut)
	var f struct {
		At      string
		Entries int
	}
	require.NoError(t, json.Unmarshal([]byte(out), &f))
	assert.Equal(t, "u1", f.At)
	assert.Equal(t, 1, f.Entries)
}

// ---- 5. Help, version, usage errors, a missing store ----

func TestHelpVersionAndUsageErrors(t *testing.T) {
	out, errOut, code := runCLI("--help")
	require.Equal(t, exitOK, code, errOut)
	for _, cmd := range commands {
		if cmd.hidden {
			assert.NotContains(t, out, cmd.name)
			continue
		}
		assert.Regexp(t, `(?m)^  `+regexp.QuoteMeta(cmd.name)+` +`+regexp.QuoteMeta(cmd.summary)+`$`, out)
		for _, h := range []string{"--help", "-h"} {
			out, errOut, code := runCLI(cmd.name, h)
			assert.Equal(t, exitOK, code, "%s %s", cmd.name, h)
			assert.Empty(t, errOut)
			assert.True(t, strings.HasPrefix(out, "usage: agentsession "+cmd.name+" "+cmd.usage+"\n"), out)
			assert.Contains(t, out, "\nflags:\n")
		}
		hout, _, code := runCLI("help", cmd.name)
		assert.Equal(t, exitOK, code)
		assert.True(t, strings.HasPrefix(hout, "usage: agentsession "+cmd.name), hout)
	}
	out, _, code = runCLI("context", "--help", "x.jsonl")
	assert.Equal(t, exitOK, code, "--help anywhere")
	assert.Contains(t, out, "usage: agentsession context")

	out, _, code = runCLI("--version")
	assert.Equal(t, exitOK, code)
	assert.Equal(t, "agentsession "+version()+"\n", out)
	assert.NotEmpty(t, version())

	_, errOut, code = runCLI("tre", "x")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, `unknown command "tre"`)
	assert.Contains(t, errOut, "Did you mean 'agentsession tree'?")
	assert.Contains(t, errOut, "agentsession --help")

	_, errOut, code = runCLI("tree", "--nope", "x")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "agentsession tree: unknown flag --nope\nusage: agentsession tree ")
	assert.Contains(t, errOut, "agentsession tree --help")
	_, errOut, code = runCLI("--nope")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "unknown flag --nope")
	_, errOut, code = runCLI("tree")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "expected one FILE|ID")
	_, errOut, code = runCLI("ls", "extra")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "takes no arguments")

	// "--" ends the flags.
	dash := write(t, "-dash.jsonl", sample)
	_, errOut, code = runCLI("tree", "--", dash)
	assert.Equal(t, exitOK, code, errOut)
}

func TestNoSessionsFolder(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none")
	t.Setenv("AGENTSESSION_ROOT", missing)
	for _, args := range [][]string{{"ls"}, {"verify", "--all"}, {"context", "some-id"}} {
		out, errOut, code := runCLI(args...)
		assert.Equal(t, exitError, code, "%v", args)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "no sessions folder at "+missing+" (from $AGENTSESSION_ROOT); --root DIR or $AGENTSESSION_ROOT sets it", "%v", args)
	}
	_, errOut, _ := runCLI("ls", "--root", missing)
	assert.Contains(t, errOut, "(from --root)")
	assert.NoDirExists(t, missing, "nothing created")
}

// ---- 6. Human output: tables, colors, --limit, pager, progress, empty lists ----

func TestColorsOnlyForATerminal(t *testing.T) {
	p := write(t, "s.jsonl", sample)
	out, _, code := runTTY(terminal{outTTY: true, color: true}, "tree", p)
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "\x1b[33m  [start]\x1b[0m")
	assert.Contains(t, out, "\x1b[32m  <- leaf\x1b[0m")
	out, _, _ = runTTY(terminal{outTTY: true, color: true}, "verify", p)
	assert.Contains(t, out, "\x1b[33mwarning\x1b[0m: entry a1: dangling-call")
	out, _, _ = runTTY(terminal{outTTY: true, color: true}, "tree", "--json", p)
	assert.NotContains(t, out, "\x1b[", "no colors in JSON")
	out, _, _ = runCLI("tree", p)
	assert.NotContains(t, out, "\x1b[")

	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	if runtime.GOOS != "windows" {
		assert.True(t, colorAllowed())
	}
	t.Setenv("NO_COLOR", "1")
	assert.False(t, colorAllowed(), "NO_COLOR")
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "dumb")
	assert.False(t, colorAllowed(), "TERM=dumb")

	// A real process writing to a pipe: no colors, no pager, no progress.
	cmd := exec.Command(os.Args[0], "tree", p)
	cmd.Env = append(os.Environ(), "AGENTSESSION_TEST_MAIN=1", "TERM=xterm", "PAGER=false")
	got, err := cmd.Output()
	require.NoError(t, err)
	assert.NotContains(t, string(got), "\x1b[")
	assert.Contains(t, string(got), "<- leaf")
}

func TestTablesAreAligned(t *testing.T) {
	root := testStore(t, "s-short", "s-a-much-longer-id")
	out, errOut, code := runTTY(terminal{outTTY: true, color: true}, "ls", "--no-pager", "--all", "--root", root)
	require.Equal(t, exitOK, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	assert.True(t, strings.HasPrefix(lines[0], "\x1b[1mUPDATED"), "a bold header: %q", lines[0])
	header := strings.TrimPrefix(strings.TrimSuffix(lines[0], "\x1b[0m"), "\x1b[1m")
	col := strings.Index(header, "ENTRIES")
	for _, l := range lines[1:] {
		assert.Equal(t, "2", l[col:col+1], "the ENTRIES column lines up: %q", l)
	}
}

func TestLimit(t *testing.T) {
	root := testStore(t, "s1", "s2", "s3")
	out, errOut, code := runCLI("ls", "--all", "--limit", "2", "--root", root)
	require.Equal(t, exitOK, code, errOut)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 3, "header and two rows")
	assert.Contains(t, errOut, "the first 2 sessions shown; --limit 0 shows all")
	out, _, _ = runCLI("ls", "--all", "--limit", "2", "--json", "--root", root)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 2)

	out, errOut, code = runCLI("verify", "--all", "--limit", "1", "--root", root)
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, 1, strings.Count(out, "no findings"), out)
	assert.Contains(t, errOut, "1 of 3 files shown")

	p := write(t, "s.jsonl", sample)
	out, errOut, _ = runCLI("tree", "--limit", "2", p)
	assert.Equal(t, "u1 user: list files  [start]\n  a1 assistant: running\n", out)
	assert.Contains(t, errOut, "2 of 5 entries shown")
	out, _, _ = runCLI("context", "--limit", "1", p)
	assert.Contains(t, out, "4 messages, the last 1 shown\n\n[4] user\n    thanks\n")
	out, _, _ = runCLI("context", "--limit", "1", "--json", p)
	var c struct {
		Messages []any
		Omitted  int
	}
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	assert.Len(t, c.Messages, 1)
	assert.Equal(t, 3, c.Omitted)
	out, _, _ = runCLI("checkpoints", "--limit", "1", "--json", p)
	assert.Equal(t, 1, strings.Count(out, "\n"))

	_, errOut, code = runCLI("ls", "--limit", "-1", "--root", root)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "--limit must be 0 (no limit) or more")
}

func TestPager(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the test pager is a shell command")
	}
	p := write(t, "s.jsonl", sample)
	t.Setenv("PAGER", "sed 's/^/paged: /'")
	tty := terminal{outTTY: true, rows: 3}
	out, _, code := runTTY(tty, "tree", p)
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "paged: u1 user: list files", "long output to a terminal is paged")
	out, _, _ = runTTY(tty, "tree", "--no-pager", p)
	assert.NotContains(t, out, "paged:")
	out, _, _ = runCLI("tree", p)
	assert.NotContains(t, out, "paged:", "no pager when stdout is no terminal")
	out, _, _ = runTTY(terminal{outTTY: true, rows: 100}, "tree", p)
	assert.NotContains(t, out, "paged:", "short output is not paged")
	t.Setenv("PAGER", "")
	out, _, _ = runTTY(tty, "tree", p)
	assert.Contains(t, out, "u1 user: list files", "PAGER= turns it off")
	t.Setenv("PAGER", "no-such-pager-here")
	out, _, code = runTTY(tty, "tree", p)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "u1 user: list files")
}

func TestProgressLine(t *testing.T) {
	root := testStore(t, "s1", "s2")
	old := progressDelay
	progressDelay = 0
	defer func() { progressDelay = old }()
	var o, e bytes.Buffer
	c := &call{cmd: cmdVerify, stdout: &o, stderr: &e, term: terminal{errTTY: true}}
	prog := c.progress("verifying")
	prog.set("", 1, 2)
	lw := c.stderr.(*lineWriter)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		lw.mu.Lock()
		shown := lw.shown && strings.Contains(e.String(), "1/2")
		lw.mu.Unlock()
		if shown {
			break
		}
	}
	c.stderr.Write([]byte("a message\n"))
	prog.end()
	assert.Contains(t, e.String(), "\r\x1b[Kverifying: 1/2 (0s)")
	assert.Contains(t, e.String(), "\r\x1b[Ka message\n", "a message clears the line first")
	assert.True(t, strings.HasSuffix(e.String(), "\r\x1b[K") || strings.HasSuffix(e.String(), "a message\n"), "the line is cleared at the end: %q", e.String())

	_, errOut, code := runTTY(terminal{errTTY: true}, "verify", "--all", "--root", root)
	require.Equal(t, exitOK, code)
	assert.NotContains(t, errOut, "agentsession:", errOut)
	_, errOut, _ = runCLI("verify", "--all", "--root", root)
	assert.Empty(t, errOut, "no progress line when stderr is no terminal")
	progressDelay = time.Hour
	_, errOut, _ = runTTY(terminal{errTTY: true}, "verify", "--all", "--root", root)
	assert.Empty(t, errOut, "quick work shows no progress")
}

func TestEmptyListsSaySo(t *testing.T) {
	root := testStore(t, "s1")
	out, errOut, code := runCLI("ls", "--cwd", "/elsewhere", "--root", root)
	require.Equal(t, exitOK, code)
	assert.Empty(t, out)
	assert.Equal(t, "agentsession: no sessions in "+root+" for /elsewhere; --all lists those of every directory, --archived archived ones\n", errOut)
	out, errOut, _ = runCLI("ls", "--cwd", "/elsewhere", "--json", "--root", root)
	assert.Empty(t, out)
	assert.Empty(t, errOut)

	p := write(t, "nolabels.jsonl", header+"\n")
	out, errOut, code = runCLI("checkpoints", p)
	require.Equal(t, exitOK, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "no checkpoints in "+p)
}

// ---- 7. verify grades its findings ----

func TestVerifySeverity(t *testing.T) {
	// An aborted turn: a call without a result, then the user goes on.
	aborted := write(t, "aborted.jsonl", header+"\n"+
		`{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"go"}}`+"\n"+
		`{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{}}],"stopReason":"aborted"}}`+"\n"+
		`{"type":"message","id":"u2","parentId":"a1","message":{"role":"user","content":"stop"}}`+"\n")
	out, _, code := runCLI("verify", aborted)
	assert.Equal(t, exitOK, code, "a warning is no error")
	assert.Equal(t, aborted+": warning: entry a1: dangling-call: tool call c1 (bash) has no result\n"+aborted+": 3 entries; 1 warning\n", out)
	_, _, code = runCLI("verify", "--strict", aborted)
	assert.Equal(t, exitFindings, code, "--strict: any finding")

	orphan := write(t, "orphan.jsonl", header+"\n"+`{"type":"message","id":"x1","parentId":"gone","message":{"role":"user","content":"orphan"}}`+"\n")
	out, _, code = runCLI("verify", "--json", aborted, orphan)
	assert.Equal(t, exitFindings, code)
	docs := decodeJSON(t, out)
	require.Len(t, docs, 2)
	assert.Equal(t, map[string]any{"path": aborted, "entries": 3.0, "errors": 0.0, "warnings": 1.0, "infos": 0.0,
		"findings": []any{map[string]any{"severity": "warning", "kind": "dangling-call", "line": 0.0, "entryId": "a1", "detail": "tool call c1 (bash) has no result"}}}, docs[0])
	assert.Equal(t, 1.0, docs[1].(map[string]any)["errors"])
	assert.Equal(t, "error", docs[1].(map[string]any)["findings"].([]any)[0].(map[string]any)["severity"])

	bad := write(t, "bad.jsonl", "")
	out, _, code = runCLI("verify", "--json", bad, aborted)
	assert.Equal(t, exitError, code)
	docs = decodeJSON(t, out)
	assert.Equal(t, map[string]any{"path": bad, "error": "not a session file: empty file"}, docs[0])
}

// ---- 8. migrate keeps the mode, and a backup ----

func TestMigrateKeepsModeAndBackup(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "v2.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(v2File), 0o644))
	require.NoError(t, os.Chmod(p, 0o644))
	out, errOut, code := runCLI("migrate", "--backup", p)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "migrated from version 2 to 3")
	assert.Contains(t, out, "the old file is in "+p+".bak")
	bak, err := os.ReadFile(p + ".bak")
	require.NoError(t, err)
	assert.Equal(t, v2File, string(bak))
	now, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Contains(t, string(now), `"version":3`)
	if runtime.GOOS != "windows" {
		for _, f := range []string{p, p + ".bak"} {
			st, err := os.Stat(f)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o644), st.Mode().Perm(), f)
		}
	}

	// An existing backup is never overwritten: the file is left alone.
	require.NoError(t, os.WriteFile(p, []byte(v2File), 0o644))
	out, errOut, code = runCLI("migrate", "--json", "--backup", p)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "backup "+p+".bak exists")
	assert.Contains(t, out, `"error":"backup `)
	now, _ = os.ReadFile(p)
	assert.Equal(t, v2File, string(now))
	bak, _ = os.ReadFile(p + ".bak")
	assert.Equal(t, v2File, string(bak))

	// No backup of a file with nothing to migrate, nor with --dry-run.
	q := write(t, "v3.jsonl", sample)
	_, _, code = runCLI("migrate", "--backup", q)
	assert.Equal(t, exitOK, code)
	assert.NoFileExists(t, q+".bak")
	r := write(t, "v2b.jsonl", v2File)
	out, _, code = runCLI("migrate", "--backup", "--dry-run", "--json", r)
	assert.Equal(t, exitOK, code)
	assert.NoFileExists(t, r+".bak")
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	if runtime.GOOS == "windows" {
		m["mode"] = "0600" // Windows has no such bits
	}
	assert.Equal(t, map[string]any{"path": r, "from": 2.0, "to": 3.0, "migrated": false, "dryRun": true, "backup": "", "mode": "0600"}, m)
}
