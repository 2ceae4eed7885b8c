package session_test

import (
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) session.Store { return session.NewMemoryStore() })
}
