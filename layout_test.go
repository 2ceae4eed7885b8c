package session_test

import (
	"go/build"
	"os"
	"path/filepath"
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
		".":                          {mod + "/internal/jsonx", mod + "/internal/names", mod + "/redact", "github.com/google/uuid", "github.com/klauspost/compress/zstd", "github.com/fsnotify/fsnotify"},
		"redact":                     {mod + "/internal/jsonx"},
		"export":                     {mod, mod + "/internal/jsonx", mod + "/redact"},
		"importer":                   {mod, mod + "/export", mod + "/internal/jsonx", mod + "/provider/anthropic"},
		"encrypt":                    {mod, mod + "/internal/names"},
		"internal/jsonx":             {},
		"internal/names":             {mod + "/internal/jsonx"},
		"internal/workload":          {mod},
		"internal/codecgen":          {},
		"storekit":                   {mod, mod + "/internal/names"},
		"storetest":                  {mod, mod + "/storekit"},
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
		if d.IsDir() && (p == "testdata" || strings.HasPrefix(d.Name(), ".") && p != "." || p == "pgstore" || p == "workspace" || p == "search" || p == "export/browsertest" || p == "integrations") {
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
