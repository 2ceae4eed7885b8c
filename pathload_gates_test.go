package session

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestPartialGates: every exported method of Session works on a handle
// that holds only its current path (partialSafe), or makes the handle
// whole before it reads the tree: it calls s.whole or s.wholeNoCtx, or
// another exported method of s that does.
func TestPartialGates(t *testing.T) {
	fset := token.NewFileSet()
	dirents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]*ast.BlockStmt{}
	for _, de := range dirents {
		name := de.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() || fd.Body == nil {
				continue
			}
			star, ok := fd.Recv.List[0].Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			if id, ok := star.X.(*ast.Ident); ok && id.Name == "Session" {
				bodies[fd.Name.Name] = fd.Body
			}
		}
	}
	if len(bodies) < 50 {
		t.Fatalf("found %d methods of Session: the test looks in the wrong place", len(bodies))
	}
	calls := func(body *ast.BlockStmt) []string {
		var out []string
		ast.Inspect(body, func(n ast.Node) bool {
			if ce, ok := n.(*ast.CallExpr); ok {
				if se, ok := ce.Fun.(*ast.SelectorExpr); ok {
					if x, ok := se.X.(*ast.Ident); ok && x.Name == "s" {
						out = append(out, se.Sel.Name)
					}
				}
			}
			return true
		})
		return out
	}
	gated := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for name, body := range bodies {
			if gated[name] || partialSafe[name] {
				continue
			}
			for _, c := range calls(body) {
				if c == "whole" || c == "wholeNoCtx" || c == "makeWhole" || (bodies[c] != nil && gated[c]) {
					gated[name], changed = true, true
					break
				}
			}
		}
	}
	for name := range bodies {
		if !partialSafe[name] && !gated[name] {
			t.Errorf("Session.%s neither is named in partialSafe nor makes a partial handle whole", name)
		}
	}
	for name := range partialSafe {
		if bodies[name] == nil {
			t.Errorf("partialSafe names %s, which is no method of Session", name)
		}
	}
}
