package session_test

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// archDoc is ARCHITECTURE.md, read into the sections the tests below
// check.
type archDoc struct {
	// named holds, per directory ("." for the root package), the .go
	// names (base names or globs) its section names.
	named map[string][]string
	// paths are the .go names given with a path from the repository's
	// root, anywhere in the document.
	paths []string
	// methods are the backticked identifiers of the method index, in
	// order.
	methods []string
}

var (
	archHeading = regexp.MustCompile("^(#{2,3}) (.*)$")
	archDir     = regexp.MustCompile("`([A-Za-z0-9_./-]+)/`")
	archGoName  = regexp.MustCompile(`[A-Za-z0-9_.*/-]+\.go\b`)
	archIdent   = regexp.MustCompile("`([A-Z][A-Za-z0-9]*)`")
)

const (
	archRootHeading    = "The root package, file by file"
	archMethodsHeading = "`*Session`'s methods by task"
)

// readArchitecture parses ARCHITECTURE.md: a level-2 heading opens a
// section; one whose heading names a directory in backticks (`dir/`, at
// level 2 or 3) holds that directory's files by base name; the root
// package's section, with its level-3 groups, holds the root's.
func readArchitecture(t *testing.T) archDoc {
	t.Helper()
	b, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	d := archDoc{named: map[string][]string{}}
	var key, top string // the directory of the section; the level-2 heading
	for _, line := range strings.Split(string(b), "\n") {
		if m := archHeading.FindStringSubmatch(line); m != nil {
			title := strings.TrimSpace(m[2])
			if m[1] == "##" {
				top = title
			}
			switch {
			case archDir.MatchString(title):
				key = archDir.FindStringSubmatch(title)[1]
			case top == archRootHeading:
				key = "."
			default:
				key = ""
			}
			continue
		}
		for _, name := range archGoName.FindAllString(line, -1) {
			switch {
			case strings.Contains(name, "/"):
				d.paths = append(d.paths, strings.TrimPrefix(name, "./"))
			case key != "":
				d.named[key] = append(d.named[key], name)
			}
		}
		// The index is a list; its items' lines (and their continuations)
		// hold the methods, the prose before it the constructors.
		if top == archMethodsHeading && (strings.HasPrefix(line, "- ") || strings.HasPrefix(line, "  ")) {
			for _, m := range archIdent.FindAllStringSubmatch(line, -1) {
				d.methods = append(d.methods, m[1])
			}
		}
	}
	return d
}

// repoGoFiles lists the .go files of the repository that are not tests,
// as slash paths from its root: _test.go files and testdata/ are left
// out, and so are hidden directories (.git, .ci's caches).
func repoGoFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if p != "." && (e.Name() == "testdata" || e.Name() == "node_modules" || strings.HasPrefix(e.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			files = append(files, filepath.ToSlash(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// matches reports whether name (a base name or a glob) names base.
func matches(name, base string) bool {
	ok, err := path.Match(name, base)
	return err == nil && ok
}

// Every .go file of the repository that is not a test (test helpers
// that are ordinary .go files included) is named in ARCHITECTURE.md: in
// the section of its directory, or by its path; and every file named
// there exists, so that the map stays complete and true.
func TestArchitectureNamesEveryFile(t *testing.T) {
	d := readArchitecture(t)
	files := repoGoFiles(t)
	if len(files) < 100 {
		t.Fatalf("found only %d .go files: is the test running at the repository's root?", len(files))
	}
	used := map[string]bool{} // dir + "\x00" + name, and paths, that named a file
	var missing []string
	for _, f := range files {
		dir, base := path.Split(f)
		dir = strings.TrimSuffix(dir, "/")
		if dir == "" {
			dir = "."
		}
		found := false
		for _, name := range d.named[dir] {
			if matches(name, base) {
				used[dir+"\x00"+name], found = true, true
			}
		}
		for _, p := range d.paths {
			if matches(p, f) {
				used[p], found = true, true
			}
		}
		if !found {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		t.Errorf("ARCHITECTURE.md does not name %d file(s); add a line for each under its directory's heading:\n\t%s", len(missing), strings.Join(missing, "\n\t"))
	}
	var stale []string
	for dir, names := range d.named {
		for _, name := range names {
			if !used[dir+"\x00"+name] {
				stale = append(stale, dir+": "+name)
			}
		}
	}
	for _, p := range d.paths {
		if !used[p] {
			stale = append(stale, p)
		}
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		t.Errorf("ARCHITECTURE.md names .go files that do not exist (renamed or removed?):\n\t%s", strings.Join(stale, "\n\t"))
	}
}

// ARCHITECTURE.md's method index lists every exported method of
// *Session exactly once, and nothing that is not one.
func TestArchitectureSessionMethods(t *testing.T) {
	d := readArchitecture(t)
	if len(d.methods) == 0 {
		t.Fatalf("ARCHITECTURE.md has no method index under %q", archMethodsHeading)
	}
	typ := reflect.TypeOf((*session.Session)(nil))
	want := map[string]bool{}
	for i := range typ.NumMethod() {
		want[typ.Method(i).Name] = true
	}
	seen := map[string]int{}
	for _, m := range d.methods {
		seen[m]++
		if !want[m] {
			t.Errorf("the method index lists %s, which is not a method of *Session", m)
		}
	}
	var missing []string
	for m := range want {
		switch seen[m] {
		case 0:
			missing = append(missing, m)
		case 1:
		default:
			t.Errorf("the method index lists %s %d times; list it once, under its task", m, seen[m])
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Errorf("the method index of ARCHITECTURE.md does not list these methods of *Session; add each under its task: %s", strings.Join(missing, ", "))
	}
}

// The package documentation is a first page: at most 150 lines, and
// every guide and package it points to exists (a guide by its name in
// docs/, README.md and ARCHITECTURE.md at the root; a package by its
// directory).
func TestPackageDocFirstPage(t *testing.T) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if n := strings.Count(doc, "\n"); n > 150 {
		t.Errorf("doc.go has %d lines; the package documentation is a first page of at most 150: move the rest to a guide in docs/ or to ARCHITECTURE.md", n)
	}
	guides := regexp.MustCompile(`[A-Za-z0-9-]+\.md\b`).FindAllString(doc, -1)
	if len(guides) < 5 {
		t.Fatalf("doc.go points to %d guides; it should point to the README and the guides in docs/", len(guides))
	}
	for _, g := range guides {
		p := filepath.Join("docs", g)
		if g == "README.md" || g == "ARCHITECTURE.md" {
			p = g
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("doc.go points to %s, which does not exist: %v", g, err)
		}
	}
	// The packages of the list at its end ("  - a, b: ...; c: ...").
	pkg := regexp.MustCompile(`(?:^|[-,;:] )([a-z]+(?:/[a-z]+)*)(?: \([^)]*\))?[,:]`)
	n := 0
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "//   - ") {
			continue
		}
		for _, m := range pkg.FindAllStringSubmatch(strings.TrimPrefix(line, "//   "), -1) {
			n++
			if st, err := os.Stat(m[1]); err != nil || !st.IsDir() {
				t.Errorf("doc.go names package %s, which is not a directory of the repository", m[1])
			}
		}
	}
	if n < 8 {
		t.Errorf("doc.go's list of the packages beside this one names %d packages; is it still a list of \"  - path: what\" items?", n)
	}
}
