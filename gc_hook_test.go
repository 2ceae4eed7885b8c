package session

// SetCollectHook sets the hook a collection runs once it has marked what
// the sessions refer to, before it lists the blobs (stage "marked"), for
// the tests of package session_test; the function returned unsets it.
func SetCollectHook(f func(stage string)) (unset func()) {
	collectHook = f
	return func() { collectHook = nil }
}

// PinLocks tells that this system keeps the pins of other BlobDirs (see
// blob_pin.go): the tests of pins across stores and processes skip
// elsewhere.
const PinLocks = pinLocks
