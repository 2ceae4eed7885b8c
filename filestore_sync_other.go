//go:build !linux && !windows

package session

import "os"

// fdatasync on the systems where the store does not call one: File.Sync,
// which makes the metadata durable too.

func fdatasync(f *os.File) error { return f.Sync() }

// syncDirFile makes the entries of the open directory d durable.
func syncDirFile(d *os.File) error { return d.Sync() }
