package s3store_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/s3store"
)

// The child of TestProcessesAndKills: it appends entries to a session
// through a store of its own and prints each id once its append
// returned.
func TestMain(m *testing.M) {
	if os.Getenv("S3STORE_CHILD") != "" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

func child() int {
	ctx := context.Background()
	fold, _ := strconv.Atoi(os.Getenv("S3STORE_FOLD"))
	count, _ := strconv.Atoi(os.Getenv("S3STORE_COUNT"))
	name := os.Getenv("S3STORE_CHILD")
	opts := s3store.Options{Bucket: os.Getenv("S3STORE_BUCKET"), Prefix: os.Getenv("S3STORE_PREFIX"),
		Endpoint: os.Getenv(endpointEnv), PathStyle: true, FoldParts: fold}
	s, err := s3store.Open(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	for i := range count {
		id := fmt.Sprintf("%s-%03d", name, i)
		e, err := session.NewEntry("s3test", id, "", t0, map[string]any{"n": i})
		if err == nil {
			err = s.Append(ctx, "procs", session.AppendOptions{}, e)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(out, "acked", id)
		out.Flush()
	}
	return 0
}

// TestProcessesAndKills: processes append to one session side by side,
// some killed (SIGKILL) at any point of their writes, folds included
// (a fold every three appends): every append a process acknowledged is
// in the log once, the log reads whole, and the others go on.
func TestProcessesAndKills(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts processes")
	}
	ctx := context.Background()
	opts := options(t)
	opts.FoldParts = 3
	s := openStore(t, opts)
	if err := s.Create(ctx, header("procs")); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[string]bool{}
	run := func(name string, count int, killAfter int) error {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "S3STORE_CHILD="+name, "S3STORE_COUNT="+strconv.Itoa(count), "S3STORE_FOLD=3",
			"S3STORE_BUCKET="+opts.Bucket, "S3STORE_PREFIX="+opts.Prefix)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		sc := bufio.NewScanner(stdout)
		n := 0
		for sc.Scan() {
			id, ok := strings.CutPrefix(sc.Text(), "acked ")
			if !ok {
				continue
			}
			mu.Lock()
			acked[id] = true
			mu.Unlock()
			if n++; killAfter > 0 && n == killAfter {
				// Killed a moment later: in its next append, its fold or
				// its head's update.
				time.Sleep(time.Duration(n%7) * time.Millisecond)
				cmd.Process.Kill()
			}
		}
		err = cmd.Wait()
		if killAfter > 0 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %v: %s", name, err, stderr.String())
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for round := range 4 {
		for w := range 3 {
			kill := 0
			if w == 0 {
				kill = 3 + round*2
			}
			wg.Go(func() {
				if err := run(fmt.Sprintf("r%dw%d", round, w), 15, kill); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	log, err := openStore(t, opts).Load(ctx, "procs")
	if err != nil {
		t.Fatalf("the log after the kills: %v", err)
	}
	seen := map[string]bool{}
	for _, e := range log.Entries {
		if seen[e.ID()] {
			t.Fatalf("entry %s twice", e.ID())
		}
		seen[e.ID()] = true
	}
	for id := range acked {
		if !seen[id] {
			t.Fatalf("acknowledged entry %s is not in the log", id)
		}
	}
	t.Logf("%d entries acknowledged by 12 processes (4 killed), %d in the log", len(acked), len(log.Entries))
	// And the session goes on.
	if err := s.Append(ctx, "procs", session.AppendOptions{}, entry(t, "after", "", 0)); err != nil && !errors.Is(err, session.ErrConflict) {
		t.Fatal(err)
	}
}
