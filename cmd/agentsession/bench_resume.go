package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
)

// The resume measure of bench (issue 40): a session of twice the
// workload's turns, compacted every fifth of them but for the last
// (W10k gives W20k-C: 20,000 turns, a compaction every 2,000, the
// context some 6,000 messages), resumed as an agent's new process does:
// a child process opens a FileStore, opens the session (through the
// path index the first open left), builds its context and the messages
// for the model.

// resumeRuns is how many child processes resume it; bench reports the
// median time and the largest peak.
const resumeRuns = 5

// resumeMeasure is what the child of benchResume prints.
type resumeMeasure struct {
	Ns          int64  `json:"ns"`
	Messages    int    `json:"messages"`
	BaselineRSS uint64 `json:"baselineRss"`
	PeakRSS     uint64 `json:"peakRss"`
	Measured    bool   `json:"measured"` // the RSS figures are known
}

// benchResume builds the compacted session in base and measures its
// resume in child processes.
func benchResume(ctx context.Context, res *benchResult, base string, turns int, prog *progress) error {
	total, every := 2*turns, max(turns/5, 1)
	root := filepath.Join(base, "resume")
	store, err := session.OpenFileStore(root, &session.FileStoreOptions{Sync: session.SyncNever})
	if err != nil {
		return err
	}
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/bench"})
	if err != nil {
		return err
	}
	for i := range total {
		if i%1000 == 0 {
			prog.set(fmt.Sprintf("bench: a session of %d turns, compacted every %d", total, every), i, total)
		}
		u, a, r := workload.Turn(i)
		if err := s.SaveTurn(ctx, []*session.Message{u, a, r}, nil); err != nil {
			return err
		}
		if i%every == every-1 && i+every < total {
			_, err := s.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{ContextWindow: 200000})
			if err != nil && !errors.Is(err, session.ErrNothingToCompact) {
				return err
			}
		}
	}
	id := s.ID()
	if err := s.Close(); err != nil {
		return err
	}
	if err := store.Close(); err != nil {
		return err
	}
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
	if len(files) != 1 {
		return fmt.Errorf("expected one session file in %s", root)
	}
	fi, err := os.Stat(files[0])
	if err != nil {
		return err
	}
	res.ResumeTurns, res.ResumeFileBytes = total, fi.Size()
	// The first open reads the whole file and leaves the path index
	// (Close waits for it): the resumes measured are the later ones.
	if store, err = session.OpenFileStore(root, nil); err != nil {
		return err
	}
	if s, err = session.Open(ctx, store, id); err != nil {
		return err
	}
	s.Close()
	store.Close()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var ns []int64
	var peak *uint64
	for run := range resumeRuns {
		prog.set("bench: resuming it in new processes", run, resumeRuns)
		out, err := exec.Command(exe, "bench-resume", root, id).Output()
		if err != nil {
			return fmt.Errorf("resuming in a child process: %w", err)
		}
		var m resumeMeasure
		if err := json.Unmarshal(out, &m); err != nil {
			return fmt.Errorf("resuming in a child process: %w", err)
		}
		ns = append(ns, m.Ns)
		res.ResumeMessages = m.Messages
		if m.Measured {
			grew := m.PeakRSS - min(m.PeakRSS, m.BaselineRSS)
			if peak == nil || grew > *peak {
				peak = &grew
			}
		}
	}
	res.ResumeNs, res.ResumePeakResidentGrowthBytes = median(ns), peak
	return nil
}

// cmdBenchResume is the child of benchResume.
var cmdBenchResume = &command{
	name:    "bench-resume",
	summary: "a child process of bench",
	usage:   "ROOT ID",
	help:    "A child process of bench, not for users: resumes session ID of the store at ROOT and prints how long it took and the memory it took.",
	nargs:   [2]int{2, 2},
	hidden:  true,
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		return func(args []string) int {
			ctx := context.Background()
			baseline, _, _ := currentRSS()
			t := time.Now()
			store, err := session.OpenFileStore(args[0], nil)
			if err != nil {
				return c.fail("%v", err)
			}
			defer store.Close()
			s, err := session.Open(ctx, store, args[1])
			if err != nil {
				return c.fail("%v", err)
			}
			defer s.Close()
			_ = s.Context()
			msgs, err := s.Messages(ctx)
			if err != nil {
				return c.fail("%v", err)
			}
			took := time.Since(t)
			_, peak, ok := currentRSS()
			if err := c.printJSONLine(resumeMeasure{took.Nanoseconds(), len(msgs), baseline, peak, ok}); err != nil {
				return c.fail("%v", err)
			}
			return exitOK
		}
	},
}
