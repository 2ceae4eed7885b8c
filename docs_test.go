package session_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// A snippet is one ```go block of README.md or of a guide in docs/.
type snippet struct {
	file string // the Markdown file, relative to the repository
	line int    // the line of the block's first line of code
	code string
}

// partialMarker, on the line before a ```go block, says the block is
// deliberately not a program (a shape, a signature list): it is not
// compiled. Use it sparingly.
const partialMarker = "<!-- snippet: partial -->"

// docSnippets returns the ```go blocks of README.md and docs/*.md, and
// how many were marked partial.
func docSnippets(t *testing.T) ([]snippet, int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"README.md"}, files...)
	var out []snippet
	partial := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != "```go" {
				continue
			}
			start := i + 1
			j := start
			for j < len(lines) && strings.TrimSpace(lines[j]) != "```" {
				j++
			}
			if j == len(lines) {
				t.Fatalf("%s:%d: a ```go block is not closed", f, i+1)
			}
			if i > 0 && strings.TrimSpace(lines[i-1]) == partialMarker {
				partial++
			} else {
				out = append(out, snippet{file: filepath.ToSlash(f), line: start + 1, code: strings.Join(lines[start:j], "\n")})
			}
			i = j
		}
	}
	return out, partial
}

// snippetImports are the packages a fragment may use by their name alone;
// the test imports each one the fragment names.
var snippetImports = map[string]string{
	"context":     "context",
	"errors":      "errors",
	"fmt":         "fmt",
	"json":        "encoding/json",
	"log":         "log",
	"os":          "os",
	"filepath":    "path/filepath",
	"strings":     "strings",
	"time":        "time",
	"slog":        "log/slog",
	"io":          "io",
	"http":        "net/http",
	"session":     "github.com/agentsession/session",
	"anthropic":   "github.com/agentsession/session/provider/anthropic",
	"openai":      "github.com/agentsession/session/provider/openai",
	"export":      "github.com/agentsession/session/export",
	"importer":    "github.com/agentsession/session/importer",
	"redact":      "github.com/agentsession/session/redact",
	"storetest":   "github.com/agentsession/session/storetest",
	"storekit":    "github.com/agentsession/session/storekit",
	"pgstore":     "github.com/agentsession/session/pgstore",
	"s3store":     "github.com/agentsession/session/s3store",
	"mirror":      "github.com/agentsession/session/mirror",
	"workspace":   "github.com/agentsession/session/workspace",
	"search":      "github.com/agentsession/session/search",
	"dive":        "github.com/agentsession/session/integrations/dive",
	"langchaingo": "github.com/agentsession/session/integrations/langchaingo",
	"encrypt":     "github.com/agentsession/session/encrypt",
	"memory":      "github.com/tmc/langchaingo/memory",
	"pgxpool":     "github.com/jackc/pgx/v5/pgxpool",
}

// givenGo declares, for every fragment, the names the guides use as given
// (the host's own values): a fragment reads as the body of a function of
// a host that has them. A fragment may declare any of them again.
const givenGo = `
import (
	"context"
	"io"

	"github.com/agentsession/session"
	"github.com/agentsession/session/encrypt"
)

var (
	ctx          = context.Background()
	err          error
	s            *session.Session
	store        session.Store
	otherStore   session.Store
	home, cwd    string
	mySummarizer session.Summarizer
	summarizer   session.Summarizer
	entryID      string
	target       string
	myRecord     map[string]string
	hostState    []byte
	flagModel    *session.ModelRef // a user's /model: nil for none
	cfgModel     session.ModelRef  // the host's default
	first, last  string
	turn         []*session.Message
	usage        *session.Usage
	dir, dsn     string
	from         string
	w            io.Writer
	files        session.Store
	keys         *encrypt.Keyring
	local        session.Store // a FileStore on the agent's machine
	remote       session.Store // a store another machine reaches
	pg           session.Store // a *pgstore.Store
	id           string
)
`

// TestDocSnippets compiles every ```go block of README.md and docs/*.md:
// a block that starts with "package" as the file it is, any other as the
// body of a function returning error, beside the declarations of givenGo.
// It takes about a second with a warm build cache. All are built in one go build, in a temporary module of a workspace
// holding the repository's modules. A local variable a fragment declares
// and does not use is no error here (a fragment shows a call and its
// results); every other compiler error is.
func TestDocSnippets(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	snippets, partial := docSnippets(t)
	if len(snippets) == 0 {
		t.Fatal("no ```go block in README.md and docs/*.md")
	}
	repo, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module docsnippets\n\ngo 1.25\n")
	write("go.work", workFile(t, repo))
	if b, err := os.ReadFile(filepath.Join(repo, "go.work.sum")); err == nil {
		write("go.work.sum", string(b))
	}
	for k, sn := range snippets {
		pkg := fmt.Sprintf("s%03d", k)
		mdPath := filepath.Join(repo, filepath.FromSlash(sn.file))
		if strings.HasPrefix(strings.TrimSpace(sn.code), "package ") {
			code := regexp.MustCompile(`(?m)^package \w+`).ReplaceAllString(sn.code, "package "+pkg)
			write(pkg+"/snippet.go", fmt.Sprintf("//line %s:%d\n%s\n", mdPath, sn.line, code))
			continue
		}
		var imports []string
		for name, path := range snippetImports {
			if regexp.MustCompile(`\b` + name + `\.`).MatchString(sn.code) {
				imports = append(imports, fmt.Sprintf("\t%q", path))
			}
		}
		sort.Strings(imports)
		write(pkg+"/given.go", "package "+pkg+"\n"+givenGo)
		write(pkg+"/snippet.go", fmt.Sprintf("package %s\n\nimport (\n%s\n)\n\nfunc _() error {\n//line %s:%d\n%s\n\treturn nil\n}\n",
			pkg, strings.Join(imports, "\n"), mdPath, sn.line, sn.code))
	}
	cmd := exec.Command(gobin, "build", "-gcflags=-e", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Logf("compiled %d snippets (%d marked partial)", len(snippets), partial)
		return
	}
	// The snippets of the sub-modules' guides need their dependencies
	// (pgx, langchaingo) in the module cache: offline, on a fresh
	// machine, they cannot be fetched, which says nothing of the docs.
	if fetch := regexp.MustCompile(`module lookup disabled|dial tcp|no such host|proxy\.golang\.org|unrecognized import path`); fetch.Match(out) {
		t.Skipf("the modules the snippets need could not be fetched (go build in the sub-modules first, or go online):\n%s", out)
	}
	var bad []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "#"), strings.Contains(l, "declared and not used"), strings.Contains(l, "imported and not used"):
			continue
		}
		bad = append(bad, strings.ReplaceAll(l, repo+string(filepath.Separator), ""))
	}
	if len(bad) > 0 {
		t.Fatalf("snippets of the docs do not compile (go build in %s):\n%s", dir, strings.Join(bad, "\n"))
	}
	t.Logf("compiled %d snippets (%d marked partial)", len(snippets), partial)
}

// workFile is a go.work using the temporary module and every module of
// the repository's go.work, by absolute path.
func workFile(t *testing.T, repo string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	var uses []string
	goLine := "go 1.26.0"
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "go "):
			goLine = l
		case strings.HasPrefix(l, "use ("):
			in = true
		case in && l == ")":
			in = false
		case in && l != "" && !strings.HasPrefix(l, "//"):
			uses = append(uses, "\t"+filepath.Join(repo, l))
		}
	}
	if len(uses) == 0 {
		t.Fatal("go.work lists no module")
	}
	return goLine + "\n\nuse (\n\t.\n" + strings.Join(uses, "\n") + "\n)\n"
}

// TestDocLinks checks the relative links of README.md and docs/*.md: the
// file each names exists, and so does the heading its #anchor names (as
// GitHub makes anchors of headings).
func TestDocLinks(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"README.md"}, files...)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			p := f
			if path != "" {
				p = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
				if _, err := os.Stat(p); err != nil {
					t.Errorf("%s: link %s: %v", f, target, err)
					continue
				}
			}
			if anchor != "" && !hasAnchor(t, p, anchor) {
				t.Errorf("%s: link %s: no heading of %s makes the anchor %q", f, target, p, anchor)
			}
		}
	}
}

// hasAnchor reports whether a heading of the Markdown file p makes anchor.
func hasAnchor(t *testing.T, p, anchor string) bool {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	fence := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		var slug strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				slug.WriteByte('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				slug.WriteRune(r)
			}
		}
		if slug.String() == anchor {
			return true
		}
	}
	return false
}
