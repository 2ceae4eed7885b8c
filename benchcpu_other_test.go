//go:build !unix

package session_test

import "time"

// cpuNow: not known here.
func cpuNow() (time.Duration, bool) { return 0, false }
