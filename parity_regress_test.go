package session_test

// Regression tests of the seed-parity features (deferred sessions,
// ReplacePathSegment, ReplayLastTurn, the message-count trigger, forks
// with checkpoints), from an independent review: each failed before its
// fix.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// lostAnswerStore: CreateWithEntries succeeds but the caller is told it
// failed, once (a database commit whose answer is lost).
type lostAnswerStore struct {
	*session.MemoryStore
	lose int
}

var errLost = errors.New("connection reset")

func (l *lostAnswerStore) CreateWithEntries(ctx context.Context, h session.Header, es []session.Entry) error {
	err := l.MemoryStore.CreateWithEntries(ctx, h, es)
	if err == nil && l.lose > 0 {
		l.lose--
		return errLost
	}
	return err
}

func TestDeferredRetryOfALandedPersist(t *testing.T) {
	ctx := context.Background()
	st := &lostAnswerStore{MemoryStore: session.NewMemoryStore(), lose: 1}
	s, err := session.Create(ctx, st, &session.CreateOptions{ID: "d1", Deferred: true})
	require.NoError(t, err)
	_, err = s.Append(ctx, session.UserText("hi"))
	require.NoError(t, err)
	turn := []*session.Message{reply("hello")}
	require.Error(t, s.SaveTurn(ctx, turn, nil)) // landed, answer lost
	// The documented retry: "found out on the next try".
	err = s.SaveTurn(ctx, turn, nil)
	require.NoError(t, err, "the retry of a deferred persist that landed")
	require.True(t, s.Persisted())
}

func TestDeferredOtherCallAfterALandedPersist(t *testing.T) {
	ctx := context.Background()
	st := &lostAnswerStore{MemoryStore: session.NewMemoryStore(), lose: 1}
	s, err := session.Create(ctx, st, &session.CreateOptions{ID: "d2", Deferred: true})
	require.NoError(t, err)
	_, err = s.Append(ctx, session.UserText("hi"))
	require.NoError(t, err)
	require.Error(t, s.SaveTurn(ctx, []*session.Message{reply("hello")}, nil)) // landed
	// The host moves on: the user asks something else.
	_, err = s.Append(ctx, session.UserText("still there?"))
	require.NoError(t, err) // accepted, kept in the handle only
	err = s.SaveTurn(ctx, []*session.Message{reply("yes")}, nil)
	require.NoError(t, err, "every later reply fails: the handle can never persist")
}

// Two workers OpenOrCreate the same id, deferred: both are told they
// created it; the second to get a reply can never write its session.
func TestDeferredOpenOrCreateRace(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemoryStore()
	a, ca, err := session.OpenOrCreate(ctx, st, &session.CreateOptions{ID: "chat-42", Deferred: true})
	require.NoError(t, err)
	b, cb, err := session.OpenOrCreate(ctx, st, &session.CreateOptions{ID: "chat-42", Deferred: true})
	require.NoError(t, err)
	t.Logf("created: a=%v b=%v", ca, cb)
	require.NoError(t, a.SaveTurn(ctx, []*session.Message{session.UserText("qa"), reply("ra")}, nil))
	err = b.SaveTurn(ctx, []*session.Message{session.UserText("qb"), reply("rb")}, nil)
	require.NoError(t, err, "B's turn is refused, and every later one too")
	// Both turns are in the session, B's a branch of its own, as two
	// writers of one session end up; B's handle holds A's turn too.
	l, err := st.Load(ctx, "chat-42")
	require.NoError(t, err)
	assert.Len(t, l.Entries, 4)
	assert.Equal(t, 4, b.Len())
	assert.Equal(t, []string{"user:qb", "assistant:rb"}, texts(b.Context().Messages))
	require.NoError(t, b.SaveTurn(ctx, []*session.Message{session.UserText("qb2"), reply("rb2")}, nil))
	require.NoError(t, a.Reload(ctx))
	assert.Equal(t, 6, a.Len())
}

// plainStore has no EntryCreator: a host's own Store.
type plainStore struct {
	session.Store
	afterCreate func(id string)
}

func (p *plainStore) Create(ctx context.Context, h session.Header) error {
	err := p.Store.Create(ctx, h)
	if err == nil && p.afterCreate != nil {
		f := p.afterCreate
		p.afterCreate = nil
		f(h.ID)
	}
	return err
}

// Two processes OpenOrCreate the same id, deferred. B's reply lands in
// the window between A's Create and A's Append; A's append is refused
// (IfEmpty) and createWithEntries deletes the session with B's turn.
func TestCreateFallbackKeepsAnotherWritersTurn(t *testing.T) {
	ctx := context.Background()
	st := &plainStore{Store: session.NewMemoryStore()}
	a, created, err := session.OpenOrCreate(ctx, st, &session.CreateOptions{ID: "shared", Deferred: true})
	require.NoError(t, err)
	require.True(t, created)
	_, err = a.Append(ctx, session.UserText("from A"))
	require.NoError(t, err)
	st.afterCreate = func(id string) {
		b, err := session.Open(ctx, &plainStore{Store: st.Store}, id) // another process finds the session A just created
		require.NoError(t, err)
		require.NoError(t, b.SaveTurn(ctx, []*session.Message{session.UserText("from B"), reply("B's answer")}, nil))
	}
	err = a.SaveTurn(ctx, []*session.Message{reply("A's answer")}, nil)
	t.Logf("A's persist: %v", err)
	_, lerr := st.Load(ctx, "shared")
	require.NoError(t, lerr, "B's acknowledged turn was deleted by A's cleanup")
	// A's retry of its turn goes after B's, a branch of its own.
	require.NoError(t, a.SaveTurn(ctx, []*session.Message{reply("A's answer")}, nil))
	l, err := st.Load(ctx, "shared")
	require.NoError(t, err)
	assert.Len(t, l.Entries, 4, "B's turn, then A's prompt and answer")
	assert.Equal(t, []string{"user:from A", "assistant:A's answer"}, texts(a.Context().Messages))
}

// A message-count compaction where the token rule picks the boundary
// before the reach point: it keeps more than KeepRecentMessages and the
// context is due again right after the compaction.
func TestCountCompactionKeepsAtMostKeepRecentMessages(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	appendAll(t, s,
		session.UserText("u0"), reply("a1"),
		session.UserText("u2"), reply("a3"), reply("a4"), reply("a5"), reply("a6"), reply("a7"),
		reply(strings.Repeat("x", 5600)), // ~1400 tokens
		session.UserText("u9"), reply("a10"), session.UserText("u11"))
	o := session.CompactionOptions{MaxMessages: 10, KeepRecentMessages: 5, KeepRecentTokens: 1000}
	require.True(t, s.NeedsCompaction(&o))
	_, err := s.Compact(ctx, session.ExtractiveSummarizer{}, &o)
	require.NoError(t, err)
	kept := len(s.Context().Messages) - 1
	require.LessOrEqual(t, kept, o.KeepRecentMessages, "KeepRecentMessages is 'at most'")
	require.False(t, s.NeedsCompaction(&o), "due again right after a compaction")
}

func TestForkCopyLabelsKeepsCheckpointMetadata(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	appendAll(t, s, session.UserText("q"), reply("a"))
	cp, err := s.CheckpointWith(ctx, "asked", &session.CheckpointOptions{Metadata: map[string]string{"commit": "abc123"}})
	require.NoError(t, err)
	require.JSONEq(t, `{"commit":"abc123"}`, string(cp.Metadata))
	f, err := s.Fork(ctx, &session.ForkOptions{CopyLabels: true})
	require.NoError(t, err)
	cps := f.Checkpoints()
	require.Len(t, cps, 1)
	require.JSONEq(t, `{"commit":"abc123"}`, string(cps[0].Metadata), "the fork's checkpoint lost its metadata")
}

// The host retries a ReplacePathSegment whose answer was lost; the tail
// holds a label of an entry before the run (a checkpoint set late).
func TestReplacePathSegmentRetryWithASkippedLabel(t *testing.T) {
	ctx := context.Background()
	st := &flaky{Store: session.NewMemoryStore()}
	s, err := session.Create(ctx, st, nil)
	require.NoError(t, err)
	es := segmentSession(t, s)                            // u1 a1 u2 a2 r a3 u3 a4
	require.NoError(t, s.Label(ctx, es[0].ID(), "start")) // label in the tail, of an earlier entry
	_, err = s.Append(ctx, session.UserText("u4"))
	require.NoError(t, err)
	n := s.Len()

	rep := session.SegmentReplacement{Summary: "the read"}
	st.armed, st.lost = 1, true
	_, err = s.ReplacePathSegment(ctx, es[2].ID(), es[5].ID(), rep)
	require.Error(t, err)
	edit, err := s.ReplacePathSegment(ctx, es[2].ID(), es[5].ID(), rep) // the retry
	require.NoError(t, err)
	// summary + u3 a4 u4 (the label is skipped) = 4 entries, once.
	require.Equal(t, n+4, s.Len(), "the edit was stored twice (added %d)", len(edit.Added))
	l, err := st.Load(ctx, s.ID())
	require.NoError(t, err)
	require.Len(t, l.Entries, n+4)
}

// A compaction after the run keeps history from an entry that
// ReplacePathSegment does not copy (a title, as pi may name one):
// the copy of the compaction keeps from an entry off the new path, and
// the kept history disappears from the context. Fork handles this case.
func TestReplacePathSegmentCompactionKeptFromASkippedEntry(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	es := appendAll(t, s, session.UserText("u1"), reply("a1"), session.UserText("u2"), reply("a2"))
	require.NoError(t, s.SetTitle(ctx, "titled"))
	title := s.LeafID()
	appendAll(t, s, session.UserText("u3"), reply("a3"))
	_, err := s.AppendCompaction(ctx, session.Compaction{Summary: "sum", FirstKeptEntryID: title, TokensBefore: 10})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("u4"), reply("a4"))
	before := texts(s.Context().Messages)
	t.Logf("before: %v", before)

	_, err = s.ReplacePathSegment(ctx, es[0].ID(), es[0].ID(), session.SegmentReplacement{Messages: []*session.Message{session.UserText("u1 edited")}})
	require.NoError(t, err)
	after := texts(s.Context().Messages)
	t.Logf("after:  %v", after)
	require.Equal(t, before, after, "the edit was before the compaction: the context after it must not change")
}

// The usual auto-compaction: at the end of a turn, after the reply. A
// replay of that turn rewinds before the compaction: the context is the
// whole uncompacted history again.
func TestReplayLastTurnKeepsTheCompaction(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	for k := range 30 {
		appendAll(t, s, session.UserText(fmt.Sprintf("q%d", k)), reply(fmt.Sprintf("a%d", k)))
	}
	o := session.CompactionOptions{MaxMessages: 40}
	require.True(t, s.NeedsCompaction(&o))
	_, err := s.Compact(ctx, session.ExtractiveSummarizer{}, &o)
	require.NoError(t, err)
	n := len(s.Context().Messages)
	require.False(t, s.NeedsCompaction(&o))

	_, err = s.ReplayLastTurn(ctx)
	require.NoError(t, err)
	c := s.Context()
	t.Logf("context: %d messages after the compaction, %d after the replay", n, len(c.Messages))
	require.False(t, s.NeedsCompaction(&o), "the replay undid the compaction: %d messages, first %s", len(c.Messages), c.Messages[0].Role)
	assert.Equal(t, session.RoleCompactionSummary, c.Messages[0].Role)
	assert.Equal(t, "user:q29", texts(c.Messages)[len(c.Messages)-1], "the context ends with the replayed message")
	assert.Equal(t, n-1, len(c.Messages), "the same compacted context, without the reply")
	r := reopen(t, s)
	assert.Equal(t, texts(c.Messages), texts(r.Context().Messages))
}
