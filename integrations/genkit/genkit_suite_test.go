package genkitstore_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	genkitstore "github.com/agentsession/session/integrations/genkit"
)

// Genkit's own tests of its session package and of its Firestore session
// store (genkit_session_test.go and genkit_firestore_test.go, ported from
// the module at the version go.mod pins) make their stores with newStore:
// this package's Store on agentsession's MemoryStore. TestGenkitSuite runs
// them again in a child process of this test binary with backendEnv set,
// where newStore puts each store on a FileStore of its own temporary
// directory ("file") or, when AGENTSESSION_PG_DSN names a server, on
// pgstore ("pg", genkit_pg_test.go).

const backendEnv = "AGENTSESSION_GENKIT_BACKEND"

// genkitTestCount is how many tests the two ported files hold: 27 of
// core/x/session and the 5 of plugins/firebase/x that are not about
// Firestore itself (its collection option, TTL and expiry field).
const genkitTestCount = 32

// newStore returns a Store of the backend backendEnv names, closed with
// its agentsession store when t ends.
func newStore[S any](t testing.TB) *genkitstore.Store[S] {
	t.Helper()
	st, _ := newStoreOn[S](t)
	return st
}

// newStoreOn is newStore, with the agentsession store under it.
func newStoreOn[S any](t testing.TB) (*genkitstore.Store[S], session.Store) {
	t.Helper()
	var backing session.Store
	switch b := os.Getenv(backendEnv); b {
	case "", "memory":
		backing = session.NewMemoryStore()
	case "file":
		fs, err := session.OpenFileStore(filepath.Join(t.TempDir(), "sessions"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fs.Close() })
		backing = fs
	case "pg":
		backing = pgBacking(t)
	default:
		t.Fatalf("%s=%q: memory, file or pg", backendEnv, b)
	}
	st, err := genkitstore.New[S](backing, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, backing
}

// genkitTests lists the tests of the two ported files.
func genkitTests(t *testing.T) []string {
	var names []string
	for _, f := range []string{"genkit_session_test.go", "genkit_firestore_test.go"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`).FindAllSubmatch(src, -1) {
			names = append(names, string(m[1]))
		}
	}
	if len(names) != genkitTestCount {
		t.Fatalf("found %d of Genkit's tests in the ported files, want %d", len(names), genkitTestCount)
	}
	return names
}

// runGenkitSuite runs Genkit's tests on backend in a child process and
// checks that each passed, none skipped.
func runGenkitSuite(t *testing.T, backend string, env ...string) {
	names := genkitTests(t)
	cmd := exec.Command(os.Args[0], "-test.run", "^("+strings.Join(names, "|")+")$", "-test.count", "1", "-test.v")
	cmd.Env = append(append(os.Environ(), backendEnv+"="+backend), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("Genkit's tests on %s: %v\n%s", backend, err, out)
	}
	passed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^--- PASS: (Test\w+) `).FindAllSubmatch(out, -1) {
		passed[string(m[1])] = true
	}
	for _, n := range names {
		if !passed[n] {
			t.Errorf("%s did not pass on %s", n, backend)
		}
	}
	t.Logf("%d of Genkit's %d tests passed on %s", len(passed), len(names), backend)
	if testing.Verbose() {
		os.Stdout.Write(out)
	}
}

// TestGenkitSuite: Genkit's tests, on each backend, each in a child
// process. On the MemoryStore they also run in this process, as the
// tests they are (with -short, only there).
func TestGenkitSuite(t *testing.T) {
	if os.Getenv(backendEnv) != "" {
		t.Skip("the child itself")
	}
	if testing.Short() {
		t.Skip("-short: Genkit's tests ran in this process, on the MemoryStore")
	}
	t.Run("MemoryStore", func(t *testing.T) { runGenkitSuite(t, "memory") })
	t.Run("FileStore", func(t *testing.T) { runGenkitSuite(t, "file") })
	t.Run("pgstore", func(t *testing.T) {
		if os.Getenv(pgDSNEnv) == "" {
			t.Skip(pgDSNEnv + " is not set: no PostgreSQL server (.ci/run starts one)")
		}
		runGenkitSuite(t, "pg")
	})
}
