package storetest_test

import (
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/storetest"
)

// TestMemoryStore runs the suite here too, so that the package's own
// tests show it working (every store of the module runs it in its own
// package as well).
func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) session.Store { return session.NewMemoryStore() })
}
