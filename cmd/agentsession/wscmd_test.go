package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wsFixture is a session of a FileStore that recorded its workspace at
// three steps, as a host with the workspace package does.
type wsFixture struct {
	root, file, proj string
	u0               string // the first message, before any snapshot
	e1, e2, e3       string // the snapshot entries, in order
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

func readFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		got[filepath.ToSlash(rel)] = string(data)
		return err
	}))
	return got
}

// The workspace at each step of the fixture.
var (
	wsStep1 = map[string]string{"a.txt": "one\ntwo\nthree\n", "b.txt": "keep me\n", "src/main.go": "package main\n"}
	wsStep2 = map[string]string{"a.txt": "one\n2\nthree\nfour\n", "src/main.go": "package main\n", "c.txt": "new\n"}
	wsStep3 = map[string]string{"a.txt": "one\n2\nthree\nfour\nfive\n", "src/main.go": "package main\n", "c.txt": "new\n"}
)

func newWSFixture(t *testing.T) *wsFixture {
	t.Helper()
	ctx := context.Background()
	f := &wsFixture{root: filepath.Join(t.TempDir(), "sessions"), proj: t.TempDir()}
	store, err := session.OpenFileStore(f.root, nil)
	require.NoError(t, err)
	defer store.Close()
	blobs, ok := session.BlobsOf(store)
	require.True(t, ok)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-ws", Cwd: f.proj})
	require.NoError(t, err)
	defer s.Close()
	w, err := workspace.Open(f.proj, &workspace.Options{Blobs: blobs, NoWatch: true})
	require.NoError(t, err)
	defer w.Close()

	e, err := s.Append(ctx, session.UserText("make the change"))
	require.NoError(t, err)
	f.u0 = e.ID()
	writeFiles(t, f.proj, wsStep1)
	rec, err := workspace.Record(ctx, s, w, nil)
	require.NoError(t, err)
	f.e1 = rec.Entry.ID()
	require.NoError(t, s.Label(ctx, f.e1, "before"))

	_, err = s.Append(ctx, session.AssistantText("changing a, removing b, adding c"))
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(f.proj, "b.txt")))
	writeFiles(t, f.proj, wsStep2)
	rec, err = workspace.Record(ctx, s, w, nil)
	require.NoError(t, err)
	f.e2 = rec.Entry.ID()

	_, err = s.Append(ctx, session.AssistantText("one more line"))
	require.NoError(t, err)
	writeFiles(t, f.proj, wsStep3)
	rec, err = workspace.Record(ctx, s, w, nil)
	require.NoError(t, err)
	f.e3 = rec.Entry.ID()
	require.Equal(t, wsStep3, readFiles(t, f.proj))

	f.file, err = store.Path(s.ID())
	require.NoError(t, err)
	return f
}

func TestSnapshotsCommand(t *testing.T) {
	f := newWSFixture(t)
	out, errOut, code := runCLI("snapshots", f.file)
	require.Equal(t, exitOK, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	assert.Regexp(t, `^TIME +ENTRY +KIND +SNAPSHOT +CHANGES +DIR$`, lines[0])
	assert.Regexp(t, `^\S+ \S+ +`+f.e1+` +step +[0-9a-f]{12} +\(first\) +`, lines[1])
	assert.Contains(t, lines[2], f.e2)
	assert.Contains(t, lines[2], "3 files +3 -2") // a.txt +2 -1, b.txt -1, c.txt +1
	assert.Contains(t, lines[3], "1 file +1 -0")
	assert.True(t, strings.HasSuffix(lines[3], "<- in force at the leaf"), lines[3])
	assert.Contains(t, lines[3], f.proj)
	assert.NotContains(t, out, "\x1b[")

	// By id in the store, --limit.
	out, errOut, code = runCLI("snapshots", "--root", f.root, "--limit", "1", "s-ws")
	require.Equal(t, exitOK, code, errOut)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 2)
	assert.Contains(t, errOut, "1 of 3 snapshots shown")

	out, errOut, code = runCLI("snapshots", "--json", f.file)
	require.Equal(t, exitOK, code, errOut)
	var rows []snapshotJSON
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r snapshotJSON
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		rows = append(rows, r)
	}
	require.Len(t, rows, 3)
	assert.Equal(t, []string{f.e1, f.e2, f.e3}, []string{rows[0].EntryID, rows[1].EntryID, rows[2].EntryID})
	assert.True(t, rows[0].First)
	assert.False(t, rows[1].First)
	assert.True(t, rows[2].InForce)
	assert.True(t, rows[1].OnPath)
	assert.Equal(t, session.SnapshotStep, rows[1].Kind)
	assert.True(t, strings.HasPrefix(rows[1].Snapshot, session.BlobPrefix))
	assert.Equal(t, 3, rows[1].Files)

	// A session without snapshots says so.
	_, errOut, code = runCLI("snapshots", write(t, "s.jsonl", sample))
	assert.Equal(t, exitOK, code)
	assert.Contains(t, errOut, "no workspace snapshots in")
}

func TestDiffCommand(t *testing.T) {
	f := newWSFixture(t)

	// The default: from the first snapshot to the leaf's, unified.
	out, errOut, code := runCLI("diff", f.file)
	require.Equal(t, exitOK, code, errOut)
	assert.NotContains(t, out, "\x1b[", "no colors off a terminal")
	assert.True(t, strings.HasPrefix(out, "workspace from entry "+f.e1+" (snapshot "), out)
	assert.Contains(t, out, "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,5 @@\n one\n-two\n+2\n three\n+four\n+five\n")
	assert.Contains(t, out, "diff --git a/b.txt b/b.txt\ndeleted file mode 100644\n--- a/b.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-keep me\n")
	assert.Contains(t, out, "diff --git a/c.txt b/c.txt\nnew file mode 100644\n--- /dev/null\n+++ b/c.txt\n")
	assert.NotContains(t, out, "main.go")

	// --stat.
	out, errOut, code = runCLI("diff", "--stat", f.file)
	require.Equal(t, exitOK, code, errOut)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 5, out)
	assert.Equal(t, " a.txt | 4 +++-", lines[1])
	assert.Equal(t, " b.txt | 1 -", lines[2])
	assert.Equal(t, " c.txt | 1 +", lines[3])
	assert.Equal(t, " 3 files changed, 4 insertions(+), 2 deletions(-)", lines[4])

	// Between two entries, named by id, prefix and checkpoint name.
	out, errOut, code = runCLI("diff", "--stat", "--from", "before", "--to", f.e2[:6], f.file)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, " a.txt | 3 ++-\n b.txt | 1 -\n c.txt | 1 +\n 3 files changed, 3 insertions(+), 2 deletions(-)\n")
	out, errOut, code = runCLI("diff", "--from", f.e2, "--to", f.e3, f.file)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "@@ -2,3 +2,4 @@\n 2\n three\n four\n+five\n")
	assert.NotContains(t, out, "b.txt")
	// An entry that is no snapshot: the snapshot in force there.
	out, errOut, code = runCLI("diff", "--stat", "--to", f.u0, "--from", f.e3, f.file)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "no workspace snapshot at entry "+f.u0+": its path records none")
	out, errOut, code = runCLI("diff", "--from", f.e3, "--to", f.e3, f.file)
	require.Equal(t, exitOK, code, errOut)
	assert.True(t, strings.HasSuffix(out, "\nno changes\n"), out)

	// --json: the DiffResult, camelCase.
	out, errOut, code = runCLI("diff", "--json", f.file)
	require.Equal(t, exitOK, code, errOut)
	var d diffJSON
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	assert.Equal(t, f.e1, d.FromEntryID)
	assert.Equal(t, f.e3, d.ToEntryID)
	assert.Equal(t, 4, d.Additions)
	assert.Equal(t, 2, d.Deletions)
	require.Len(t, d.Files, 3)
	assert.Equal(t, fileDiffJSON{Path: "b.txt", Status: "deleted", OldType: "file", OldMode: "0644", Deletions: 1,
		Unified: "--- a/b.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-keep me\n"}, d.Files[1])
	out, errOut, code = runCLI("diff", "--json", "--stat", f.file)
	require.Equal(t, exitOK, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	assert.Empty(t, d.Files[0].Unified, "--stat: no diff text")

	// Colors on a terminal.
	out, errOut, code = runTTY(terminal{outTTY: true, color: true, rows: 1000}, "diff", f.file)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "\x1b[31m-two\x1b[0m\n\x1b[32m+2\x1b[0m\n")
	assert.Contains(t, out, "\x1b[36m@@ -1,3 +1,5 @@\x1b[0m")
	out, _, _ = runTTY(terminal{outTTY: true, color: true, rows: 1000}, "diff", "--stat", f.file)
	assert.Contains(t, out, " a.txt | 4 \x1b[32m+++\x1b[0m\x1b[31m-\x1b[0m\n")

	// With --dir: the files as they are now.
	writeFiles(t, f.proj, map[string]string{"src/main.go": "package main\n\nfunc main() {}\n"})
	out, errOut, code = runCLI("diff", "--stat", "--dir", f.proj, "--from", f.e3, f.file)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "to the files in "+f.proj+"\n src/main.go | 2 ++\n 1 file changed, 2 insertions(+)\n")
	out, errOut, code = runCLI("diff", "--json", "--dir", f.proj, "--from", "", "--to", f.e3, f.file)
	require.Equal(t, exitOK, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	assert.Equal(t, "", d.From)
	assert.Equal(t, f.proj, d.Dir)
	require.Len(t, d.Files, 1)
	assert.Equal(t, 2, d.Deletions)

	// Errors: an unknown entry, an empty one without --dir, the blobs gone.
	_, errOut, code = runCLI("diff", "--from", "nosuch", f.file)
	assert.Equal(t, exitError, code)
	assert.Equal(t, "agentsession: "+f.file+": entry nosuch not found\n", errOut)
	_, errOut, code = runCLI("diff", "--to", "", f.file)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "it needs --dir DIR")
	_, errOut, code = runCLI("diff", write(t, "s.jsonl", sample))
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "no workspace snapshot at entry u2: its path records none")
	blobs := filepath.Join(f.root, ".blobs")
	require.NoError(t, os.Rename(blobs, blobs+".away"))
	_, errOut, code = runCLI("diff", f.file)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "there is no blob directory at "+blobs)
	assert.Contains(t, errOut, "--blobs DIR")
	out, errOut, code = runCLI("diff", "--stat", "--blobs", blobs+".away", f.file)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "3 files changed")
}

func TestRestoreCommand(t *testing.T) {
	f := newWSFixture(t)

	// A dry run lists the changes and changes nothing.
	out, errOut, code := runCLI("restore", "--to", "before", "--dir", f.proj, "--dry-run", f.file)
	require.Equal(t, exitOK, code, errOut)
	assert.Regexp(t, `^would restore `+regexp.QuoteMeta(f.proj)+` to snapshot [0-9a-f]{12} \(in force at entry `+f.e1+`\): 3 changes \(dry run: nothing changed\)\n`+
		`  update  a\.txt\n  create  b\.txt\n  delete  c\.txt\n$`, out)
	assert.Equal(t, wsStep3, readFiles(t, f.proj))

	// The restore itself.
	out, errOut, code = runCLI("restore", "--to", f.e1, "--dir", f.proj, f.file)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "restored "+f.proj+" to snapshot ")
	assert.Contains(t, out, "  update  a.txt\n")
	assert.Equal(t, wsStep1, readFiles(t, f.proj))
	assert.Empty(t, errOut)

	// Back to the leaf: the files now hold e1's snapshot, not the
	// leaf's, so the check against the leaf refuses; --expect says so.
	_, errOut, code = runCLI("restore", "--to", f.e3, "--dir", f.proj, f.file)
	assert.Equal(t, exitFindings, code)
	assert.Contains(t, errOut, "restore refused: 3 paths in "+f.proj+" changed since the snapshot in force at the leaf")
	assert.Equal(t, wsStep1, readFiles(t, f.proj))
	out, errOut, code = runCLI("restore", "--json", "--to", f.e3, "--expect", "before", "--dir", f.proj, f.file)
	require.Equal(t, exitOK, code, errOut)
	var r restoreJSON
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	assert.Equal(t, f.e3, r.EntryID)
	assert.Len(t, r.Changes, 3)
	assert.Equal(t, changeJSON{"update", "a.txt"}, r.Changes[0])
	assert.Equal(t, wsStep3, readFiles(t, f.proj))

	// A file changed since the leaf's snapshot: refused, listed, nothing
	// changed; --force restores.
	writeFiles(t, f.proj, map[string]string{"a.txt": "my own edit\n", "notes.txt": "mine\n"})
	mine := readFiles(t, f.proj)
	_, errOut, code = runCLI("restore", "--to", f.e2, "--dir", f.proj, f.file)
	assert.Equal(t, exitFindings, code)
	assert.Contains(t, errOut, "restore refused: 2 paths in "+f.proj+" changed since the snapshot in force at the leaf (snapshot ")
	assert.Contains(t, errOut, "\n  a.txt\n  notes.txt\nNothing was changed. --force")
	assert.Equal(t, mine, readFiles(t, f.proj))
	out, errOut, code = runCLI("restore", "--to", f.e2, "--dir", f.proj, "--force", "--dry-run", f.file)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "  update  a.txt\n  delete  notes.txt\n")
	assert.Equal(t, mine, readFiles(t, f.proj))
	_, errOut, code = runCLI("restore", "--to", f.e2, "--dir", f.proj, "--force", f.file)
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, wsStep2, readFiles(t, f.proj))

	// Ignored files are left alone, --ignore included.
	writeFiles(t, f.proj, map[string]string{"build/out.bin": "x", "tmp.log": "y"})
	out, errOut, code = runCLI("restore", "--to", f.e2, "--dir", f.proj, "--ignore", "build/", "--ignore", "*.log", "--expect", f.e2, f.file)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "already holds snapshot")
	assert.FileExists(t, filepath.Join(f.proj, "tmp.log"))

	// Errors.
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--to", "nosuch", "--dir", f.proj}, "agentsession: " + f.file + ": entry nosuch not found\n"},
		{[]string{"--to", f.u0, "--dir", f.proj}, "no workspace snapshot at entry " + f.u0},
		{[]string{"--to", f.e1}, "--dir DIR is required"},
		{[]string{"--dir", f.proj}, "--to ENTRY is required"},
		{[]string{"--to", f.e1, "--dir", f.proj, "--force", "--expect", f.e1}, "--expect and --force do not go together"},
		{[]string{"--to", f.e1, "--dir", filepath.Join(f.proj, "missing")}, "no such file or directory"},
	} {
		_, errOut, code := runCLI(append(append([]string{"restore"}, c.args...), f.file)...)
		assert.Equal(t, exitError, code, "%v", c.args)
		assert.Contains(t, errOut, c.msg, "%v", c.args)
	}
	assert.FileExists(t, filepath.Join(f.proj, "tmp.log"))

	// Many conflicts: the first 50 are listed.
	for i := range 60 {
		writeFiles(t, f.proj, map[string]string{fmt.Sprintf("extra/f%02d", i): "x"})
	}
	_, errOut, code = runCLI("restore", "--to", f.e1, "--dir", f.proj, "--ignore", "*.log", "--ignore", "build/", f.file)
	assert.Equal(t, exitFindings, code)
	assert.Contains(t, errOut, "  a.txt\n  extra/f00\n") // a.txt: e2's, not the leaf's
	assert.Contains(t, errOut, "  extra/f48\n  … and 11 more\nNothing was changed.")
}

// TestWorkspaceCommandsWriteNoSession: the session file and the blob
// directory are as they were after every workspace command.
func TestWorkspaceCommandsWriteNoSession(t *testing.T) {
	f := newWSFixture(t)
	blobs := filepath.Join(f.root, ".blobs")
	before, beforeBlobs := readFiles(t, filepath.Dir(f.file)), readFiles(t, blobs)
	for _, args := range [][]string{
		{"snapshots", f.file}, {"diff", f.file}, {"diff", "--dir", f.proj, f.file},
		{"restore", "--to", f.e1, "--dir", f.proj, f.file},
	} {
		_, errOut, code := runCLI(args...)
		require.Equal(t, exitOK, code, "%v: %s", args, errOut)
	}
	assert.Equal(t, before, readFiles(t, filepath.Dir(f.file)))
	assert.Equal(t, beforeBlobs, readFiles(t, blobs))
}

// TestDiffFormatting: git's --stat lines (scaled bars, binary files,
// mode changes), headers, and quoted names.
func TestDiffFormatting(t *testing.T) {
	var out strings.Builder
	c := &call{stdout: &out}
	res := &workspace.DiffResult{Files: []workspace.FileDiff{
		{Path: "big.go", Status: workspace.Modified, OldType: workspace.File, NewType: workspace.File, OldMode: 0o644, NewMode: 0o644, Additions: 300, Deletions: 100},
		{Path: "img.png", Status: workspace.Added, NewType: workspace.File, NewMode: 0o644, Binary: true,
			Unified: "Binary files /dev/null and b/img.png differ\n"},
		{Path: "run.sh", Status: workspace.ModeChanged, OldType: workspace.File, NewType: workspace.File, OldMode: 0o644, NewMode: 0o755},
		{Path: "odd\xffname\n", Status: workspace.Deleted, OldType: workspace.Symlink, OldMode: 0o777, Deletions: 1,
			Unified: "--- \"a/odd\\xffname\\n\"\n+++ /dev/null\n@@ -1 +0,0 @@\n-target\n\\ No newline at end of file\n"},
	}, Additions: 300, Deletions: 101}
	c.printStat(res)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 5, out.String())
	assert.Equal(t, ` "odd\xffname\n" |   1 -`, lines[3])
	for _, l := range lines {
		assert.LessOrEqual(t, len(l), statWidth, l)
	}
	assert.Regexp(t, `^ big\.go +\| 400 \++-+$`, lines[0])
	bar := strings.TrimSpace(lines[0][strings.Index(lines[0], "400")+3:])
	assert.InDelta(t, 3.0, float64(strings.Count(bar, "+"))/float64(strings.Count(bar, "-")), 0.25, "scaled in proportion: %s", bar)
	assert.Regexp(t, `^ img\.png +\| Bin$`, lines[1])
	assert.Regexp(t, `^ run\.sh +\|   0$`, lines[2])
	assert.Equal(t, " 4 files changed, 300 insertions(+), 101 deletions(-)", lines[4])

	out.Reset()
	for i := range res.Files {
		c.printFileDiff(&res.Files[i])
	}
	text := out.String()
	assert.Contains(t, text, "diff --git a/img.png b/img.png\nnew file mode 100644\nBinary files /dev/null and b/img.png differ\n")
	assert.Contains(t, text, "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n")
	assert.Contains(t, text, "diff --git \"a/odd\\xffname\\n\" \"b/odd\\xffname\\n\"\ndeleted file mode 120000\n")

	assert.Equal(t, " 1 file changed, 1 insertion(+)", statSummary(1, 1, 0))
	assert.Equal(t, " 1 file changed, 0 insertions(+), 0 deletions(-)", statSummary(1, 0, 0))
	assert.Equal(t, "dir/a b.txt", displayPath("dir/a b.txt"))
	assert.Equal(t, `"tab\there"`, displayPath("tab\there"))
}

// noRacyWait has the workspace measures not wait out the
// racy-timestamp window while the test runs.
func noRacyWait(t *testing.T) {
	old := wsRacyWait
	wsRacyWait = 0
	t.Cleanup(func() { wsRacyWait = old })
}

// tinyWSTree returns a tree of ten small files for bench's workspace
// measures (noRacyWait too), for the tests that run the whole of bench.
func tinyWSTree(t *testing.T) string {
	t.Helper()
	noRacyWait(t)
	dir := t.TempDir()
	for i := range 10 {
		writeFiles(t, dir, map[string]string{fmt.Sprintf("f%d.go", i): "package f\n"})
	}
	return dir
}

// TestBenchWorkspace: the workspace section of bench on a tiny tree,
// with git where it is installed.
func TestBenchWorkspace(t *testing.T) {
	noRacyWait(t)
	src := t.TempDir()
	for i := range 12 {
		writeFiles(t, src, map[string]string{fmt.Sprintf("pkg%d/f%d.go", i%3, i): strings.Repeat(fmt.Sprintf("line %d\n", i), 20)})
	}
	writeFiles(t, src, map[string]string{"data.bin": "\x00\x01\x02", "README": "text\n"})
	base := t.TempDir()
	r, err := runWSBench(context.Background(), base, src, nil)
	require.NoError(t, err)
	assert.Equal(t, src, r.Tree)
	assert.Equal(t, 14, r.Files)
	for name, v := range map[string]int64{"first": r.SnapshotFirstNs, "unchanged": r.SnapshotUnchangedNs, "nowatch": r.SnapshotUnchangedNoWatchNs,
		"edit": r.SnapshotEdit10Ns, "diff": r.Diff10Ns, "restore": r.Restore10Ns, "stored": r.StoredBytes} {
		assert.Positive(t, v, name)
	}
	if _, err := exec.LookPath("git"); err == nil {
		require.NotNil(t, r.Git)
		require.NotNil(t, r.PerGit)
		assert.Empty(t, r.GitSkipped)
		assert.Positive(t, r.Git.Restore10Ns)
		assert.Positive(t, r.Git.StoredBytes)
		assert.Positive(t, r.PerGit.Diff10)
	} else {
		assert.Nil(t, r.Git)
		assert.Contains(t, r.GitSkipped, "git is not on PATH")
	}
	rows := wsRows(r)
	assert.Equal(t, "workspace tree", rows[0][0])
	assert.Contains(t, rows[0][1], "14 files")
	for _, row := range rows[1:] {
		assert.True(t, strings.HasPrefix(row[0], "  "), row[0])
	}

	// Without git on PATH: the figures without git, and why.
	t.Setenv("PATH", t.TempDir())
	r, err = runWSBench(context.Background(), t.TempDir(), src, nil)
	require.NoError(t, err)
	assert.Nil(t, r.Git)
	assert.Nil(t, r.PerGit)
	assert.Equal(t, "git is not on PATH: no shadow-git comparison", r.GitSkipped)
	assert.NotContains(t, wsRows(r)[1][1], "git")

	// A tree with too few text files to edit.
	few := t.TempDir()
	writeFiles(t, few, map[string]string{"a.go": "package a\n"})
	_, err = runWSBench(context.Background(), t.TempDir(), few, nil)
	assert.ErrorContains(t, err, "has 1 text files: the workspace measures edit 10")

	// The command: --ws-tree must be a directory.
	_, errOut, code := runCLI("bench", "--ws-tree", filepath.Join(few, "nope"))
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "is not a directory")
}
