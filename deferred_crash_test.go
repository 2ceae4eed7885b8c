package session_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/longtest"
)

// deferredShape is what the child writes per session: a prompt, two
// extension entries and a reply, the reply making the session persist
// with all of them.
const deferredEntries = 4

// TestDeferredChild is the child of TestDeferredCrash: it makes deferred
// sessions one after another and prints the id of each once the reply
// that persists it returned.
func TestDeferredChild(t *testing.T) {
	if os.Getenv("AGENTSESSION_CHILD") != "deferred" {
		t.Skip("run by TestDeferredCrash")
	}
	ctx := context.Background()
	store, err := session.OpenFileStore(os.Getenv("AGENTSESSION_ROOT"), nil)
	if err != nil {
		panic(err)
	}
	for k := 0; ; k++ {
		id := fmt.Sprintf("%s-%d", os.Getenv("AGENTSESSION_ID"), k)
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w", Deferred: true})
		if err != nil {
			panic(err)
		}
		if _, err := s.Append(ctx, session.UserText(strings.Repeat("prompt ", 200))); err != nil {
			panic(err)
		}
		if _, err := s.AppendCustom(ctx, "ext", map[string]int{"k": k}); err != nil {
			panic(err)
		}
		if _, err := s.AppendThinkingLevel(ctx, "high"); err != nil {
			panic(err)
		}
		if err := s.SaveTurn(ctx, []*session.Message{reply(strings.Repeat("answer ", 300))}, nil); err != nil {
			panic(err)
		}
		fmt.Println(id)
		if err := s.Close(); err != nil {
			panic(err)
		}
	}
}

// TestDeferredCrash kills a child making deferred sessions at random
// moments: every session in the store holds all of its entries (the
// header and the entries before the reply are one write), and every
// session whose reply returned is there.
func TestDeferredCrash(t *testing.T) {
	longtest.Skip(t, "kills a child persisting deferred sessions")
	if testing.Short() {
		t.Skip("spawns processes")
	}
	rounds := 20
	if n, err := strconv.Atoi(os.Getenv("AGENTSESSION_CRASH_ROUNDS")); err == nil {
		rounds = max(1, n/10)
	}
	ctx := context.Background()
	root := t.TempDir()
	acked := map[string]bool{}
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDeferredChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "AGENTSESSION_CHILD=deferred", "AGENTSESSION_ROOT="+root, "AGENTSESSION_ID="+fmt.Sprintf("d%d", round))
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		sc := bufio.NewScanner(out)
		for i := 0; i < 1+round%3 && sc.Scan(); i++ {
			acked[sc.Text()] = true
		}
		time.Sleep(time.Duration(round%7) * 200 * time.Microsecond)
		require.NoError(t, cmd.Process.Kill())
		for sc.Scan() {
			acked[sc.Text()] = true
		}
		_ = cmd.Wait()
	}
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	seen := map[string]bool{}
	opts := session.ListOptions{}
	for {
		page, err := store.List(ctx, opts)
		require.NoError(t, err)
		for _, info := range page.Sessions {
			log, err := store.Load(ctx, info.ID)
			require.NoError(t, err, info.ID)
			require.Empty(t, log.Malformed, info.ID)
			require.Len(t, log.Entries, deferredEntries, "session %s holds part of what it was persisted with", info.ID)
			seen[info.ID] = true
		}
		if page.Next == "" {
			break
		}
		opts.Cursor = page.Next
	}
	for id := range acked {
		require.True(t, seen[id], "session %s, whose reply returned, is lost", id)
	}
	require.NotEmpty(t, acked)
	t.Logf("%d rounds: %d sessions acknowledged, %d in the store", rounds, len(acked), len(seen))
}
