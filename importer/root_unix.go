//go:build unix

package importer

import "syscall"

// oNonblock opens a FIFO without waiting for a writer.
const oNonblock = syscall.O_NONBLOCK
