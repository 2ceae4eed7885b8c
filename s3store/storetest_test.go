package s3store_test

import (
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/storetest"
)

// TestStoretest runs the conformance suite on the real server, every
// case on a store of its own.
func TestStoretest(t *testing.T) {
	endpoint(t)
	storetest.Run(t, func(t *testing.T) session.Store { return newStore(t) })
}
