//go:build !linux

package main

import "os"

func fdatasync(f *os.File) error { return f.Sync() }

// maxRSS and currentRSS are only measured on Linux; elsewhere bench
// reports no peak.
func maxRSS(ps *os.ProcessState) uint64 { return 0 }
func currentRSS() uint64                { return 0 }
