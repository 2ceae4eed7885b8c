package session_test

// Regression tests for what a review of compaction, rewind and fork
// found: each failed before its fix.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// openLines opens a session from seed-format lines, in memory.
func openLines(t *testing.T, lines ...string) *session.Session {
	t.Helper()
	log, err := session.DecodeLog([]byte(header3+"\n"+strings.Join(lines, "\n")+"\n"), nil)
	require.NoError(t, err)
	s := session.OpenLog(log)
	return s
}

// entryLine is a message entry line.
func entryLine(id, parent, message string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-15T10:00:01.000Z","message":%s}`, id, p, message)
}

const (
	userMsg  = `{"role":"user","content":%q,"timestamp":1}`
	replyMsg = `{"role":"assistant","content":[{"type":"text","text":%q}],"provider":"p","model":"m","stopReason":"stop","timestamp":2}`
	callJSON = `{"role":"assistant","content":[{"type":"text","text":%q},{"type":"toolCall","id":%q,"name":"bash","arguments":{}}],"provider":"p","model":"m","stopReason":"toolUse","timestamp":2}`
	result   = `{"role":"toolResult","toolCallId":%q,"toolName":"bash","content":[{"type":"text","text":%q}],"isError":false,"timestamp":3}`
)

// pi names a label as a compaction's firstKeptEntryId; a fork leaves
// labels out and must keep the history from the next entry.
func TestForkKeepsHistoryKeptFromALabel(t *testing.T) {
	s := openLines(t,
		entryLine("u1", "", fmt.Sprintf(userMsg, "old")),
		entryLine("a1", "u1", fmt.Sprintf(replyMsg, "old answer")),
		`{"type":"label","id":"l1","parentId":"a1","timestamp":"2026-01-15T10:00:03.000Z","targetId":"a1","label":"cp"}`,
		entryLine("u2", "l1", fmt.Sprintf(userMsg, "kept")),
		entryLine("a2", "u2", fmt.Sprintf(replyMsg, "kept answer")),
		`{"type":"compaction","id":"c1","parentId":"a2","timestamp":"2026-01-15T10:00:06.000Z","summary":"S","firstKeptEntryId":"l1","tokensBefore":10}`)
	want := texts(s.Context().Messages)
	require.Len(t, want, 3)
	for _, copyLabels := range []bool{false, true} {
		f, err := s.Fork(context.Background(), &session.ForkOptions{CopyLabels: copyLabels})
		require.NoError(t, err)
		assert.Equal(t, want, texts(f.Context().Messages))
		assert.Empty(t, f.Verify())
	}
}

// Call ids that repeat across turns: a result answers the latest call
// with its id, and a compaction must not cut between them.
func TestCompactionWithRepeatedCallIDs(t *testing.T) {
	pad := strings.Repeat("x", 400)
	s := openLines(t,
		entryLine("u1", "", fmt.Sprintf(userMsg, "first")),
		entryLine("a1", "u1", fmt.Sprintf(callJSON, "", "call_0")),
		entryLine("r1", "a1", fmt.Sprintf(result, "call_0", "ok")),
		entryLine("u2", "r1", fmt.Sprintf(userMsg, "second")),
		entryLine("a2", "u2", fmt.Sprintf(callJSON, pad, "call_0")),
		`{"type":"custom_message","id":"cm","parentId":"a2","timestamp":"2026-01-15T10:00:06.000Z","customType":"hook","content":"note","display":true}`,
		entryLine("r2", "cm", fmt.Sprintf(result, "call_0", pad)),
		entryLine("a3", "r2", fmt.Sprintf(replyMsg, pad)))
	require.Empty(t, s.Context().Orphans)
	_, err := s.Compact(context.Background(), session.ExtractiveSummarizer{}, &session.CompactionOptions{KeepRecentTokens: 150})
	require.NoError(t, err)
	assert.Empty(t, s.Context().Orphans, "a result was cut from its call")
}

// The usage reported before a compaction measured the context before
// it: right after a compaction, it is no longer due.
func TestNoCompactionDueRightAfterOne(t *testing.T) {
	s := session.New()
	pad := strings.Repeat("x", 4000)
	var total int64
	for k := range 20 {
		total += 2000
		appendAll(t, s, session.UserText(fmt.Sprintf("q%d %s", k, pad)),
			session.AssistantText("a"+pad).WithModel(api, provider, model).WithUsage(session.Usage{TotalTokens: total}))
	}
	opts := &session.CompactionOptions{ContextWindow: 30000, ReserveTokens: 4000, KeepRecentTokens: 4000}
	require.True(t, s.NeedsCompaction(opts))
	res, err := s.Compact(context.Background(), session.ExtractiveSummarizer{}, opts)
	require.NoError(t, err)
	assert.Equal(t, res.TokensAfter, s.ContextTokens(nil), "estimated like TokensAfter")
	assert.False(t, s.NeedsCompaction(opts), "still due right after compacting")

	// The next reply's usage counts again.
	appendAll(t, s, session.UserText("next"), session.AssistantText("ok").WithModel(api, provider, model).WithUsage(session.Usage{TotalTokens: 5000}))
	assert.Equal(t, int64(5000), s.ContextTokens(nil))
}

// Messages appended while a branch summary is made would be left behind
// unsummarized: SummarizeBranch refuses with ErrConflict.
func TestSummarizeBranchLeafMovedMeanwhile(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	e := appendAll(t, s, session.UserText("a"), reply("b"), session.UserText("c"), reply("d"))
	sum := session.SummarizerFunc(func(ctx context.Context, req *session.SummaryRequest) (string, error) {
		appendAll(t, s, session.UserText("appended while summarizing"), reply("meanwhile"))
		return "x", nil
	})
	n := s.Len()
	_, err := s.SummarizeBranch(ctx, e[1].ID(), sum, nil)
	require.ErrorIs(t, err, session.ErrConflict)
	assert.Equal(t, n+2, s.Len(), "only the appends made meanwhile")
	assert.Equal(t, "assistant:meanwhile", texts(s.Context().Messages)[5])
}

func TestRewindToTheCheckpointNamedLast(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	e := appendAll(t, s, session.UserText("a"), reply("b"), session.UserText("c"), reply("d"))
	require.NoError(t, s.Label(ctx, e[3].ID(), "x"))
	require.NoError(t, s.Label(ctx, e[1].ID(), "x"))
	res, err := s.Rewind(ctx, "x")
	require.NoError(t, err)
	assert.Equal(t, e[1].ID(), res.To)
}

// An entry holds one label: a checkpoint does not silently rename one.
func TestCheckpointDoesNotRenameALabel(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	appendAll(t, s, reply("x"))
	_, err := s.Checkpoint(ctx, "before-refactor")
	require.NoError(t, err)
	_, err = s.Checkpoint(ctx, "v1")
	require.ErrorIs(t, err, session.ErrExists)
	cps := s.Checkpoints()
	require.Len(t, cps, 1)
	assert.Equal(t, "before-refactor", cps[0].Name)
}
