//go:build unix

package session_test

import (
	"os/signal"
	"syscall"
	"testing"
)

// What the tests need of the OS, where Unix has it: oshelp_other_test.go
// skips the tests that need it elsewhere.

// withUmask sets the process's umask for the rest of the test.
func withUmask(t *testing.T, mask int) {
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

// canLimitFileSize skips the test where setFileSizeLimit cannot work.
func canLimitFileSize(*testing.T) {}

// setFileSizeLimit makes writes past n bytes fail (EFBIG), for this
// process.
func setFileSizeLimit(n int64) error {
	var r syscall.Rlimit
	setRlim(&r.Cur, n)
	setRlim(&r.Max, n)
	return syscall.Setrlimit(syscall.RLIMIT_FSIZE, &r)
}

// setRlim sets a field of syscall.Rlimit, uint64 on most systems and
// int64 on some (FreeBSD).
func setRlim[T int64 | uint64](p *T, n int64) { *p = T(n) }

// signalIgnoreXFSZ keeps a write past the file size limit from killing
// the process: it fails with EFBIG instead.
func signalIgnoreXFSZ() { signal.Ignore(syscall.SIGXFSZ) }

// mkfifo makes a named pipe at path.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}
