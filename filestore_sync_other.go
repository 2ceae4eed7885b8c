//go:build !linux

package session

import "os"

// fdatasync on the systems where the store does not call one: File.Sync,
// which makes the metadata durable too.

func fdatasync(f *os.File) error { return f.Sync() }
