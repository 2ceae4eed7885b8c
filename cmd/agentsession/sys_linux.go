package main

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// currentRSS returns this process's resident memory and its peak so far
// (which, unlike the rusage of a child, does not count what the parent
// held when it started the child), in bytes.
func currentRSS() (rss, peak uint64, ok bool) {
	rss, peak = procStatus("VmRSS:"), procStatus("VmHWM:")
	return rss, peak, peak != 0
}

func procStatus(field string) uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		if rest, ok := bytes.CutPrefix(line, []byte(field)); ok {
			kb, _ := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
