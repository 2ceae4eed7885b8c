package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockedBuffer is a bytes.Buffer that a running command writes while
// the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// needEvents skips the test when a FileStore delivers no events, after
// checking that watch says so.
func needEvents(t *testing.T, f *lcFixture) {
	t.Helper()
	store, err := session.OpenFileStore(f.root, nil)
	require.NoError(t, err)
	defer store.Close()
	sub, err := session.Subscribe(context.Background(), store, session.SubscribeOptions{})
	if errors.Is(err, session.ErrNoEvents) {
		_, errOut, code := f.run(t, "watch")
		assert.Equal(t, exitError, code)
		assert.Contains(t, errOut, "cannot be watched: this build's FileStore delivers no events")
		t.Skip("session.Subscribe on a FileStore returns ErrNoEvents: watch has nothing to print until FileStore events land")
	}
	require.NoError(t, err)
	sub.Close()
}

// appendUntil appends user messages to session id of the store at root,
// from another store (as another process would), until seen reports one
// of them printed; it returns that entry's id.
func appendUntil(t *testing.T, root, id string, seen func(entryID string) bool) string {
	t.Helper()
	ctx := context.Background()
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	s, err := session.Open(ctx, store, id)
	require.NoError(t, err)
	defer s.Close()
	var ids []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		e, err := s.Append(ctx, session.UserText("ping"))
		require.NoError(t, err)
		require.NoError(t, s.Flush(ctx))
		ids = append(ids, e.ID())
		for wait := time.Now().Add(300 * time.Millisecond); time.Now().Before(wait); time.Sleep(10 * time.Millisecond) {
			for _, x := range ids {
				if seen(x) {
					return x
				}
			}
		}
	}
	t.Fatalf("watch printed none of the appends %v", ids)
	return ""
}

func TestWatch(t *testing.T) {
	f := newLCFixture(t)
	needEvents(t, f)
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, out, entryID string)
	}{
		{"text, one session", []string{"watch", "p-par"}, func(t *testing.T, out, id string) {
			line := ""
			for l := range strings.Lines(out) {
				if strings.Contains(l, id) {
					line = l
				}
			}
			assert.Regexp(t, `^\d\d:\d\d:\d\d\.\d{3}  p-parent +appended +1 entry: `+id+` message/user\n$`, line)
			assert.NotContains(t, out, "o-other")
		}},
		{"json, every session", []string{"watch", "--json"}, func(t *testing.T, out, id string) {
			keys := map[string]bool{}
			found := false
			for l := range strings.Lines(out) {
				var c map[string]any
				require.NoError(t, json.Unmarshal([]byte(l), &c), l)
				jsonKeys(c, keys)
				var w watchJSON
				require.NoError(t, json.Unmarshal([]byte(l), &w))
				if w.Kind == "appended" && len(w.Entries) == 1 && w.Entries[0].ID == id {
					found = true
					assert.Equal(t, "p-parent", w.Session)
					assert.Equal(t, "user", w.Entries[0].Role)
					assert.Equal(t, "message", w.Entries[0].Type)
					assert.False(t, w.Time.IsZero())
				}
			}
			assert.True(t, found, out)
			doc := docSection("watch")
			for k := range keys {
				assert.Regexp(t, camel, k)
				assert.Contains(t, doc, `"`+k+`"`, "watch --json prints %q, which its doc does not name", k)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out, errOut lockedBuffer
			done := make(chan int, 1)
			go func() { done <- runContext(ctx, append(tt.args, "--root", f.root), &out, &errOut, terminal{}) }()
			// The entry's own line, not a later one naming it as a parent
			// (the watch may start after the first append).
			id := appendUntil(t, f.root, "p-parent", func(id string) bool {
				o := out.String()
				return strings.Contains(o, `"id":"`+id+`"`) || strings.Contains(o, "entry: "+id)
			})
			cancel()
			select {
			case code := <-done:
				require.Equal(t, exitOK, code, errOut.String())
			case <-time.After(10 * time.Second):
				t.Fatal("watch did not stop when its context ended")
			}
			tt.check(t, out.String(), id)
		})
	}
}

// TestWatchProcess: a real process, stopped by an interrupt, exits 0.
func TestWatchProcess(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no os.Interrupt to send on Windows")
	}
	f := newLCFixture(t)
	needEvents(t, f)
	cmd := exec.Command(os.Args[0], "watch", "--json", "--root", f.root, "p-parent")
	cmd.Env = append(os.Environ(), "AGENTSESSION_TEST_MAIN=1")
	var out lockedBuffer
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Start())
	appendUntil(t, f.root, "p-parent", func(id string) bool { return strings.Contains(out.String(), `"id":"`+id+`"`) })
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	err := cmd.Wait()
	require.NoError(t, err, "exit status 0 on an interrupt: %s", errOut.String())
}

// TestWatchLines: how each kind of change is printed, in text and JSON,
// whatever store delivers it.
func TestWatchLines(t *testing.T) {
	at := time.Date(2026, 1, 15, 10, 0, 0, 0, time.Local)
	ref := session.EntryRef{ID: "e1", ParentID: "e0", Type: "message", Role: "user"}
	tests := []struct {
		ch   session.Change
		text string
	}{
		{session.Change{Kind: session.ChangeCreated, Session: "s1", Time: at}, "10:00:00.000  s1                                    created"},
		{session.Change{Kind: session.ChangeAppended, Session: "s1", Time: at, Entries: []session.EntryRef{ref, {ID: "e2", Type: "custom", CustomType: "agentsession.state"}}},
			"appended    2 entries: e1 message/user, e2 custom/agentsession.state"},
		{session.Change{Kind: session.ChangeTitle, Session: "s1", Time: at, Title: "Fix it", Entries: []session.EntryRef{ref}}, `title       "Fix it"`},
		{session.Change{Kind: session.ChangeState, Session: "s1", Time: at, Keys: []string{"a", "user:b"}}, "state       keys: a, user:b"},
		{session.Change{Kind: session.ChangeLeaf, Session: "s1", Time: at, Leaf: "e0"}, "leaf        leaf e0"},
		{session.Change{Kind: session.ChangeCompacting, Session: "s1", Time: at, Compacting: at}, "compacting  since 10:00:00"},
		{session.Change{Kind: session.ChangeCompacting, Session: "s1", Time: at}, "compacting  ended"},
		{session.Change{Kind: session.ChangeArchived, Session: "s1", Time: at}, "archived"},
		{session.Change{Kind: session.ChangeError, Session: "s1", Time: at, Err: errors.New("disk full")}, "error       disk full"},
	}
	doc := docSection("watch")
	for _, tt := range tests {
		var o bytes.Buffer
		c := &call{stdout: &o}
		c.printChange(tt.ch)
		assert.Contains(t, o.String(), tt.text)
		assert.True(t, strings.HasSuffix(o.String(), tt.text+"\n") || tt.ch.Kind == session.ChangeCreated, "%q", o.String())
		raw, err := json.Marshal(watchLine(tt.ch))
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		keys := map[string]bool{}
		jsonKeys(m, keys)
		for k := range keys {
			assert.Contains(t, doc, `"`+k+`"`, "watch --json prints %q, which its doc does not name", k)
		}
		assert.Equal(t, string(tt.ch.Kind), m["kind"])
	}
}
