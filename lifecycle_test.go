package session_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLifecycleChild is run by the tests below as a separate process.
func TestLifecycleChild(t *testing.T) {
	role := os.Getenv("AGENTSESSION_LC_CHILD")
	if role == "" {
		t.Skip("run as a child process by other tests")
	}
	ctx := context.Background()
	store, err := session.OpenFileStore(os.Getenv("AGENTSESSION_ROOT"), nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	switch role {
	case "open-or-create":
		// Wait for the parent's go, so that the processes race.
		if _, err := os.Stdin.Read(make([]byte, 1)); err != nil {
			panic(err)
		}
		s, created, err := session.OpenOrCreate(ctx, store, &session.CreateOptions{ID: "s-race", Cwd: "/work"})
		if err != nil {
			panic(err)
		}
		if _, err := s.Append(ctx, session.UserText("from "+os.Getenv("AGENTSESSION_NAME"))); err != nil {
			panic(err)
		}
		if err := s.Close(); err != nil {
			panic(err)
		}
		if created {
			os.Stdout.WriteString("created\n")
		} else {
			os.Stdout.WriteString("opened\n")
		}
	}
}

// TestOpenOrCreateAcrossProcesses has processes race to open or create
// one session of a FileStore: one creates it, all write to it.
func TestOpenOrCreateAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	root := filepath.Join(t.TempDir(), "sessions")
	const n = 4
	var (
		cmds  []*exec.Cmd
		outs  []*strings.Builder
		gates []*os.File
	)
	for i := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLifecycleChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "AGENTSESSION_LC_CHILD=open-or-create", "AGENTSESSION_ROOT="+root, "AGENTSESSION_NAME="+string(rune('a'+i)))
		r, w, err := os.Pipe()
		require.NoError(t, err)
		cmd.Stdin, cmd.Stderr = r, os.Stderr
		out := &strings.Builder{}
		cmd.Stdout = out
		require.NoError(t, cmd.Start())
		r.Close()
		cmds, outs, gates = append(cmds, cmd), append(outs, out), append(gates, w)
	}
	for _, w := range gates {
		_, err := w.Write([]byte{1})
		require.NoError(t, err)
		w.Close()
	}
	created := 0
	for i, cmd := range cmds {
		require.NoError(t, cmd.Wait())
		if strings.Contains(outs[i].String(), "created") {
			created++
		}
	}
	assert.Equal(t, 1, created, "processes that created the session")
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	s, err := session.Open(context.Background(), store, "s-race")
	require.NoError(t, err)
	assert.Equal(t, n, s.Len(), "one entry per process")
	p, err := store.List(context.Background(), session.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, p.Sessions, 1)
}

func TestTitleFromText(t *testing.T) {
	long := strings.Repeat("word ", 30)
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"Fix the bug", "Fix the bug"},
		{"\n\n   \n  Fix   the\tbug  \nsecond line", "Fix the bug"},
		{long, strings.TrimSpace(strings.Repeat("word ", 12)) + "…"},
		{strings.Repeat("x", 100), strings.Repeat("x", session.TitleMaxRunes) + "…"},
		{strings.Repeat("é", 70), strings.Repeat("é", session.TitleMaxRunes) + "…"},
		// A line far longer than a title: only its start counts.
		{strings.Repeat("y", 5000) + " tail", strings.Repeat("y", session.TitleMaxRunes) + "…"},
		{strings.Repeat("ab ", 3000), strings.TrimSpace(strings.Repeat("ab ", 20)) + "…"},
		{"  " + strings.Repeat("\xff", 70), strings.Repeat("\uFFFD", session.TitleMaxRunes) + "…"},
		{strings.Repeat("\xff", 58) + " é", strings.Repeat("\xff", 58) + " é"}, // 60 runes: kept as it is
	} {
		got := session.TitleFromText(tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
		assert.LessOrEqual(t, len([]rune(got)), session.TitleMaxRunes+1)
	}
}

func TestAutoTitle(t *testing.T) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	s, err := session.Create(ctx, store, nil)
	require.NoError(t, err)
	title, err := s.AutoTitle(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, title, "no user message yet")
	_, err = s.Append(ctx, session.UserText("Refactor the parser\nand more"))
	require.NoError(t, err)

	failing := func(context.Context, string) (string, error) { return "", errors.New("model down") }
	_, err = s.AutoTitle(ctx, failing)
	require.Error(t, err)
	assert.Empty(t, s.Title(), "a failed titler sets nothing")

	var asked string
	title, err = s.AutoTitle(ctx, func(_ context.Context, first string) (string, error) {
		asked = first
		return "  Parser refactor  ", nil
	})
	require.NoError(t, err)
	assert.Equal(t, "Refactor the parser\nand more", asked)
	assert.Equal(t, "Parser refactor", title)
	assert.Equal(t, "Parser refactor", s.Title())
	// A titled session keeps its title.
	title, err = s.AutoTitle(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, "Parser refactor", title)
	p, err := store.List(ctx, session.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, "Parser refactor", p.Sessions[0].Title)
	assert.False(t, p.Sessions[0].TitleDerived)
}

// TestOperationChanges checks the telemetry of checkpoints, rewinds,
// forks and resumes that subscribers get.
func TestOperationChanges(t *testing.T) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	sub, err := session.Subscribe(ctx, store, session.SubscribeOptions{})
	require.NoError(t, err)
	defer sub.Close()
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-ops"})
	require.NoError(t, err)
	u, err := s.Append(ctx, session.UserText("one"))
	require.NoError(t, err)
	_, err = s.Checkpoint(ctx, "start")
	require.NoError(t, err)
	_, err = s.Checkpoint(ctx, "start")
	require.NoError(t, err)
	a, err := s.Append(ctx, session.AssistantText("two"))
	require.NoError(t, err)
	_, err = s.Rewind(ctx, "start")
	require.NoError(t, err)
	f, err := s.Fork(ctx, &session.ForkOptions{At: a.ID(), ID: "s-ops-fork"})
	require.NoError(t, err)
	_, err = session.Open(ctx, store, "s-ops")
	require.NoError(t, err)

	var ops []session.OpInfo
	for len(ops) < 5 {
		c := <-sub.C()
		if c.Kind == session.ChangeOperation {
			ops = append(ops, *c.Op)
		}
	}
	assert.Equal(t, session.OpCheckpoint, ops[0].Op)
	assert.Equal(t, u.ID(), ops[0].Target)
	assert.False(t, ops[0].Idempotent)
	assert.True(t, ops[1].Idempotent, "the same checkpoint again")
	assert.Equal(t, session.OpRewind, ops[2].Op)
	assert.Equal(t, a.ID(), ops[2].Anchor)
	assert.Equal(t, u.ID(), ops[2].Target)
	assert.Positive(t, ops[2].Entries)
	assert.Equal(t, session.OpFork, ops[3].Op)
	assert.Equal(t, a.ID(), ops[3].Anchor)
	assert.Equal(t, f.ID(), ops[3].Fork)
	assert.Equal(t, f.Len(), ops[3].Entries)
	assert.Equal(t, session.OpResume, ops[4].Op)
	assert.Positive(t, ops[4].Entries)
	for _, op := range ops {
		assert.Positive(t, op.Duration)
	}
}

// TestRoleReadFromTheMessage: the role that titles and changes name is
// the message's own member, not a "role" key nested in its content or
// coming before it.
func TestRoleReadFromTheMessage(t *testing.T) {
	hdr := `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}`
	// An assistant message whose tool call arguments hold "role":"user",
	// written before its own role, then the first user message.
	log, err := session.DecodeLog([]byte(hdr+"\n"+
		`{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00Z","message":{"content":[{"type":"toolCall","id":"c","name":"x","arguments":{"role":"user"}}],"role":"assistant"}}`+"\n"+
		`{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:00Z","message":{"content":"the real question","role":"user"}}`+"\n"), nil)
	require.NoError(t, err)
	var fold session.InfoFold
	for _, e := range log.Entries {
		fold.Add(e)
	}
	assert.Equal(t, "the real question", fold.FirstUser)
	c := session.ChangesOf("s", log.Entries, log.Header.Timestamp)
	assert.Equal(t, session.RoleAssistant, c[0].Entries[0].Role)
	assert.Equal(t, session.RoleUser, c[0].Entries[1].Role)
}
