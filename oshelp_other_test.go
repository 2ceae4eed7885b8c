//go:build !unix

package session_test

import (
	"errors"
	"os"
	"testing"
)

// Where there is no umask or file size limit, the tests that need one
// are skipped (oshelp_unix_test.go has them).

func withUmask(t *testing.T, mask int) { t.Skip("no umask on this system") }

func canLimitFileSize(t *testing.T) { t.Skip("no file size limit on this system") }

func setFileSizeLimit(n int64) error { return errors.ErrUnsupported }

func signalIgnoreXFSZ() {}

// mkfifo makes a directory where named pipes are not: what the caller
// checks (that no file is read there) holds for it too.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
}
