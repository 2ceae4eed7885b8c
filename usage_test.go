package session_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// sumUsage adds up the usage of the assistant messages among entries,
// decoding each: what Usage and UsageAt must agree with.
func sumUsage(t *testing.T, entries []session.Entry) session.Usage {
	t.Helper()
	var u session.Usage
	for _, e := range entries {
		if e.Type() != session.TypeMessage {
			continue
		}
		m, err := e.Message()
		require.NoError(t, err)
		if m.Role == session.RoleAssistant && m.Usage != nil {
			u = u.Add(*m.Usage)
		}
	}
	return u
}

// TestUsageTotals runs random appends, branch moves, compactions and
// reopens on a FileStore session and checks the cached session and branch
// totals against sums computed from scratch after every step.
func TestUsageTotals(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			store, err := session.OpenFileStore(t.TempDir(), nil)
			require.NoError(t, err)
			defer store.Close()
			s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/p"})
			require.NoError(t, err)
			defer func() { s.Close() }()
			var ids []string
			for step := range 200 {
				u := session.Usage{Input: int64(step), Output: 2, CacheRead: 3, TotalTokens: int64(step) + 5, Cost: session.Cost{Total: 0.25},
					ReasoningTokens: 1, CacheTTL: session.CacheTTL{Ephemeral1h: 2}, Server: session.ServerToolUse{WebSearch: 1}}
				var e session.Entry
				switch op := r.IntN(100); {
				case op < 30:
					e, err = s.Append(ctx, session.UserText(fmt.Sprint("u", step)))
				case op < 55:
					e, err = s.Append(ctx, reply(fmt.Sprint("a", step)).WithUsage(u))
				case op < 65:
					// SaveTurn puts its usage on the turn's last assistant message.
					err = s.SaveTurn(ctx, []*session.Message{session.UserText("q"), reply("r")}, &u)
				case op < 72:
					_, err = s.Append(ctx, reply("no usage"))
				case op < 82 && len(ids) > 0:
					err = s.Branch(ctx, ids[r.IntN(len(ids))])
				case op < 85:
					err = s.Branch(ctx, "")
				case op < 90 && len(ids) > 0:
					path := leafPath(s)
					if len(path) > 0 {
						e, err = s.AppendCompaction(ctx, session.Compaction{Summary: "s", FirstKeptEntryID: path[len(path)/2].ID()})
					}
				case op < 95:
					// Another handle appends; this one learns of it by a
					// Reload or by a conflicting append that retries.
					other, oerr := session.Open(ctx, store, s.ID())
					require.NoError(t, oerr)
					require.NoError(t, other.SaveTurn(ctx, []*session.Message{session.UserText("o"), reply("p")}, &u))
					require.NoError(t, other.Close())
					if r.IntN(2) == 0 {
						err = s.Reload(ctx)
					} else {
						_, err = s.Append(ctx, reply("after a conflict").WithUsage(u))
					}
				default:
					// Close and reopen: the totals are rebuilt from the file.
					require.NoError(t, s.Close())
					s, err = session.Open(ctx, store, s.ID())
				}
				require.NoError(t, err, "step %d", step)
				if !e.IsZero() {
					ids = append(ids, e.ID())
				}
				all := slices.Collect(s.Entries())
				require.Equal(t, sumUsage(t, all), s.Usage(), "step %d: session total", step)
				if step%3 == 0 { // also let appends run on a stale branch total
					branch, err := s.UsageAt(s.LeafID())
					require.NoError(t, err)
					require.Equal(t, sumUsage(t, leafPath(s)), branch, "step %d: branch total", step)
				}
				if len(ids) > 0 {
					id := ids[r.IntN(len(ids))]
					path, err := s.PathTo(id)
					require.NoError(t, err)
					at, err := s.UsageAt(id)
					require.NoError(t, err)
					require.Equal(t, sumUsage(t, path), at, "step %d: usage at %s", step, id)
				}
			}
			assert.NotZero(t, s.Usage().Input)
		})
	}
}

func TestUsageAtUnknown(t *testing.T) {
	_, err := session.New().UsageAt("nope")
	require.ErrorIs(t, err, session.ErrNotFound)
}

// An agent appends its new turn to what Messages returned; that must not
// write into the session's own list.
func TestAppendToMessagesIsSafe(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	for i := range 20 {
		require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText(fmt.Sprint("q", i)), reply("a")}, nil))
		msgs, err := s.Messages(ctx)
		require.NoError(t, err)
		require.Equal(t, len(msgs), cap(msgs))
		_ = append(msgs, session.UserText("not saved"))
	}
	msgs, err := s.Messages(ctx)
	require.NoError(t, err)
	for _, m := range msgs {
		require.NotEqual(t, "not saved", m.Text())
	}
	require.Len(t, msgs, 40)
}
