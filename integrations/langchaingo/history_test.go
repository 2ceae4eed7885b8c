package langchaingo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/integrations/langchaingo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/memory"
	"github.com/tmc/langchaingo/schema"
)

var conversation = []llms.ChatMessage{
	llms.SystemChatMessage{Content: "You are terse."},
	llms.HumanChatMessage{Content: "What's in src?"},
	llms.AIChatMessage{ToolCalls: []llms.ToolCall{call("ls1", "ls", `{"path":"src"}`)}},
	llms.ToolChatMessage{ID: "ls1", Content: "main.go"},
	llms.AIChatMessage{Content: "main.go"},
}

// TestReopen closes the history and the store, opens them again as a new
// process would, and finds the history, to which it goes on adding.
func TestReopen(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		h, err := langchaingo.New(ctx, e.store, "reopen")
		require.NoError(t, err)
		for _, m := range conversation {
			require.NoError(t, h.AddMessage(ctx, m))
		}
		require.NoError(t, h.Close())
		_, err = h.Messages(ctx)
		require.ErrorIs(t, err, session.ErrClosed)
		require.ErrorIs(t, h.AddUserMessage(ctx, "late"), session.ErrClosed)

		e.reopen()
		h = e.history("reopen")
		assert.Equal(t, conversation, messagesOf(t, h))
		require.NoError(t, h.AddUserMessage(ctx, "thanks"))
		require.NoError(t, h.Close())

		e.reopen()
		h = e.history("reopen")
		assert.Equal(t, append(conversation[:len(conversation):len(conversation)], llms.HumanChatMessage{Content: "thanks"}), messagesOf(t, h))
	})
}

// TestReopenWithMemory runs a langchaingo memory over a history, and a
// second memory, after a reopen, over the same session.
func TestReopenWithMemory(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		h, err := langchaingo.New(ctx, e.store, "memory")
		require.NoError(t, err)
		m := memory.NewConversationBuffer(memory.WithChatHistory(h))
		require.NoError(t, m.SaveContext(ctx, map[string]any{"input": "hi"}, map[string]any{"output": "hello"}))
		require.NoError(t, h.Close())

		e.reopen()
		m = memory.NewConversationBuffer(memory.WithChatHistory(e.history("memory")))
		vars, err := m.LoadMemoryVariables(ctx, nil)
		require.NoError(t, err)
		assert.Equal(t, "Human: hi\nAI: hello", vars["history"])
	})
}

// TestClearKeepsTheOldBranch clears, then restores, the history: nothing
// was deleted, and a reopen finds what the leaf was moved to.
func TestClearKeepsTheOldBranch(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		h := e.history("clear")
		for _, m := range conversation {
			require.NoError(t, h.AddMessage(ctx, m))
		}
		s := h.Session()
		oldLeaf, before := s.LeafID(), s.Len()

		require.NoError(t, h.Clear(ctx))
		assert.Empty(t, messagesOf(t, h))
		assert.NotNil(t, messagesOf(t, h))
		assert.Equal(t, "", s.LeafID())
		assert.Greater(t, s.Len(), before, "Clear appends a leaf move, and deletes nothing")
		require.NoError(t, h.Clear(ctx), "clearing an empty history")

		// The old history is a branch of the tree: it can be read, and restored.
		var ends []string
		for _, l := range s.Leaves() {
			ends = append(ends, l.ID())
		}
		assert.Contains(t, ends, oldLeaf)
		c, err := s.ContextAt(oldLeaf)
		require.NoError(t, err)
		assert.Len(t, c.Messages, len(conversation))

		require.NoError(t, h.AddUserMessage(ctx, "a new start"))
		assert.Equal(t, []llms.ChatMessage{llms.HumanChatMessage{Content: "a new start"}}, messagesOf(t, h))
		require.NoError(t, h.Close())

		e.reopen()
		h = e.history("clear")
		assert.Equal(t, []llms.ChatMessage{llms.HumanChatMessage{Content: "a new start"}}, messagesOf(t, h))
		require.NoError(t, h.Session().Branch(ctx, oldLeaf))
		assert.Equal(t, conversation, messagesOf(t, h), "restored")
		require.NoError(t, h.Close())

		e.reopen()
		assert.Equal(t, conversation, messagesOf(t, e.history("clear")), "the restore persists")
	})
}

// TestClearThenReopen finds an empty history after a reopen.
func TestClearThenReopen(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		h := e.history("cleared")
		require.NoError(t, h.SetMessages(ctx, conversation))
		require.NoError(t, h.Clear(ctx))
		require.NoError(t, h.Close())
		e.reopen()
		h = e.history("cleared")
		assert.Equal(t, []llms.ChatMessage{}, messagesOf(t, h))
		assert.Len(t, h.Session().Leaves(), 1, "the conversation, off the path")
	})
}

// TestSetMessagesKeepsTheOldBranch replaces the history twice: each
// earlier one stays in the tree, and the last one is what a reopen finds.
func TestSetMessagesKeepsTheOldBranch(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		h := e.history("set")
		for _, m := range conversation {
			require.NoError(t, h.AddMessage(ctx, m))
		}
		s := h.Session()
		first := s.LeafID()

		second := []llms.ChatMessage{llms.HumanChatMessage{Content: "second"}, llms.AIChatMessage{Content: "two"}}
		require.NoError(t, h.SetMessages(ctx, second))
		assert.Equal(t, second, messagesOf(t, h))
		secondLeaf := s.LeafID()
		path, err := s.PathTo(secondLeaf)
		require.NoError(t, err)
		assert.Len(t, path, 2, "a new branch from the root")

		third := []llms.ChatMessage{llms.HumanChatMessage{Content: "third"}}
		require.NoError(t, h.SetMessages(ctx, third))
		require.NoError(t, h.AddAIMessage(ctx, "three"))
		third = append(third, llms.AIChatMessage{Content: "three"})
		assert.Equal(t, third, messagesOf(t, h))

		var ends []string
		for _, l := range s.Leaves() {
			ends = append(ends, l.ID())
		}
		assert.Subset(t, ends, []string{first, secondLeaf})
		for id, want := range map[string][]llms.ChatMessage{first: conversation, secondLeaf: second} {
			require.NoError(t, s.Branch(ctx, id))
			assert.Equal(t, want, messagesOf(t, h))
		}
		require.NoError(t, h.SetMessages(ctx, third[:1]))
		require.NoError(t, h.AddAIMessage(ctx, "three"))
		require.NoError(t, h.Close())

		e.reopen()
		h = e.history("set")
		assert.Equal(t, third, messagesOf(t, h))
		assert.Len(t, h.Session().Roots(), 4, "the first history and three SetMessages, each from the root")
	})
}

// TestSetMessagesRefused leaves the history as it was when a message
// cannot be stored.
func TestSetMessagesRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := langchaingo.New(ctx, session.NewMemoryStore(), "refused")
	require.NoError(t, err)
	defer h.Close()
	require.NoError(t, h.SetMessages(ctx, conversation))
	require.Error(t, h.SetMessages(ctx, []llms.ChatMessage{llms.HumanChatMessage{Content: "ok"}, nil}))
	require.Error(t, h.AddMessage(ctx, nil))
	require.Error(t, h.AddMessage(ctx, (*llms.HumanChatMessage)(nil)))
	assert.Equal(t, conversation, messagesOf(t, h))

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err = h.SetMessages(cancelled, []llms.ChatMessage{llms.HumanChatMessage{Content: "never"}})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, conversation, messagesOf(t, h))
	_, err = h.Messages(cancelled)
	require.ErrorIs(t, err, context.Canceled)
}

// failingStore refuses to append messages (leaf moves go through) while
// fail is set.
type failingStore struct {
	session.Store
	fail bool
}

var errRefused = errors.New("refused")

func (f *failingStore) Append(ctx context.Context, id string, opts session.AppendOptions, entries ...session.Entry) error {
	for _, e := range entries {
		if f.fail && e.Type() == session.TypeMessage {
			return errRefused
		}
	}
	return f.Store.Append(ctx, id, opts, entries...)
}

// TestSetMessagesWriteFails moves the leaf back where it was when the
// store refuses the new messages, after the leaf moved to the root.
func TestSetMessagesWriteFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := &failingStore{Store: session.NewMemoryStore()}
	h, err := langchaingo.New(ctx, store, "fails")
	require.NoError(t, err)
	defer h.Close()
	require.NoError(t, h.SetMessages(ctx, conversation))

	store.fail = true
	err = h.SetMessages(ctx, []llms.ChatMessage{llms.HumanChatMessage{Content: "never"}})
	require.ErrorIs(t, err, errRefused)
	assert.Equal(t, conversation, messagesOf(t, h))
	require.ErrorIs(t, h.AddUserMessage(ctx, "refused too"), errRefused)
	assert.Equal(t, conversation, messagesOf(t, h))

	store.fail = false
	require.NoError(t, h.AddUserMessage(ctx, "accepted"))
	assert.Equal(t, append(conversation[:len(conversation):len(conversation)], llms.HumanChatMessage{Content: "accepted"}), messagesOf(t, h))

	reopened, err := langchaingo.New(ctx, store, "fails")
	require.NoError(t, err)
	defer reopened.Close()
	assert.Equal(t, messagesOf(t, h), messagesOf(t, reopened))
}

// TestFromSession follows a session that its owner also writes to.
func TestFromSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := session.New()
	h := langchaingo.FromSession(s)
	require.NoError(t, h.AddUserMessage(ctx, "from langchaingo"))
	assert.Len(t, messagesOf(t, h), 1)

	_, err := s.Append(ctx, session.AssistantText("from the host"))
	require.NoError(t, err)
	require.NoError(t, h.AddUserMessage(ctx, "and again"))
	assert.Equal(t, []llms.ChatMessage{
		llms.HumanChatMessage{Content: "from langchaingo"},
		llms.AIChatMessage{Content: "from the host"},
		llms.HumanChatMessage{Content: "and again"},
	}, messagesOf(t, h))

	// A call the host made is awaited: its result pairs.
	_, err = s.Append(ctx, session.Assistant(session.ToolCall("h1", "host_tool", nil)))
	require.NoError(t, err)
	require.NoError(t, h.AddMessage(ctx, llms.ToolChatMessage{ID: "h1", Content: "done"}))
	last := s.Context().Messages[4]
	assert.Equal(t, session.RoleToolResult, last.Role)
	assert.Equal(t, "host_tool", last.ToolName)

	require.NoError(t, h.Close())
	_, err = s.Append(ctx, session.UserText("still open"))
	require.NoError(t, err, "the history's Close leaves the caller's session open")
	assert.Equal(t, s.ID(), h.ID())
}

// TestNew covers New's arguments.
func TestNew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := langchaingo.New(ctx, nil, "x")
	require.Error(t, err)
	store := session.NewMemoryStore()
	_, err = langchaingo.New(ctx, store, "bad\x00id")
	require.ErrorIs(t, err, session.ErrInvalidID)

	h, err := langchaingo.New(ctx, store, "", langchaingo.WithCreateOptions(session.CreateOptions{ID: "ignored", Title: "support", Cwd: "/srv"}))
	require.NoError(t, err)
	assert.NotEmpty(t, h.ID())
	assert.NotEqual(t, "ignored", h.ID())
	assert.Equal(t, "support", h.Session().Title())
	assert.Equal(t, "/srv", h.Session().Header().Cwd)
	require.NoError(t, h.AddUserMessage(ctx, "hi"))
	require.NoError(t, h.Flush(ctx))
	require.NoError(t, h.Close())

	again, err := langchaingo.New(ctx, store, h.ID(), langchaingo.WithCreateOptions(session.CreateOptions{Title: "not applied"}))
	require.NoError(t, err)
	defer again.Close()
	assert.Equal(t, "support", again.Session().Title(), "options apply to a creation only")
	assert.Len(t, messagesOf(t, again), 1)

	var _ schema.ChatMessageHistory = again
}

// TestMessagesAreTheCallers edits what Messages returned.
func TestMessagesAreTheCallers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := langchaingo.New(ctx, session.NewMemoryStore(), "copy")
	require.NoError(t, err)
	defer h.Close()
	require.NoError(t, h.AddMessage(ctx, llms.AIChatMessage{
		FunctionCall: &llms.FunctionCall{Name: "f", Arguments: "{}"},
		ToolCalls:    []llms.ToolCall{call("c", "t", "{}")},
	}))
	got := messagesOf(t, h)
	ai := got[0].(llms.AIChatMessage)
	ai.ToolCalls[0].ID = "changed"
	ai.ToolCalls[0].FunctionCall.Name = "changed"
	ai.FunctionCall.Name = "changed"
	got[0] = llms.HumanChatMessage{}
	again := messagesOf(t, h)[0].(llms.AIChatMessage)
	assert.Equal(t, "c", again.ToolCalls[0].ID)
	assert.Equal(t, "t", again.ToolCalls[0].FunctionCall.Name)
	assert.Equal(t, "f", again.FunctionCall.Name)
}

// TestConcurrent adds from several goroutines, to one history and to
// two histories on one session; nothing is lost, and the histories
// agree with a reopen.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		h := e.history("concurrent")
		const writers, each = 4, 10
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					if err := h.AddUserMessage(ctx, fmt.Sprintf("%d-%d", w, i)); err != nil {
						t.Error(err)
					}
					if _, err := h.Messages(ctx); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		got := messagesOf(t, h)
		assert.Len(t, got, writers*each)
		require.NoError(t, h.Close())
		e.reopen()
		assert.Equal(t, got, messagesOf(t, e.history("concurrent")))
	})
}

// TestCompactedSession reads a history whose session was compacted:
// the summary comes first, as a generic message.
func TestCompactedSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := langchaingo.New(ctx, session.NewMemoryStore(), "compacted")
	require.NoError(t, err)
	defer h.Close()
	for i := range 6 {
		require.NoError(t, h.AddUserMessage(ctx, fmt.Sprintf("question %d", i)))
		require.NoError(t, h.AddAIMessage(ctx, fmt.Sprintf("answer %d", i)))
	}
	before := messagesOf(t, h)
	_, err = h.Session().Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{KeepRecentTokens: 1})
	if errors.Is(err, session.ErrNothingToCompact) {
		t.Skip("nothing to compact")
	}
	require.NoError(t, err)
	after := messagesOf(t, h)
	require.NotEmpty(t, after)
	g, ok := after[0].(llms.GenericChatMessage)
	require.True(t, ok, "%#v", after[0])
	assert.Equal(t, session.RoleCompactionSummary, g.Role)
	assert.Less(t, len(after), len(before)+1)
	assert.Equal(t, before[len(before)-1], after[len(after)-1])
}

// TestAddLeavesTheCallersMessage adds a message whose strings are not
// valid UTF-8: what is stored is fixed, what the caller holds is not.
func TestAddLeavesTheCallersMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := langchaingo.New(ctx, session.NewMemoryStore(), "callers")
	require.NoError(t, err)
	defer h.Close()
	m := llms.AIChatMessage{ToolCalls: []llms.ToolCall{call("ok", "f", "{}"), call("bad\xff", "f", "{}")}}
	require.NoError(t, h.AddMessage(ctx, m))
	assert.Equal(t, "bad\xff", m.ToolCalls[1].ID)
	assert.Equal(t, "bad\uFFFD", messagesOf(t, h)[0].(llms.AIChatMessage).ToolCalls[1].ID)
}
