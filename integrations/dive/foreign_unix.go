//go:build unix

package session

import "syscall"

// oNonblock opens a FIFO put where a file was listed without waiting for
// a writer (its mode then refuses it).
const oNonblock = syscall.O_NONBLOCK

// oNofollow refuses a link swapped in at a file's name.
const oNofollow = syscall.O_NOFOLLOW
