package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// jsLength is the length of s in UTF-16 code units, as JavaScript has it.
func jsLength(s string) int { return len(utf16.Encode([]rune(s))) }

// TestFileStoreCutsLikePi: strings over the default limit are cut to
// 500,000 UTF-16 code units, notice included, as oh-my-pi cuts them;
// lineCount is counted again; signed blocks stay whole; and all of it
// reads back after a reopen.
func TestFileStoreCutsLikePi(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := session.Create(ctx, openFS(t, root, nil), &session.CreateOptions{Cwd: "/w"})
	require.NoError(t, err)

	big := strings.Repeat("0123456789abcdefghi\n", 30_000)           // 600,000 characters, 30,001 lines
	emoji := strings.Repeat("x", 499_952) + strings.Repeat("😀", 100) // the cut falls inside an emoji
	thinking := strings.Repeat("pondering ", 60_000)
	result := session.ToolResult("c1", "read", big)
	result.Details = json.RawMessage(fmt.Sprintf(`{"path":"big.txt","content":%q,"lineCount":30001}`, big))
	appendAll(t, s,
		session.UserText("read big.txt"),
		session.Assistant(session.Thinking(thinking, "sig"), session.ToolCall("c1", "read", json.RawMessage(`{"path":"big.txt"}`))),
		result,
		session.UserText(emoji),
	)
	r := reopenFS(t, s, root)
	defer r.Close()
	msgs := r.Context().Messages
	require.Len(t, msgs, 4)

	assert.Equal(t, thinking, msgs[1].Content[0].Thinking, "a signed block is kept whole")

	text := msgs[2].Text()
	assert.True(t, session.IsTruncated(text))
	assert.Equal(t, session.DefaultMaxStringChars, jsLength(text))
	assert.Equal(t, big[:session.DefaultMaxStringChars-len(session.TruncationNotice)]+session.TruncationNotice, text)
	var details struct {
		Path      string
		Content   string
		LineCount int
	}
	require.NoError(t, json.Unmarshal(msgs[2].Details, &details))
	assert.Equal(t, text, details.Content)
	assert.Equal(t, strings.Count(details.Content, "\n")+1, details.LineCount)
	assert.Equal(t, 25_000, details.LineCount, "24,997 whole lines and a part, and the notice's two newlines")

	cut := msgs[3].Text()
	assert.True(t, emoji[:499_952]+session.TruncationNotice == cut, "no emoji fits in the last code unit")
	assert.Equal(t, session.DefaultMaxStringChars-1, jsLength(cut))

	data, err := os.ReadFile(sessionFile(t, root))
	require.NoError(t, err)
	assert.NotContains(t, string(data), "[agentsession:", "the notice of earlier versions is not written")
}

// Strings that earlier versions cut, with their own notice, are still
// known as cut.
func TestIsTruncatedOldNotice(t *testing.T) {
	assert.True(t, session.IsTruncated("abc\n\n[agentsession: 1400 characters truncated]"))
	assert.True(t, session.IsTruncated("abc"+session.TruncationNotice))
	assert.False(t, session.IsTruncated("abc"))
}

// ExampleFileStoreOptions_maxStringChars shows a FileStore cutting a
// string over its limit as oh-my-pi does: to the limit, notice included,
// counted in UTF-16 code units.
func ExampleFileStoreOptions_maxStringChars() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sessions")
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "sessions")

	store, _ := session.OpenFileStore(root, &session.FileStoreOptions{MaxStringChars: 60})
	s, _ := session.Create(ctx, store, &session.CreateOptions{Cwd: "/w"})
	s.Append(ctx, session.UserText(strings.Repeat("log line\n", 20)))
	s.Close()
	store.Close()

	store, _ = session.OpenFileStore(root, nil)
	defer store.Close()
	s, _ = session.Open(ctx, store, s.ID())
	text := s.Context().Messages[0].Text()
	fmt.Printf("%q\n", text)
	fmt.Println(len(text), session.IsTruncated(text))
	// Output:
	// "log line\nlog \n\n[Session persistence truncated large content]"
	// 60 true
}

// TestFileStoreTruncationVisible: a cut is never silent: OnTruncate names
// the session, the entry and what was dropped, once the entry is stored;
// RefuseTruncation makes the write fail instead, storing nothing.
func TestFileStoreTruncationVisible(t *testing.T) {
	ctx := context.Background()
	big := strings.Repeat("x", 2_000_000)
	t.Run("reported", func(t *testing.T) {
		var got []session.Truncation
		var mu sync.Mutex
		store := openFS(t, t.TempDir(), &session.FileStoreOptions{OnTruncate: func(tr session.Truncation) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, tr)
		}})
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: "big"})
		require.NoError(t, err)
		es := appendAll(t, s, session.UserText("small"), session.UserText(big))
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, got, 1)
		assert.Equal(t, session.Truncation{Session: "big", EntryID: es[1].ID(), Strings: 1,
			Dropped: 2_000_000 - session.DefaultMaxStringChars + jsLength(session.TruncationNotice)}, got[0])
	})
	t.Run("refused", func(t *testing.T) {
		store := openFS(t, t.TempDir(), &session.FileStoreOptions{RefuseTruncation: true})
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: "big"})
		require.NoError(t, err)
		err = s.SaveTurn(ctx, []*session.Message{session.UserText("q"), session.AssistantText(big)}, nil)
		require.ErrorIs(t, err, session.ErrTooLarge)
		var te *session.TruncationError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, "big", te.Session)
		assert.Equal(t, session.DefaultMaxStringChars, te.Limit)
		assert.Equal(t, 0, s.Len(), "nothing stored")
		l, err := store.Load(ctx, "big")
		require.NoError(t, err)
		assert.Empty(t, l.Entries)
		// Within the limit, writes go on.
		appendAll(t, s, session.UserText("fine"))
	})
}
