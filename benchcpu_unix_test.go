//go:build unix

package session_test

import (
	"syscall"
	"time"
)

// cpuNow returns the processor time the process has used so far.
func cpuNow() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
