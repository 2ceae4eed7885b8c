// Package longtest is the switch for the test suites that take minutes
// or spawn many processes: crash children killed hundreds of times,
// every crash state of a workload, decompression bombs in child
// processes, timed linearity checks and the browser. `go test ./...`
// skips them so that it passes in a few minutes on a busy machine;
// AGENTSESSION_LONG=1 runs them, and .ci/run always sets it.
package longtest

import (
	"os"
	"testing"
)

// Env is the environment variable that turns the long suites on.
const Env = "AGENTSESSION_LONG"

// Enabled reports whether the long suites run: Env is set to anything
// but "" or "0", and the run is not -short.
func Enabled() bool {
	v := os.Getenv(Env)
	return v != "" && v != "0" && !testing.Short()
}

// Skip skips t unless the long suites run, saying what t does and how
// to run it.
func Skip(t testing.TB, what string) {
	t.Helper()
	if !Enabled() {
		t.Skipf("%s: a long suite, run with %s=1 (.ci/run does)", what, Env)
	}
}
