package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/export"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// export then import: every format is written whole to -o, and the JSON
// export imports into another store with the same context.
func TestExportImport(t *testing.T) {
	lc := newLCFixture(t)
	out := t.TempDir()
	for _, tc := range []struct{ args, want []string }{
		{[]string{"-o", filepath.Join(out, "s.json")}, []string{`"format":"agentsession.export"`, "fix the build"}},
		{[]string{"-o", filepath.Join(out, "s.md")}, []string{"fix the build", "again"}},
		{[]string{"--format", "html", "-o", filepath.Join(out, "s.page")}, []string{"<html", "fix the build"}},
		{[]string{"--format", "md", "--branch", lc.asst, "-o", filepath.Join(out, "branch.md")}, []string{"fix the build", "done"}},
	} {
		args := append([]string{"export", "--root", lc.root}, tc.args...)
		_, errOut, code := runCLI(append(args, "p-parent")...)
		require.Equal(t, exitOK, code, "%v: %s", args, errOut)
		data, err := os.ReadFile(tc.args[len(tc.args)-1])
		require.NoError(t, err)
		for _, w := range tc.want {
			assert.Contains(t, string(data), w, "%v", args)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "branch.md"))
	require.NoError(t, err)
	assert.NotContains(t, string(md), "again", "--branch exports only the path to the entry")

	// Into a new store, twice: the second run skips it.
	root := filepath.Join(t.TempDir(), "imported")
	for i, want := range []string{"imported 1, skipped 0", "imported 0, skipped 1"} {
		stdout, errOut, code := runCLI("import", "--root", root, filepath.Join(out, "s.json"))
		require.Equal(t, exitOK, code, "run %d: %s", i, errOut)
		assert.Contains(t, stdout, want, "run %d", i)
	}
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	s, err := session.Open(context.Background(), store, "p-parent")
	require.NoError(t, err)
	defer s.Close()
	msgs, err := s.Messages(context.Background())
	require.NoError(t, err)
	require.Len(t, msgs, 5)
	assert.Equal(t, "again", msgs[4].Text())
}

// writeExport writes the JSON export of session id of the store at root
// to a file and returns its path.
func writeExport(t *testing.T, root, id string) string {
	t.Helper()
	ctx := context.Background()
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	s, err := session.Open(ctx, store, id)
	require.NoError(t, err)
	defer s.Close()
	p := filepath.Join(t.TempDir(), id+".json")
	f, err := os.Create(p)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, export.JSON(ctx, f, s, nil))
	return p
}

func TestExportUsage(t *testing.T) {
	lc := newLCFixture(t)
	for _, args := range [][]string{
		{"export", "--root", lc.root, "--format", "pdf", "p-parent"},
		{"export", "--root", lc.root, "--json", "--format", "md", "p-parent"}, // JSON and Markdown on one stdout
		{"import", "--root", lc.root, "--from", "cursor", "x"},
	} {
		_, errOut, code := runCLI(args...)
		assert.Equal(t, exitError, code, "%v", args)
		assert.NotEmpty(t, errOut)
	}
	// A file no importer knows is an error of that file, counted.
	junk := filepath.Join(t.TempDir(), "junk.txt")
	require.NoError(t, os.WriteFile(junk, []byte("hello\n"), 0o600))
	stdout, errOut, code := runCLI("import", "--json", "--root", lc.root, junk)
	assert.Equal(t, exitError, code)
	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(stdout)), &line), stdout+errOut)
	assert.Equal(t, "error", line["status"])
}

// A dry run creates no store; after a real import it says what it
// would skip.
func TestImportDryRun(t *testing.T) {
	lc := newLCFixture(t)
	exp := writeExport(t, lc.root, "p-parent")
	root := filepath.Join(t.TempDir(), "new")
	stdout, errOut, code := runCLI("import", "--dry-run", "--root", root, exp)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, stdout, "would import 1, skipped 0")
	_, err := os.Stat(root)
	assert.ErrorIs(t, err, os.ErrNotExist, "a dry run creates nothing")

	_, errOut, code = runCLI("import", "--root", root, exp)
	require.Equal(t, exitOK, code, errOut)
	stdout, errOut, code = runCLI("import", "--dry-run", "--root", root, exp)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, stdout, "would import 0, skipped 1")
}

// -o replaces an existing file whole, keeping its mode, and through a
// symlink replaces the file it names.
func TestExportOutKeepsModeAndLink(t *testing.T) {
	lc := newLCFixture(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "real.md")
	require.NoError(t, os.WriteFile(target, []byte("old"), 0o640))
	link := filepath.Join(dir, "link.md")
	require.NoError(t, os.Symlink(target, link))
	_, errOut, code := runCLI("export", "--root", lc.root, "-o", link, "p-parent")
	require.Equal(t, exitOK, code, errOut)
	st, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, st.Mode()&os.ModeSymlink, "the link stays a link")
	data, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Contains(t, string(data), "fix the build")
	st, err = os.Stat(target)
	require.NoError(t, err)
	if runtime.GOOS != "windows" {
		assert.Equal(t, os.FileMode(0o640), st.Mode().Perm())
	}
}

// TestExportJSONFlags: --json never conflicts with --format json. To
// standard output the export is the command's output, and --json makes
// it JSON (the envelope, as --format json and the default write it);
// written to -o FILE, --json describes it, as other commands' --json
// describe what they did. --json beside a Markdown or HTML export to
// standard output is a usage error that says how to have both.
func TestExportJSONFlags(t *testing.T) {
	lc := newLCFixture(t)
	envelope := func(args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(append([]string{"export", "--root", lc.root}, append(args, "p-parent")...)...)
		require.Equal(t, exitOK, code, "%v: %s", args, errOut)
		var env map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &env), "%v: %s", args, out)
		assert.Equal(t, "agentsession.export", env["format"], args)
		return out
	}
	plain := envelope()
	assert.Equal(t, plain, envelope("--format", "json"))
	assert.Equal(t, plain, envelope("--json"))
	assert.Equal(t, plain, envelope("--json", "--format", "json"))
	assert.Equal(t, plain, envelope("--json", "-o", "-"))

	// To a file: --json describes it, whatever its format.
	dir := t.TempDir()
	for _, c := range []struct{ file, format string }{{"p.json", "json"}, {"p.md", "md"}, {"p.html", "html"}, {"p.out", "json"}} {
		p := filepath.Join(dir, c.file)
		out, errOut, code := runCLI("export", "--json", "--root", lc.root, "-o", p, "p-parent")
		require.Equal(t, exitOK, code, errOut)
		var o map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &o), out)
		st, err := os.Stat(p)
		require.NoError(t, err)
		assert.Equal(t, "p-parent", o["id"])
		assert.Equal(t, c.format, o["format"])
		assert.Equal(t, p, o["out"])
		assert.Equal(t, float64(st.Size()), o["bytes"])
	}
	data, err := os.ReadFile(filepath.Join(dir, "p.json"))
	require.NoError(t, err)
	assert.Equal(t, plain, string(data))

	// Markdown or HTML to standard output with --json: refused, nothing
	// written, and the message says how.
	for _, f := range []string{"md", "html"} {
		out, errOut, code := runCLI("export", "--json", "--format", f, "--root", lc.root, "p-parent")
		assert.Equal(t, exitError, code)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "-o FILE")
	}
}
