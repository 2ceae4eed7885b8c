package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ignoreTree is a tree of gitignore cases: nested files, negation,
// directory-only patterns, anchoring, **, escapes, .git/info/exclude.
var ignoreTree = []spec{
	{path: ".gitignore", content: "# comment\n*.log\n!keep.log\nbuild/\n/root-only.txt\ndoc/**/*.tmp\n\\#hash\n\\!bang\ntrailing.txt   \n*.o\r\nnested-dir-only/\n"},
	{path: "a.log", content: "x"},
	{path: "keep.log", content: "x"},
	{path: "build/out", content: "x"},
	{path: "sub/build", content: "a file named build: not a directory"},
	{path: "root-only.txt", content: "x"},
	{path: "sub/root-only.txt", content: "x"},
	{path: "doc/x/y/z.tmp", content: "x"},
	{path: "doc/z.tmp", content: "x"},
	{path: "doc/readme", content: "x"},
	{path: "#hash", content: "x"},
	{path: "!bang", content: "x"},
	{path: "trailing.txt", content: "x"},
	{path: "obj.o", content: "x"},
	{path: "sub/.gitignore", content: "*.txt\n!important.txt\n/local\n"},
	{path: "sub/a.txt", content: "x"},
	{path: "sub/important.txt", content: "x"},
	{path: "sub/local", content: "x"},
	{path: "sub/deeper/local", content: "x"},
	{path: "sub/deeper/b.txt", content: "x"},
	{path: "sub/deeper/c.md", content: "x"},
	{path: "other/a.txt", content: "x"},
	{path: "build2/keep.log", content: "x"},
	{path: "excluded-by-info", content: "x"},
	{path: "nested-dir-only/f", content: "x"},
	{path: "x/nested-dir-only/f", content: "x"},
	{path: "x/.gitignore", content: "!*.log\n"},
	{path: "x/y.log", content: "x"},
	{path: "ignored-dir/.gitignore", content: "!*\n"},
	{path: "ignored-dir/f.log", content: "x"},
	{path: "normal.go", content: "x"},
	{path: "opt-ignored/f", content: "x"},
	{path: "opt.secret", content: "x"},
	{path: ".git/info/exclude", content: "excluded-by-info\n"},
	{path: ".git/HEAD", content: "ref: refs/heads/main\n"},
	{path: "nested/.git/config", content: "x"},
	{path: "nested/file", content: "x"},
}

// TestGitignoreMatchesGit: the files recorded are those git lists as
// untracked and not ignored (git ls-files --others --exclude-standard).
func TestGitignoreMatchesGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	cmd := exec.Command("git", "init", "-q", dir)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	os.MkdirAll(filepath.Join(dir, "ignored-dir"), 0o755)
	build(t, dir, ignoreTree...)
	// ignored-dir is ignored by the root's rules: its own !* cannot undo it.
	os.WriteFile(filepath.Join(dir, ".gitignore"), append(must(os.ReadFile(filepath.Join(dir, ".gitignore"))), "ignored-dir/\n"...), 0o644)
	cmd = exec.Command("git", "-C", dir, "ls-files", "--others", "--exclude-standard", "-z", "--", ".", ":!opt-ignored", ":!opt.secret")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for p := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if p != "" && !strings.HasPrefix(p, "nested/") {
			want = append(want, p)
		}
	}
	// git lists the embedded repository as a whole ("nested/"); its files
	// are recorded here (but never its .git).
	want = append(want, "nested/file")
	slices.Sort(want)

	w := reopen(t, dir, mustStore(), &Options{Ignore: []string{"opt-ignored/", "*.secret"}})
	s := snap(t, w)
	var got []string
	for _, e := range s.Manifest.Entries {
		got = append(got, e.Path)
	}
	if !slices.Equal(got, want) {
		t.Errorf("recorded:\n%s\ngit lists:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestGitignoreTrickyMatchesGit: cases where a pattern must match the
// whole path (never a parent's name alone), where ** must backtrack, where
// foo/** leaves foo itself, where the whitelist idiom (*, !*/, !*.go)
// holds, and where trailing spaces and [!...] classes are read as git
// reads them: each tree is recorded as git lists its untracked files.
func TestGitignoreTrickyMatchesGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cases := map[string][]spec{
		"negation names a parent":          {{path: ".gitignore", content: "*.txt\n!keep\n"}, {path: "keep/a.txt", content: "x"}, {path: "keep/b.md", content: "x"}, {path: "keep2", content: "x"}},
		"dir-only negation names a parent": {{path: ".gitignore", content: "*.txt\n!keep/\n"}, {path: "keep/a.txt", content: "x"}, {path: "keep/b.md", content: "x"}},
		"anchored negation names a parent": {{path: ".gitignore", content: "*.txt\n!/keep\n"}, {path: "keep/a.txt", content: "x"}, {path: "keep.txt", content: "x"}},
		"slash negation names a parent":    {{path: ".gitignore", content: "*.txt\n!a/b\n"}, {path: "a/b/c.txt", content: "x"}, {path: "a/b.txt", content: "x"}},
		"whitelist":                        {{path: ".gitignore", content: "*\n!*/\n!*.go\n"}, {path: "a/b.go", content: "x"}, {path: "a/c.txt", content: "x"}, {path: "d.go", content: "x"}, {path: "e/f/g.go", content: "x"}},
		"trailing /** leaves the dir":      {{path: ".gitignore", content: "foo/**\n!foo/keep\n"}, {path: "foo/keep", content: "x"}, {path: "foo/x", content: "x"}, {path: "foo/sub/y", content: "x"}},
		"leading ** backtracks":            {{path: ".gitignore", content: "**/a/b\n"}, {path: "a/a/b", content: "x"}, {path: "x/a/b", content: "x"}, {path: "a/c", content: "x"}},
		"middle ** backtracks":             {{path: ".gitignore", content: "a/**/b/c\n"}, {path: "a/b/x/b/c", content: "x"}, {path: "a/b/c", content: "x"}, {path: "a/b/d", content: "x"}},
		"escaped trailing space":           {{path: ".gitignore", content: "foo\\  \nbar  \n"}, {path: "foo ", content: "x"}, {path: "foo", content: "x"}, {path: "bar", content: "x"}, {path: "bar ", content: "x"}},
		"bang class":                       {{path: ".gitignore", content: "[!a].txt\n"}, {path: "a.txt", content: "x"}, {path: "b.txt", content: "x"}, {path: "!.txt", content: "x"}},
		"nested negation names a parent":   {{path: "sub/.gitignore", content: "*.c\n!lib\n"}, {path: "sub/lib/x.c", content: "x"}, {path: "sub/lib/y.h", content: "x"}},
		"star-slash":                       {{path: ".gitignore", content: "*/foo\n"}, {path: "a/foo", content: "x"}, {path: "a/b/foo", content: "x"}},
	}
	for name, specs := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			git := func(args ...string) []byte {
				cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
				cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("git %v: %v", args, err)
				}
				return out
			}
			git("init", "-q")
			build(t, dir, specs...)
			var want []string
			for p := range strings.SplitSeq(strings.TrimSuffix(string(git("ls-files", "--others", "--exclude-standard", "-z")), "\x00"), "\x00") {
				if p != "" {
					want = append(want, p)
				}
			}
			slices.Sort(want)
			s := snap(t, reopen(t, dir, mustStore(), nil))
			var got []string
			for _, e := range s.Manifest.Entries {
				got = append(got, e.Path)
			}
			if !slices.Equal(got, want) {
				t.Errorf("recorded %q\ngit lists %q", got, want)
			}
		})
	}
}
