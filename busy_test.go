package session_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// busy runs the package's tests and benchmarks beside a CPU hog, as on
// a machine where another program keeps a core busy: `go test -run '^$'
// -bench X . -args -busy`. The hog is another process (this test binary
// again, spinning on one core), so that it competes for the machine's
// cores, not for this process's Go scheduler.
var busy = flag.Bool("busy", false, "run beside a CPU hog: a child process spinning on one core")

// hogEnv marks the hog child.
const hogEnv = "AGENTSESSION_TEST_HOG"

func TestMain(m *testing.M) {
	if os.Getenv(hogEnv) == "1" {
		spin()
	}
	flag.Parse()
	var hog *exec.Cmd
	if *busy {
		hog = exec.Command(os.Args[0], "-test.run=^TestBusyHog$") // a name to find it by
		hog.Env = append(os.Environ(), hogEnv+"=1")
		if err := hog.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "-busy: the CPU hog did not start:", err)
			os.Exit(2)
		}
	}
	code := m.Run()
	if hog != nil {
		_ = hog.Process.Kill()
		_ = hog.Wait()
	}
	os.Exit(code)
}

// spin keeps one core busy until the process is killed, or its parent
// is gone (a test binary that timed out does not kill it).
func spin() {
	runtime.GOMAXPROCS(1)
	parent := os.Getppid()
	for n := uint64(0); ; n++ {
		if n&(1<<26-1) == 0 && os.Getppid() != parent {
			os.Exit(0)
		}
	}
}
