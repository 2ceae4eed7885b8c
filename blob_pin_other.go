//go:build !linux

package session

import "os"

// Elsewhere than on Linux there are no open file description locks:
// PutBlob pins nothing for other writers' collections, which the grace
// protects from them; PinBlobs still pins for the BlobDir's own (see
// blob_pin.go).

// pinLocks tells that this system keeps pins.
const pinLocks = false

func pinByte(dir *os.File, off int64, on bool) error { return nil }

func pinHeld(dir *os.File, off int64) (bool, error) { return false, nil }
