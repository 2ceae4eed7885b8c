//go:build unix

package importer

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// mkfifo makes a FIFO at path, where a reader that opened it would wait
// for a writer.
func mkfifo(t testing.TB, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}
