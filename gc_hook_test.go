package session

// SetCollectHook sets the hook a collection runs once it has marked what
// the sessions refer to, before it lists the blobs (stage "marked"), for
// the tests of package session_test; the function returned unsets it.
func SetCollectHook(f func(stage string)) (unset func()) {
	collectHook = f
	return func() { collectHook = nil }
}
