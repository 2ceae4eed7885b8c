package storetest_test

import (
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/storetest"
)

// bare is a Store with none of the optional abilities: only Store's
// methods of the MemoryStore it hides are visible.
type bare struct{ session.Store }

// The suite passes on a store with no optional ability, skipping (with
// a message that names the ability) what it cannot check: the floor a
// new backend starts from.
func TestBareStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) session.Store { return bare{session.NewMemoryStore()} })
}
