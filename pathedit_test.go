package session_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// segmentSession builds u1 a1 u2 a2(call c) r(c) a3 u3 a4 and returns the
// session and its entries in order.
func segmentSession(t *testing.T, s *session.Session) []session.Entry {
	t.Helper()
	return appendAll(t, s,
		session.UserText("u1"), reply("a1"),
		session.UserText("u2"),
		session.Assistant(session.ToolCall("c", "read", json.RawMessage(`{"path":"a.go"}`))).WithModel(api, provider, model),
		session.ToolResult("c", "read", "package a"),
		reply("a3"),
		session.UserText("u3"), reply("a4"))
}

// TestReplacePathSegment: a run replaced by a summary or by new messages,
// append-only: what followed is copied after the replacement, the leaf
// is the last entry written (as pi reads a file), the old path stays,
// and the result reopens the same.
func TestReplacePathSegment(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		first, last int
		rep         session.SegmentReplacement
		want        []string
		copied      int
	}{
		{"summary of a whole exchange", 2, 5, session.SegmentReplacement{Summary: "read a.go"},
			[]string{"user:u1", "assistant:a1", "branchSummary:read a.go", "user:u3", "assistant:a4"}, 2},
		{"an edited message", 2, 2, session.SegmentReplacement{Messages: []*session.Message{session.UserText("u2, edited")}},
			[]string{"user:u1", "assistant:a1", "user:u2, edited", "assistant:", "toolResult:package a", "assistant:a3", "user:u3", "assistant:a4"}, 5},
		{"summary and messages", 0, 1, session.SegmentReplacement{Summary: "greetings", Messages: []*session.Message{session.UserText("hi"), reply("hello")}},
			[]string{"branchSummary:greetings", "user:hi", "assistant:hello", "user:u2", "assistant:", "toolResult:package a", "assistant:a3", "user:u3", "assistant:a4"}, 6},
		{"removed from the root", 0, 1, session.SegmentReplacement{},
			[]string{"user:u2", "assistant:", "toolResult:package a", "assistant:a3", "user:u3", "assistant:a4"}, 6},
		{"removed at the end", 6, 7, session.SegmentReplacement{},
			[]string{"user:u1", "assistant:a1", "user:u2", "assistant:", "toolResult:package a", "assistant:a3"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, err := session.OpenFileStore(t.TempDir(), nil)
			require.NoError(t, err)
			s, err := session.Create(ctx, store, nil)
			require.NoError(t, err)
			es := segmentSession(t, s)
			before := texts(s.Context().Messages)
			n := s.Len()

			edit, err := s.ReplacePathSegment(ctx, es[tc.first].ID(), es[tc.last].ID(), tc.rep)
			require.NoError(t, err)
			assert.Equal(t, es[len(es)-1].ID(), edit.From)
			assert.Equal(t, s.LeafID(), edit.To)
			assert.Len(t, edit.Replaced, tc.last-tc.first+1)
			assert.Equal(t, tc.copied, edit.Copied)
			if len(edit.Added) > 0 {
				assert.Equal(t, n+len(edit.Added), s.Len(), "append-only")
			} else {
				assert.Equal(t, es[tc.first-1].ID(), s.LeafID(), "nothing to append: the leaf moves back, as Branch does")
			}
			assert.Equal(t, tc.want, texts(s.Context().Messages))
			checkPairing(t, s.Context().ForModel())
			old, err := s.ContextAt(edit.From)
			require.NoError(t, err)
			assert.Equal(t, before, texts(old.Messages), "the old path is still there")
			require.NoError(t, s.Close())

			r, err := session.Open(ctx, store, s.ID())
			require.NoError(t, err)
			defer r.Close()
			assert.Equal(t, tc.want, texts(r.Context().Messages))

			if len(edit.Added) > 0 {
				// pi takes the last entry of the file as the leaf: it is the
				// new leaf, with no leaf marker after it.
				path, err := store.Path(s.ID())
				require.NoError(t, err)
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				lines := strings.Split(strings.TrimSpace(string(data)), "\n")
				last, err := session.ParseEntry([]byte(lines[len(lines)-1]))
				require.NoError(t, err)
				assert.Equal(t, edit.To, last.ID())
			}
		})
	}
}

// TestReplacePathSegmentKeepsTheTree: compactions and labels after the
// run are copied with their references moved; checkpoints of copied
// entries follow the live path.
func TestReplacePathSegmentKeepsTheTree(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	es := segmentSession(t, s)
	_, err := s.CheckpointWith(ctx, "answered", &session.CheckpointOptions{At: es[7].ID()})
	require.NoError(t, err)
	// A compaction that keeps history from u2 (in the run) on.
	_, err = s.AppendCompaction(ctx, session.Compaction{Summary: "earlier", FirstKeptEntryID: es[2].ID(), TokensBefore: 10})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("u4"))

	edit, err := s.ReplacePathSegment(ctx, es[2].ID(), es[5].ID(), session.SegmentReplacement{Messages: []*session.Message{session.UserText("u2 short"), reply("done")}})
	require.NoError(t, err)
	assert.Equal(t, []string{"compactionSummary:earlier", "user:u2 short", "assistant:done", "user:u3", "assistant:a4", "user:u4"}, texts(s.Context().Messages),
		"the compaction keeps from the replacement")
	cp, err := s.Resolve("answered")
	require.NoError(t, err)
	assert.NotEqual(t, es[7].ID(), cp.ID(), "the checkpoint names the copy")
	assert.Contains(t, ids(edit.Added), cp.ID())
	assert.Equal(t, texts(s.Context().Messages), texts(reopen(t, s).Context().Messages))
}

// TestReplacePathSegmentRefused: runs not on the path, in the wrong
// order, or replacements that unpair calls and results are refused, and
// nothing is appended.
func TestReplacePathSegmentRefused(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	es := segmentSession(t, s)
	require.NoError(t, s.Branch(ctx, es[1].ID()))
	side := appendAll(t, s, session.UserText("side"))
	require.NoError(t, s.Branch(ctx, es[len(es)-1].ID()))
	n := s.Len()
	for _, tc := range []struct {
		name        string
		first, last string
		rep         session.SegmentReplacement
		err         error
	}{
		{"off the path", side[0].ID(), side[0].ID(), session.SegmentReplacement{}, session.ErrPathEdit},
		{"reversed", es[3].ID(), es[2].ID(), session.SegmentReplacement{}, session.ErrPathEdit},
		{"unknown", "nope", es[2].ID(), session.SegmentReplacement{}, session.ErrNotFound},
		{"the call without its result", es[3].ID(), es[3].ID(), session.SegmentReplacement{Messages: []*session.Message{reply("no call")}}, session.ErrPathEdit},
		{"the result without its call", es[4].ID(), es[4].ID(), session.SegmentReplacement{Summary: "gone"}, session.ErrPathEdit},
		{"a replacement with a call never answered", es[5].ID(), es[5].ID(), session.SegmentReplacement{Messages: []*session.Message{
			session.Assistant(session.ToolCall("z", "read", json.RawMessage(`{}`))).WithModel(api, provider, model)}}, session.ErrPathEdit},
	} {
		_, err := s.ReplacePathSegment(ctx, tc.first, tc.last, tc.rep)
		assert.ErrorIs(t, err, tc.err, tc.name)
		assert.Equal(t, n, s.Len(), tc.name)
	}
	// The call and its result replaced together is fine.
	_, err := s.ReplacePathSegment(ctx, es[3].ID(), es[4].ID(), session.SegmentReplacement{Messages: []*session.Message{reply("read it")}})
	require.NoError(t, err)
}
