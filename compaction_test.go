package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/compattest"
)

// turn appends one agent turn: a request, a reply with a tool call on
// file, its result, and an answer. Each message is about size bytes.
func turn(t *testing.T, s *session.Session, k int, tool, file string, size int) {
	t.Helper()
	pad := strings.Repeat("x", size)
	call := fmt.Sprintf("call_%d", k)
	args, _ := json.Marshal(map[string]string{"path": file})
	appendAll(t, s,
		session.UserText(fmt.Sprintf("request %d %s", k, pad)),
		session.Assistant(session.Text(fmt.Sprintf("working on %d", k)), session.ToolCall(call, tool, args)).WithModel(api, provider, model),
		session.ToolResult(call, tool, fmt.Sprintf("result %d %s", k, pad)),
		reply(fmt.Sprintf("answer %d", k)),
	)
}

// recorder is a Summarizer that records what it was asked.
type recorder struct{ reqs []*session.SummaryRequest }

func (r *recorder) Summarize(ctx context.Context, req *session.SummaryRequest) (string, error) {
	r.reqs = append(r.reqs, req)
	return fmt.Sprintf("summary #%d of %d %s messages", len(r.reqs), len(req.Messages), req.Kind), nil
}

func TestCompaction(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	for k := range 20 {
		tool := "read"
		if k%4 == 0 || k%4 == 3 {
			tool = "edit"
		}
		turn(t, s, k, tool, fmt.Sprintf("src/f%d.go", k%4), 400)
	}
	opts := &session.CompactionOptions{KeepRecentTokens: 1000, ContextWindow: 4000, ReserveTokens: 1000}
	require.True(t, s.NeedsCompaction(opts))
	plan, err := s.PlanCompaction(opts)
	require.NoError(t, err)
	assert.False(t, plan.SplitTurn)
	first, ok := s.Entry(plan.FirstKeptEntryID)
	require.True(t, ok)
	m, err := first.Message()
	require.NoError(t, err)
	assert.Equal(t, session.RoleUser, m.Role, "whole turns kept")
	assert.Equal(t, []string{"src/f1.go", "src/f2.go"}, plan.Files.Read)
	assert.Equal(t, []string{"src/f0.go", "src/f3.go"}, plan.Files.Modified)

	rec := &recorder{}
	res, err := s.Compact(ctx, rec, opts)
	require.NoError(t, err)
	require.Len(t, rec.reqs, 1)
	assert.Equal(t, session.SummaryHistory, rec.reqs[0].Kind)
	assert.Equal(t, len(plan.Summarize), len(rec.reqs[0].Messages))
	assert.Contains(t, res.Summary, "<modified-files>\nsrc/f0.go\nsrc/f3.go\n</modified-files>")
	assert.Less(t, res.TokensAfter, res.Plan.TokensBefore)
	assert.Equal(t, res.Entry.ID(), s.LeafID())

	c := s.Context()
	assert.Equal(t, session.RoleCompactionSummary, c.Messages[0].Role)
	assert.Equal(t, res.Summary, c.Messages[0].Summary)
	assert.Equal(t, m.Text(), c.Messages[1].Text(), "the kept history follows the summary")
	assert.Equal(t, "answer 19", c.Messages[len(c.Messages)-1].Text())
	checkPairing(t, s.Context().ForModel())
	assert.False(t, s.NeedsCompaction(opts), "compacted below the threshold")

	var entry session.Compaction
	require.NoError(t, res.Entry.Decode(&entry))
	assert.JSONEq(t, `{"readFiles":["src/f1.go","src/f2.go"],"modifiedFiles":["src/f0.go","src/f3.go"]}`, string(entry.Details))
	assert.Equal(t, plan.TokensBefore, entry.TokensBefore)

	// Again, after more turns: the new summary updates the previous one,
	// and the file lists carry over.
	for k := 20; k < 30; k++ {
		turn(t, s, k, "read", "docs/new.md", 400)
	}
	rec2 := &recorder{}
	res2, err := s.Compact(ctx, rec2, opts)
	require.NoError(t, err)
	assert.Equal(t, res.Summary, rec2.reqs[0].PreviousSummary)
	assert.Equal(t, m.Text(), rec2.reqs[0].Messages[0].Text(), "it summarizes from where the previous kept history began")
	assert.Contains(t, res2.Summary, "docs/new.md")
	assert.Contains(t, res2.Summary, "src/f0.go")
	assert.Equal(t, res2.Summary, s.Context().Messages[0].Summary)
	checkPairing(t, s.Context().ForModel())

	_, err = s.PlanCompaction(&session.CompactionOptions{KeepRecentTokens: 1 << 30})
	assert.ErrorIs(t, err, session.ErrNothingToCompact)
}

// TestCompactionSplitTurn: one turn longer than what is kept is cut
// inside, after a tool result, never between a call and its result.
func TestCompactionSplitTurn(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	turn(t, s, 0, "read", "a.go", 100)
	appendAll(t, s, session.UserText("now the long one"))
	for k := 1; k <= 30; k++ {
		call := fmt.Sprintf("c%d", k)
		appendAll(t, s, callMsg("step", call), session.ToolResult(call, "bash", strings.Repeat("y", 300)))
	}
	appendAll(t, s, reply("done"))
	rec := &recorder{}
	res, err := s.Compact(ctx, rec, &session.CompactionOptions{KeepRecentTokens: 800})
	require.NoError(t, err)
	assert.True(t, res.Plan.SplitTurn)
	require.Len(t, rec.reqs, 2)
	assert.Equal(t, session.SummaryHistory, rec.reqs[0].Kind)
	assert.Equal(t, 4, len(rec.reqs[0].Messages), "the turn before")
	assert.Equal(t, session.SummaryTurnPrefix, rec.reqs[1].Kind)
	assert.Equal(t, "now the long one", rec.reqs[1].Messages[0].Text())
	assert.Contains(t, res.Summary, "**Turn Context (split turn):**")
	first, _ := s.Entry(res.Plan.FirstKeptEntryID)
	m, err := first.Message()
	require.NoError(t, err)
	assert.Equal(t, session.RoleAssistant, m.Role)
	assert.NotEqual(t, session.RoleToolResult, s.Context().Messages[1].Role, "the kept part starts with a result cut from its call")
	assert.Empty(t, s.Context().Orphans)
	checkPairing(t, s.Context().ForModel())
}

func TestContextTokens(t *testing.T) {
	msgs := []*session.Message{
		session.UserText(strings.Repeat("a", 400)),
		session.AssistantText("ok").WithUsage(session.Usage{Input: 900, Output: 100, TotalTokens: 1000}),
		session.UserText(strings.Repeat("b", 41)),
	}
	assert.Equal(t, int64(1000+11), session.ContextTokens(msgs, nil), "reported usage, then an estimate")
	msgs[1].StopReason = session.StopAborted
	assert.Equal(t, int64(100+1+11), session.ContextTokens(msgs, nil), "an aborted turn's usage is not trusted")
	img := session.User(session.Image("image/png", []byte("png")))
	assert.Equal(t, int64(1200), session.DefaultTokenEstimator.EstimateTokens(img))

	// After a compaction summary, usage reported before it (by time) is
	// not trusted: it measured the context before the compaction.
	c := []*session.Message{{Role: session.RoleCompactionSummary, Summary: strings.Repeat("s", 40), Timestamp: 1000}}
	kept := session.AssistantText(strings.Repeat("k", 40)).WithUsage(session.Usage{TotalTokens: 90000}).WithTimestamp(500)
	assert.Equal(t, int64(10+10), session.ContextTokens(append(c, kept), nil), "kept history is estimated")
	fresh := session.AssistantText("ok").WithUsage(session.Usage{TotalTokens: 3000}).WithTimestamp(2000)
	assert.Equal(t, int64(3000+1), session.ContextTokens(append(c, kept, fresh, session.UserText("more")), nil))
}

// TestCompactionCompat compacts pi's 03-compaction session once more, on
// a FileStore: the new summary comes first, the recent messages stay, and
// a reopen (and a seed reader) gives the same context.
func TestCompactionCompat(t *testing.T) {
	compattest.Need(t)
	ctx := context.Background()
	root := t.TempDir()
	path := copyInto(t, root, "03-compaction.jsonl")
	store := openFS(t, root, nil)
	s, err := store.OpenPath(ctx, path)
	require.NoError(t, err)
	before := s.Context().Messages
	require.Equal(t, session.RoleCompactionSummary, before[0].Role)
	last := before[len(before)-1].Text()

	res, err := s.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{KeepRecentTokens: 4})
	require.NoError(t, err)
	c := s.Context()
	assert.Equal(t, session.RoleCompactionSummary, c.Messages[0].Role)
	assert.Equal(t, res.Summary, c.Messages[0].Summary)
	assert.Equal(t, before[0].Summary, res.Plan.PreviousSummary)
	assert.Equal(t, last, c.Messages[len(c.Messages)-1].Text(), "the recent messages stay")
	assert.Less(t, len(c.Messages), len(before)+1)
	want := contextJSON(t, c)
	r := reopenFS(t, s, root)
	assert.Equal(t, want, contextJSON(t, r.Context()))
	log, err := session.DecodeLog(mustRead(t, path), &session.ReadOptions{Strict: true})
	require.NoError(t, err)
	seed, err := r.ContextAt(log.Entries[len(log.Entries)-1].ID())
	require.NoError(t, err)
	assert.Equal(t, want, contextJSON(t, seed), "a seed reader (last entry = leaf) sees the same")
}

// contextsOfEnds returns the context, as JSON, at every entry without
// children, at the leaf and at every labeled entry.
func contextsOfEnds(t *testing.T, s *session.Session) map[string]string {
	t.Helper()
	out := map[string]string{}
	ends := map[string]bool{s.LeafID(): true}
	for _, e := range s.Leaves() {
		ends[e.ID()] = true
	}
	for id := range s.Labels() {
		ends[id] = true
	}
	for id := range ends {
		if id == "" {
			continue
		}
		if _, ok := s.Entry(id); !ok {
			continue
		}
		c, err := s.ContextAt(id)
		require.NoError(t, err)
		out[id] = contextJSON(t, c)
	}
	return out
}

func TestPrune(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/w"})
	require.NoError(t, err)
	for k := range 10 {
		turn(t, s, k, "read", "a.go", 300)
	}
	mid := s.LeafID()
	_, err = s.AppendThinkingLevel(ctx, "high")
	require.NoError(t, err)
	for k := 10; k < 20; k++ {
		turn(t, s, k, "read", "a.go", 300)
	}
	_, err = s.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{KeepRecentTokens: 600})
	require.NoError(t, err)
	turn(t, s, 20, "read", "a.go", 300)
	// A second branch from the middle: what it needs stays.
	leaf := s.LeafID()
	require.NoError(t, s.Branch(ctx, mid))
	turn(t, s, 99, "edit", "b.go", 50)
	require.NoError(t, s.Branch(ctx, leaf))
	// A compaction that keeps only the newest request: the context's
	// model comes from a summarized assistant message, which must stay.
	appendAll(t, s, session.UserText("try another model"), session.AssistantText("switched").WithModel(api, provider, "other-model"),
		session.UserText("and now?"))
	_, err = s.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{KeepRecentTokens: 1})
	require.NoError(t, err)
	require.Equal(t, "other-model", s.Context().Model.ModelID)
	leaf = s.LeafID()

	want := contextsOfEnds(t, s)
	sizeBefore := len(mustRead(t, sessionFile(t, root)))
	res, err := s.Prune(ctx, nil)
	require.NoError(t, err)
	assert.Positive(t, res.Dropped)
	assert.Equal(t, want, contextsOfEnds(t, s), "prune changed a context")
	assert.Equal(t, leaf, s.LeafID())
	assert.Less(t, len(mustRead(t, sessionFile(t, root))), sizeBefore, "the file shrank")

	r := reopenFS(t, s, root)
	assert.Equal(t, want, contextsOfEnds(t, r), "and after a reopen")
	assert.Empty(t, r.Verify())
	res2, err := r.Prune(ctx, nil)
	require.NoError(t, err)
	assert.Zero(t, res2.Dropped, "nothing more to drop")
}

func TestSummarizeBranch(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	turn(t, s, 0, "read", "main.go", 10)
	fork := s.LeafID()
	turn(t, s, 1, "edit", "main.go", 10)
	turn(t, s, 2, "read", "util.go", 10)
	old := s.LeafID()

	rec := &recorder{}
	e, err := s.SummarizeBranch(ctx, fork, rec, nil)
	require.NoError(t, err)
	require.Len(t, rec.reqs, 1)
	assert.Equal(t, session.SummaryBranch, rec.reqs[0].Kind)
	assert.Equal(t, 8, len(rec.reqs[0].Messages), "the two turns left behind, oldest first")
	assert.Equal(t, "request 1 xxxxxxxxxx", rec.reqs[0].Messages[0].Text())
	assert.Equal(t, session.TypeBranchSummary, e.Type())
	assert.Equal(t, e.ID(), s.LeafID())
	var b session.BranchSummary
	require.NoError(t, e.Decode(&b))
	assert.JSONEq(t, `{"readFiles":["util.go"],"modifiedFiles":["main.go"]}`, string(b.Details))
	c := s.Context()
	assert.Equal(t, session.RoleBranchSummary, c.Messages[len(c.Messages)-1].Role)
	assert.Contains(t, c.Messages[len(c.Messages)-1].Summary, "<modified-files>\nmain.go")

	// A tight budget keeps the newest messages.
	rec2 := &recorder{}
	require.NoError(t, s.Branch(ctx, old))
	_, err = s.SummarizeBranch(ctx, fork, rec2, &session.BranchSummaryOptions{TokenBudget: 12})
	require.NoError(t, err)
	assert.Equal(t, "answer 2", rec2.reqs[0].Messages[len(rec2.reqs[0].Messages)-1].Text())
	assert.Less(t, len(rec2.reqs[0].Messages), 8)

	// Moving down leaves nothing behind: a plain branch.
	rec3 := &recorder{}
	require.NoError(t, s.Branch(ctx, fork))
	e3, err := s.SummarizeBranch(ctx, old, rec3, nil)
	require.NoError(t, err)
	assert.Empty(t, rec3.reqs)
	assert.Equal(t, old, e3.ID())
	assert.Equal(t, old, s.LeafID())
}

func TestCheckpointsAndRewind(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := session.Create(ctx, openFS(t, root, nil), &session.CreateOptions{Cwd: "/w"})
	require.NoError(t, err)
	turn(t, s, 0, "read", "a.go", 10)
	cp, err := s.Checkpoint(ctx, "before-refactor")
	require.NoError(t, err)
	n := s.Len()
	again, err := s.Checkpoint(ctx, "before-refactor")
	require.NoError(t, err)
	assert.Equal(t, cp, again)
	assert.Equal(t, n, s.Len(), "the same checkpoint again adds nothing")
	turn(t, s, 1, "edit", "a.go", 10)
	turn(t, s, 2, "edit", "a.go", 10)
	_, err = s.Checkpoint(ctx, "after")
	require.NoError(t, err)

	cps := s.Checkpoints()
	require.Len(t, cps, 2)
	assert.Equal(t, "before-refactor", cps[0].Name)
	assert.Equal(t, "after", cps[1].Name)

	res, err := s.Rewind(ctx, "before-refactor")
	require.NoError(t, err)
	assert.Equal(t, cp.EntryID, s.LeafID())
	assert.Equal(t, 10, res.Left, "two turns and the two labels after them")
	assert.Equal(t, []string{"user:request 0 xxxxxxxxxx", "assistant:working on 0", "toolResult:result 0 xxxxxxxxxx", "assistant:answer 0"}, texts(s.Context().Messages))

	r := reopenFS(t, s, root)
	assert.Equal(t, cp.EntryID, r.LeafID(), "the rewind survives a reopen")
	assert.Len(t, r.Checkpoints(), 2)
	require.NoError(t, r.Branch(ctx, res.From))
	assert.Equal(t, "assistant:answer 2", texts(r.Context().Messages)[11], "redo: nothing was deleted")

	_, err = r.Rewind(ctx, "no such checkpoint")
	assert.ErrorIs(t, err, session.ErrNotFound)
}

func TestFork(t *testing.T) {
	ctx := context.Background()
	src := session.New()
	turn(t, src, 0, "read", "a.go", 10)
	require.NoError(t, src.Label(ctx, leafPath(src)[0].ID(), "start"))
	turn(t, src, 1, "read", "a.go", 10)
	at := src.LeafID()
	turn(t, src, 2, "read", "a.go", 10)
	require.NoError(t, src.SetTitle(ctx, "Refactor"))
	before := contextJSON(t, src.Context())
	srcLen := src.Len()

	for _, store := range []session.Store{src.Store(), openFS(t, filepath.Join(t.TempDir(), "s"), nil)} {
		f, err := src.Fork(ctx, &session.ForkOptions{At: at, Store: store, CopyLabels: true})
		require.NoError(t, err)
		assert.Equal(t, src.ID(), f.Header().ParentSession)
		assert.Equal(t, "Refactor (fork)", f.Title())
		want, err := src.ContextAt(at)
		require.NoError(t, err)
		got := f.Context()
		assert.Equal(t, texts(want.Messages), texts(got.Messages))
		assert.Equal(t, map[string]string{leafPath(src)[0].ID(): "start"}, f.Labels())
		assert.Empty(t, f.Verify())
		r, err := session.Open(ctx, store, f.ID())
		require.NoError(t, err)
		assert.Equal(t, texts(got.Messages), texts(r.Context().Messages))
		children, err := session.ListChildren(ctx, store, src.ID())
		require.NoError(t, err)
		require.Len(t, children, 1)
		assert.Equal(t, f.ID(), children[0].ID)
	}
	assert.Equal(t, before, contextJSON(t, src.Context()), "the source is untouched")
	assert.Equal(t, srcLen, src.Len())

	f, err := src.Fork(ctx, &session.ForkOptions{Title: "Mine"})
	require.NoError(t, err)
	assert.Equal(t, "Mine", f.Title())
	assert.Empty(t, f.Labels())
	assert.Equal(t, texts(src.Context().Messages), texts(f.Context().Messages))
}

// TestRandomOperations runs random sequences of what agents and users do
// (turns with tool calls, aborted turns, branches, compactions, prunes,
// checkpoints and rewinds, forks) on a FileStore, and checks after each
// step that what Messages hands a model pairs every call with its result,
// that prune changes no context, and, every few steps, that every context
// survives a close and reopen.
func TestRandomOperations(t *testing.T) {
	seeds := 12
	steps := 60
	if testing.Short() {
		seeds, steps = 3, 30
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { randomOperations(t, uint64(seed), steps) })
	}
}

func randomOperations(t *testing.T, seed uint64, steps int) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	root := t.TempDir()
	s, err := session.Create(ctx, openFS(t, root, nil), &session.CreateOptions{Cwd: "/w"})
	require.NoError(t, err)
	call := 0
	newCall := func() string { call++; return fmt.Sprintf("call_%d_%d", seed, call) }
	summarizer := session.ExtractiveSummarizer{MaxChars: 300}
	var compactions, dropped, rewinds, forks int
	defer func() {
		t.Logf("%d steps: %d compactions, %d entries pruned, %d rewinds, %d forks; %d entries left", steps, compactions, dropped, rewinds, forks, s.Len())
	}()
	for step := range steps {
		op := r.IntN(100)
		switch {
		case op < 35: // a whole turn, with 0-2 tool calls
			appendAll(t, s, session.UserText(fmt.Sprintf("q%d %s", step, strings.Repeat("w ", r.IntN(200)))))
			var ids []string
			reuse := r.IntN(3) == 0 // some providers number calls per message: ids repeat across turns
			for k := range r.IntN(3) {
				if reuse {
					ids = append(ids, fmt.Sprint("toolu_", k))
				} else {
					ids = append(ids, newCall())
				}
			}
			if len(ids) > 0 {
				appendAll(t, s, callMsg("calling", ids...))
				if r.IntN(3) == 0 { // an extension's message while the tools run
					_, err := s.AppendCustomMessage(ctx, session.CustomMessage("note", strings.Repeat("n ", r.IntN(100)), true))
					require.NoError(t, err)
				}
				for _, id := range ids {
					appendAll(t, s, session.ToolResult(id, "bash", strings.Repeat("out ", r.IntN(100))))
				}
			}
			appendAll(t, s, reply(fmt.Sprintf("a%d", step)))
		case op < 45: // an aborted turn: calls that never get results
			appendAll(t, s, session.UserText(fmt.Sprintf("q%d", step)), callMsg("calling", newCall(), newCall()).WithStopReason(session.StopAborted))
		case op < 55: // branch somewhere
			path := leafPath(s)
			if len(path) > 0 {
				require.NoError(t, s.Branch(ctx, path[r.IntN(len(path))].ID()))
			}
		case op < 65:
			_, err := s.Compact(ctx, summarizer, &session.CompactionOptions{KeepRecentTokens: int64(50 + r.IntN(400))})
			if err != nil {
				require.ErrorIs(t, err, session.ErrNothingToCompact)
			} else {
				compactions++
			}
		case op < 72:
			before := contextsOfEnds(t, s)
			res, err := s.Prune(ctx, nil)
			require.NoError(t, err)
			dropped += res.Dropped
			require.Equal(t, before, contextsOfEnds(t, s), "step %d: prune changed a context", step)
		case op < 80:
			if _, ok := s.Entry(s.LeafID()); ok {
				_, err := s.Checkpoint(ctx, fmt.Sprint("cp", r.IntN(4)))
				if err != nil {
					require.ErrorIs(t, err, session.ErrExists, "the entry has another checkpoint")
				}
			}
		case op < 88:
			if cps := s.Checkpoints(); len(cps) > 0 {
				_, err := s.Rewind(ctx, cps[r.IntN(len(cps))].Name)
				require.NoError(t, err)
				rewinds++
			}
		case op < 94:
			if _, ok := s.Entry(s.LeafID()); ok {
				f, err := s.Fork(ctx, &session.ForkOptions{CopyLabels: r.IntN(2) == 0})
				require.NoError(t, err)
				require.Equal(t, texts(s.Context().Messages), texts(f.Context().Messages), "step %d: the fork has another context", step)
				forks++
			}
		default: // tool results pending at the end, then answered
			ids := []string{newCall()}
			appendAll(t, s, session.UserText("go"), callMsg("calling", ids...))
			checkPairingAllowPending(t, s)
			appendAll(t, s, session.ToolResult(ids[0], "bash", "ok"))
		}
		checkPairingAllowPending(t, s)
		// The seed reconstruction itself: no compaction or prune may cut a
		// result from its call (Messages would hide that by dropping it).
		require.Empty(t, s.Context().Orphans, "step %d: a tool result without its call", step)
		if step%10 == 9 {
			want := contextsOfEnds(t, s)
			s = reopenFS(t, s, root)
			require.Equal(t, want, contextsOfEnds(t, s), "step %d: a context changed with a reopen", step)
		}
	}
}

// checkPairingAllowPending checks Messages: every call answered right
// after its message, no result without its call, except the calls of the
// last message, which the agent is about to run.
func checkPairingAllowPending(t *testing.T, s *session.Session) {
	t.Helper()
	msgs, err := s.Messages(context.Background())
	require.NoError(t, err)
	end := len(msgs)
	if end > 0 && len(msgs[end-1].ToolCalls()) > 0 {
		end-- // pending calls at the very end
	}
	checkPairing(t, msgs[:end])
}

func TestParentID(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"019a2b3c-0000-7000-8000-000000000001", "019a2b3c-0000-7000-8000-000000000001"},
		{"/home/dev/.pi/agent/sessions/--home-dev-project--/2026-01-15T10-02-24-000Z_4af7a0e3-b065-4d95-87d2-7fce1eac13c0.jsonl", "4af7a0e3-b065-4d95-87d2-7fce1eac13c0"},
		{`C:\Users\dev\.pi\sessions\x\2026-01-15T10-02-24-000Z_abc.jsonl`, "abc"},
		{"abc.jsonl", "abc"},
	} {
		assert.Equal(t, tc.want, session.ParentID(tc.in), tc.in)
	}
}

// TestListChildrenOfPiFork: pi names a fork's parent by file path; the
// fork is still listed as the parent's child.
func TestListChildrenOfPiFork(t *testing.T) {
	compattest.Need(t)
	root := t.TempDir()
	copyInto(t, root, "06-createBranchedSession.jsonl")
	children, err := session.ListChildren(context.Background(), openFS(t, root, nil), "4af7a0e3-b065-4d95-87d2-7fce1eac13c0")
	require.NoError(t, err)
	require.Len(t, children, 1)
	assert.Equal(t, "39565b5d-0cb9-4e60-8351-ecc9dbf58144", children[0].ID)
}

// TestCompactionCutPoints: where a compaction cuts, with every message
// counted as 100 tokens. Patterns: u user, b user's bash execution, a
// assistant, c assistant with a tool call, m with three, r the result of
// the oldest unanswered call, x an extension's custom message.
func TestCompactionCutPoints(t *testing.T) {
	hundred := session.TokenEstimatorFunc(func(*session.Message) int64 { return 100 })
	for _, tc := range []struct {
		name    string
		pattern string
		keep    int64
		cut     int  // index of the first kept message; -1: nothing to compact
		split   bool // the cut falls inside a turn
	}{
		{"turn boundary before the budget point, closer", "ucra ucra ucra ucra ucra", 1100, 8, false},
		{"turn boundary after the budget point, closer", "ucra ucra ucra ucra ucra", 900, 12, false},
		{"a tie keeps more", "ucra ucra ucra ucra ucra", 1000, 8, false},
		{"a bash execution starts a turn", "ua ba ua ba", 200, 6, false},
		{"the last turn longer than kept is split after a result", "ua ucrcrcrcrcrcra", 500, 11, true},
		{"a split never starts at a result or between a call and it", "ua ucxrcxrcxra", 250, 9, true},
		{"the results of one message's calls stay with it", "ua umrrra", 300, 3, true},
		{"everything fits", "ucra ucra", 800, -1, false},
		{"one turn, nothing before it", "ucrcrcra", 300, 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := session.New()
			var open []string
			var ids []string
			n := 0
			for _, ch := range strings.ReplaceAll(tc.pattern, " ", "") {
				var e session.Entry
				var err error
				switch ch {
				case 'u':
					e, err = s.Append(ctx, session.UserText("q"))
				case 'b':
					e, err = s.Append(ctx, session.BashExecution("ls", "a.go", 0))
				case 'a':
					e, err = s.Append(ctx, reply("ok"))
				case 'c':
					n++
					id := fmt.Sprint("call", n)
					open = append(open, id)
					e, err = s.Append(ctx, callMsg("calling", id))
				case 'm':
					var calls []string
					for range 3 {
						n++
						calls = append(calls, fmt.Sprint("call", n))
					}
					open = append(open, calls...)
					e, err = s.Append(ctx, callMsg("calling", calls...))
				case 'r':
					e, err = s.Append(ctx, session.ToolResult(open[0], "bash", "out"))
					open = open[1:]
				case 'x':
					e, err = s.AppendCustomMessage(ctx, session.CustomMessage("note", "n", true))
				}
				require.NoError(t, err)
				ids = append(ids, e.ID())
			}
			plan, err := s.PlanCompaction(&session.CompactionOptions{KeepRecentTokens: tc.keep, Estimator: hundred})
			if tc.cut < 0 {
				require.ErrorIs(t, err, session.ErrNothingToCompact)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, ids[tc.cut], plan.FirstKeptEntryID, "cut at message %d", indexOf(ids, plan.FirstKeptEntryID))
			assert.Equal(t, tc.split, plan.SplitTurn)
			assert.Equal(t, tc.cut, len(plan.Summarize)+len(plan.TurnPrefix))
			if tc.split {
				assert.Equal(t, session.RoleUser, plan.TurnPrefix[0].Role, "the prefix is the turn's start")
			}
		})
	}
}

func indexOf(ids []string, id string) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}

// TestContextAfterCompactionDecodes: a session reopened after a
// compaction decodes only the messages its context emits, not the
// summarized history.
func TestContextAfterCompactionDecodes(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := session.Create(ctx, openFS(t, root, nil), &session.CreateOptions{Cwd: "/w"})
	require.NoError(t, err)
	for k := range 300 {
		turn(t, s, k, "read", "a.go", 200)
	}
	_, err = s.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{KeepRecentTokens: 2000})
	require.NoError(t, err)
	want := len(s.Context().Messages)
	require.Less(t, want, 100)

	session.CountDecodes(true)
	defer session.CountDecodes(false)
	before := session.DecodedMessages()
	r := reopenFS(t, s, root)
	c := r.Context()
	assert.Len(t, c.Messages, want)
	assert.Equal(t, int64(want), session.DecodedMessages()-before, "decoded exactly what the context emits")

	// Appending to the compacted session and asking again decodes only
	// the new message.
	before = session.DecodedMessages()
	appendAll(t, r, session.UserText("more"))
	assert.Len(t, r.Context().Messages, want+1)
	assert.LessOrEqual(t, session.DecodedMessages()-before, int64(1))
}

// TestCompactWhileTheSessionMoves: the summarizer runs unlocked. Appends
// made meanwhile stay after the compaction; a leaf moved elsewhere makes
// it fail with ErrConflict and append nothing.
func TestCompactWhileTheSessionMoves(t *testing.T) {
	ctx := context.Background()
	opts := &session.CompactionOptions{KeepRecentTokens: 300}

	s := session.New()
	for k := range 6 {
		turn(t, s, k, "read", "a.go", 400)
	}
	appending := session.SummarizerFunc(func(ctx context.Context, req *session.SummaryRequest) (string, error) {
		appendAll(t, s, session.UserText("asked meanwhile"))
		return "summary", nil
	})
	_, err := s.Compact(ctx, appending, opts)
	require.NoError(t, err)
	msgs := s.Context().Messages
	assert.Equal(t, session.RoleCompactionSummary, msgs[0].Role)
	assert.Equal(t, "asked meanwhile", msgs[len(msgs)-1].Text(), "the append made meanwhile is kept, after the kept history")

	s2 := session.New()
	for k := range 6 {
		turn(t, s2, k, "read", "a.go", 400)
	}
	elsewhere := leafPath(s2)[3].ID()
	moving := session.SummarizerFunc(func(ctx context.Context, req *session.SummaryRequest) (string, error) {
		require.NoError(t, s2.Branch(ctx, elsewhere))
		return "summary", nil
	})
	n := s2.Len()
	_, err = s2.Compact(ctx, moving, opts)
	require.ErrorIs(t, err, session.ErrConflict)
	assert.Equal(t, n+1, s2.Len(), "only the leaf marker of the branch")
	assert.Equal(t, elsewhere, s2.LeafID())
}

func TestDefaultFileOp(t *testing.T) {
	for _, tc := range []struct {
		tool, args string
		want       []session.FileOp
	}{
		{"read", `{"path":"a.go"}`, []session.FileOp{{Path: "a.go"}}},
		{"Edit", `{"file_path":"b.go","old_string":"x"}`, []session.FileOp{{Path: "b.go", Modified: true}}},
		{"write", `{"filePath":"c.go"}`, []session.FileOp{{Path: "c.go", Modified: true}}},
		{"bash", `{"command":"cat a.go"}`, nil},
		{"read", `not json`, nil},
		{"apply_patch", `{"input":"*** Begin Patch\n*** Update File: d.go\n@@\n-x\n+y\n*** Add File: e.go\n+z\n*** Delete File: f.go\n*** End Patch"}`,
			[]session.FileOp{{Path: "d.go", Modified: true}, {Path: "e.go", Modified: true}, {Path: "f.go", Modified: true}}},
	} {
		assert.Equal(t, tc.want, session.DefaultFileOp(tc.tool, json.RawMessage(tc.args)), "%s %s", tc.tool, tc.args)
	}
}

// TestExtractiveSummarizerUpdates: updating its own summary, the offline
// summarizer carries the goal, the requests and the tool counts over,
// the split turn's part included, instead of nesting summaries.
func TestExtractiveSummarizerUpdates(t *testing.T) {
	ctx := context.Background()
	x := session.ExtractiveSummarizer{}
	sum := func(kind session.SummaryKind, prev string, msgs ...*session.Message) string {
		out, err := x.Summarize(ctx, &session.SummaryRequest{Kind: kind, PreviousSummary: prev, Messages: msgs})
		require.NoError(t, err)
		return out
	}
	history := sum(session.SummaryHistory, "", session.UserText("Port the parser"), callMsg("reading", "c1"), session.UserText("Now the tests"), reply("Tests written."))
	prefix := sum(session.SummaryTurnPrefix, "", session.UserText("Fix the flaky test"), callMsg("looking", "c2"))
	prev := history + "\n\n---\n\n**Turn Context (split turn):**\n\n" + prefix + "\n\n<read-files>\na.go\n</read-files>"

	next := sum(session.SummaryHistory, prev, session.UserText("Ship it"), reply("Shipped."))
	assert.Equal(t, "Port the parser", sectionOf(next, "Goal"))
	assert.Contains(t, next, "## Progress\n- Now the tests\n- Fix the flaky test\n- Ship it\n")
	assert.Contains(t, next, "## Tools used\n- bash ×2\n")
	assert.Contains(t, next, "## Last answer\nShipped.")
	assert.NotContains(t, next, "read-files", "file lists are the library's to add")
	assert.Equal(t, 1, strings.Count(next, "summarized without a model"), "no nesting")

	// A model's summary is quoted, and its headings stay inside the quote.
	quoted := sum(session.SummaryHistory, "## Goal\nsomething else\n\nmore", session.UserText("Go on"))
	assert.Contains(t, quoted, "## Earlier summary\n> ## Goal\n> something else\n>\n> more\n")
	assert.Equal(t, "Go on", sectionOf(quoted, "Goal"))

	// Many updates stay bounded.
	s := ""
	for k := range 200 {
		s = sum(session.SummaryHistory, s, session.UserText(fmt.Sprintf("request %d %s", k, strings.Repeat("w ", 50))))
	}
	assert.Less(t, len(s), 4000)
	assert.Contains(t, s, "- … 187 earlier requests\n")
}

// TestExtractiveSummaryCutAnywhere: a summary cut short by its limit,
// wherever the limit falls, reads back as what it shows: updated with
// nothing new, it comes out the same but for the cut's mark. The cut
// falls between lines, so that no piece of a line (a heading's "##…", a
// count's "- … 1…") is taken for a request or an answer, and the "…"
// that marks it is not taken for a section's line (it replaced the goal
// once).
func TestExtractiveSummaryCutAnywhere(t *testing.T) {
	ctx := context.Background()
	msgs := []*session.Message{
		session.UserText("Port the parser " + strings.Repeat("g", 150)),
		callMsg("reading", "c1"),
	}
	for k := range 14 { // more than the summary lists: a count of the earlier ones
		msgs = append(msgs, session.UserText(fmt.Sprintf("request %d", k)))
	}
	msgs = append(msgs, reply("Tests written, "+strings.Repeat("a", 100)))
	for _, tc := range []struct{ prev, focus string }{
		{"", ""},
		{"a model's summary\n\nwith paragraphs\n\n\n", ""},
		{"", "the parser"}, // a last section that is not read back
	} {
		req := session.SummaryRequest{Messages: msgs, PreviousSummary: tc.prev, Instructions: tc.focus}
		full, err := session.ExtractiveSummarizer{MaxChars: 1 << 20}.Summarize(ctx, &req)
		require.NoError(t, err)
		require.Contains(t, full, "- … 2 earlier requests\n")
		for limit := 60; limit <= len(full)+1; limit++ {
			x := session.ExtractiveSummarizer{MaxChars: limit}
			out, err := x.Summarize(ctx, &req)
			require.NoError(t, err)
			require.LessOrEqual(t, len(out), limit)
			again, err := x.Summarize(ctx, &session.SummaryRequest{PreviousSummary: out})
			require.NoError(t, err)
			shown := strings.TrimSuffix(out, "…") // the cut's mark, on a line of its own
			if i := strings.Index(shown, "\n## Focus asked for\n"); i >= 0 {
				shown = shown[:i+1] // the focus is the request's, not carried over
			}
			shown = strings.TrimRight(shown, "\n") + "\n"
			require.Equal(t, shown, again, "limit %d: the summary\n%s\nread back as\n%s", limit, out, again)
		}
	}
}

// TestExtractiveSummaryTinyLimits: any MaxChars, however small, gives a
// summary within it, of valid UTF-8, without a panic.
func TestExtractiveSummaryTinyLimits(t *testing.T) {
	ctx := context.Background()
	msgs := []*session.Message{session.UserText("Port the parser é"), reply("Done é")}
	for _, prev := range []string{"", "a model's summary é", "## Conversation so far (summarized without a model)\n\n## Goal\ngoal é\n"} {
		for limit := 1; limit <= 80; limit++ {
			out, err := session.ExtractiveSummarizer{MaxChars: limit}.Summarize(ctx, &session.SummaryRequest{Messages: msgs, PreviousSummary: prev})
			require.NoError(t, err)
			assert.LessOrEqual(t, len(out), limit)
			assert.True(t, utf8.ValidString(out), "%q", out)
		}
	}
}

// TestCompactionDefaultsScaleToTheWindow: with only ContextWindow set,
// whatever the window, a compaction is possible whenever one is due, and
// brings the context back under the window, turn after turn: the
// defaults scale down for small windows (pi's 16,384 reserved and 20,000
// kept would leave an 8,192-token window nothing to compact).
func TestCompactionDefaultsScaleToTheWindow(t *testing.T) {
	ctx := context.Background()
	for _, window := range []int64{2048, 4096, 8192, 16000, 32000, 128000} {
		t.Run(fmt.Sprint(window), func(t *testing.T) {
			s := session.New()
			opts := &session.CompactionOptions{ContextWindow: window}
			compactions := 0
			for turn := range 400 {
				size := 50 + (turn*37)%(int(window)/8) // turns of varied length, each well under the window
				require.NoError(t, s.SaveTurn(ctx, []*session.Message{
					session.UserText(fmt.Sprintf("question %d %s", turn, strings.Repeat("q", size))),
					reply(fmt.Sprintf("answer %d %s", turn, strings.Repeat("a", size))),
				}, nil))
				if !s.NeedsCompaction(opts) {
					continue
				}
				res, err := s.Compact(ctx, session.ExtractiveSummarizer{}, opts)
				require.NoError(t, err, "turn %d: a compaction is due and must be possible", turn)
				require.False(t, res.Grew)
				require.False(t, s.NeedsCompaction(opts), "turn %d: the context is still over the window after a compaction (%d tokens)", turn, res.TokensAfter)
				compactions++
			}
			require.Positive(t, compactions)
		})
	}
}

// TestCompactionSettingsThatCannotWork: settings with which a compaction
// could never bring the context under the window are refused with a
// clear error, and NeedsCompaction is true for them so the host hears of
// it; a context over the window whose last message alone is too long
// gets ErrNothingToCompact with the sizes.
func TestCompactionSettingsThatCannotWork(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	appendAll(t, s, session.UserText("hello"), reply("hi"))
	for _, o := range []session.CompactionOptions{
		{ContextWindow: 8192, ReserveTokens: 8192},
		{ContextWindow: 8192, ReserveTokens: 1000, KeepRecentTokens: 7192},
		{ContextWindow: 32000, KeepRecentTokens: 40000},
	} {
		assert.True(t, s.NeedsCompaction(&o), "%+v", o)
		_, err := s.Compact(ctx, session.ExtractiveSummarizer{}, &o)
		assert.ErrorIs(t, err, session.ErrCompactionSettings, "%+v", o)
		_, err = s.PlanCompaction(&o)
		assert.ErrorIs(t, err, session.ErrCompactionSettings, "%+v", o)
	}
	big := session.New()
	appendAll(t, big, session.UserText(strings.Repeat("x", 40000)))
	opts := &session.CompactionOptions{ContextWindow: 8192}
	require.True(t, big.NeedsCompaction(opts))
	_, err := big.Compact(ctx, session.ExtractiveSummarizer{}, opts)
	require.ErrorIs(t, err, session.ErrNothingToCompact)
	assert.Contains(t, err.Error(), "over the")
}

// TestCompactionNeverGrowsQuietly: a summarizer that writes more than it
// was given makes a compaction for a window fail (not applied); without
// a window it is applied and says it grew.
func TestCompactionNeverGrowsQuietly(t *testing.T) {
	ctx := context.Background()
	verbose := session.SummarizerFunc(func(context.Context, *session.SummaryRequest) (string, error) {
		return strings.Repeat("very long summary ", 2000), nil
	})
	s := session.New()
	for i := range 40 {
		appendAll(t, s, session.UserText(fmt.Sprintf("q%d %s", i, strings.Repeat("q", 400))), reply("a"))
	}
	before := s.Len()
	opts := &session.CompactionOptions{ContextWindow: 3000, KeepRecentTokens: 200}
	require.True(t, s.NeedsCompaction(opts))
	_, err := s.Compact(ctx, verbose, opts)
	require.ErrorIs(t, err, session.ErrCompactionDoesNotFit)
	assert.Equal(t, before, s.Len(), "nothing appended")
	res, err := s.Compact(ctx, verbose, &session.CompactionOptions{KeepRecentTokens: 200})
	require.NoError(t, err)
	assert.True(t, res.Grew)
}

// TestCompactionBringsTheContextUnderTheWindow: turns with tool outputs
// of every size, some alone larger than the window: whenever
// NeedsCompaction is true, Compact either brings the context under the
// window or fails with ErrNothingToCompact or ErrCompactionDoesNotFit;
// it never returns success with the context still over.
func TestCompactionBringsTheContextUnderTheWindow(t *testing.T) {
	ctx := context.Background()
	for _, window := range []int64{4096, 8192, 32000} {
		t.Run(fmt.Sprint(window), func(t *testing.T) {
			s := session.New()
			opts := &session.CompactionOptions{ContextWindow: window}
			r := rand.New(rand.NewPCG(uint64(window), 7))
			refused, done := 0, 0
			for turn := range 120 {
				call := fmt.Sprintf("call_%d", turn)
				out := strings.Repeat("o", r.IntN(int(window)*3)) // up to three quarters of the window, in tokens
				if r.IntN(8) == 0 {
					out = strings.Repeat("O", int(window)*5) // now and then one over it
				}
				require.NoError(t, s.SaveTurn(ctx, []*session.Message{
					session.UserText(fmt.Sprintf("step %d", turn)),
					session.Assistant(session.ToolCall(call, "read", []byte(`{}`))),
					session.ToolResult(call, "read", out),
					reply(fmt.Sprintf("done %d", turn)),
				}, nil))
				if !s.NeedsCompaction(opts) {
					continue
				}
				_, err := s.Compact(ctx, session.ExtractiveSummarizer{}, opts)
				if err != nil {
					require.True(t, errors.Is(err, session.ErrNothingToCompact) || errors.Is(err, session.ErrCompactionDoesNotFit), "turn %d: %v", turn, err)
					refused++
					continue
				}
				require.False(t, s.NeedsCompaction(opts), "turn %d: Compact returned nil with the context still over the window", turn)
				done++
			}
			require.Positive(t, done)
			t.Logf("%d compactions, %d refused (the latest turn alone too long)", done, refused)
		})
	}
}
