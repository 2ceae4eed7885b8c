//go:build !unix

package session

// oNonblock is 0 where there are no FIFOs to wait on.
const oNonblock = 0

// oNofollow is 0 where the open has no such flag (the check of what was
// opened against what was looked at still holds).
const oNofollow = 0
