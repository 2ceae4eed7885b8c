//go:build !unix

package session

// oNonblock is 0 where there are no FIFOs to wait on.
const oNonblock = 0
