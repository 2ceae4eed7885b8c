// The tests in this file are copied from langchaingo v0.1.14
// (github.com/tmc/langchaingo), from the tests that exercise a
// schema.ChatMessageHistory:
//
//	memory/chat_test.go                   TestChatMessageHistory
//	memory/buffer_test.go                 TestBufferMemory, TestBufferMemoryReturnMessage,
//	                                      TestBufferMemoryWithPreLoadedHistory
//	memory/window_buffer_test.go          TestWindowBufferMemory, TestWindowBufferMemoryReturnMessage,
//	                                      TestWindowBufferMemoryWithPreLoadedHistory
//	memory/sqlite3/sqlite3_history_test.go  TestSqliteChatMessageHistory
//	memory/mongo/mongo_chat_history_test.go TestMongoDBChatMessageHistory
//
// Only the constructors of the histories were changed, to make this
// package's ChatMessageHistory on a FileStore in t.TempDir() and on a
// MemoryStore (forEachStore; e.history and e.historyWith stand for
// NewChatMessageHistory and its WithPreviousMessages option, and for
// the sqlite3 and mongo constructors), with package qualifiers where the
// tests name langchaingo's memory package from outside it; the
// constructor-validation lines of the mongo test, which test mongo's
// options, are left out. Not copied: TestBufferMemoryWithChatHistoryOption
// (it runs a test double of its own, not a store), the token buffer tests
// (they need a model) and TestConversationWindowBuffer_cutMessages (it
// tests an unexported function).
//
// langchaingo is under the MIT License:
//
// The MIT License
//
// Copyright (c) Travis Cline <travis.cline@gmail.com>
//
// Permission is hereby granted, free of charge, to any person obtaining a copy
// of this software and associated documentation files (the "Software"), to deal
// in the Software without restriction, including without limitation the rights
// to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
// copies of the Software, and to permit persons to whom the Software is
// furnished to do so, subject to the following conditions:
//
// The above copyright notice and this permission notice shall be included in
// all copies or substantial portions of the Software.
//
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
// IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
// FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
// AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
// LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
// OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN
// THE SOFTWARE.

package langchaingo_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/memory"
)

// memory/chat_test.go

func TestChatMessageHistory(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()

		h := e.history("chat")
		err := h.AddAIMessage(ctx, "foo")
		require.NoError(t, err)
		err = h.AddUserMessage(ctx, "bar")
		require.NoError(t, err)

		messages, err := h.Messages(ctx)
		require.NoError(t, err)

		assert.Equal(t, []llms.ChatMessage{
			llms.AIChatMessage{Content: "foo"},
			llms.HumanChatMessage{Content: "bar"},
		}, messages)

		h = e.historyWith("chat-previous",
			[]llms.ChatMessage{
				llms.AIChatMessage{Content: "foo"},
				llms.SystemChatMessage{Content: "bar"},
			},
		)
		err = h.AddUserMessage(ctx, "zoo")
		require.NoError(t, err)

		messages, err = h.Messages(ctx)
		require.NoError(t, err)

		assert.Equal(t, []llms.ChatMessage{
			llms.AIChatMessage{Content: "foo"},
			llms.SystemChatMessage{Content: "bar"},
			llms.HumanChatMessage{Content: "zoo"},
		}, messages)
	})
}

// memory/buffer_test.go

func TestBufferMemory(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()

		m := memory.NewConversationBuffer(memory.WithChatHistory(e.history("buffer")))
		result1, err := m.LoadMemoryVariables(ctx, map[string]any{})
		require.NoError(t, err)
		expected1 := map[string]any{"history": ""}
		assert.Equal(t, expected1, result1)

		err = m.SaveContext(ctx, map[string]any{"foo": "bar"}, map[string]any{"bar": "foo"})
		require.NoError(t, err)

		result2, err := m.LoadMemoryVariables(ctx, map[string]any{})
		require.NoError(t, err)

		expected2 := map[string]any{"history": "Human: bar\nAI: foo"}
		assert.Equal(t, expected2, result2)
	})
}

func TestBufferMemoryReturnMessage(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()

		m := memory.NewConversationBuffer(memory.WithChatHistory(e.history("buffer")))
		m.ReturnMessages = true
		expected1 := map[string]any{"history": []llms.ChatMessage{}}
		result1, err := m.LoadMemoryVariables(ctx, map[string]any{})
		require.NoError(t, err)
		assert.Equal(t, expected1, result1)

		err = m.SaveContext(ctx, map[string]any{"foo": "bar"}, map[string]any{"bar": "foo"})
		require.NoError(t, err)

		result2, err := m.LoadMemoryVariables(ctx, map[string]any{})
		require.NoError(t, err)

		expectedChatHistory := memory.NewChatMessageHistory(
			memory.WithPreviousMessages([]llms.ChatMessage{
				llms.HumanChatMessage{Content: "bar"},
				llms.AIChatMessage{Content: "foo"},
			}),
		)

		messages, err := expectedChatHistory.Messages(ctx)
		require.NoError(t, err)
		expected2 := map[string]any{"history": messages}
		assert.Equal(t, expected2, result2)
	})
}

func TestBufferMemoryWithPreLoadedHistory(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()

		m := memory.NewConversationBuffer(memory.WithChatHistory(e.historyWith("buffer",
			[]llms.ChatMessage{
				llms.HumanChatMessage{Content: "bar"},
				llms.AIChatMessage{Content: "foo"},
			},
		)))

		result, err := m.LoadMemoryVariables(ctx, map[string]any{})
		require.NoError(t, err)
		expected := map[string]any{"history": "Human: bar\nAI: foo"}
		assert.Equal(t, expected, result)
	})
}

// memory/window_buffer_test.go

func TestWindowBufferMemory(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()

		m := memory.NewConversationWindowBuffer(2, memory.WithChatHistory(e.history("window")))

		result1, err := m.LoadMemoryVariables(ctx, map[string]any{})
		require.NoError(t, err)
		expected1 := map[string]any{"history": ""}
		assert.Equal(t, expected1, result1)

		err = m.SaveContext(ctx, map[string]any{"foo": "bar1"}, map[string]any{"bar": "foo1"})
		require.NoError(t, err)

		result2, err := m.LoadMemoryVariables(ctx, map[string]any{})
		require.NoError(t, err)

		expected2 := map[string]any{"history": "Human: bar1\nAI: foo1"}
		assert.Equal(t, expected2, result2)

		err = m.SaveContext(ctx, map[string]any{"foo": "bar2"}, map[string]any{"bar": "foo2"})
		require.NoError(t, err)

		result3, err := m.LoadMemoryVariables(ctx, map[string]any{})
		require.NoError(t, err)

		expected3 := map[string]any{"history": "Human: bar1\nAI: foo1\nHuman: bar2\nAI: foo2"}
		assert.Equal(t, expected3, result3)

		err = m.SaveContext(ctx, map[string]any{"foo": "bar3"}, map[string]any{"bar": "foo3"})
		require.NoError(t, err)

		result4, err := m.LoadMemoryVariables(ctx, map[string]any{})
		require.NoError(t, err)

		expected4 := map[string]any{"history": "Human: bar2\nAI: foo2\nHuman: bar3\nAI: foo3"}
		assert.Equal(t, expected4, result4)
	})
}

func TestWindowBufferMemoryReturnMessage(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		m := memory.NewConversationWindowBuffer(2, memory.WithReturnMessages(true), memory.WithChatHistory(e.history("window")))

		err := m.SaveContext(ctx, map[string]any{"foo": "bar1"}, map[string]any{"bar": "foo1"})
		require.NoError(t, err)

		err = m.SaveContext(ctx, map[string]any{"foo": "bar2"}, map[string]any{"bar": "foo2"})
		require.NoError(t, err)

		err = m.SaveContext(ctx, map[string]any{"foo": "bar3"}, map[string]any{"bar": "foo3"})
		require.NoError(t, err)

		result, err := m.LoadMemoryVariables(ctx, map[string]any{})
		require.NoError(t, err)

		expectedChatHistory := memory.NewChatMessageHistory(
			memory.WithPreviousMessages([]llms.ChatMessage{
				llms.HumanChatMessage{Content: "bar2"},
				llms.AIChatMessage{Content: "foo2"},
				llms.HumanChatMessage{Content: "bar3"},
				llms.AIChatMessage{Content: "foo3"},
			}),
		)

		messages, err := expectedChatHistory.Messages(ctx)
		require.NoError(t, err)
		expected := map[string]any{"history": messages}
		assert.Equal(t, expected, result)
	})
}

func TestWindowBufferMemoryWithPreLoadedHistory(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()

		m := memory.NewConversationWindowBuffer(2, memory.WithChatHistory(e.historyWith("window",
			[]llms.ChatMessage{
				llms.HumanChatMessage{Content: "bar1"},
				llms.AIChatMessage{Content: "foo1"},
				llms.HumanChatMessage{Content: "bar2"},
				llms.AIChatMessage{Content: "foo2"},
				llms.HumanChatMessage{Content: "bar3"},
				llms.AIChatMessage{Content: "foo3"},
			},
		)))

		result, err := m.LoadMemoryVariables(ctx, map[string]any{})
		require.NoError(t, err)
		expected := map[string]any{"history": "Human: bar2\nAI: foo2\nHuman: bar3\nAI: foo3"}
		assert.Equal(t, expected, result)
	})
}

// memory/sqlite3/sqlite3_history_test.go

func TestSqliteChatMessageHistory(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		h := e.history("sqlite3-default")

		err := h.AddAIMessage(ctx, "foo")
		require.NoError(t, err)

		err = h.AddUserMessage(ctx, "bar")
		require.NoError(t, err)

		messages, err := h.Messages(ctx)
		require.NoError(t, err)

		assert.Equal(t, []llms.ChatMessage{
			llms.AIChatMessage{Content: "foo"},
			llms.HumanChatMessage{Content: "bar"},
		}, messages)

		h = e.history("sqlite3-overwrite")

		err = h.SetMessages(ctx,
			[]llms.ChatMessage{
				llms.AIChatMessage{Content: "foo"},
				llms.SystemChatMessage{Content: "bar"},
			})
		require.NoError(t, err)

		err = h.AddUserMessage(ctx, "zoo")
		require.NoError(t, err)

		messages, err = h.Messages(ctx)
		require.NoError(t, err)

		assert.Equal(t, []llms.ChatMessage{
			llms.AIChatMessage{Content: "foo"},
			llms.SystemChatMessage{Content: "bar"},
			llms.HumanChatMessage{Content: "zoo"},
		}, messages)
	})
}

// memory/mongo/mongo_chat_history_test.go

func TestMongoDBChatMessageHistory(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()

		history := e.history("testSessionXX")

		err := history.AddAIMessage(ctx, "Hi")
		require.NoError(t, err)

		err = history.AddUserMessage(ctx, "Hello")
		require.NoError(t, err)

		messages, err := history.Messages(ctx)
		require.NoError(t, err)

		assert.Len(t, messages, 2)
		assert.Equal(t, llms.ChatMessageTypeAI, messages[0].GetType())
		assert.Equal(t, "Hi", messages[0].GetContent())
		assert.Equal(t, llms.ChatMessageTypeHuman, messages[1].GetType())
		assert.Equal(t, "Hello", messages[1].GetContent())
		t.Cleanup(func() {
			if err := history.Clear(context.Background()); err != nil {
				t.Logf("Failed to clear mongo history: %v", err)
			}
		})
	})
}
