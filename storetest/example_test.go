package storetest_test

import (
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/storetest"
)

// A third-party store proves itself with the suite every store of this
// module passes: one call in a test of its own package, with a
// constructor of a new empty store (session.NewMemoryStore stands in for
// yours here).
func ExampleRun() {
	testMyStore := func(t *testing.T) { // func TestMyStore(t *testing.T) in your _test.go file
		storetest.Run(t, func(t *testing.T) session.Store {
			return session.NewMemoryStore() // mystore.Open(t.TempDir()), say
		})
	}
	_ = testMyStore
}
