package session

// A vet-style check of FileStore's locking, as filestore_session.go
// writes it down: the lock order (FileStore.createMu, then a
// fileSession.mu, then the file locks, then FileStore.mu), and the lock
// that guards each field. It reads the package's own source (the files
// of this build, tests left out) with go/ast and go/types and follows
// each function in the order its statements run, branches apart, with
// what each function it calls may take and what its callers must hold.
//
// What it assumes, on purpose simple:
//   - A lock taken is held to the end of the function unless unlocked
//     on the way; `defer X.Unlock()` holds it to the end.
//   - A deferred call is taken to run where the defer stands.
//   - A function literal runs where it stands, except the function of a
//     go statement or of time.AfterFunc, which runs on its own, holding
//     nothing.
//   - Which session a fileSession.mu is does not matter: holding one
//     counts as holding "a session's". So a blocking lock of a second
//     session under the first is refused; TryLock, which never waits, is
//     not ordered (eviction uses it).
//   - A field guarded by a session's lock asks for some session's lock
//     held, not that session's; newFileStore and openFileOnly, which
//     make a store before anyone else sees it, are not asked.
//   - A function that is exported, or that nothing in the package calls
//     (it is called through an interface, by a goroutine or a timer),
//     must not need its callers to hold a lock.
//   - Calls through interfaces and function values are not followed.
//
// TestLockOrderCheckFails proves it can fail: it adds functions that
// break each rule to the source and expects each reported.
//
// The file is long because it is a small analyzer: Go's statements,
// followed one kind at a time.

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLockOrder(t *testing.T) {
	a := analyzeLocks(t, nil)
	for _, p := range a.problems {
		t.Error(p)
	}
	// The check must have seen the locks it checks.
	for c, min := range map[lockClass]int{createLock: 1, sessionLock: 5, storeLock: 10, fileLock: 3} {
		if a.sites[c] < min {
			t.Errorf("only %d places take %s: the check no longer finds them", a.sites[c], lockNames[c])
		}
	}
}

// lockOrderBreaks are functions that each break one rule, with what the
// check must say of them.
var lockOrderBreaks = []struct{ src, want string }{
	{`func (s *FileStore) inv1(fsess *fileSession) {
	s.mu.Lock()
	fsess.mu.Lock()
	fsess.mu.Unlock()
	s.mu.Unlock()
}`, "inv1 takes fileSession.mu while holding FileStore.mu"},
	{`func (s *FileStore) inv2(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.CloseSession(id)
}`, "inv2 calls CloseSession, which takes fileSession.mu"},
	{`func (s *FileStore) inv3(fsess *fileSession) {
	fsess.mu.Lock()
	defer fsess.mu.Unlock()
	_ = lockCtx(nil, &s.createMu)
	s.createMu.Unlock()
}`, "inv3 takes FileStore.createMu while holding fileSession.mu"},
	{`func (s *FileStore) inv4(fsess *fileSession) {
	fsess.mu.Lock()
	defer fsess.mu.Unlock()
	s.mu.Lock()
	_ = s.acquire(nil, fsess)
	s.mu.Unlock()
}`, "inv4 calls acquire, which takes a file lock (lockFile)"},
	{`func (s *FileStore) inv5(fsess *fileSession, b bool) {
	s.mu.Lock()
	if b {
		s.mu.Unlock()
		return
	}
	s.file("x")
}`, "inv5 calls file, which takes FileStore.mu"},
	{`func (s *FileStore) inv6(fsess *fileSession) int64 { return fsess.size }`,
		"inv6 touches fileSession.size without holding fileSession.mu"},
	{`func (s *FileStore) inv7(fsess *fileSession) {
	fsess.mu.Lock()
	defer fsess.mu.Unlock()
	go func() { fsess.lastUse = time.Now() }()
}`, "touches fileSession.lastUse without holding fileSession.mu"},
	{`func (s *FileStore) inv8(fsess *fileSession) {
	fsess.mu.Lock()
	defer fsess.mu.Unlock()
	s.hold(fsess)
	s.openFiles++
}`, "inv8 touches FileStore.openFiles without holding FileStore.mu"},
	{`func (s *FileStore) inv9(fsess *fileSession) {
	fsess.mu.Lock()
	defer fsess.mu.Unlock()
	s.letGo(fsess)
	fsess.mu.Lock()
}`, "inv9 takes fileSession.mu while holding fileSession.mu"},
	{`func (s *FileStore) inv10(ids []string) {
	for _, id := range ids {
		_ = s.CloseSession(id)
		s.mu.Lock()
	}
	s.mu.Unlock()
}`, "inv10 calls CloseSession, which takes fileSession.mu"},
	{`func (s *FileStore) inv11(ids []string) {
	for _, id := range ids {
		s.mu.Lock()
		if id == "" {
			continue
		}
		s.mu.Unlock()
		_ = s.CloseSession(id)
	}
}`, "inv11 takes FileStore.mu while holding FileStore.mu"},
	{`func (s *FileStore) inv12(fsess *fileSession) {
	if !fsess.mu.TryLock() {
		return
	}
	defer fsess.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget(fsess)
}`, "inv12 calls forget, which takes FileStore.mu"},
}

func TestLockOrderCheckFails(t *testing.T) {
	var src strings.Builder
	src.WriteString("package session\n\nimport \"time\"\n\nvar _ = time.Now\n\n")
	for _, b := range lockOrderBreaks {
		src.WriteString(b.src + "\n\n")
	}
	a := analyzeLocks(t, map[string]string{"lockorder_breaks.go": src.String()})
	for _, b := range lockOrderBreaks {
		found := slices.ContainsFunc(a.problems, func(p string) bool { return strings.Contains(p, b.want) })
		if !found {
			t.Errorf("not reported: %q\nreported:\n%s", b.want, strings.Join(a.problems, "\n"))
		}
	}
	for _, p := range a.problems {
		if !strings.Contains(p, "lockorder_breaks.go") {
			t.Errorf("reported outside the added functions: %s", p)
		}
	}
}

// lockClass is a lock of the order, ranked: each may be taken while
// holding only locks of lower rank.
type lockClass int

const (
	noLock      lockClass = iota
	createLock            // FileStore.createMu
	sessionLock           // a fileSession.mu
	fileLock              // an OS file lock waited for (lockFile); not tracked as held
	storeLock             // FileStore.mu
	nLockClasses
)

var lockNames = [nLockClasses]string{"", "FileStore.createMu", "fileSession.mu", "a file lock (lockFile)", "FileStore.mu"}

// heldLocks counts the locks of each class a function holds at a point.
type heldLocks [nLockClasses]int

func (h heldLocks) union(o heldLocks) heldLocks {
	for c := range h {
		h[c] = max(h[c], o[c])
	}
	return h
}

// outranks returns a held lock that c may not be taken under, if any.
func (h heldLocks) outranks(c lockClass) lockClass {
	for k := nLockClasses - 1; k >= c; k-- {
		if h[k] > 0 {
			return k
		}
	}
	return noLock
}

// guard says which lock guards a field: a session's, the store's, or
// either (written under both).
type guard int

const (
	guardSession guard = iota + 1
	guardStore
	guardEither
)

// fnLocks is what the check knows of one function.
type fnLocks struct {
	name  string
	pos   token.Pos
	body  *ast.BlockStmt
	async bool // runs on its own goroutine
	root  bool // callable from outside the package, or by no one here
	// calls counts the static calls of it in the package.
	calls int
	// takes: the classes it, or what it calls, may wait for; why, how.
	takes    [nLockClasses]bool
	takesWhy [nLockClasses]string
	// needs: the locks its callers must hold (it touches what they guard
	// without taking them); why, how.
	needs    [nLockClasses]bool
	needsWhy [nLockClasses]string
}

type lockAnalysis struct {
	fset    *token.FileSet
	info    *types.Info
	ranked  map[*types.Var]lockClass
	guarded map[*types.Var]guard
	fieldOf map[*types.Var]string // "FileStore.mu"
	lockCtx *types.Func
	funcs   map[types.Object]*fnLocks
	lits    map[*ast.FuncLit]*fnLocks
	all     []*fnLocks
	// constructors touch a store before anyone else can see it.
	constructors map[string]bool
	changed      bool
	reporting    bool
	seen         map[string]bool
	problems     []string
	sites        [nLockClasses]int
}

// analyzeLocks checks the package's non-test files of this build, with
// extra files added.
func analyzeLocks(t *testing.T, extra map[string]string) *lockAnalysis {
	t.Helper()
	bp, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(bp.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	for name, src := range extra {
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	// Only the package's own types matter: imports are left empty, and
	// the errors that makes are ignored.
	conf := types.Config{
		Importer: importerFunc(func(path string) (*types.Package, error) {
			return types.NewPackage(path, filepath.Base(path)), nil
		}),
		Error: func(error) {},
	}
	info := &types.Info{
		Defs:       map[*ast.Ident]types.Object{},
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	pkg, _ := conf.Check(bp.ImportPath, fset, files, info)
	a := &lockAnalysis{
		fset: fset, info: info,
		ranked: map[*types.Var]lockClass{}, guarded: map[*types.Var]guard{}, fieldOf: map[*types.Var]string{},
		funcs: map[types.Object]*fnLocks{}, lits: map[*ast.FuncLit]*fnLocks{},
		constructors: map[string]bool{"newFileStore": true, "openFileOnly": true},
		seen:         map[string]bool{},
	}
	a.lockCtx, _ = pkg.Scope().Lookup("lockCtx").(*types.Func)
	// The ranked locks, and what guards each field: the struct's own lock
	// unless lockFields says otherwise.
	for _, typ := range []string{"FileStore", "fileSession"} {
		st := structOf(t, pkg, typ)
		for i := range st.NumFields() {
			f := st.Field(i)
			name := typ + "." + f.Name()
			a.fieldOf[f] = name
			switch k, ok := lockFields[name]; {
			case !ok:
				a.guarded[f] = lockGuards[typ]
			case k.rank != noLock:
				a.ranked[f] = k.rank
			default:
				a.guarded[f] = k.guard
			}
		}
	}
	for name := range lockFields {
		if !slices.Contains(slices.Collect(maps.Values(a.fieldOf)), name) {
			t.Errorf("lockFields names %s, which is no longer a field", name)
		}
	}
	if len(a.ranked) != 3 || a.lockCtx == nil {
		t.Fatalf("the locks the check knows are gone: %d found, lockCtx %v", len(a.ranked), a.lockCtx)
	}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			obj := info.Defs[fd.Name]
			name := fd.Name.Name
			if fd.Recv != nil {
				name = recvName(fd.Recv.List[0].Type) + "." + name
			}
			fn := &fnLocks{name: name, pos: fd.Pos(), body: fd.Body, root: fd.Name.IsExported()}
			a.funcs[obj] = fn
			a.all = append(a.all, fn)
		}
	}
	// What each function takes and needs, to a fixed point; then once
	// more, reporting.
	for a.changed = true; a.changed; {
		a.changed = false
		a.walkAll()
	}
	a.reporting = true
	a.sites = [nLockClasses]int{}
	a.walkAll()
	for _, fn := range a.all {
		if !fn.root && !fn.async && fn.calls > 0 {
			continue
		}
		for c, need := range fn.needs {
			if need {
				a.report(fn.pos, "%s %s", fn.name, fn.needsWhy[c])
			}
		}
	}
	slices.Sort(a.problems)
	return a
}

// lockGuards is the guard of the fields of each struct by default.
var lockGuards = map[string]guard{"FileStore": guardStore, "fileSession": guardSession}

// lockFields are the ranked locks, and the fields not guarded by their
// struct's lock.
var lockFields = map[string]struct {
	rank  lockClass
	guard guard
}{
	"FileStore.createMu": {rank: createLock},
	"FileStore.mu":       {rank: storeLock},
	"fileSession.mu":     {rank: sessionLock},
	// Set when the store opens, or atomic.
	"FileStore.root": {}, "FileStore.r": {}, "FileStore.opts": {}, "FileStore.limits": {}, "FileStore.lim": {},
	"FileStore.blobs": {}, "FileStore.maxOpen": {}, "FileStore.fileOnly": {}, "FileStore.flat": {}, "FileStore.wholeReads": {},
	"FileStore.bg":      {}, // a WaitGroup: it synchronizes itself
	"FileStore.closing": {}, // made with the store, closed once by Close: a channel synchronizes itself
	// The events' own: the hub and the watcher's pointer synchronize
	// themselves, watchMu orders start and stop (a leaf).
	"FileStore.hub": {}, "FileStore.watch": {}, "FileStore.watchMu": {},
	"fileSession.id":      {}, // set before the session is shared
	"fileSession.used":    {guard: guardStore},
	"fileSession.open":    {guard: guardStore},
	"fileSession.rel":     {guard: guardEither},
	"fileSession.updated": {guard: guardEither},
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

func structOf(t *testing.T, pkg *types.Package, name string) *types.Struct {
	obj := pkg.Scope().Lookup(name)
	if obj == nil {
		t.Fatalf("no type %s", name)
	}
	return obj.Type().Underlying().(*types.Struct)
}

func recvName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}

func (a *lockAnalysis) walkAll() {
	for _, fn := range a.all {
		fn.calls = 0
	}
	for i := 0; i < len(a.all); i++ { // async literals are added on the way
		fn := a.all[i]
		w := &lockWalker{a: a, fn: fn}
		w.block(fn.body.List, heldLocks{})
	}
}

func (a *lockAnalysis) report(pos token.Pos, format string, args ...any) {
	if !a.reporting {
		return
	}
	p := a.fset.Position(pos)
	msg := fmt.Sprintf("%s:%d: ", filepath.Base(p.Filename), p.Line) + fmt.Sprintf(format, args...)
	if !a.seen[msg] {
		a.seen[msg] = true
		a.problems = append(a.problems, msg)
	}
}

// field returns the field e selects, if any.
func (a *lockAnalysis) field(e ast.Expr) *types.Var {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	s := a.info.Selections[sel]
	if s == nil || s.Kind() != types.FieldVal {
		return nil
	}
	v, _ := s.Obj().(*types.Var)
	return v
}

// lockOp returns the class and method of a call X.<lock>.Lock(),
// Unlock() or TryLock() on a ranked lock.
func (a *lockAnalysis) lockOp(e ast.Expr) (lockClass, string) {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return noLock, ""
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return noLock, ""
	}
	c := a.ranked[a.field(sel.X)]
	if c == noLock {
		return noLock, ""
	}
	return c, sel.Sel.Name
}

// callee returns the package function a call calls, if it is one.
func (a *lockAnalysis) callee(call *ast.CallExpr) *fnLocks {
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		return a.funcs[a.info.Uses[f]]
	case *ast.SelectorExpr:
		if s := a.info.Selections[f]; s != nil {
			return a.funcs[s.Obj()]
		}
	}
	return nil
}

func (a *lockAnalysis) literal(lit *ast.FuncLit, name string) *fnLocks {
	fn := a.lits[lit]
	if fn == nil {
		fn = &fnLocks{name: name, pos: lit.Pos(), body: lit.Body, async: true}
		a.lits[lit] = fn
		a.all = append(a.all, fn)
	}
	return fn
}

// lockWalker follows one function's statements.
type lockWalker struct {
	a      *lockAnalysis
	fn     *fnLocks
	frames []*lockFrame
}

// lockFrame collects the states at the breaks and continues of a loop,
// switch or select.
type lockFrame struct {
	label         string
	loop          bool
	breaks, conts []heldLocks
}

func (w *lockWalker) take(pos token.Pos, h heldLocks, c lockClass, how string) {
	if k := h.outranks(c); k != noLock {
		w.a.report(pos, "%s %s while holding %s", w.fn.name, how, lockNames[k])
	}
}

func (w *lockWalker) setTakes(c lockClass, why string) {
	if !w.fn.takes[c] {
		w.fn.takes[c], w.fn.takesWhy[c] = true, why
		w.a.changed = true
	}
}

func (w *lockWalker) setNeeds(c lockClass, why string) {
	if !w.fn.needs[c] {
		w.fn.needs[c], w.fn.needsWhy[c] = true, why
		w.a.changed = true
	}
}

func (w *lockWalker) block(list []ast.Stmt, h heldLocks) (heldLocks, bool) {
	for _, s := range list {
		var live bool
		if h, live = w.stmt(s, h, ""); !live {
			return h, false
		}
	}
	return h, true
}

func merge(a heldLocks, aLive bool, b heldLocks, bLive bool) (heldLocks, bool) {
	switch {
	case aLive && bLive:
		return a.union(b), true
	case aLive:
		return a, true
	}
	return b, bLive
}

func (w *lockWalker) stmt(s ast.Stmt, h heldLocks, label string) (heldLocks, bool) {
	switch s := s.(type) {
	case nil, *ast.EmptyStmt:
		return h, true
	case *ast.BlockStmt:
		return w.block(s.List, h)
	case *ast.LabeledStmt:
		return w.stmt(s.Stmt, h, s.Label.Name)
	case *ast.ExprStmt:
		h = w.expr(s.X, h)
		if call, ok := s.X.(*ast.CallExpr); ok {
			if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "panic" {
				return h, false
			}
		}
		return h, true
	case *ast.AssignStmt:
		for _, e := range s.Rhs {
			h = w.expr(e, h)
		}
		for _, e := range s.Lhs {
			h = w.expr(e, h)
		}
		return h, true
	case *ast.IncDecStmt:
		return w.expr(s.X, h), true
	case *ast.SendStmt:
		return w.expr(s.Value, w.expr(s.Chan, h)), true
	case *ast.DeclStmt:
		if gd, ok := s.Decl.(*ast.GenDecl); ok {
			for _, spec := range gd.Specs {
				if vs, ok := spec.(*ast.ValueSpec); ok {
					for _, e := range vs.Values {
						h = w.expr(e, h)
					}
				}
			}
		}
		return h, true
	case *ast.ReturnStmt:
		for _, e := range s.Results {
			h = w.expr(e, h)
		}
		return h, false
	case *ast.BranchStmt:
		switch s.Tok {
		case token.BREAK, token.CONTINUE:
			if f := w.target(s); f != nil {
				if s.Tok == token.BREAK {
					f.breaks = append(f.breaks, h)
				} else {
					f.conts = append(f.conts, h)
				}
			}
			return h, false
		case token.GOTO:
			return h, false
		}
		return h, true // fallthrough
	case *ast.GoStmt:
		for _, e := range s.Call.Args {
			h = w.expr(e, h)
		}
		if lit, ok := ast.Unparen(s.Call.Fun).(*ast.FuncLit); ok {
			w.a.literal(lit, w.fn.name+" (its goroutine)")
		} else if fn := w.a.callee(s.Call); fn != nil {
			fn.async = true
		}
		return h, true
	case *ast.DeferStmt:
		if c, op := w.a.lockOp(s.Call); c != noLock && op == "Unlock" {
			return h, true // held to the end
		}
		w.expr(s.Call, h) // as if it ran here
		return h, true
	case *ast.IfStmt:
		h, _ = w.stmt(s.Init, h, "")
		then, els := h, h
		cond := ast.Unparen(s.Cond)
		if c, op := w.a.lockOp(cond); op == "TryLock" {
			w.a.sites[c]++
			then[c]++
		} else if u, ok := cond.(*ast.UnaryExpr); ok && u.Op == token.NOT {
			if c, op := w.a.lockOp(u.X); op == "TryLock" {
				w.a.sites[c]++
				els[c]++
			} else {
				then = w.expr(s.Cond, h)
				els = then
			}
		} else {
			then = w.expr(s.Cond, h)
			els = then
		}
		t, tLive := w.stmt(s.Body, then, "")
		e, eLive := els, true
		if s.Else != nil {
			e, eLive = w.stmt(s.Else, els, "")
		}
		return merge(t, tLive, e, eLive)
	case *ast.ForStmt:
		h, _ = w.stmt(s.Init, h, "")
		return w.loop(label, h, s.Cond, s.Post, s.Body, s.Cond == nil)
	case *ast.RangeStmt:
		h = w.expr(s.X, h)
		return w.loop(label, h, nil, nil, s.Body, false)
	case *ast.SwitchStmt:
		h, _ = w.stmt(s.Init, h, "")
		if s.Tag != nil {
			h = w.expr(s.Tag, h)
		}
		return w.clauses(label, h, s.Body, false)
	case *ast.TypeSwitchStmt:
		h, _ = w.stmt(s.Init, h, "")
		h, _ = w.stmt(s.Assign, h, "")
		return w.clauses(label, h, s.Body, false)
	case *ast.SelectStmt:
		return w.clauses(label, h, s.Body, true)
	}
	w.a.report(s.Pos(), "the lock check does not know the statement %T", s)
	return h, true
}

// target returns the frame a break or continue goes to.
func (w *lockWalker) target(s *ast.BranchStmt) *lockFrame {
	for i := len(w.frames) - 1; i >= 0; i-- {
		f := w.frames[i]
		if s.Label != nil && f.label != s.Label.Name {
			continue
		}
		if s.Tok == token.CONTINUE && !f.loop {
			continue
		}
		return f
	}
	return nil
}

// loop follows a loop's body until the states at its head stop growing.
func (w *lockWalker) loop(label string, h heldLocks, cond ast.Expr, post ast.Stmt, body *ast.BlockStmt, forever bool) (heldLocks, bool) {
	var f *lockFrame
	for range 4 {
		if cond != nil {
			h = w.expr(cond, h)
		}
		f = &lockFrame{label: label, loop: true}
		w.frames = append(w.frames, f)
		b, live := w.block(body.List, h)
		w.frames = w.frames[:len(w.frames)-1]
		next := h
		for _, c := range f.conts {
			b, live = merge(b, live, c, true)
		}
		if live {
			b, _ = w.stmt(post, b, "")
			next = next.union(b)
		}
		if next == h {
			break
		}
		h = next
	}
	out, live := h, !forever
	for _, b := range f.breaks {
		out, live = merge(out, live, b, true)
	}
	return out, live
}

// clauses follows each case of a switch or select from h.
func (w *lockWalker) clauses(label string, h heldLocks, body *ast.BlockStmt, isSelect bool) (heldLocks, bool) {
	f := &lockFrame{label: label}
	w.frames = append(w.frames, f)
	var out heldLocks
	live, hasDefault := false, false
	for _, cl := range body.List {
		in := h
		var list []ast.Stmt
		switch cl := cl.(type) {
		case *ast.CaseClause:
			for _, e := range cl.List {
				in = w.expr(e, in)
			}
			hasDefault = hasDefault || cl.List == nil
			list = cl.Body
		case *ast.CommClause:
			in, _ = w.stmt(cl.Comm, in, "")
			hasDefault = hasDefault || cl.Comm == nil
			list = cl.Body
		}
		o, l := w.block(list, in)
		out, live = merge(out, live, o, l)
	}
	w.frames = w.frames[:len(w.frames)-1]
	if !hasDefault && !isSelect {
		out, live = merge(out, live, h, true) // no case taken
	}
	for _, b := range f.breaks {
		out, live = merge(out, live, b, true)
	}
	return out, live
}

// expr follows an expression: its calls, lock operations and field
// uses, innermost first.
func (w *lockWalker) expr(e ast.Expr, h heldLocks) heldLocks {
	a := w.a
	switch e := e.(type) {
	case nil:
		return h
	case *ast.CallExpr:
		if c, op := a.lockOp(e); c != noLock {
			sel := ast.Unparen(e.Fun).(*ast.SelectorExpr)
			h = w.expr(sel.X.(*ast.SelectorExpr).X, h)
			a.sites[c]++
			switch op {
			case "Lock":
				w.take(e.Pos(), h, c, "takes "+lockNames[c])
				w.setTakes(c, "takes "+lockNames[c]+" at "+a.where(e.Pos()))
				h[c]++
			case "TryLock":
				h[c]++
			case "Unlock":
				if h[c] > 0 {
					h[c]--
				}
			default:
				a.report(e.Pos(), "%s calls %s on %s: the check knows Lock, TryLock and Unlock", w.fn.name, op, lockNames[c])
			}
			return h
		}
		if id, ok := ast.Unparen(e.Fun).(*ast.Ident); ok && a.info.Uses[id] == a.lockCtx && len(e.Args) == 2 {
			h = w.expr(e.Args[0], h)
			u, ok := ast.Unparen(e.Args[1]).(*ast.UnaryExpr)
			if c := a.ranked[a.field(u.X)]; ok && c != noLock {
				h = w.expr(u.X.(*ast.SelectorExpr).X, h)
				a.sites[c]++
				w.take(e.Pos(), h, c, "takes "+lockNames[c])
				w.setTakes(c, "takes "+lockNames[c]+" at "+a.where(e.Pos()))
				h[c]++
				return h
			}
			h = w.expr(e.Args[1], h)
			return h
		}
		if sel, ok := ast.Unparen(e.Fun).(*ast.SelectorExpr); ok && isPkgSel(sel, "time", "AfterFunc") && len(e.Args) == 2 {
			h = w.expr(e.Args[0], h)
			if lit, ok := ast.Unparen(e.Args[1]).(*ast.FuncLit); ok {
				a.literal(lit, w.fn.name+" (its timer)")
				return h
			}
			return w.expr(e.Args[1], h)
		}
		h = w.expr(e.Fun, h)
		for _, arg := range e.Args {
			h = w.expr(arg, h)
		}
		if id, ok := ast.Unparen(e.Fun).(*ast.Ident); ok && id.Name == "lockFile" {
			a.sites[fileLock]++
			w.take(e.Pos(), h, fileLock, "takes "+lockNames[fileLock])
			w.setTakes(fileLock, "takes "+lockNames[fileLock]+" at "+a.where(e.Pos()))
		}
		if fn := a.callee(e); fn != nil {
			fn.calls++
			for c := range nLockClasses {
				if fn.takes[c] {
					w.take(e.Pos(), h, c, "calls "+shortName(fn.name)+", which "+fn.takesWhy[c]+",")
					w.setTakes(c, "calls "+shortName(fn.name)+", which "+fn.takesWhy[c])
				}
			}
			for c := range nLockClasses {
				if fn.needs[c] && h[c] == 0 && !a.constructors[w.fn.name] {
					w.setNeeds(c, "calls "+shortName(fn.name)+", which "+fn.needsWhy[c])
				}
			}
		}
		return h
	case *ast.SelectorExpr:
		h = w.expr(e.X, h)
		if v := a.field(e); v != nil {
			if c := a.ranked[v]; c != noLock {
				a.report(e.Pos(), "%s uses %s other than by Lock, TryLock, Unlock or lockCtx", w.fn.name, lockNames[c])
			}
			w.touch(e.Pos(), h, v)
		}
		return h
	case *ast.FuncLit:
		if fn := a.lits[e]; fn != nil && fn.async {
			return h
		}
		inner := &lockWalker{a: a, fn: w.fn}
		inner.block(e.Body.List, h) // runs here, as far as the check knows
		return h
	case *ast.UnaryExpr:
		return w.expr(e.X, h)
	case *ast.BinaryExpr:
		return w.expr(e.Y, w.expr(e.X, h))
	case *ast.ParenExpr:
		return w.expr(e.X, h)
	case *ast.StarExpr:
		return w.expr(e.X, h)
	case *ast.IndexExpr:
		return w.expr(e.Index, w.expr(e.X, h))
	case *ast.IndexListExpr:
		h = w.expr(e.X, h)
		for _, x := range e.Indices {
			h = w.expr(x, h)
		}
		return h
	case *ast.SliceExpr:
		h = w.expr(e.X, h)
		for _, x := range []ast.Expr{e.Low, e.High, e.Max} {
			h = w.expr(x, h)
		}
		return h
	case *ast.TypeAssertExpr:
		return w.expr(e.X, h)
	case *ast.CompositeLit:
		for _, x := range e.Elts {
			h = w.expr(x, h)
		}
		return h
	case *ast.KeyValueExpr:
		if _, isName := e.Key.(*ast.Ident); !isName {
			h = w.expr(e.Key, h)
		}
		return w.expr(e.Value, h)
	}
	return h // names, literals, types
}

// touch checks a use of field v against the lock that guards it.
func (w *lockWalker) touch(pos token.Pos, h heldLocks, v *types.Var) {
	g := w.a.guarded[v]
	if g == 0 || w.a.constructors[w.fn.name] {
		return
	}
	need := sessionLock
	switch {
	case g == guardStore:
		need = storeLock
	case g == guardEither && h[storeLock] > 0:
		return
	}
	if h[need] == 0 {
		w.setNeeds(need, fmt.Sprintf("touches %s without holding %s (%s)", w.a.fieldOf[v], lockNames[need], w.a.where(pos)))
	}
}

func (a *lockAnalysis) where(pos token.Pos) string {
	p := a.fset.Position(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

func shortName(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return name
}

func isPkgSel(sel *ast.SelectorExpr, pkg, name string) bool {
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg && sel.Sel.Name == name
}
