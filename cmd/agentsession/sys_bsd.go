//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"os"
	"runtime"
	"syscall"
)

func fdatasync(f *os.File) error { return f.Sync() }

// currentRSS returns this process's peak resident memory so far, in
// bytes, for both: these systems do not tell the current size cheaply,
// so bench measures how much the peak grew.
func currentRSS() (rss, peak uint64, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, false
	}
	peak = uint64(ru.Maxrss)
	if runtime.GOOS != "darwin" {
		peak *= 1024 // KiB elsewhere, bytes on macOS
	}
	return peak, peak, peak != 0
}
