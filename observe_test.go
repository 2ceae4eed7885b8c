package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/storetest"
)

// The wrapper is a Store like any other.
func TestObservedStoreConformance(t *testing.T) {
	nop := session.ObserverFunc(func(context.Context, session.Event) {})
	t.Run("memory", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) session.Store { return session.Observe(session.NewMemoryStore(), nop) })
	})
	t.Run("file", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) session.Store {
			fs, err := session.OpenFileStore(t.TempDir(), nil)
			require.NoError(t, err)
			t.Cleanup(func() { fs.Close() })
			return session.Observe(fs, nop)
		})
	})
}

// eventLog keeps the events it receives.
type eventLog struct {
	mu     sync.Mutex
	events []session.Event
}

func (r *eventLog) Observe(_ context.Context, e session.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// take returns the events since the last call, as "op entries" strings
// ("op !" for a failure), and checks what every event must hold.
func (r *eventLog) take(t *testing.T) []string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		require.NotEmpty(t, e.Session, "%+v", e)
		require.GreaterOrEqual(t, int64(e.Duration), int64(0), "%+v", e)
		s := string(e.Op) + " " + itoa(e.Entries)
		if e.Err != nil {
			s = string(e.Op) + " !"
		}
		if e.Op == session.OpAppend || e.Op == session.OpRewrite {
			require.Positive(t, e.Bytes, "%+v", e)
		}
		out = append(out, s)
	}
	r.events = nil
	return out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestObserverEvents(t *testing.T) {
	ctx := context.Background()
	rec := &eventLog{}
	fs, err := session.OpenFileStore(t.TempDir(), nil)
	require.NoError(t, err)
	defer fs.Close()
	store := session.Observe(fs, rec)
	assert.Same(t, fs, store.Unwrap())

	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/p"})
	require.NoError(t, err)
	assert.Equal(t, []string{"create 0"}, rec.take(t))

	require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText("a"), reply("b"), session.UserText("c"), reply("d")}, nil))
	assert.Equal(t, []string{"append 4"}, rec.take(t))
	path := leafPath(s)

	steps := []struct {
		name string
		do   func() error
		want []string
	}{
		{"branch back two", func() error { return s.Branch(ctx, path[1].ID()) }, []string{"append 1", "branch 2"}},
		{"branch to the same place", func() error { return s.Branch(ctx, path[1].ID()) }, []string{"branch 0"}},
		{"branch to nowhere", func() error { return s.Branch(ctx, "nope") }, []string{"branch !"}},
		{"rewind", func() error {
			_, err := s.Rewind(ctx, path[0].ID())
			return err
		}, []string{"append 1", "rewind 1"}},
		{"rewind to nowhere", func() error {
			_, err := s.Rewind(ctx, "nope")
			return err
		}, []string{"rewind !"}},
		{"branch with summary", func() error {
			_, err := s.BranchWithSummary(ctx, "", "x", nil)
			return err
		}, []string{"append 1", "branch 1"}},
		{"reset", func() error { return s.Branch(ctx, "") }, []string{"append 1", "branch 1"}},
		{"summarize branch", func() error {
			if err := s.Branch(ctx, path[3].ID()); err != nil {
				return err
			}
			rec.take(t)
			_, err := s.SummarizeBranch(ctx, path[1].ID(), session.ExtractiveSummarizer{}, nil)
			return err
		}, []string{"append 1", "branch 2"}},
		{"compact", func() error {
			require.NoError(t, s.Branch(ctx, path[3].ID()))
			for range 20 {
				require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText(strings.Repeat("q ", 400)), reply(strings.Repeat("r ", 400))}, nil))
			}
			rec.take(t)
			_, err := s.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{KeepRecentTokens: 500})
			return err
		}, []string{"append 1", "compact 42"}},
		{"compact with a failing summarizer", func() error {
			_, err := s.Compact(ctx, session.SummarizerFunc(func(context.Context, *session.SummaryRequest) (string, error) {
				return "", errors.New("model down")
			}), &session.CompactionOptions{KeepRecentTokens: 100})
			return err
		}, []string{"compact !"}},
		{"fork", func() error {
			f, err := s.Fork(ctx, nil)
			if err == nil {
				err = f.Close()
			}
			return err
		}, []string{"create 45", "fork 45"}}, // the fork is created with its entries in one step (EntryCreator)
		{"reopen", func() error {
			require.NoError(t, s.Close())
			s, err = session.Open(ctx, store, s.ID())
			return err
		}, []string{"load 52"}},
		{"prune", func() error {
			_, err := s.Prune(ctx, nil)
			return err
		}, []string{"rewrite 14"}},
		{"delete", func() error { return store.Delete(ctx, s.ID()) }, []string{"delete 0"}},
		{"delete again", func() error { return store.Delete(ctx, s.ID()) }, []string{"delete !"}},
	}
	for _, st := range steps {
		err := st.do()
		if strings.HasSuffix(st.want[len(st.want)-1], "!") {
			require.Error(t, err, st.name)
		} else {
			require.NoError(t, err, st.name)
		}
		assert.Equal(t, st.want, rec.take(t), st.name)
	}
}

func TestObserverForkEvent(t *testing.T) {
	ctx := context.Background()
	var got []session.Event
	store := session.Observe(session.NewMemoryStore(), session.ObserverFunc(func(_ context.Context, e session.Event) {
		if e.Op == session.OpFork {
			got = append(got, e)
		}
	}))
	s, err := session.Create(ctx, store, nil)
	require.NoError(t, err)
	require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText("a"), reply("b")}, nil))
	f, err := s.Fork(ctx, nil)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, s.ID(), got[0].Session)
	assert.Equal(t, f.ID(), got[0].Fork)
	assert.Equal(t, 2, got[0].Entries)
}

func TestSlogObserver(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	store := session.Observe(session.NewMemoryStore(), session.SlogObserver(l))
	s, err := session.Create(ctx, store, nil)
	require.NoError(t, err)
	require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText("a"), reply("b")}, nil)) // Debug: not logged
	first, _ := s.Entry(leafPath(s)[0].ID())
	require.NoError(t, s.Branch(ctx, first.ID()))
	require.Error(t, s.Branch(ctx, "nope"))

	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		recs = append(recs, m)
	}
	require.Len(t, recs, 3, buf.String())
	assert.Equal(t, "session create", recs[0]["msg"])
	assert.Equal(t, "INFO", recs[0]["level"])
	assert.Equal(t, s.ID(), recs[0]["session"])
	assert.Equal(t, "session branch", recs[1]["msg"])
	assert.EqualValues(t, 1, recs[1]["entries"])
	assert.Contains(t, recs[1], "duration")
	assert.Equal(t, "ERROR", recs[2]["level"])
	assert.Contains(t, recs[2]["err"], "not found")
}

// An unobserved session measures nothing: its operations allocate no
// more than before observers existed (the nil check is all they pay).
func TestNoObserverNoAllocations(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText("a"), reply("b")}, nil))
	id := leafPath(s)[1].ID()
	allocs := testing.AllocsPerRun(100, func() {
		if err := s.Branch(ctx, id); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "Branch to the leaf on an unobserved session")
}
