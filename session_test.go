package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

const (
	api      = "anthropic-messages"
	provider = "anthropic"
	model    = "claude-sonnet-4-5"
)

func reply(text string) *session.Message {
	return session.AssistantText(text).WithModel(api, provider, model)
}

func callMsg(text string, calls ...string) *session.Message {
	blocks := []session.Block{session.Text(text)}
	for _, c := range calls {
		blocks = append(blocks, session.ToolCall(c, "bash", json.RawMessage(`{"command":"ls"}`)))
	}
	return session.Assistant(blocks...).WithModel(api, provider, model)
}

func appendAll(t *testing.T, s *session.Session, msgs ...*session.Message) []session.Entry {
	t.Helper()
	var out []session.Entry
	for _, m := range msgs {
		e, err := s.Append(context.Background(), m)
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

// texts summarizes messages as "role:text" for compact assertions.
func texts(msgs []*session.Message) []string {
	var out []string
	for _, m := range msgs {
		s := m.Role + ":" + m.Text()
		if m.Synthetic() {
			s += "(synthetic)"
		}
		out = append(out, s)
	}
	return out
}

// leafPath is the path from the root to the leaf.
func leafPath(s *session.Session) []session.Entry {
	p, err := s.PathTo(s.LeafID())
	if err != nil {
		panic(err)
	}
	return p
}

func ids(entries []session.Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.ID())
	}
	return out
}

// reopen writes the session's log out in the seed format and reads it
// back, as a process restart would.
func reopen(t *testing.T, s *session.Session) *session.Session {
	t.Helper()
	var b strings.Builder
	require.NoError(t, session.WriteLog(&b, s.Log()))
	log, err := session.DecodeLog([]byte(b.String()), &session.ReadOptions{Strict: true})
	require.NoError(t, err)
	r := session.OpenLog(log)
	return r
}

func contextJSON(t *testing.T, c *session.Context) string {
	t.Helper()
	b, err := json.Marshal(c)
	require.NoError(t, err)
	return string(b)
}

func TestSessionTreeReads(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	_, ok := s.Entry(s.LeafID())
	assert.False(t, ok)
	assert.Empty(t, s.Context().Messages)

	e := appendAll(t, s, session.UserText("q1"), reply("a1"), session.UserText("q2"), reply("a2"))
	require.NoError(t, s.Branch(ctx, e[1].ID()))
	f := appendAll(t, s, session.UserText("q2'"), reply("a2'"))

	leaf, ok := s.Entry(s.LeafID())
	assert.True(t, ok)
	assert.Equal(t, f[1].ID(), leaf.ID())
	assert.Equal(t, []string{e[0].ID(), e[1].ID(), f[0].ID(), f[1].ID()}, ids(leafPath(s)))
	assert.Equal(t, []string{e[2].ID(), f[0].ID()}, ids(s.Children(e[1].ID())), "the leaf marker is not a child")
	assert.Equal(t, []string{e[0].ID()}, ids(s.Roots()))
	assert.Equal(t, []string{e[3].ID(), f[1].ID()}, ids(s.Leaves()))
	got, ok := s.Entry(e[2].ID())
	assert.True(t, ok)
	m, err := got.Message()
	require.NoError(t, err)
	assert.Equal(t, "q2", m.Text())
	p, err := s.PathTo(e[3].ID())
	require.NoError(t, err)
	assert.Equal(t, ids(e), ids(p))
	_, err = s.PathTo("nope")
	assert.ErrorIs(t, err, session.ErrNotFound)
	assert.Equal(t, 7, s.Len(), "six messages and one leaf marker")

	var tree []string
	for n := range s.Tree() {
		tree = append(tree, fmt.Sprintf("%d:%s:%v:%d", n.Depth, n.Entry.ID(), n.Leaf, n.Children))
	}
	assert.Equal(t, []string{
		"0:" + e[0].ID() + ":false:1",
		"1:" + e[1].ID() + ":false:2",
		"2:" + e[2].ID() + ":false:1",
		"3:" + e[3].ID() + ":false:0",
		"2:" + f[0].ID() + ":false:1",
		"3:" + f[1].ID() + ":true:0",
	}, tree)
	var all []string
	for e := range s.Entries() {
		all = append(all, e.Type())
	}
	assert.Len(t, all, 7)

	c := s.Context()
	assert.Equal(t, []string{"user:q1", "assistant:a1", "user:q2'", "assistant:a2'"}, texts(c.Messages))
	assert.Equal(t, &session.ModelRef{Provider: provider, ModelID: model}, c.Model)
	assert.Equal(t, "off", c.ThinkingLevel)
	at, err := s.ContextAt(e[3].ID())
	require.NoError(t, err)
	assert.Equal(t, []string{"user:q1", "assistant:a1", "user:q2", "assistant:a2"}, texts(at.Messages))
	assert.Equal(t, e[3].ID(), at.LeafID)
	_, err = s.ContextAt("missing")
	assert.ErrorIs(t, err, session.ErrNotFound)
}

func TestBranchResetAndSummaries(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	e := appendAll(t, s, session.UserText("q1"), reply("a1"), session.UserText("q2"), reply("a2"))

	// Branch with a summary of the abandoned path, as pi does: the summary
	// hangs under the entry branched to and names it in fromId.
	bs, err := s.BranchWithSummary(ctx, e[1].ID(), "tried q2", json.RawMessage(`{"modifiedFiles":["a.go"]}`))
	require.NoError(t, err)
	assert.Equal(t, e[1].ID(), bs.ParentID())
	assert.Equal(t, bs.ID(), s.LeafID())
	appendAll(t, s, session.UserText("q3"))
	c := s.Context()
	assert.Equal(t, []string{"user:q1", "assistant:a1", "branchSummary:tried q2", "user:q3"}, texts(c.Messages))
	assert.Equal(t, e[1].ID(), c.Messages[2].FromID)

	// An empty summary adds nothing to the context.
	_, err = s.BranchWithSummary(ctx, e[0].ID(), "", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"user:q1"}, texts(s.Context().Messages))

	// Reset: the next append is a new root; from the root, fromId is "root".
	require.NoError(t, s.Branch(ctx, ""))
	assert.Equal(t, "", s.LeafID())
	assert.Empty(t, s.Context().Messages)
	r := appendAll(t, s, session.UserText("fresh"))
	assert.Equal(t, "", r[0].ParentID())
	assert.Len(t, s.Roots(), 2)
	root, err := s.BranchWithSummary(ctx, "", "all of it", nil)
	require.NoError(t, err)
	var b session.BranchSummary
	require.NoError(t, root.Decode(&b))
	assert.Equal(t, "root", b.FromID)
	assert.Equal(t, "", root.ParentID())

	assert.ErrorIs(t, s.Branch(ctx, "nope"), session.ErrNotFound)
	_, err = s.BranchWithSummary(ctx, "nope", "x", nil)
	assert.ErrorIs(t, err, session.ErrNotFound)
}

// TestLeafMovesSurviveReopen checks both readers: this package finds the
// leaf where it was moved, and a seed-format reader, which takes the last
// entry as the leaf, gets the same context.
func TestLeafMovesSurviveReopen(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	e := appendAll(t, s, session.UserText("q1"), reply("a1"), session.UserText("q2"), reply("a2"))
	moves := []struct {
		name string
		move func() error
		leaf string
	}{
		{"branch", func() error { return s.Branch(ctx, e[1].ID()) }, e[1].ID()},
		{"branch again", func() error { return s.Branch(ctx, e[2].ID()) }, e[2].ID()},
		{"reset", func() error { return s.Branch(ctx, "") }, ""},
		{"branch from reset", func() error { return s.Branch(ctx, e[3].ID()) }, e[3].ID()},
	}
	for _, mv := range moves {
		t.Run(mv.name, func(t *testing.T) {
			require.NoError(t, mv.move())
			want := contextJSON(t, s.Context())
			r := reopen(t, s)
			assert.Equal(t, mv.leaf, r.LeafID())
			assert.Equal(t, want, contextJSON(t, r.Context()))

			// The seed reader: context at the last line of the file.
			log := r.Log()
			last := log.Entries[len(log.Entries)-1]
			seed, err := r.ContextAt(last.ID())
			require.NoError(t, err)
			assert.Equal(t, texts(s.Context().Messages), texts(seed.Messages))
		})
	}
	// Appending after a move continues from the moved leaf, after reopen too.
	r := reopen(t, s)
	n := appendAll(t, r, session.UserText("q3"))
	assert.Equal(t, e[3].ID(), n[0].ParentID())
}

func TestLabelsAndTitle(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	e := appendAll(t, s, session.UserText("q1"), reply("a1"))
	require.NoError(t, s.Label(ctx, e[0].ID(), "start"))
	require.NoError(t, s.Label(ctx, e[1].ID(), "answer"))
	require.NoError(t, s.Label(ctx, e[1].ID(), ""))
	assert.ErrorIs(t, s.Label(ctx, "nope", "x"), session.ErrNotFound)
	assert.Equal(t, "start", s.LabelOf(e[0].ID()))
	assert.Equal(t, "", s.LabelOf(e[1].ID()))
	assert.Equal(t, map[string]string{e[0].ID(): "start"}, s.Labels())

	assert.Equal(t, "", s.Title())
	require.NoError(t, s.SetTitle(ctx, "  First title "))
	require.NoError(t, s.SetTitle(ctx, "Second"))
	assert.Equal(t, "Second", s.Title())

	r := reopen(t, s)
	assert.Equal(t, map[string]string{e[0].ID(): "start"}, r.Labels())
	assert.Equal(t, "Second", r.Title())
	assert.Equal(t, []string{"user:q1", "assistant:a1"}, texts(r.Context().Messages), "labels and titles add no messages")

	created, err := session.Create(ctx, session.NewMemoryStore(), &session.CreateOptions{Title: "Header title", Cwd: "/w"})
	require.NoError(t, err)
	assert.Equal(t, "Header title", created.Title())
	assert.Equal(t, "/w", created.Header().Cwd)
}

func TestSettingsEntries(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	_, err := s.AppendThinkingLevel(ctx, "high")
	require.NoError(t, err)
	_, err = s.AppendModelChange(ctx, "openai", "gpt-5")
	require.NoError(t, err)
	_, err = s.AppendEntry(ctx, session.TypeModelChange, session.ModelChange{Model: "anthropic/claude-haiku", Role: "smol"})
	require.NoError(t, err)
	_, err = s.AppendModeChange(ctx, "plan", map[string]string{"file": "PLAN.md"})
	require.NoError(t, err)
	_, err = s.AppendTTSRInjection(ctx, "no-secrets", "tests-first")
	require.NoError(t, err)
	_, err = s.AppendTTSRInjection(ctx, "tests-first", "short-commits")
	require.NoError(t, err)
	_, err = s.AppendSessionInit(ctx, session.SessionInit{Task: "scout", Tools: []string{"read"}})
	require.NoError(t, err)
	_, err = s.AppendCustom(ctx, "my-ext", map[string]int{"n": 1})
	require.NoError(t, err)
	cm := session.CustomMessage("my-ext", "injected", true)
	cm.Details = json.RawMessage(`{"k":1}`)
	_, err = s.AppendCustomMessage(ctx, cm)
	require.NoError(t, err)
	_, err = s.AppendCustomMessage(ctx, session.UserText("wrong role"))
	assert.Error(t, err)
	_, err = s.AppendCustom(ctx, "agentsession.leaf", nil)
	assert.Error(t, err, "the leaf marker type is reserved")
	fut, err := s.AppendEntry(ctx, "future_type", json.RawMessage(`{"payload":{"x":[1,2]}}`))
	require.NoError(t, err)
	_, err = s.AppendEntry(ctx, "bad", map[string]string{"id": "forged"})
	assert.Error(t, err, "payloads cannot set the envelope")

	for _, c := range []*session.Context{s.Context(), reopen(t, s).Context()} {
		assert.Equal(t, "high", c.ThinkingLevel)
		assert.Equal(t, &session.ModelRef{Provider: "openai", ModelID: "gpt-5"}, c.Model)
		assert.Equal(t, map[string]session.ModelRef{
			"default": {Provider: "openai", ModelID: "gpt-5"},
			"smol":    {Provider: "anthropic", ModelID: "claude-haiku"},
		}, c.Models)
		assert.Equal(t, "plan", c.Mode)
		assert.JSONEq(t, `{"file":"PLAN.md"}`, string(c.ModeData))
		assert.Equal(t, []string{"no-secrets", "tests-first", "short-commits"}, c.InjectedRules)
		assert.Equal(t, []string{"custom:injected"}, texts(c.Messages))
		assert.Equal(t, "my-ext", c.Messages[0].CustomType)
		assert.True(t, c.Messages[0].Display)
	}
	r := reopen(t, s)
	e, ok := r.Entry(fut.ID())
	require.True(t, ok)
	v, ok := e.Field("payload")
	assert.True(t, ok)
	assert.Equal(t, `{"x":[1,2]}`, string(v))
}

func TestToolPairing(t *testing.T) {
	ctx := context.Background()

	t.Run("results must answer a pending call", func(t *testing.T) {
		s := session.New()
		appendAll(t, s, session.UserText("go"))
		_, err := s.Append(ctx, session.ToolResult("c1", "bash", "x"))
		assert.ErrorIs(t, err, session.ErrUnpairedToolResult)
		appendAll(t, s, callMsg("running", "c1", "c2"), session.ToolResult("c2", "bash", "two"))
		_, err = s.Append(ctx, session.ToolResult("c2", "bash", "again"))
		assert.ErrorIs(t, err, session.ErrUnpairedToolResult, "a call is answered once")
		appendAll(t, s, session.ToolResult("c1", "bash", "one"))
		c := s.Context()
		assert.Empty(t, c.Dangling)
		assert.Empty(t, c.Pending)
		assert.Empty(t, c.Orphans)
	})

	t.Run("dangling calls get synthesized results for the model", func(t *testing.T) {
		s := session.New()
		e := appendAll(t, s, session.UserText("go"), callMsg("running", "c1", "c2"), session.ToolResult("c1", "bash", "one"),
			session.UserText("never mind"), reply("ok"))
		c := s.Context()
		assert.Equal(t, []string{"user:go", "assistant:running", "toolResult:one", "user:never mind", "assistant:ok"}, texts(c.Messages),
			"the context is the seed reconstruction, unrepaired")
		assert.Equal(t, []session.ToolCallRef{{EntryID: e[1].ID(), CallID: "c2", Name: "bash"}}, c.Dangling)
		msgs, err := s.Messages(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{"user:go", "assistant:running", "toolResult:one",
			"toolResult:" + session.SyntheticResultText + "(synthetic)", "user:never mind", "assistant:ok"}, texts(msgs))
		assert.Equal(t, "c2", msgs[3].ToolCallID)
		assert.True(t, msgs[3].IsError)
		assert.Equal(t, texts(msgs), texts(c.ForModel()))
		_, err = s.Append(ctx, session.ToolResult("c2", "bash", "late"))
		assert.ErrorIs(t, err, session.ErrUnpairedToolResult, "the call is no longer awaited")
	})

	t.Run("pending calls at the end are left for the agent", func(t *testing.T) {
		s := session.New()
		e := appendAll(t, s, session.UserText("go"), callMsg("running", "c1"))
		c := s.Context()
		assert.Equal(t, []session.ToolCallRef{{EntryID: e[1].ID(), CallID: "c1", Name: "bash"}}, c.Pending)
		assert.Empty(t, c.Dangling)
		msgs, _ := s.Messages(ctx)
		assert.Len(t, msgs, 2)
	})

	t.Run("excluded bash executions stay out of the model's list", func(t *testing.T) {
		s := session.New()
		hidden := session.BashExecution("env", "SECRET=1", 0)
		hidden.ExcludeFromContext = true
		appendAll(t, s, session.UserText("go"), callMsg("running", "c1"), hidden, session.ToolResult("c1", "bash", "one"))
		assert.Len(t, s.Context().Messages, 4)
		msgs, _ := s.Messages(ctx)
		assert.Equal(t, []string{"user:go", "assistant:running", "toolResult:one"}, texts(msgs))
	})

	t.Run("a compaction that keeps a result without its call", func(t *testing.T) {
		s := session.New()
		e := appendAll(t, s, session.UserText("go"), callMsg("running", "c1"), session.ToolResult("c1", "bash", "one"), reply("done"))
		_, err := s.AppendCompaction(ctx, session.Compaction{Summary: "earlier", FirstKeptEntryID: e[2].ID(), TokensBefore: 100})
		require.NoError(t, err)
		c := s.Context()
		assert.Equal(t, []string{"compactionSummary:earlier", "toolResult:one", "assistant:done"}, texts(c.Messages))
		assert.Equal(t, []session.ToolCallRef{{EntryID: e[2].ID(), CallID: "c1", Name: "bash"}}, c.Orphans)
		msgs, _ := s.Messages(ctx)
		assert.Equal(t, []string{"compactionSummary:earlier", "assistant:done"}, texts(msgs))
		kinds := map[session.FindingKind]bool{}
		for _, f := range s.Verify() {
			kinds[f.Kind] = true
		}
		assert.True(t, kinds[session.FindingCompactionCut], "%v", s.Verify())
	})

	t.Run("SaveTurn is all or nothing", func(t *testing.T) {
		s := session.New()
		appendAll(t, s, session.UserText("go"))
		before := s.Len()
		err := s.SaveTurn(ctx, []*session.Message{callMsg("a", "c1"), session.ToolResult("c1", "bash", "ok"), session.ToolResult("zz", "bash", "bad")}, nil)
		assert.ErrorIs(t, err, session.ErrUnpairedToolResult)
		assert.Equal(t, before, s.Len())
		usage := &session.Usage{Input: 10, Output: 5, TotalTokens: 15}
		require.NoError(t, s.SaveTurn(ctx, []*session.Message{callMsg("a", "c1"), session.ToolResult("c1", "bash", "ok"), session.AssistantText("done")}, usage))
		msgs := s.Context().Messages
		assert.Nil(t, msgs[1].Usage.Cost.Extra)
		assert.Equal(t, int64(0), msgs[1].Usage.Input, "the first assistant keeps its own usage")
		assert.Equal(t, int64(15), msgs[3].Usage.TotalTokens, "the turn's usage goes on its last assistant message")
	})
}

func TestInvalidMessagesRefused(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	for _, m := range []*session.Message{nil, {}, {Role: session.RoleBranchSummary, Summary: "x"}, {Role: session.RoleCompactionSummary}} {
		_, err := s.Append(ctx, m)
		assert.Error(t, err)
	}
	assert.Equal(t, 0, s.Len())
}

func TestMessagesAreTheSessionsOwn(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	m := callMsg("look", "c1")
	appendAll(t, s, session.UserText("go"), m)
	m.Content[0].Text = "changed by the caller"
	m.Content[1].Arguments[2] = 'X'
	assert.Equal(t, "look", s.Context().Messages[1].Text())
	assert.Equal(t, `{"command":"ls"}`, string(s.Context().Messages[1].Content[1].Arguments))
	msgs, err := s.Messages(ctx)
	require.NoError(t, err)
	msgs = append(msgs, session.UserText("appended by the caller"))
	again, _ := s.Messages(ctx)
	assert.Len(t, again, 2, "appending to the returned slice does not reach the session")
	assert.Len(t, msgs, 3)
	// Zero timestamps are filled in.
	assert.NotZero(t, s.Context().Messages[0].Timestamp)
}

func TestClosedSession(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	appendAll(t, s, session.UserText("go"))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	_, err := s.Append(ctx, session.UserText("late"))
	assert.ErrorIs(t, err, session.ErrClosed)
	_, err = s.Messages(ctx)
	assert.ErrorIs(t, err, session.ErrClosed)
	assert.ErrorIs(t, s.Branch(ctx, s.LeafID()), session.ErrClosed, "even a move that would change nothing")
	assert.ErrorIs(t, s.Branch(ctx, ""), session.ErrClosed)
	assert.Len(t, s.Context().Messages, 1, "reads still work")
}

func TestStaleHandleRetries(t *testing.T) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	a, err := session.Create(ctx, store, &session.CreateOptions{ID: "shared"})
	require.NoError(t, err)
	appendAll(t, a, session.UserText("q1"))
	b, err := session.Open(ctx, store, "shared")
	require.NoError(t, err)
	appendAll(t, a, reply("a1 from A"))
	// b has not seen a's reply; its append is retried on top of it, under
	// b's own leaf, and a sees it after a reload.
	eb := appendAll(t, b, reply("a1 from B"))
	assert.Equal(t, leafPath(a)[0].ID(), eb[0].ParentID())
	assert.Equal(t, 3, b.Len())
	require.NoError(t, a.Reload(ctx))
	assert.Equal(t, 3, a.Len())
	assert.Len(t, a.Children(eb[0].ParentID()), 2)
	assert.Equal(t, []string{"user:q1", "assistant:a1 from A"}, texts(a.Context().Messages))
	assert.Equal(t, []string{"user:q1", "assistant:a1 from B"}, texts(b.Context().Messages))
}

// corruptLog builds a log from entry lines with a valid header.
func corruptLog(t *testing.T, lines ...string) *session.Log {
	t.Helper()
	data := `{"type":"session","version":3,"id":"s","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/"}` + "\n" + strings.Join(lines, "\n") + "\n"
	log, err := session.DecodeLog([]byte(data), nil)
	require.NoError(t, err)
	return log
}

func msgLine(id, parent, role, text string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":%q,"content":[{"type":"text","text":%q}],"timestamp":1}}`, id, p, role, text)
}

func TestCorruptTrees(t *testing.T) {
	cases := []struct {
		name     string
		lines    []string
		leafMsgs []string
		kinds    []session.FindingKind
		visible  int
	}{
		{"two-entry cycle", []string{msgLine("a", "b", "user", "A"), msgLine("b", "a", "assistant", "B")},
			[]string{"user:A", "assistant:B"}, []session.FindingKind{session.FindingCycle}, 2},
		{"self parent", []string{msgLine("a", "a", "user", "A"), msgLine("b", "a", "assistant", "B")},
			[]string{"user:A", "assistant:B"}, []session.FindingKind{session.FindingSelfParent}, 2},
		{"missing parent", []string{msgLine("a", "", "user", "A"), msgLine("b", "zz", "user", "B"), msgLine("c", "b", "assistant", "C")},
			[]string{"user:B", "assistant:C"}, []session.FindingKind{session.FindingMissingParent}, 3},
		{"duplicate id, the later wins", []string{msgLine("a", "", "user", "first"), msgLine("a", "", "user", "second"), msgLine("b", "a", "assistant", "B")},
			[]string{"user:second", "assistant:B"}, []session.FindingKind{session.FindingDuplicateID}, 2},
		{"cycle below a root", []string{msgLine("r", "", "user", "R"), msgLine("a", "c", "user", "A"), msgLine("b", "a", "user", "B"), msgLine("c", "b", "user", "C")},
			[]string{"user:A", "user:B", "user:C"}, []session.FindingKind{session.FindingCycle}, 4},
		{"undecodable message", []string{msgLine("a", "", "user", "A"), `{"type":"message","id":"b","parentId":"a","message":"oops"}`},
			[]string{"user:A"}, []session.FindingKind{session.FindingBadMessage}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := corruptLog(t, c.lines...)
			s := session.OpenLog(log)
			assert.Equal(t, c.leafMsgs, texts(s.Context().Messages))
			n := 0
			seen := map[string]bool{}
			for node := range s.Tree() {
				assert.False(t, seen[node.Entry.ID()+node.Entry.Timestamp()], "visited twice")
				seen[node.Entry.ID()+node.Entry.Timestamp()] = true
				n++
			}
			assert.Equal(t, c.visible, n)
			for _, e := range log.Entries {
				_, err := s.ContextAt(e.ID())
				assert.NoError(t, err)
			}
			var kinds []session.FindingKind
			for _, f := range session.Verify(log) {
				kinds = append(kinds, f.Kind)
			}
			for _, k := range c.kinds {
				assert.Contains(t, kinds, k)
			}
			// Appending still works and never joins the cycle.
			_, err := s.Append(context.Background(), session.UserText("more"))
			assert.NoError(t, err)
		})
	}
}

// TestIncrementalContextMatchesRebuild drives random operations and
// checks, after each, that the context kept up to date by appends equals
// the one rebuilt from the log and the one a reopen gives.
func TestIncrementalContextMatchesRebuild(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 99))
			s := session.New()
			var all []string
			pendingCalls := func() []string {
				var out []string
				for _, p := range s.Context().Pending {
					out = append(out, p.CallID)
				}
				return out
			}
			callN := 0
			for step := range 300 {
				var err error
				var e session.Entry
				switch op := r.IntN(100); {
				case op < 25:
					e, err = s.Append(ctx, session.UserText(fmt.Sprintf("u%d", step)))
				case op < 45:
					var calls []string
					for range r.IntN(3) {
						callN++
						calls = append(calls, fmt.Sprintf("c%d", callN))
					}
					e, err = s.Append(ctx, callMsg(fmt.Sprintf("a%d", step), calls...))
				case op < 65:
					if p := pendingCalls(); len(p) > 0 {
						e, err = s.Append(ctx, session.ToolResult(p[r.IntN(len(p))], "bash", fmt.Sprintf("r%d", step)))
					}
				case op < 72 && len(all) > 0:
					err = s.Branch(ctx, all[r.IntN(len(all))])
				case op < 75:
					err = s.Branch(ctx, "")
				case op < 80 && len(all) > 0:
					_, err = s.BranchWithSummary(ctx, all[r.IntN(len(all))], fmt.Sprintf("bs%d", step), nil)
				case op < 86 && len(all) > 0:
					path := leafPath(s)
					first := ""
					if len(path) > 0 {
						first = path[r.IntN(len(path))].ID()
					}
					e, err = s.AppendCompaction(ctx, session.Compaction{Summary: fmt.Sprintf("c%d", step), FirstKeptEntryID: first, TokensBefore: int64(step)})
				case op < 90 && len(all) > 0:
					err = s.Label(ctx, all[r.IntN(len(all))], fmt.Sprintf("l%d", step))
				case op < 92:
					e, err = s.AppendCustomMessage(ctx, session.CustomMessage("ext", fmt.Sprintf("x%d", step), true))
				case op < 94:
					e, err = s.AppendThinkingLevel(ctx, []string{"low", "high"}[r.IntN(2)])
				case op < 97:
					e, err = s.AppendModelChange(ctx, "p", fmt.Sprintf("m%d", step))
				default:
					// Changes a foreign writer may leave: another role, or
					// no model at all.
					e, err = s.AppendEntry(ctx, session.TypeModelChange, []session.ModelChange{
						{}, {Role: "smol", Model: fmt.Sprintf("q/s%d", step)}, {Role: "default"},
					}[r.IntN(3)])
				}
				require.NoError(t, err, "step %d", step)
				if !e.IsZero() {
					all = append(all, e.ID())
				}
				got := contextJSON(t, s.Context())
				fresh := session.OpenLog(s.Log())
				if s.LeafID() != "" {
					at, err := fresh.ContextAt(s.LeafID())
					require.NoError(t, err)
					require.Equal(t, contextJSON(t, at), got, "step %d", step)
				}
				if step%25 == 0 {
					require.Equal(t, got, contextJSON(t, reopen(t, s).Context()), "step %d", step)
				}
				msgs, err := s.Messages(ctx)
				require.NoError(t, err)
				checkPairing(t, msgs)
				require.Equal(t, texts(s.Context().ForModel()), texts(msgs))
			}
		})
	}
}

// checkPairing asserts what a model API requires: every tool result
// answers a call of the assistant message just before its run of results,
// and every call is answered, except those of the last assistant message
// at the very end.
func checkPairing(t *testing.T, msgs []*session.Message) {
	t.Helper()
	var open []string
	for i, m := range msgs {
		if m.Role == session.RoleToolResult {
			k := slices.Index(open, m.ToolCallID)
			require.True(t, k >= 0, "message %d: result for %s answers no open call", i, m.ToolCallID)
			open = slices.Delete(open, k, k+1)
			continue
		}
		require.Empty(t, open, "message %d (%s): calls %v left unanswered", i, m.Role, open)
		for _, c := range m.ToolCalls() {
			open = append(open, c.ID)
		}
	}
}

func TestAgentInterface(t *testing.T) {
	ctx := context.Background()
	var agent session.Conversation = session.New()
	assert.NotEmpty(t, agent.ID())
	require.NoError(t, agent.SaveTurn(ctx, []*session.Message{session.UserText("hi"), reply("hello")}, nil))
	msgs, err := agent.Messages(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"user:hi", "assistant:hello"}, texts(msgs))
	require.NoError(t, agent.SaveTurn(ctx, nil, nil))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = agent.Messages(cctx)
	assert.True(t, errors.Is(err, context.Canceled))
}

func TestOpenLogAnyID(t *testing.T) {
	// A file's session id need not be a valid store id to be read.
	data := `{"type":"session","version":3,"id":"weird id/with slash","cwd":"/"}` + "\n" + msgLine("a", "", "user", "hi") + "\n"
	log, err := session.DecodeLog([]byte(data), nil)
	require.NoError(t, err)
	s := session.OpenLog(log)
	assert.Equal(t, "weird id/with slash", s.ID())
	appendAll(t, s, reply("hello"))
	assert.Equal(t, []string{"user:hi", "assistant:hello"}, texts(s.Context().Messages))
	assert.Len(t, log.Entries, 1, "the log given is not changed")
}

func TestCustomMessageKeepsExtra(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	cm := session.CustomMessage("ext", "hello", false)
	cm.Extra.Set("origin", json.RawMessage(`{"plugin":"x"}`))
	e, err := s.AppendCustomMessage(ctx, cm)
	require.NoError(t, err)
	for _, s := range []*session.Session{s, reopen(t, s)} {
		got, ok := s.Entry(e.ID())
		require.True(t, ok)
		v, ok := got.Field("origin")
		require.True(t, ok, "extra member kept on the entry")
		assert.JSONEq(t, `{"plugin":"x"}`, string(v))
		msgs := s.Context().Messages
		require.Len(t, msgs, 1)
		assert.Equal(t, "hello", msgs[0].Text())
	}
	bad := session.CustomMessage("ext", "x", false)
	bad.Extra.Set("id", json.RawMessage(`"forged"`))
	_, err = s.AppendCustomMessage(ctx, bad)
	assert.Error(t, err, "extra members cannot set the envelope")
}

func TestModelChangeWithoutModel(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	_, err := s.Append(ctx, session.AssistantText("hi").WithModel("anthropic-messages", "anthropic", "claude"))
	require.NoError(t, err)
	_, err = s.AppendEntry(ctx, session.TypeModelChange, session.ModelChange{})
	require.NoError(t, err)
	want := &session.ModelRef{Provider: "anthropic", ModelID: "claude"}
	assert.Equal(t, want, s.Context().Model, "incremental")
	assert.Equal(t, want, reopen(t, s).Context().Model, "rebuilt")
	_, err = s.AppendModelChange(ctx, "", "")
	assert.Error(t, err, "a model change must name a model")
}

// TestCustomMessageDuringToolRun: an extension message injected while tools
// run does not cut the run short: the results still pair, and Messages
// moves the custom message after them.
func TestCustomMessageDuringToolRun(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	appendAll(t, s, session.UserText("go"), callMsg("calling", "c1", "c2"),
		session.ToolResult("c1", "bash", "r1"))
	_, err := s.AppendCustomMessage(ctx, session.CustomMessage("ext", "note", true))
	require.NoError(t, err)

	// Calls still open with a message held behind them: the list answers
	// them so the custom message can follow, and pending stays as it was.
	msgs, err := s.Messages(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"user:go", "assistant:calling", "toolResult:r1", "toolResult:" + session.SyntheticResultText + "(synthetic)", "custom:note"}, texts(msgs))
	checkPairing(t, msgs)
	require.Len(t, s.Context().Pending, 1)

	_, err = s.Append(ctx, session.ToolResult("c2", "bash", "r2"))
	require.NoError(t, err, "the result after a custom message still answers its call")
	want := []string{"user:go", "assistant:calling", "toolResult:r1", "toolResult:r2", "custom:note"}
	for _, s := range []*session.Session{s, reopen(t, s)} {
		msgs, err := s.Messages(ctx)
		require.NoError(t, err)
		assert.Equal(t, want, texts(msgs))
		assert.Equal(t, want, texts(s.Context().ForModel()))
		assert.Equal(t, []string{"user:go", "assistant:calling", "toolResult:r1", "custom:note", "toolResult:r2"},
			texts(s.Context().Messages), "the seed reconstruction keeps file order")
		assert.Empty(t, s.Context().Dangling)
	}
}

// TestVerifyReportsSkippedLines: a session opened from a log read leniently
// still reports the lines that read skipped.
func TestVerifyReportsSkippedLines(t *testing.T) {
	data := header3 + "\n" + msgLine("a", "", "user", "hi") + "\n" + "not json\n" + msgLine("b", "a", "assistant", "yo") + "\n" + `{"type":"mess`
	log, err := session.DecodeLog([]byte(data), nil)
	require.NoError(t, err)
	s := session.OpenLog(log)
	var kinds []session.FindingKind
	for _, f := range s.Verify() {
		kinds = append(kinds, f.Kind)
	}
	assert.Equal(t, []session.FindingKind{session.FindingMalformedLine, session.FindingTornTail}, kinds)
	assert.Len(t, s.Log().Malformed, 1)
}

// TestEmptyIDIsBeforeTheFirstEntry: the at-id calls take "" as the place
// before the first entry, where LeafID is after Branch to "" or in a new
// session, so that each at-id call at LeafID() answers for the leaf.
func TestEmptyIDIsBeforeTheFirstEntry(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	for _, stage := range []string{"new", "after Branch to \"\""} {
		if stage != "new" {
			_, err := s.Append(ctx, session.UserText("hi"))
			require.NoError(t, err)
			require.NoError(t, s.Branch(ctx, ""))
		}
		require.Equal(t, "", s.LeafID(), stage)
		c, err := s.ContextAt(s.LeafID())
		require.NoError(t, err, stage)
		assert.Empty(t, c.Messages, stage)
		assert.Equal(t, len(s.Context().Messages), len(c.Messages), stage)
		p, err := s.PathTo(s.LeafID())
		require.NoError(t, err, stage)
		assert.Empty(t, p, stage)
		u, err := s.UsageAt(s.LeafID())
		require.NoError(t, err, stage)
		assert.Equal(t, session.Usage{}, u, stage)
		_, ok := s.Entry(s.LeafID())
		assert.False(t, ok, stage)
	}
}

// TestFindingSeverity: every kind has a severity, and the ones real pi
// sessions hold after aborted turns or crashes are not errors.
func TestFindingSeverity(t *testing.T) {
	cases := map[session.FindingKind]session.Severity{
		session.FindingMalformedLine: session.SeverityError, session.FindingCycle: session.SeverityError,
		session.FindingUnresolvedBlob: session.SeverityError, session.FindingDanglingCall: session.SeverityWarning,
		session.FindingTornTail: session.SeverityWarning, session.FindingPartialAppend: session.SeverityWarning,
		session.FindingPendingCall: session.SeverityInfo,
	}
	for k, want := range cases {
		assert.Equal(t, want, session.Finding{Kind: k}.Severity(), string(k))
	}
	assert.Equal(t, "warning", session.SeverityWarning.String())
}

// TestSnapshotEntries: a workspace snapshot recorded on the path is the
// one in force at every later entry, a branch sees its own, and the
// store's blobs are found through an observing wrapper.
func TestSnapshotEntries(t *testing.T) {
	ctx := context.Background()
	store := session.Observe(session.NewMemoryStore(), session.ObserverFunc(func(context.Context, session.Event) {}))
	s, err := session.Create(ctx, store, nil)
	require.NoError(t, err)
	q, err := s.Append(ctx, session.UserText("edit main.go"))
	require.NoError(t, err)
	_, _, ok, err := s.SnapshotAt(q.ID())
	require.NoError(t, err)
	assert.False(t, ok, "no snapshot yet")
	blobs, ok := session.BlobsOf(store)
	require.True(t, ok)
	ref, err := blobs.PutBlob(ctx, []byte("agentsession.manifest\n"))
	require.NoError(t, err)
	snap, err := s.AppendSnapshot(ctx, session.WorkspaceSnapshot{Snapshot: ref, Files: 1, Additions: 3})
	require.NoError(t, err)
	after, err := s.Append(ctx, session.AssistantText("done"))
	require.NoError(t, err)
	w, at, ok, err := s.SnapshotAt(after.ID())
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, snap.ID(), at.ID())
	assert.Equal(t, session.WorkspaceSnapshot{Kind: session.SnapshotStep, Snapshot: ref, Files: 1, Additions: 3}, w)
	require.NoError(t, s.Branch(ctx, q.ID()))
	other, err := s.Append(ctx, session.AssistantText("another way"))
	require.NoError(t, err)
	_, _, ok, err = s.SnapshotAt(other.ID())
	require.NoError(t, err)
	assert.False(t, ok, "the other branch has none")
	_, _, _, err = s.SnapshotAt("nope")
	assert.ErrorIs(t, err, session.ErrNotFound)
	_, err = s.AppendSnapshot(ctx, session.WorkspaceSnapshot{})
	assert.Error(t, err)
}
