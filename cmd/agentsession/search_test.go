package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// searchStore is a store with two sessions: one whose user asked about a
// flaky parser, one whose assistant answered about it; it returns the
// root and the ids.
func searchStore(t *testing.T) (root, asked, answered string) {
	t.Helper()
	ctx := context.Background()
	root = filepath.Join(t.TempDir(), "sessions")
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	add := func(id, title string, msgs ...*session.Message) {
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w/" + id, Title: title})
		require.NoError(t, err)
		require.NoError(t, s.SaveTurn(ctx, msgs, nil))
		require.NoError(t, s.Close())
	}
	add("s-asked", "Parser work", session.UserText("why is the parser test flaky?"), session.AssistantText("let me look"))
	add("s-answered", "Other", session.UserText("hello"), session.AssistantText("The parser test is flaky: \x1b[31mmap order\x1b[0m."))
	return root, "s-asked", "s-answered"
}

func TestSearchCommand(t *testing.T) {
	root, asked, answered := searchStore(t)
	index := filepath.Join(t.TempDir(), "index.sqlite")

	out, errOut, code := runCLI("search", "--root", root, "--index", index, "flaky", "parser")
	require.Equal(t, exitOK, code, errOut)
	// Grouped by session, the user's prompt first; matches marked.
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.Len(t, lines, 5, out)
	assert.Equal(t, asked+"  Parser work  /w/"+asked, lines[0])
	assert.Regexp(t, `^  \S+  user  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  why is the «parser» test «flaky»\?$`, lines[1])
	assert.Equal(t, "", lines[2])
	assert.Equal(t, answered+"  Other  /w/"+answered, lines[3])
	assert.Contains(t, lines[4], "  assistant  ")
	assert.NotContains(t, out, "\x1b", "escape sequences of the sessions' text never reach the terminal")
	assert.FileExists(t, index)

	// --json: one object per hit and line.
	out, errOut, code = runCLI("search", "--json", "--root", root, "--index", index, `"parser test"`)
	require.Equal(t, exitOK, code, errOut)
	docs := decodeJSON(t, out)
	require.Len(t, docs, 2)
	first := docs[0].(map[string]any)
	assert.Equal(t, asked, first["sessionId"])
	assert.Equal(t, "Parser work", first["title"])
	assert.Equal(t, "user", first["role"])
	assert.Equal(t, true, first["prompt"])
	assert.Equal(t, "why is the «parser test» flaky?", first["snippet"])
	assert.IsType(t, 0.0, first["score"])
	assert.Equal(t, false, docs[1].(map[string]any)["prompt"])

	// --limit keeps the best.
	out, _, code = runCLI("search", "--json", "--limit", "1", "--root", root, "--index", index, "parser")
	require.Equal(t, exitOK, code)
	assert.Len(t, decodeJSON(t, out), 1)

	// Nothing found: nothing on stdout, a word on stderr, exit status 1.
	out, errOut, code = runCLI("search", "--root", root, "--index", index, "zebra")
	assert.Equal(t, exitNoMatch, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, `no entry matches "zebra"`)
}

// The index follows the store: a new session is found, a deleted one
// no more.
func TestSearchCommandUpdates(t *testing.T) {
	root, _, answered := searchStore(t)
	index := filepath.Join(t.TempDir(), "index.sqlite")
	_, errOut, code := runCLI("search", "--root", root, "--index", index, "parser")
	require.Equal(t, exitOK, code, errOut)

	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	s, err := session.Create(t.Context(), store, &session.CreateOptions{ID: "s-new"})
	require.NoError(t, err)
	_, err = s.Append(t.Context(), session.UserText("a parser question"))
	require.NoError(t, err)
	require.NoError(t, store.Delete(t.Context(), answered))
	require.NoError(t, store.Close())

	out, errOut, code := runCLI("search", "--json", "--root", root, "--index", index, "parser")
	require.Equal(t, exitOK, code, errOut)
	ids := map[string]bool{}
	for _, d := range decodeJSON(t, out) {
		ids[d.(map[string]any)["sessionId"].(string)] = true
	}
	assert.Equal(t, map[string]bool{"s-asked": true, "s-new": true}, ids)
}

func TestSearchCommandErrors(t *testing.T) {
	root, _, _ := searchStore(t)
	index := filepath.Join(t.TempDir(), "index.sqlite")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no query", []string{"search", "--root", root, "--index", index}, "expected QUERY..."},
		{"empty query", []string{"search", "--root", root, "--index", index, `"`, "*"}, "has no words to search for"},
		{"long query", []string{"search", "--root", root, "--index", index, strings.Repeat("a ", 100)}, "the query is too long"},
		{"bad limit", []string{"search", "--root", root, "--index", index, "--limit", "0", "x"}, "--limit must be 1 or more"},
		{"no root", []string{"search", "--root", filepath.Join(root, "missing"), "--index", index, "x"}, "missing"},
		{"not an index", []string{"search", "--root", root, "--index", write(t, "notes.txt", "plain text, not SQLite\n"), "x"}, "not a search index"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runCLI(c.args...)
			assert.Equal(t, exitError, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, c.want)
		})
	}
	// Hostile queries are text: never an error of the engine (a match,
	// or none).
	for _, q := range []string{"AND OR NOT", "col:", "(parser", `"unclosed`, "parser*", "NEAR(a b)"} {
		_, errOut, code := runCLI("search", "--root", root, "--index", index, q)
		assert.Contains(t, []int{exitOK, exitNoMatch}, code, "%q: %s", q, errOut)
	}
}

// TestSearchExitStatus: as grep, 0 when an entry matches, 1 when none
// does (with --json too: no line, status 1), 2 for an error.
func TestSearchExitStatus(t *testing.T) {
	root, _, _ := searchStore(t)
	index := filepath.Join(t.TempDir(), "index.sqlite")
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"flaky"}, 0},
		{[]string{"--json", "flaky"}, 0},
		{[]string{"(parser"}, 0},
		{[]string{"zebra"}, 1},
		{[]string{"--json", "zebra"}, 1},
		{[]string{"flaky", "zebra"}, 1}, // every word must match
		{[]string{"AND", "OR", "NOT"}, 1},
		{[]string{"--limit", "0", "flaky"}, 2},
		{[]string{"--index", filepath.Join(root, "no", "such", "dir", "x")}, 2},
	} {
		args := append([]string{"search", "--root", root, "--index", index}, c.args...)
		out, errOut, code := runCLI(args...)
		assert.Equal(t, c.want, code, "%v: %s%s", c.args, out, errOut)
		if c.want == 1 {
			assert.Empty(t, out, c.args)
		}
	}
	// A real process exits with it (the test binary runs the tool).
	proc := func(q string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "search", "--root", root, "--index", index, q)
		cmd.Env = append(os.Environ(), "AGENTSESSION_TEST_MAIN=1")
		return cmd
	}
	var ee *exec.ExitError
	require.ErrorAs(t, proc("zebra").Run(), &ee)
	assert.Equal(t, 1, ee.ExitCode())
	require.NoError(t, proc("flaky").Run())
}

// Without --index the index goes under the user's cache directory.
func TestSearchCommandDefaultIndex(t *testing.T) {
	root, asked, _ := searchStore(t)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	out, errOut, code := runCLI("search", "--json", "--root", root, "flaky")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, asked)
	files, err := filepath.Glob(filepath.Join(cache, "agentsession", "search", "*.sqlite"))
	require.NoError(t, err)
	assert.Len(t, files, 1)
	ents, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, e := range ents {
		assert.False(t, strings.Contains(e.Name(), "search"), "the store holds %s", e.Name())
	}
}

// On a color terminal the matches are highlighted, and the sessions'
// own escape sequences are still taken out.
func TestSearchCommandColor(t *testing.T) {
	root, _, _ := searchStore(t)
	index := filepath.Join(t.TempDir(), "index.sqlite")
	out, errOut, code := runTTY(terminal{outTTY: true, color: true, rows: 1000}, "search", "--no-pager", "--root", root, "--index", index, "flaky")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "\x1b[1;33mflaky\x1b[0m")
	assert.NotContains(t, out, "\x1b[31m")
	assert.NotContains(t, out, "«")
}
