package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// countingSummarizer counts its calls: a paid model call in a host.
type countingSummarizer struct{ calls int }

func (c *countingSummarizer) Summarize(ctx context.Context, req *session.SummaryRequest) (string, error) {
	c.calls++
	return "a summary", nil
}

// TestClosedSessionDoesNothing calls every method of a closed Session
// that returns an error: each returns ErrClosed, and none does any work
// (no summarizer call, nothing written, no session created).
func TestClosedSessionDoesNothing(t *testing.T) {
	ctx := context.Background()
	for name, newStore := range storeKinds(t) {
		t.Run(name, func(t *testing.T) {
			store := newStore(t)
			s, err := session.Create(ctx, store, nil)
			require.NoError(t, err)
			for k := range 4 {
				turn(t, s, k, "read", "a.go", 100)
			}
			_, err = s.Checkpoint(ctx, "cp")
			require.NoError(t, err)
			leaf := s.LeafID()
			plan, err := s.PlanCompaction(&session.CompactionOptions{KeepRecentTokens: 1})
			require.NoError(t, err)
			before, err := store.Load(ctx, s.ID())
			require.NoError(t, err)
			require.NoError(t, s.Close())

			sum := &countingSummarizer{}
			v := reflect.ValueOf(s)
			typ := v.Type()
			errType := reflect.TypeFor[error]()
			called := 0
			for i := range typ.NumMethod() {
				m := typ.Method(i)
				mt := m.Type
				if mt.NumOut() == 0 || mt.Out(mt.NumOut()-1) != errType || m.Name == "Close" {
					continue
				}
				args := []reflect.Value{}
				for j := 1; j < mt.NumIn(); j++ { // 0 is the receiver
					args = append(args, argFor(t, mt.In(j), mt.IsVariadic() && j == mt.NumIn()-1, ctx, sum, leaf, plan))
				}
				var out []reflect.Value
				if mt.IsVariadic() {
					out = v.Method(i).CallSlice(args)
				} else {
					out = v.Method(i).Call(args)
				}
				called++
				got, _ := out[len(out)-1].Interface().(error)
				assert.ErrorIs(t, got, session.ErrClosed, "%s on a closed session", m.Name)
			}
			assert.Greater(t, called, 25, "methods tried")
			assert.Zero(t, sum.calls, "a closed session called the summarizer")
			after, err := store.Load(ctx, s.ID())
			require.NoError(t, err)
			assert.Equal(t, len(before.Entries), len(after.Entries), "a closed session wrote")
			page, err := store.List(ctx, session.ListOptions{})
			require.NoError(t, err)
			assert.Len(t, page.Sessions, 1, "a closed session created a session (a fork)")
			assert.NoError(t, s.Close(), "a second Close")
		})
	}
}

// argFor makes an argument of type t for a method under test: real
// values where a zero one could not even be called.
func argFor(t *testing.T, typ reflect.Type, variadic bool, ctx context.Context, sum session.Summarizer, leaf string, plan *session.CompactionPlan) reflect.Value {
	switch {
	case variadic:
		return reflect.MakeSlice(typ, 0, 0)
	case typ == reflect.TypeFor[context.Context]():
		return reflect.ValueOf(ctx)
	case typ == reflect.TypeFor[session.Summarizer]():
		return reflect.ValueOf(sum)
	case typ == reflect.TypeFor[string]():
		return reflect.ValueOf(leaf)
	case typ == reflect.TypeFor[*session.Message]():
		return reflect.ValueOf(session.UserText("hello"))
	case typ == reflect.TypeFor[[]*session.Message]():
		return reflect.ValueOf([]*session.Message{session.UserText("hello")})
	case typ == reflect.TypeFor[*session.CompactionPlan]():
		return reflect.ValueOf(plan)
	case typ == reflect.TypeFor[any]():
		return reflect.ValueOf(any(map[string]int{"x": 1}))
	}
	return reflect.Zero(typ)
}

// TestCloseAfterLatchedError: Close lets the file and its slot among the
// store's open files go even after a write error was latched (a child
// process whose file size limit makes an append fail).
func TestCloseAfterLatchedError(t *testing.T) {
	canLimitFileSize(t)
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-latched", Cwd: "/w"})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("q"), reply("a"))
	require.NoError(t, s.Close())
	path := sessionFileOf(t, root, "s-latched")
	size := len(mustRead(t, path))
	for _, policy := range []string{"every", "on-flush", "never"} {
		t.Run(policy, func(t *testing.T) {
			cmd := child(t, "AGENTSESSION_CHILD=close-latched", "AGENTSESSION_ROOT="+root, "AGENTSESSION_ID=s-latched",
				"AGENTSESSION_LIMIT="+strconv.Itoa(size+4096), "AGENTSESSION_POLICY="+policy)
			out, err := cmd.Output()
			require.NoError(t, err, "%s", out)
			assert.True(t, strings.HasPrefix(string(out), "latched true\nclose error true\nfds 0\nopen files 0\nclosed after true\n"), "%s", out)
		})
	}
}

// closeLatchedChild is the child of TestCloseAfterLatchedError.
func closeLatchedChild(t *testing.T) {
	ctx := context.Background()
	signalIgnoreXFSZ()
	policy := map[string]session.SyncPolicy{"every": session.SyncEveryAppend, "on-flush": session.SyncOnFlush, "never": session.SyncNever}[os.Getenv("AGENTSESSION_POLICY")]
	store, err := session.OpenFileStore(os.Getenv("AGENTSESSION_ROOT"), &session.FileStoreOptions{Sync: policy, MaxStringChars: -1})
	require.NoError(t, err)
	s, err := session.Open(ctx, store, os.Getenv("AGENTSESSION_ID"))
	require.NoError(t, err)
	path, err := store.Path(s.ID())
	require.NoError(t, err)
	limit, _ := strconv.ParseInt(os.Getenv("AGENTSESSION_LIMIT"), 10, 64)
	require.NoError(t, setFileSizeLimit(limit))
	_, err = s.Append(ctx, session.UserText(strings.Repeat("y", 64<<10)))
	if err == nil {
		err = s.Flush(ctx) // SyncNever writes at the end of its lease
	}
	fmt.Printf("latched %v\n", err != nil)
	fmt.Printf("close error %v\n", s.Close() != nil)
	fds := 0
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == path {
			fds++
		}
	}
	fmt.Printf("fds %d\n", fds)
	fmt.Printf("open files %d\n", session.OpenFiles(store))
	_, err = s.Append(ctx, session.UserText("after close"))
	fmt.Printf("closed after %v\n", errors.Is(err, session.ErrClosed))
}
