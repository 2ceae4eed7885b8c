package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/compattest"
	"github.com/stretchr/testify/require"
)

// A session opened by its path (its latest compaction's kept entries to
// the leaf, and the settings before) answers every question as the same
// session opened whole: the context at once, the rest after reading what
// it left out.

// compactedSession builds, on a MemoryStore, a session with three
// compactions and settings spread before and between them, and returns
// the store and its id.
func compactedSession(t *testing.T, shape string) (*session.MemoryStore, string) {
	t.Helper()
	ms := session.NewMemoryStore()
	return ms, buildCompacted(t, ms, shape)
}

// buildCompacted is compactedSession in store.
func buildCompacted(t *testing.T, store session.Store, shape string) string {
	t.Helper()
	ctx := context.Background()
	s, err := session.Create(ctx, store, &session.CreateOptions{Title: "partial"})
	require.NoError(t, err)
	opts := &session.CompactionOptions{ContextWindow: 4000, KeepRecentTokens: 600}
	var labelled string
	for turn := range 60 {
		switch turn {
		case 1:
			_, err = s.AppendModelChange(ctx, "anthropic", "claude-early")
			require.NoError(t, err)
			_, err = s.AppendModelChange(ctx, "openai", "gpt-fast", "fast")
			require.NoError(t, err)
		case 3:
			_, err = s.AppendThinkingLevel(ctx, "high")
			require.NoError(t, err)
			_, err = s.AppendTTSRInjection(ctx, "rule-a")
			require.NoError(t, err)
		case 5:
			_, err = s.AppendModeChange(ctx, "plan", map[string]any{"x": 1})
			require.NoError(t, err)
			require.NoError(t, s.SetTitle(ctx, "named early"))
			require.NoError(t, s.UpdateState(ctx, map[string]any{"k": turn}))
		case 25:
			_, err = s.AppendTTSRInjection(ctx, "rule-b")
			require.NoError(t, err)
			_, err = s.Checkpoint(ctx, "cp")
			require.NoError(t, err)
		}
		msgs := []*session.Message{session.UserText(fmt.Sprintf("question %d %s", turn, strings.Repeat("words ", 30)))}
		a := session.AssistantText(fmt.Sprintf("answer %d %s", turn, strings.Repeat("more ", 40)))
		if shape != "modelEarly" || turn == 2 {
			a.Provider, a.Model = "anthropic", fmt.Sprintf("model-%d", turn%3)
		} else {
			a.Provider, a.Model = "", ""
		}
		msgs = append(msgs, a)
		require.NoError(t, s.SaveTurn(ctx, msgs, &session.Usage{Input: 10, Output: 5}))
		if turn == 10 {
			labelled = s.LeafID()
			require.NoError(t, s.Label(ctx, labelled, "ten"))
		}
		if turn%15 == 14 {
			_, err := s.Compact(ctx, session.ExtractiveSummarizer{}, opts)
			require.NoError(t, err)
		}
	}
	switch shape {
	case "longTail":
		// Turns after the last compaction, more than the 4 KiB the
		// path index sums at the end of the file.
		for i := range 20 {
			a := session.AssistantText(fmt.Sprintf("late answer %d %s", i, strings.Repeat("z ", 200)))
			require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText(fmt.Sprintf("late %d here", i)), a}, nil))
		}
	case "branched":
		// Back to an entry after the last compaction, then a new turn:
		// the old branch is history the path does not hold.
		msgs := s.Context().EntryIDs
		require.NoError(t, s.Branch(ctx, msgs[len(msgs)-4]))
		require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText("on a branch")}, nil))
	case "moved":
		// The last entry is a leaf marker.
		msgs := s.Context().EntryIDs
		require.NoError(t, s.Branch(ctx, msgs[len(msgs)-3]))
	}
	require.NoError(t, s.Close())
	return s.ID()
}

// views are the questions asked of both handles.
var partialViews = []struct {
	name string
	get  func(s *session.Session) any
}{
	{"Context", func(s *session.Session) any { return contextView(s.Context()) }},
	{"Messages", func(s *session.Session) any {
		m, err := s.Messages(context.Background())
		return []any{normalized(m), err}
	}},
	{"LeafID", func(s *session.Session) any { return s.LeafID() }},
	{"Len", func(s *session.Session) any { return s.Len() }},
	{"Log", func(s *session.Session) any { return entryIDs(s.Log().Entries) }},
	{"Entries", func(s *session.Session) any { return entryIDs(slices.Collect(s.Entries())) }},
	{"Tree", func(s *session.Session) any {
		var out []string
		for n := range s.Tree() {
			out = append(out, fmt.Sprintf("%s@%d/%d", n.Entry.ID(), n.Depth, n.Children))
		}
		return out
	}},
	{"Labels", func(s *session.Session) any { return s.Labels() }},
	{"Title", func(s *session.Session) any { return s.Title() }},
	{"Usage", func(s *session.Session) any { return s.Usage() }},
	{"Turns", func(s *session.Session) any { return s.Turns() }},
	{"Leaves", func(s *session.Session) any { return entryIDs(s.Leaves()) }},
	{"Roots", func(s *session.Session) any { return entryIDs(s.Roots()) }},
	{"Checkpoints", func(s *session.Session) any { return s.Checkpoints() }},
	{"TurnRecords", func(s *session.Session) any { return len(s.TurnRecords()) }},
	{"Verify", func(s *session.Session) any { return s.Verify() }},
	{"State", func(s *session.Session) any {
		st, err := s.State(context.Background())
		return []any{st, err}
	}},
	{"PathTo", func(s *session.Session) any {
		p, err := s.PathTo(s.LeafID())
		return []any{entryIDs(p), err}
	}},
	{"ContextTokens", func(s *session.Session) any { return s.ContextTokens(nil) }},
	{"Resume", func(s *session.Session) any {
		v, err := s.Resume(context.Background())
		return []any{v, err}
	}},
}

func contextView(c *session.Context) any {
	return []any{compattest.Normalize(c), c.EntryIDs, c.Models, c.Mode, string(c.ModeData), c.InjectedRules}
}

func normalized(ms []*session.Message) []compattest.NormalizedMessage {
	var out []compattest.NormalizedMessage
	for _, m := range ms {
		out = append(out, compattest.NormalizeMessage(m))
	}
	return out
}

func entryIDs(es []session.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID()
	}
	return out
}

// checkPartial opens id in store twice, by its path and whole, and
// compares every view, each asked of a fresh partial handle.
func checkPartial(t *testing.T, store session.Store, id string, wantPartial bool) {
	t.Helper()
	ctx := context.Background()
	log, err := store.Load(ctx, id)
	require.NoError(t, err)
	whole := session.OpenLog(log)
	defer whole.Close()
	for _, v := range partialViews {
		p, err := session.Open(ctx, store, id)
		require.NoError(t, err)
		require.Equal(t, wantPartial, session.IsPartial(p), "%s: partial", v.name)
		require.Equal(t, v.get(whole), v.get(p), "%s", v.name)
		require.NoError(t, p.Close())
	}
}

func TestPartialOpenMatchesWhole(t *testing.T) {
	// modelEarly: only an assistant message before the kept entries
	// names the model the context reports.
	for _, shape := range []string{"linear", "branched", "moved", "modelEarly", "longTail"} {
		t.Run(shape, func(t *testing.T) {
			ms, id := compactedSession(t, shape)
			checkPartial(t, ms, id, true)
		})
	}
}

// TestPartialAppends: turns saved on a partial handle, and a compaction,
// reach the store as on a whole one; reopened, the session is the same.
func TestPartialAppends(t *testing.T) {
	ctx := context.Background()
	ms, id := compactedSession(t, "linear")
	s, err := session.Open(ctx, ms, id)
	require.NoError(t, err)
	require.True(t, session.IsPartial(s))
	for i := range 20 {
		a := session.AssistantText(fmt.Sprintf("late answer %d %s", i, strings.Repeat("z ", 80)))
		require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText(fmt.Sprintf("late %d", i)), a}, nil))
	}
	require.True(t, session.IsPartial(s), "saving turns reads no history")
	before := contextView(s.Context())
	require.NoError(t, s.Close())
	log, err := ms.Load(ctx, id)
	require.NoError(t, err)
	require.Equal(t, before, contextView(session.OpenLog(log).Context()))
	checkPartial(t, ms, id, true)

	s, err = session.Open(ctx, ms, id)
	require.NoError(t, err)
	_, err = s.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{ContextWindow: 4000, KeepRecentTokens: 600})
	require.NoError(t, err)
	after := contextView(s.Context())
	require.NoError(t, s.Close())
	log, err = ms.Load(ctx, id)
	require.NoError(t, err)
	require.Equal(t, after, contextView(session.OpenLog(log).Context()))
	checkPartial(t, ms, id, true)
}

// TestPartialCorpus: pi's sessions with compactions, opened by their
// path, give the context pi builds.
func TestPartialCorpus(t *testing.T) {
	compattest.Need(t)
	names, err := filepath.Glob(compattest.Path("*.jsonl"))
	require.NoError(t, err)
	for _, path := range names {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			log, err := session.DecodeLog(data, nil)
			require.NoError(t, err)
			ms := session.NewMemoryStore()
			require.NoError(t, ms.CreateWithEntries(context.Background(), log.Header, log.Entries))
			checkPartial(t, ms, log.Header.ID, hasCompaction(log))
		})
	}
}

func hasCompaction(l *session.Log) bool {
	for _, e := range l.Entries {
		if e.Type() == session.TypeCompaction {
			return true
		}
	}
	return false
}
