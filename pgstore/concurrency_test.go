package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
)

// The writer processes of TestSeveralProcesses are this test binary run
// again with writerEnv set to "<schema> <writer> <turns>".
const writerEnv = "AGENTSESSION_PG_WRITER"

type writerReport struct {
	Conflicts int `json:"conflicts"`
}

// turnEntries makes one turn of three entries of writer w, chained from
// parent: ids that no other writer uses, and a payload that tells who
// wrote it and in which order.
func turnEntries(t testing.TB, w, turn int, parent string) []session.Entry {
	var out []session.Entry
	for k := range 3 {
		id := fmt.Sprintf("w%d-%04d-%d", w, turn, k)
		e, err := session.NewEntry("pgtest", id, parent, time.Now(), map[string]int{"writer": w, "turn": turn, "k": k})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
		parent = id
	}
	return out
}

// TestWriterProcess is one writer of TestSeveralProcesses; it does
// nothing when run by itself.
func TestWriterProcess(t *testing.T) {
	arg := os.Getenv(writerEnv)
	if arg == "" {
		t.Skip("a child of TestSeveralProcesses")
	}
	var schema string
	var w, turns int
	if _, err := fmt.Sscan(arg, &schema, &w, &turns); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := pgstore.New(ctx, poolIn(t, schema, 4), nil)
	if err != nil {
		t.Fatal(err)
	}
	var rep writerReport
	var wg sync.WaitGroup
	// Compare-and-set writer: each turn goes after the last entry it
	// knows of; on a conflict it learns the new last entry and retries.
	wg.Go(func() {
		last := ""
		for turn := 0; turn < turns; {
			err := s.Append(ctx, "cas", session.AppendOptions{IfLast: last, IfEmpty: last == ""}, turnEntries(t, w, turn, last)...)
			switch {
			case err == nil:
				last = fmt.Sprintf("w%d-%04d-2", w, turn)
				turn++
			case errors.Is(err, session.ErrConflict):
				rep.Conflicts++
				l, err := s.Load(ctx, "cas")
				if err != nil {
					t.Error(err)
					return
				}
				last = l.Entries[len(l.Entries)-1].ID()
			default:
				t.Error(err)
				return
			}
		}
	})
	// Unconditional writer: its turns land in order, whole.
	wg.Go(func() {
		parent := ""
		for turn := range turns {
			if err := s.Append(ctx, "plain", session.AppendOptions{}, turnEntries(t, w, turn, parent)...); err != nil {
				t.Error(err)
				return
			}
			parent = fmt.Sprintf("w%d-%04d-2", w, turn)
		}
	})
	wg.Wait()
	b, _ := json.Marshal(rep)
	fmt.Printf("REPORT %s\n", b)
}

// TestSeveralProcesses: writer processes, each with its own pool, append
// to two shared sessions at once: one with IfLast compare-and-set, one
// unconditionally, while this process keeps rewriting the second without
// entries of its own, each rewrite conditional on the log it read.
// Nothing is lost, no id is repeated, turns are never interleaved, each
// writer's order holds, and the compare-and-set session is one unbroken
// chain (every append went after the entry it expected).
func TestSeveralProcesses(t *testing.T) {
	const writers, turns = 4, 40
	ctx := context.Background()
	schema := newSchema(t)
	pool := poolIn(t, schema, 4)
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"cas", "plain"} {
		if err := s.Create(ctx, session.Header{ID: id, Cwd: "/w"}); err != nil {
			t.Fatal(err)
		}
	}
	// The rewriter: adds an entry of its own, then rewrites the log
	// without it, conditional on what it read.
	stop := make(chan struct{})
	var rw sync.WaitGroup
	rewrites, refused := 0, 0
	rw.Go(func() {
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			tmp, err := session.NewEntry("pgtest", fmt.Sprintf("tmp-%d", n), "", time.Now(), map[string]int{"writer": -1})
			if err == nil {
				err = s.Append(ctx, "plain", session.AppendOptions{}, tmp)
			}
			if err != nil {
				t.Error(err)
				return
			}
			l, err := s.Load(ctx, "plain")
			if err != nil {
				t.Error(err)
				return
			}
			var kept []session.Entry
			for _, e := range l.Entries {
				if !strings.HasPrefix(e.ID(), "tmp-") {
					kept = append(kept, e)
				}
			}
			o := session.RewriteOptions{IfLast: l.Entries[len(l.Entries)-1].ID(), IfEntries: len(l.Entries)}
			switch err := s.Rewrite(ctx, "plain", o, l.Header, kept); {
			case err == nil:
				rewrites++
			case errors.Is(err, session.ErrConflict):
				refused++
			default:
				t.Error(err)
				return
			}
		}
	})
	var wg sync.WaitGroup
	conflicts := make([]int, writers)
	for w := range writers {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestWriterProcess$", "-test.count", "1", "-test.v")
			cmd.Env = append(os.Environ(), writerEnv+"="+schema+" "+strconv.Itoa(w)+" "+strconv.Itoa(turns))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("writer %d: %v\n%s", w, err, out)
				return
			}
			_, rep, ok := strings.Cut(string(out), "REPORT ")
			var r writerReport
			if !ok || json.Unmarshal([]byte(strings.SplitN(rep, "\n", 2)[0]), &r) != nil {
				t.Errorf("writer %d: no report in\n%s", w, out)
				return
			}
			conflicts[w] = r.Conflicts
		})
	}
	wg.Wait()
	close(stop)
	rw.Wait()
	t.Logf("rewrites of the plain session while the writers ran: %d done, %d refused for a changed log", rewrites, refused)
	if t.Failed() {
		return
	}
	total := 0
	for _, c := range conflicts {
		total += c
	}
	t.Logf("%d writer processes × %d turns; IfLast conflicts reported and retried: %d", writers, turns, total)

	for _, id := range []string{"cas", "plain"} {
		l, err := s.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		l.Entries = slices.DeleteFunc(l.Entries, func(e session.Entry) bool { return strings.HasPrefix(e.ID(), "tmp-") })
		if len(l.Entries) != writers*turns*3 {
			t.Fatalf("%s: %d entries, want %d", id, len(l.Entries), writers*turns*3)
		}
		seen := map[string]bool{}
		next := make([]int, writers)
		for i := 0; i < len(l.Entries); i += 3 {
			var first struct{ Writer, Turn, K int }
			for k := range 3 {
				e := l.Entries[i+k]
				var p struct{ Writer, Turn, K int }
				if err := e.Decode(&p); err != nil {
					t.Fatal(err)
				}
				if k == 0 {
					first = p
				}
				if p.Writer != first.Writer || p.Turn != first.Turn || p.K != k {
					t.Fatalf("%s: entry %d (%s) breaks the turn of writer %d turn %d", id, i+k, e.ID(), first.Writer, first.Turn)
				}
				if seen[e.ID()] {
					t.Fatalf("%s: id %s twice", id, e.ID())
				}
				seen[e.ID()] = true
				if id == "cas" && i+k > 0 && e.ParentID() != l.Entries[i+k-1].ID() {
					t.Fatalf("cas: entry %s follows %s but its parent is %s", e.ID(), l.Entries[i+k-1].ID(), e.ParentID())
				}
			}
			if first.Turn != next[first.Writer] {
				t.Fatalf("%s: writer %d turn %d where %d was due", id, first.Writer, first.Turn, next[first.Writer])
			}
			next[first.Writer]++
		}
	}
}
