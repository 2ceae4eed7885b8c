//go:build !unix

package importer

// oNonblock is 0 where there are no FIFOs to wait on.
const oNonblock = 0
