package session_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/storetest"
)

// flaky is a store whose armed appends fail: before writing anything
// (lost is false: a refused write) or after (lost is true: the answer
// of a write that happened is lost).
type flaky struct {
	session.Store
	armed int
	lost  bool
}

var errDown = errors.New("flaky: the store went away")

func (f *flaky) Append(ctx context.Context, id string, opts session.AppendOptions, entries ...session.Entry) error {
	if f.armed == 0 {
		return f.Store.Append(ctx, id, opts, entries...)
	}
	f.armed--
	if !f.lost {
		return errDown
	}
	if err := f.Store.Append(ctx, id, opts, entries...); err != nil {
		return err
	}
	return errDown
}

// retryStores are the stores the retry tests run on: each FileStore
// policy, since SyncNever gathers appends the retry must find.
func retryStores(t *testing.T) map[string]func() session.Store {
	return map[string]func() session.Store{
		"memory": func() session.Store { return session.NewMemoryStore() },
		"file every": func() session.Store {
			return openFS(t, t.TempDir(), &session.FileStoreOptions{Sync: session.SyncEveryAppend})
		},
		"file never": func() session.Store {
			return openFS(t, t.TempDir(), &session.FileStoreOptions{Sync: session.SyncNever})
		},
	}
}

// TestRetriedWrites: whatever the host does after a write whose outcome
// it could not know, each turn is stored once, and the handle, a
// reopened one and the store agree.
func TestRetriedWrites(t *testing.T) {
	ctx := context.Background()
	turn := func() []*session.Message { // Timestamps left for the write to set
		return []*session.Message{session.UserText("run it"), reply("ran")}
	}
	cases := []struct {
		name  string
		lost  bool                                                   // the first attempt was written
		after func(t *testing.T, s *session.Session) error           // what the host does next
		want  []string                                               // the texts of the context at the end
		check func(t *testing.T, s *session.Session, l *session.Log) // more
	}{
		{"retry after a lost answer", true, func(t *testing.T, s *session.Session) error {
			return s.SaveTurn(ctx, turn(), nil)
		}, []string{"hi", "run it", "ran"}, nil},
		{"retry after a refused write", false, func(t *testing.T, s *session.Session) error {
			return s.SaveTurn(ctx, turn(), nil)
		}, []string{"hi", "run it", "ran"}, nil},
		{"reload, then retry", true, func(t *testing.T, s *session.Session) error {
			if err := s.Reload(ctx); err != nil {
				return err
			}
			if n := len(s.Context().Messages); n != 3 {
				t.Fatalf("after Reload the handle's context has %d messages: the turn that happened is not taken in", n)
			}
			return s.SaveTurn(ctx, turn(), nil)
		}, []string{"hi", "run it", "ran"}, nil},
		{"another call after a lost answer", true, func(t *testing.T, s *session.Session) error {
			_, err := s.Append(ctx, session.UserText("next"))
			return err
		}, []string{"hi", "run it", "ran", "next"}, nil},
		{"another call after a refused write", false, func(t *testing.T, s *session.Session) error {
			_, err := s.Append(ctx, session.UserText("next"))
			return err
		}, []string{"hi", "next"}, nil},
		{"changed retry", true, func(t *testing.T, s *session.Session) error {
			m := turn()
			m[1] = reply("ran again")
			return s.SaveTurn(ctx, m, nil)
		}, []string{"hi", "run it", "ran", "run it", "ran again"}, nil},
		{"retry twice", true, func(t *testing.T, s *session.Session) error {
			if err := s.SaveTurn(ctx, turn(), nil); err != nil {
				return err
			}
			_, err := s.Append(ctx, session.UserText("next"))
			return err
		}, []string{"hi", "run it", "ran", "next"}, nil},
	}
	for sname, newStore := range retryStores(t) {
		for _, c := range cases {
			t.Run(sname+"/"+c.name, func(t *testing.T) {
				inner := newStore()
				f := &flaky{Store: inner, lost: c.lost}
				s, err := session.Create(ctx, f, &session.CreateOptions{ID: "s-retry"})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Append(ctx, session.UserText("hi")); err != nil {
					t.Fatal(err)
				}
				f.armed = 1
				if err := s.SaveTurn(ctx, turn(), nil); !errors.Is(err, errDown) {
					t.Fatalf("first attempt: %v", err)
				}
				if err := c.after(t, s); err != nil {
					t.Fatal(err)
				}
				if err := s.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				got := plainTexts(s.Context().Messages)
				if !slices.Equal(got, c.want) {
					t.Fatalf("handle's context %q, want %q", got, c.want)
				}
				leaf := s.LeafID()
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				re, err := session.Open(ctx, inner, "s-retry")
				if err != nil {
					t.Fatal(err)
				}
				if got := plainTexts(re.Context().Messages); !slices.Equal(got, c.want) || re.LeafID() != leaf {
					t.Fatalf("reopened: context %q leaf %s, want %q leaf %s", got, re.LeafID(), c.want, leaf)
				}
				if n := len(re.Leaves()); n != 1 && c.name != "changed retry" {
					t.Fatalf("%d leaves: a turn was stored twice", n)
				}
				if n := len(re.Leaves()); c.name == "changed retry" && n != 1 {
					t.Fatalf("%d leaves after a changed retry", n)
				}
			})
		}
	}
}

func plainTexts(ms []*session.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Text())
	}
	return out
}

// TestRetriedAppendOfMarkedLines: a retried append is found in a file
// whatever its lines carry (the markers of an append of several entries,
// images moved to the blob store).
func TestRetriedAppendOfMarkedLines(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, &session.FileStoreOptions{BlobDir: t.TempDir()})
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-marked"})
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, s, session.UserText("first"))
	img := session.UserText("look")
	img.Content = append(img.Content, session.Image("image/png", make([]byte, 8<<10)))
	if err := s.SaveTurn(ctx, []*session.Message{img, reply("seen"), session.UserText("more")}, nil); err != nil {
		t.Fatal(err)
	}
	l, err := store.Load(ctx, "s-marked")
	if err != nil {
		t.Fatal(err)
	}
	turn := l.Entries[1:]
	for _, opts := range []session.AppendOptions{{IfLast: l.Entries[0].ID()}, {}, {IfEmpty: true}} {
		if err := store.Append(ctx, "s-marked", opts, turn...); err != nil {
			t.Fatalf("retry with %+v: %v", opts, err)
		}
	}
	if err := store.Append(ctx, "s-marked", session.AppendOptions{}, turn[1:2]...); err != nil {
		t.Fatalf("retry of the middle of an append: %v", err)
	}
	again, err := store.Load(ctx, "s-marked")
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Entries) != 4 {
		t.Fatalf("%d entries after retries, want 4", len(again.Entries))
	}
}

// TestLostReplyStoreConformance runs the storetest suite through the
// suite's own lost-reply wrapper, unarmed: it must be a Store like any.
func TestLostReplyStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) session.Store { return &storetest.LostReply{Store: session.NewMemoryStore()} })
}

// TestRetriedToolResultTurn: the most common turn, a tool's result and
// the reply after it, retried after its answer was lost, with and
// without a Reload in between (which takes the turn in and moves the
// leaf past the call it answers): stored once, never refused as
// unpaired.
func TestRetriedToolResultTurn(t *testing.T) {
	ctx := context.Background()
	turn := func() []*session.Message {
		return []*session.Message{session.ToolResult("c1", "read", "contents"), reply("done")}
	}
	for sname, newStore := range retryStores(t) {
		for _, reload := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reload=%v", sname, reload), func(t *testing.T) {
				inner := newStore()
				f := &flaky{Store: inner, lost: true}
				s, err := session.Create(ctx, f, &session.CreateOptions{ID: "s-tr"})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.SaveTurn(ctx, []*session.Message{session.UserText("hi"), session.Assistant(session.ToolCall("c1", "read", []byte(`{}`)))}, nil); err != nil {
					t.Fatal(err)
				}
				f.armed = 1
				if err := s.SaveTurn(ctx, turn(), nil); !errors.Is(err, errDown) {
					t.Fatalf("first attempt: %v", err)
				}
				if reload {
					if err := s.Reload(ctx); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.SaveTurn(ctx, turn(), nil); err != nil {
					t.Fatalf("retry of the tool result turn: %v", err)
				}
				require.NoError(t, s.Close())
				re, err := session.Open(ctx, inner, "s-tr")
				require.NoError(t, err)
				assert.Equal(t, 4, re.Len(), "the turn stored once")
				assert.Len(t, re.Leaves(), 1)
				assert.Equal(t, []string{"hi", "", "contents", "done"}, plainTexts(re.Context().Messages))
			})
		}
	}
}
