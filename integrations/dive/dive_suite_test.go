package session_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	session "github.com/agentsession/session/integrations/dive"
)

// Dive's own tests (session_dive_test.go) make their in-memory sessions
// with newSession, Dive's session.New: a session on agentsession's
// MemoryStore. TestDiveSuiteOnFileStore runs them again in a child
// process with diveBackendEnv set, where newSession opens the session in
// a FileStore of a temporary directory instead, so that every Session
// test also runs on files.

const diveBackendEnv = "AGENTSESSION_DIVE_BACKEND"

var fileBackendDir string

func newSession(id string) *session.Session {
	if os.Getenv(diveBackendEnv) != "file" {
		return session.New(id)
	}
	if fileBackendDir == "" {
		dir, err := os.MkdirTemp("", "dive-file-backend-")
		if err != nil {
			panic(err)
		}
		fileBackendDir = dir
	}
	// A store per session: Dive's tests reuse ids ("s1") in many tests.
	dir, err := os.MkdirTemp(fileBackendDir, "s-")
	if err != nil {
		panic(err)
	}
	store, err := session.NewFileStore(dir)
	if err != nil {
		panic(err)
	}
	s, err := store.Open(context.Background(), id)
	if err != nil {
		panic(err)
	}
	return s
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fileBackendDir != "" {
		os.RemoveAll(fileBackendDir)
	}
	os.Exit(code)
}

// diveTests lists the tests of session_dive_test.go.
func diveTests(t *testing.T) []string {
	src, err := os.ReadFile("session_dive_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`).FindAllSubmatch(src, -1) {
		names = append(names, string(m[1]))
	}
	return names
}

// TestDiveSuiteOnFileStore runs Dive's tests with their in-memory
// sessions on a FileStore (in a child process of this test binary).
func TestDiveSuiteOnFileStore(t *testing.T) {
	if os.Getenv(diveBackendEnv) != "" {
		t.Skip("the child itself")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	names := diveTests(t)
	if len(names) < 40 {
		t.Fatalf("found %d of Dive's tests; the pattern no longer matches the file", len(names))
	}
	args := []string{"-test.run", "^(" + strings.Join(names, "|") + ")$", "-test.count", "1"}
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), diveBackendEnv+"=file")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("Dive's tests on a FileStore: %v\n%s", err, out)
	}
	if testing.Verbose() {
		fmt.Printf("%s", out)
	}
}
