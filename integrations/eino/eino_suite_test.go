package eino_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestEinoSuite runs Eino's own tests of its checkpoint stores' users
// (the compose graphs' checkpoint, interrupt and resume tests, and the adk
// runners' and prebuilt agents') with their in-memory stores swapped for
// this package's Store, once on a session.MemoryStore and once on a
// session.FileStore, and fails unless every test passes.
//
// Eino's test files are not copied into this repository: the test copies
// the module at the version go.mod pins (einoVersion, Apache-2.0, from
// the module cache) to a temporary directory, and in each package of
// einoPackages rewrites every test store that is a struct of one
// map[string][]byte (Eino's in-memory stores) to embed the type of
// testdata/swapstore.go.txt in place of its own Get and Set. Nothing
// else changes. A workspace (go.work) ties the copy to this module and
// the root's, and go test runs the packages there.
//
// Every call of a swapped store prints a marker line, so the store-backed
// tests (those that called it) are counted from go test -json.

const einoVersion = "v0.7.36"

// einoPackages are the packages of Eino whose tests use a checkpoint
// store, and how many in-memory store types each must have swapped.
var einoPackages = map[string]int{
	"compose":                  1, // inMemoryStore
	"adk":                      2, // myStore, dtTestStore
	"adk/prebuilt":             1, // integrationCheckpointStore
	"adk/prebuilt/planexecute": 1, // checkpointStore
	"adk/prebuilt/supervisor":  1, // checkpointStore
}

const storeMarker = "agentsession-eino-store: "

var markerLines = regexp.MustCompile("(?m)^" + storeMarker + ".*\n")

func TestEinoSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs Eino's test suites (about a minute)")
	}
	src := einoModuleDir(t)
	adapter, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(filepath.Dir(adapter))
	work := t.TempDir()
	copyTree(t, src, filepath.Join(work, "eino"))
	shim, err := os.ReadFile(filepath.Join("testdata", "swapstore.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for pkg, want := range einoPackages {
		dir := filepath.Join(work, "eino", filepath.FromSlash(pkg))
		if got := swapStores(t, dir, shim); got != want {
			t.Fatalf("%s: swapped %d in-memory stores, want %d: Eino's tests changed; look again", pkg, got, want)
		}
		pkgs = append(pkgs, "./"+pkg+"/")
	}
	sort.Strings(pkgs)
	gowork := fmt.Sprintf("go 1.26.0\n\nuse (\n\t./eino\n\t%s\n\t%s\n)\n", adapter, root)
	if err := os.WriteFile(filepath.Join(work, "go.work"), []byte(gowork), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := buildEino(t, work, pkgs)
	for _, backend := range []string{"memory", "file"} {
		t.Run(backend, func(t *testing.T) {
			res := runEino(t, work, bin, backend, pkgs)
			t.Logf("Eino %s on a %s store: %d tests (with subtests) passed, %d skipped; %d of them store-backed (%d top-level)",
				einoVersion, backend, res.passed, res.skipped, len(res.storeBacked), res.storeBackedTop)
			if len(res.failed) > 0 {
				t.Fatalf("%d of Eino's tests failed on a %s store: %s\n%s", len(res.failed), backend, strings.Join(res.failed, " "), res.failOutput)
			}
			// Eino v0.7.36's packages have 457 tests with their subtests, 45
			// of which call a checkpoint store.
			if res.passed < 457 || len(res.storeBacked) < 45 {
				t.Fatalf("%d tests passed, %d called the store; want 457 and 45: the swap did not take, or tests were left out", res.passed, len(res.storeBacked))
			}
		})
	}
}

// einoModuleDir returns the directory of Eino's module at einoVersion.
func einoModuleDir(t *testing.T) string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{.Dir}}", "github.com/cloudwego/eino").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/cloudwego/eino: %v", err)
	}
	version, dir, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if version != einoVersion {
		t.Fatalf("go.mod requires Eino %s; the suite was checked against %s", version, einoVersion)
	}
	if dir == "" {
		if err := exec.Command("go", "mod", "download", "github.com/cloudwego/eino").Run(); err != nil {
			t.Fatal(err)
		}
		return einoModuleDir(t)
	}
	return dir
}

// copyTree copies the files of directory src to dst, writable.
func copyTree(t *testing.T, src, dst string) {
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// swapStores rewrites the test files of package directory dir: each
// struct type of one map[string][]byte field with a Get and a Set of
// CheckPointStore's shape loses those methods and embeds
// agentsessionStore (shim, added to the package). It returns how many.
func swapStores(t *testing.T, dir string, shim []byte) int {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	type edit struct {
		from, to int
		text     string
	}
	parsed := map[string]*ast.File{}
	structs := map[string]*ast.StructType{} // by type name
	structFile := map[string]string{}
	methods := map[string][]*ast.FuncDecl{}
	methodFile := map[*ast.FuncDecl]string{}
	pkgName := ""
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(af.Name.Name, "_test") {
			continue // an external test package: its types are not the package's
		}
		pkgName = af.Name.Name
		parsed[f] = af
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					ts, ok := sp.(*ast.TypeSpec)
					if !ok {
						continue
					}
					if st, ok := ts.Type.(*ast.StructType); ok && isOneByteMap(st) {
						structs[ts.Name.Name], structFile[ts.Name.Name] = st, f
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil || len(d.Recv.List) != 1 {
					continue
				}
				if d.Name.Name != "Get" && d.Name.Name != "Set" {
					continue
				}
				if !checkpointShape(d) {
					continue
				}
				typ := d.Recv.List[0].Type
				if s, ok := typ.(*ast.StarExpr); ok {
					typ = s.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					methods[id.Name] = append(methods[id.Name], d)
					methodFile[d] = f
				}
			}
		}
	}
	edits := map[string][]edit{}
	n := 0
	for name, st := range structs {
		ms := methods[name]
		if len(ms) != 2 || ms[0].Name.Name == ms[1].Name.Name {
			continue
		}
		n++
		f := structFile[name]
		off := fset.Position(st.Fields.Opening).Offset + 1
		edits[f] = append(edits[f], edit{off, off, "\n\tagentsessionStore // swapped in by integrations/eino's TestEinoSuite\n"})
		for _, m := range ms {
			from := m.Pos()
			if m.Doc != nil {
				from = m.Doc.Pos()
			}
			mf := methodFile[m]
			edits[mf] = append(edits[mf], edit{fset.Position(from).Offset, fset.Position(m.End()).Offset, ""})
		}
	}
	for f, es := range edits {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(es, func(a, b edit) int { return b.from - a.from })
		for _, e := range es {
			b = slices.Concat(b[:e.from], []byte(e.text), b[e.to:])
		}
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n > 0 {
		code := bytes.Replace(shim, []byte("package PACKAGE"), []byte("package "+pkgName), 1)
		if err := os.WriteFile(filepath.Join(dir, "zz_agentsession_store_test.go"), code, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// isOneByteMap reports whether a struct has one field, a map[string][]byte.
func isOneByteMap(st *ast.StructType) bool {
	if len(st.Fields.List) != 1 || len(st.Fields.List[0].Names) != 1 {
		return false
	}
	return types(st.Fields.List[0].Type) == "map[string][]byte"
}

// checkpointShape reports whether a Get or Set has CheckPointStore's
// signature.
func checkpointShape(d *ast.FuncDecl) bool {
	var params, results []string
	for _, f := range d.Type.Params.List {
		for range max(1, len(f.Names)) {
			params = append(params, types(f.Type))
		}
	}
	if d.Type.Results != nil {
		for _, f := range d.Type.Results.List {
			for range max(1, len(f.Names)) {
				results = append(results, types(f.Type))
			}
		}
	}
	switch d.Name.Name {
	case "Get":
		return slices.Equal(params, []string{"context.Context", "string"}) && slices.Equal(results, []string{"[]byte", "bool", "error"})
	case "Set":
		return slices.Equal(params, []string{"context.Context", "string", "[]byte"}) && slices.Equal(results, []string{"error"})
	}
	return false
}

// types spells the type expressions checkpointShape and isOneByteMap
// compare.
func types(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return types(e.X) + "." + e.Sel.Name
	case *ast.ArrayType:
		if e.Len == nil {
			return "[]" + types(e.Elt)
		}
	case *ast.MapType:
		return "map[" + types(e.Key) + "]" + types(e.Value)
	}
	return "?"
}

// einoResult is what go test -json reported of a run.
type einoResult struct {
	passed, skipped int
	failed          []string
	failOutput      string
	storeBacked     []string // tests (and subtests) that called a swapped store
	storeBackedTop  int
}

// buildEino builds the test binaries of pkgs in the copy under work,
// once for both backends, into a directory it returns.
func buildEino(t *testing.T, work string, pkgs []string) string {
	bin := filepath.Join(work, "bin")
	cmd := exec.Command("go", append([]string{"test", "-c", "-o", bin + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir = filepath.Join(work, "eino")
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(work, "go.work"), "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c of Eino's packages: %v\n%s", err, out)
	}
	return bin
}

// runEino runs the test binaries of pkgs built in bin, each in its
// package's directory of the copy under work, with the swapped stores
// on backend, and reads their results through go tool test2json.
func runEino(t *testing.T, work, bin, backend string, pkgs []string) einoResult {
	var out []byte
	for _, pkg := range pkgs {
		rel := strings.Trim(pkg, "./")
		exe := filepath.Join(bin, filepath.Base(rel)+".test")
		tmp := t.TempDir()
		cmd := exec.Command("go", "tool", "test2json", "-p", "github.com/cloudwego/eino/"+rel, exe, "-test.v=test2json", "-test.count=1", "-test.timeout=10m")
		cmd.Dir = filepath.Join(work, "eino", filepath.FromSlash(rel))
		cmd.Env = append(os.Environ(), "AGENTSESSION_EINO_BACKEND="+backend, "TMPDIR="+tmp)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		o, err := cmd.Output()
		out = append(out, o...)
		if err != nil && !bytes.Contains(o, []byte(`"Action":"fail"`)) {
			t.Fatalf("Eino's tests of %s: %v\n%s", rel, err, stderr.Bytes())
		}
	}
	var res einoResult
	used := map[string]bool{}
	output := map[string]*strings.Builder{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev struct {
			Action, Package, Test, Output string
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		name := strings.TrimPrefix(ev.Package, "github.com/cloudwego/eino/") + "." + ev.Test
		switch ev.Action {
		case "output":
			if ev.Test != "" && strings.HasPrefix(ev.Output, storeMarker) {
				used[name] = true
			}
			if output[name] == nil {
				output[name] = &strings.Builder{}
			}
			output[name].WriteString(ev.Output)
		case "pass":
			if ev.Test != "" {
				res.passed++
			}
		case "skip":
			if ev.Test != "" {
				res.skipped++
			}
		case "fail":
			res.failed = append(res.failed, name)
			if o := output[name]; o != nil {
				res.failOutput += markerLines.ReplaceAllString(o.String(), "") + "\n"
			}
		}
	}
	for name := range used {
		res.storeBacked = append(res.storeBacked, name)
		if !strings.Contains(name, "/") {
			res.storeBackedTop++
		}
	}
	sort.Strings(res.storeBacked)
	return res
}
