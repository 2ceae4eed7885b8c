//go:build windows

package session

import "os"

// Syncs on Windows: FlushFileBuffers (File.Sync) for a file's data and
// metadata. A directory cannot be flushed through a handle a program may
// open on it (FlushFileBuffers wants write access, which a directory
// handle does not get), so the entries of a directory are left to the
// file system: NTFS logs changes to its directories in its journal and
// commits them within seconds. A power loss in that window may lose a new
// file's name, or a rename, that a call had returned: docs/files-and-crashes.md says so.

func fdatasync(f *os.File) error { return f.Sync() }

func syncDirFile(d *os.File) error { return nil }
