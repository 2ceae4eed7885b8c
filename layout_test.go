package session_test

import (
	"go/build"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestImportRules holds each package of the module to what its
// documentation says it may import (besides the standard library): the
// session package never imports the packages built on it, the provider
// packages never import each other, and so on.
func TestImportRules(t *testing.T) {
	const mod = "github.com/agentsession/session"
	allowed := map[string][]string{
		".":                          {mod + "/internal/jsonx", mod + "/internal/names", mod + "/internal/storerule", mod + "/redact", "github.com/google/uuid", "github.com/klauspost/compress/zstd", "github.com/fsnotify/fsnotify"},
		"redact":                     {mod + "/internal/jsonx"},
		"export":                     {mod, mod + "/internal/jsonx", mod + "/redact"},
		"importer":                   {mod, mod + "/export", mod + "/internal/jsonx", mod + "/provider/anthropic", "golang.org/x/sys/unix"}, // unix: openat with O_NOFOLLOW, element by element (root_unix.go)
		"importer/opencodedb":        {mod + "/importer", "modernc.org/sqlite"},                                                             // a module of its own
		"encrypt":                    {mod, mod + "/internal/names"},
		"internal/jsonx":             {},
		"internal/names":             {mod + "/internal/jsonx"},
		"internal/workload":          {mod},
		"internal/codecgen":          {},
		"internal/longtest":          {},                        // the AGENTSESSION_LONG switch, for tests only
		"internal/storerule":         {mod + "/internal/names"}, // the rules the stores share, on plain values (storekit exports them)
		"storekit":                   {mod, mod + "/internal/names", mod + "/internal/storerule"},
		"storetest":                  {mod, mod + "/storekit"},
		"mirror":                     {mod}, // over the Store interface only
		"provider/anthropic":         {mod, mod + "/provider/internal/wire"},
		"provider/openai":            {mod, mod + "/provider/internal/wire"},
		"provider/internal/wire":     {mod, mod + "/internal/jsonx"},
		"provider/internal/convtest": {mod, mod + "/internal/workload", mod + "/internal/compattest"},
		"internal/compattest":        {mod, "github.com/stretchr/testify/require"},
		"compat":                     {}, // tests only
	}
	var dirs []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (p == "testdata" || strings.HasPrefix(d.Name(), ".") && p != "." || p == "pgstore" || p == "s3store" || p == "workspace" || p == "search" || p == "export/browsertest" || p == "integrations") {
			return filepath.SkipDir // modules of their own (each integration is one)
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			continue // no Go files
		}
		rules, ok := allowed[filepath.ToSlash(dir)]
		if !ok {
			if pkg.Name != "main" {
				t.Errorf("package %s (%s) has no import rule: add one here and say it in its package doc", pkg.Name, dir)
			}
			continue // commands and examples may import any package of the module
		}
		for _, imp := range pkg.Imports {
			if !strings.Contains(strings.Split(imp, "/")[0], ".") {
				continue // the standard library
			}
			if !slices.Contains(rules, imp) {
				t.Errorf("%s imports %s, which its rule does not allow", dir, imp)
			}
		}
	}
}

// TestFuzzTargetsInCI: every fuzz target of the repository, sub-modules
// included, has its row in .ci/run's table of fuzz targets (package,
// target, inputs), so that none is left to its seed corpus alone.
func TestFuzzTargetsInCI(t *testing.T) {
	inCI := map[string]bool{} // "dir target"
	for _, f := range ciTable(t, "TARGETS", 3, "fuzz targets (package, target, inputs)") {
		if _, err := os.Stat(f[0]); err != nil {
			continue // a sub-module not beside this one (a module's zip)
		}
		inCI[filepath.Clean(f[0])+" "+f[1]] = true
	}
	found := map[string]bool{}
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && p != ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(src), "\n") {
			name, ok := strings.CutPrefix(line, "func Fuzz")
			if !ok {
				continue
			}
			name, _, _ = strings.Cut(name, "(")
			key := filepath.Dir(p) + " Fuzz" + name
			found[key] = true
			if !inCI[key] {
				t.Errorf("%s: Fuzz%s has no row in .ci/run's fuzz table", p, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for key := range inCI {
		if !found[key] {
			t.Errorf(".ci/run's fuzz table has a row for %s, which is not a fuzz target", key)
		}
	}
}

// TestLongSuitesInCI: every test that internal/longtest switches off in
// go test ./... has its row in .ci/run's table of long suites (<<'LONG'),
// so that CI runs it, and every row names such a test.
func TestLongSuitesInCI(t *testing.T) {
	longtestCall := regexp.MustCompile(`(^|[^"])longtest\.(Skip|Enabled)\(`)
	inCI := map[string]bool{} // "dir TestX"
	for _, f := range ciTable(t, "LONG", 2, "long suites (package, tests A|B)") {
		for _, name := range strings.Split(f[1], "|") {
			inCI[filepath.Clean(f[0])+" "+name] = true
		}
	}
	found := map[string]bool{}
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && p != ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		test := ""
		for _, line := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(line, "func ") {
				test = ""
				if name, ok := strings.CutPrefix(line, "func Test"); ok {
					name, _, _ = strings.Cut(name, "(")
					test = "Test" + name
				}
			}
			if !longtestCall.MatchString(line) {
				continue
			}
			if test == "" {
				t.Errorf("%s: longtest used outside a Test function's own body (%q): CI cannot name it", p, strings.TrimSpace(line))
				continue
			}
			key := filepath.Dir(p) + " " + test
			found[key] = true
			if !inCI[key] {
				t.Errorf("%s: %s is a long suite with no row in .ci/run's table of long suites", p, test)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for key := range inCI {
		if !found[key] {
			t.Errorf(".ci/run's table of long suites names %s, which does not use internal/longtest", key)
		}
	}
}

// ciTable returns the rows of .ci/run's here-document <<'END' ... END,
// each split into its n fields; comment and blank rows are left out, and
// a row of another width is an error.
func ciTable(t *testing.T, end string, n int, what string) [][]string {
	t.Helper()
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal("the module's CI script: ", err)
	}
	_, table, ok := strings.Cut(string(ci), "<<'"+end+"'\n")
	table, _, ok2 := strings.Cut(table, "\n"+end+"\n")
	if !ok || !ok2 {
		t.Fatalf(".ci/run has no table of %s (<<'%s' ... %s)", what, end, end)
	}
	var rows [][]string
	for _, row := range strings.Split(table, "\n") {
		f := strings.Fields(row)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != n {
			t.Errorf(".ci/run: row %q of the table of %s has %d fields", row, what, len(f))
			continue
		}
		rows = append(rows, f)
	}
	return rows
}
