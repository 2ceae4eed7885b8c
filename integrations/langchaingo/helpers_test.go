package langchaingo_test

import (
	"context"
	"path/filepath"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/integrations/langchaingo"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
)

// env is a store to test the history on, which can be opened again as a
// new process would open it (a FileStore on the same directory; the same
// MemoryStore, which is all a MemoryStore keeps).
type env struct {
	t     *testing.T
	store session.Store
	dir   string // FileStore: its root
}

// forEachStore runs f on a FileStore in t.TempDir() and on a MemoryStore.
func forEachStore(t *testing.T, f func(t *testing.T, e *env)) {
	t.Helper()
	t.Run("FileStore", func(t *testing.T) {
		e := &env{t: t, dir: filepath.Join(t.TempDir(), "sessions")}
		e.store = e.openFileStore()
		f(t, e)
	})
	t.Run("MemoryStore", func(t *testing.T) {
		f(t, &env{t: t, store: session.NewMemoryStore()})
	})
}

func (e *env) openFileStore() session.Store {
	fs, err := session.OpenFileStore(e.dir, nil)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = fs.Close() })
	return fs
}

// reopen closes the store (a FileStore) and opens it again: what the
// next process would find.
func (e *env) reopen() {
	if e.dir == "" {
		return
	}
	if c, ok := e.store.(interface{ Close() error }); ok {
		require.NoError(e.t, c.Close())
	}
	e.store = e.openFileStore()
}

// history opens (or creates) session id of the store as a history,
// closed when the test ends.
func (e *env) history(id string) *langchaingo.ChatMessageHistory {
	e.t.Helper()
	h, err := langchaingo.New(context.Background(), e.store, id)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = h.Close() })
	return h
}

// historyWith is history with messages set first (the constructor that
// langchaingo's WithPreviousMessages option stands for).
func (e *env) historyWith(id string, previous []llms.ChatMessage) *langchaingo.ChatMessageHistory {
	e.t.Helper()
	h := e.history(id)
	require.NoError(e.t, h.SetMessages(context.Background(), previous))
	return h
}

func messagesOf(t *testing.T, h *langchaingo.ChatMessageHistory) []llms.ChatMessage {
	t.Helper()
	msgs, err := h.Messages(context.Background())
	require.NoError(t, err)
	return msgs
}
