//go:build !unix

package workspace

// mkfifo: no named pipes in the file system here; the tests that use
// one check without it.
func mkfifo(string) error { return nil }
