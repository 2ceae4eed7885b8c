//go:build unix

package workspace

import "syscall"

// mkfifo makes a named pipe, a path a snapshot reports and does not
// record.
func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }
