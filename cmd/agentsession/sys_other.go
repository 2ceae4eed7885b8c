//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package main

import "os"

func fdatasync(f *os.File) error { return f.Sync() }

// currentRSS is not measured here (Windows and the rest): bench reports
// no peak.
func currentRSS() (rss, peak uint64, ok bool) { return 0, 0, false }
