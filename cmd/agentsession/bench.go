package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
)

// benchResult is what bench prints: durations in nanoseconds (medians
// unless named p50), sizes in bytes, ratios as numbers.
type benchResult struct {
	Turns int    `json:"turns"`
	Dir   string `json:"dir"`
	Busy  bool   `json:"busy"` // measured beside a CPU hog (--busy)
	// Procs is GOMAXPROCS: the processors the measures could use (set
	// GOMAXPROCS=1 in the environment to measure on one).
	Procs     int   `json:"procs"`
	FileBytes int64 `json:"fileBytes"`
	// AppendNsPerEntry is an Append gathered (SyncNever);
	// WriteThroughNsPerEntry one written before Append returns
	// (SyncOnFlush, no Flush: pi's appendFileSync); WriteFloorNsPerEntry
	// one write(2) of each line already encoded, its floor.
	AppendNsPerEntry        int64   `json:"appendNsPerEntry"`
	WriteThroughNsPerEntry  int64   `json:"writeThroughNsPerEntry"`
	WriteFloorNsPerEntry    int64   `json:"writeFloorNsPerEntry"`
	WriteThroughPerFloor    float64 `json:"writeThroughPerFloor"`
	FsyncTurnP50Ns          int64   `json:"fsyncTurnP50Ns"`
	RawFdatasyncP50Ns       int64   `json:"rawFdatasyncP50Ns"`
	ReadFloorNs             int64   `json:"readFloorNs"`
	OpenNs                  int64   `json:"openNs"`
	OpenContextNs           int64   `json:"openContextNs"`
	PeakResidentGrowthBytes *uint64 `json:"peakResidentGrowthBytes"` // null where not measured (Windows)
	// HeapSharedBytes is the heap the open session keeps with its
	// context built and shared (SharedMessages held, as pi holds its
	// context); HeapLiveBytes the same with a Context() held too, the
	// caller's deep copy (the copy rule).
	HeapSharedBytes    uint64 `json:"heapSharedBytes"`
	HeapLiveBytes      uint64 `json:"heapLiveBytes"`
	List1000Ns         int64  `json:"list1000Ns"`
	List1000NewStoreNs int64  `json:"list1000NewStoreNs"`
	// ForkNs forks the session at its middle entry into a new session of
	// the store (written, not flushed); ForkFloorNs writes the fork's
	// bytes to a new file and syncs it, the disk's part (a fork's file is
	// synced before it takes its name, and the directory after: the
	// floor leaves those two out); CompactNs compacts it (the
	// default options, the offline ExtractiveSummarizer), the session
	// open with its context built beforehand.
	ForkNs       int64   `json:"forkNs"`
	ForkFloorNs  int64   `json:"forkFloorNs"`
	ForkPerFloor float64 `json:"forkPerFloor"`
	CompactNs    int64   `json:"compactNs"`
	// ResumeNs resumes a compacted session of ResumeTurns turns (twice
	// the workload's, a compaction every fifth of the workload's but
	// after the last) in a new process: a store, Open, Context, Messages
	// (bench_resume.go); the median of five processes, and the largest
	// growth of their resident memory at its peak (null where not
	// measured).
	ResumeTurns                   int     `json:"resumeTurns"`
	ResumeFileBytes               int64   `json:"resumeFileBytes"`
	ResumeMessages                int     `json:"resumeMessages"`
	ResumeNs                      int64   `json:"resumeNs"`
	ResumePeakResidentGrowthBytes *uint64 `json:"resumePeakResidentGrowthBytes"`
	OpenContextPerFloor           float64 `json:"openContextPerReadFloor"`
	FsyncTurnPerRawSync           float64 `json:"fsyncTurnPerRawFdatasync"`
	// Postgres is the PostgreSQL section (bench_pg.go); null without
	// --pg.
	Postgres *pgBenchResult `json:"postgres"`
	// Workspace is the workspace section (bench_ws.go); null when no
	// tree was found to copy.
	Workspace *wsBenchResult `json:"workspace"`
}

var cmdBench = &command{
	name:    "bench",
	summary: "measure this machine's disk with the W10k workload, and the workspace against git",
	usage:   "[--turns N] [--dir DIR] [--ws-tree DIR] [--pg DSN] [--busy] [--json]",
	common:  withJSON,
	nargs:   [2]int{0, 0},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		turns := fs.Int("turns", workload.W10k, "build a workload of `N` turns")
		dir := fs.String("dir", "", "measure in a new directory inside `DIR` (default: the system's temporary directory)")
		wsTree := fs.String("ws-tree", "", "copy `DIR` for the workspace measures (default: $(go env GOROOT)/src/net)")
		pg := fs.String("pg", "", "also measure pgstore on the PostgreSQL server `DSN` names (in a schema the run creates and drops)")
		busy := fs.Bool("busy", false, "measure beside a CPU hog (a process of this program spinning on one core), as on a busy machine")
		return func([]string) int {
			if *turns < 1 {
				return c.usageError("--turns must be positive")
			}
			pgSet := false
			fs.Visit(func(f *flag.Flag) { pgSet = pgSet || f.Name == "pg" })
			if pgSet {
				if *pg == "" {
					return c.usageError("--pg needs the DSN of a PostgreSQL server")
				}
				if _, err := pgConfig(*pg); err != nil {
					return c.usageError("--pg: %v", err)
				}
			}
			if *wsTree != "" {
				if fi, err := os.Stat(*wsTree); err != nil || !fi.IsDir() {
					return c.usageError("--ws-tree %s is not a directory", *wsTree)
				}
			}
			return c.bench(*dir, *turns, *wsTree, *pg, *busy)
		}
	},
}

func (c *call) bench(dir string, turns int, wsTree, pg string, busy bool) int {
	if pg != "" {
		ctx, cancel := context.WithTimeout(c.ctx, 2*pgConnectTimeout)
		err := pgPing(ctx, pg)
		cancel()
		if err != nil {
			return c.fail("bench: --pg: the server does not answer: %v", err)
		}
	}
	base, err := os.MkdirTemp(dir, "agentsession-bench-")
	if err != nil {
		return c.fail("%v", err)
	}
	defer os.RemoveAll(base)
	if busy {
		stop, err := startHog()
		if err != nil {
			return c.fail("bench: --busy: %v", err)
		}
		defer stop()
	}
	prog := c.progress("bench")
	r, err := runBench(base, turns, prog)
	if r != nil {
		r.Busy = busy
	}
	if err == nil && pg != "" {
		// An interrupt ends the run and still drops its schema.
		ctx, stop := signal.NotifyContext(c.ctx, os.Interrupt, syscall.SIGTERM)
		r.Postgres, err = runPGBench(ctx, pg, prog)
		stop()
		if err != nil {
			err = fmt.Errorf("postgres: %w", err)
		}
	}
	if err == nil {
		if wsTree == "" {
			wsTree = defaultWSTree()
		}
		if wsTree == "" {
			fmt.Fprintf(c.stderr, "agentsession: bench: the workspace measures are skipped: %v\n", errNoWSTree)
		} else if r.Workspace, err = runWSBench(context.Background(), base, wsTree, prog); err != nil {
			err = fmt.Errorf("workspace: %w", err)
		}
	}
	prog.end()
	if err != nil {
		return c.fail("bench: %v", err)
	}
	if r.Workspace != nil && r.Workspace.GitSkipped != "" {
		fmt.Fprintf(c.stderr, "agentsession: bench: %s\n", r.Workspace.GitSkipped)
	}
	if c.json {
		return c.printJSON(r)
	}
	peak := "not measured here"
	if r.PeakResidentGrowthBytes != nil {
		peak = size(int64(*r.PeakResidentGrowthBytes))
	}
	resumePeak := "not measured here"
	if r.ResumePeakResidentGrowthBytes != nil {
		resumePeak = size(int64(*r.ResumePeakResidentGrowthBytes))
	}
	t := c.table("MEASURE", "VALUE")
	for _, row := range [][2]string{
		{"workload", fmt.Sprintf("%d turns, %s file", r.Turns, size(r.FileBytes))},
		{"machine", map[bool]string{false: "as it is", true: "busy: a CPU hog beside (--busy)"}[r.Busy] + fmt.Sprintf(", GOMAXPROCS=%d", r.Procs)},
		{"append, per entry (gathered, SyncNever)", dur(r.AppendNsPerEntry)},
		{"append, per entry, written before it returns", dur(r.WriteThroughNsPerEntry)},
		{"one write(2) of an entry's line", dur(r.WriteFloorNsPerEntry)},
		{"written append / write(2)", fmt.Sprintf("%.2f×", r.WriteThroughPerFloor)},
		{"turn synced at Flush (p50)", dur(r.FsyncTurnP50Ns)},
		{"raw write + fdatasync (p50)", dur(r.RawFdatasyncP50Ns)},
		{"synced turn / raw sync", fmt.Sprintf("%.2f×", r.FsyncTurnPerRawSync)},
		{"read the file alone", dur(r.ReadFloorNs)},
		{"open", dur(r.OpenNs)},
		{"open and build the context", dur(r.OpenContextNs)},
		{"open with context / read", fmt.Sprintf("%.2f×", r.OpenContextPerFloor)},
		{"memory at the open's peak", peak},
		{"heap kept by the open session, its messages shared", size(int64(r.HeapSharedBytes))},
		{"heap kept by the open session and a Context()", size(int64(r.HeapLiveBytes))},
		{"list 1,000 sessions", dur(r.List1000Ns)},
		{"list 1,000 sessions, new store", dur(r.List1000NewStoreNs)},
		{"fork at the middle", dur(r.ForkNs)},
		{"write + fsync of the fork's bytes", dur(r.ForkFloorNs)},
		{"fork / its write + fsync", fmt.Sprintf("%.2f×", r.ForkPerFloor)},
		{"compact", dur(r.CompactNs)},
		{fmt.Sprintf("resume %d turns compacted (%s, %d messages in context), new process", r.ResumeTurns, size(r.ResumeFileBytes), r.ResumeMessages), dur(r.ResumeNs)},
		{"memory at the resume's peak", resumePeak},
	} {
		t.row(row[0], row[1])
	}
	if p := r.Postgres; p != nil {
		t.row(fmt.Sprintf("PostgreSQL: %d agents, a session each, %d turns", p.Agents, p.Turns), fmt.Sprintf("%.0f entries/s", p.EntriesPerSec))
		t.row("PostgreSQL: a turn (p50, p99)", dur(p.TurnP50Ns)+", "+dur(p.TurnP99Ns))
	}
	if r.Workspace != nil {
		for _, row := range wsRows(r.Workspace) {
			t.row(row[0], row[1])
		}
	}
	t.flush()
	return exitOK
}

// dur prints nanoseconds as a duration to about three figures.
func dur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d >= time.Microsecond:
		return d.Round(10 * time.Nanosecond).String()
	}
	return d.String()
}

// ratio is a/b to two decimals.
func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(float64(a)/float64(b)*100) / 100
}

func median(xs []int64) int64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// timeN runs f n times and returns the median duration.
func timeN(n int, f func() error) (int64, error) {
	var xs []int64
	for range n {
		runtime.GC()
		t := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		xs = append(xs, time.Since(t).Nanoseconds())
	}
	return median(xs), nil
}

func runBench(base string, turns int, prog *progress) (*benchResult, error) {
	ctx := context.Background()
	res := &benchResult{Turns: turns, Dir: base, Procs: runtime.GOMAXPROCS(0)}
	msgs := workload.Messages(0, turns)

	// Appends, no sync: the median of three sessions, the last kept for
	// the measures below.
	var root, id string
	var perEntry []int64
	for run := range 3 {
		prog.set(fmt.Sprintf("bench: appending %d turns", turns), run, 3)
		root = filepath.Join(base, fmt.Sprintf("append-%d", run))
		store, err := session.OpenFileStore(root, &session.FileStoreOptions{Sync: session.SyncNever})
		if err != nil {
			return nil, err
		}
		s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/bench"})
		if err != nil {
			return nil, err
		}
		runtime.GC()
		t := time.Now()
		for _, m := range msgs {
			if _, err := s.Append(ctx, m); err != nil {
				return nil, err
			}
		}
		perEntry = append(perEntry, time.Since(t).Nanoseconds()/int64(len(msgs)))
		id = s.ID()
		s.Close()
		store.Close()
		if run < 2 {
			os.RemoveAll(root)
		}
	}
	res.AppendNsPerEntry = median(perEntry)
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
	if len(files) != 1 {
		return nil, fmt.Errorf("expected one session file in %s", root)
	}
	file := files[0]
	fi, err := os.Stat(file)
	if err != nil {
		return nil, err
	}
	res.FileBytes = fi.Size()
	// The entries' lines, for the floors of the writes below.
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	lines := bytes.SplitAfter(data, []byte("\n"))[1:]
	lines = lines[:len(lines)-1] // the empty piece after the last newline
	if err := benchWriteThrough(ctx, res, base, lines, msgs, prog); err != nil {
		return nil, err
	}

	// A turn synced at Flush, against a raw write + fdatasync.
	const syncs = 100
	sroot := filepath.Join(base, "sync")
	sstore, err := session.OpenFileStore(sroot, nil)
	if err != nil {
		return nil, err
	}
	ss, err := session.Create(ctx, sstore, nil)
	if err != nil {
		return nil, err
	}
	raw, err := os.OpenFile(filepath.Join(sroot, "raw"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	// The raw writes are the very lines of the turns, three to a turn.
	var turnNs, rawNs []int64
	for k := range syncs {
		prog.set("bench: synced turns against raw syncs", k, syncs)
		// Interleaved, so that both see the same disk weather.
		t := time.Now()
		if err := ss.SaveTurn(ctx, msgs[3*(k%turns):3*(k%turns)+3], nil); err != nil {
			return nil, err
		}
		if err := ss.Flush(ctx); err != nil {
			return nil, err
		}
		turnNs = append(turnNs, time.Since(t).Nanoseconds())
		k3 := 3 * (k % turns)
		line := slices.Concat(lines[k3 : k3+3]...)
		t = time.Now()
		if _, err := raw.Write(line); err != nil {
			return nil, err
		}
		if err := fdatasync(raw); err != nil {
			return nil, err
		}
		rawNs = append(rawNs, time.Since(t).Nanoseconds())
	}
	raw.Close()
	ss.Close()
	sstore.Close()
	res.FsyncTurnP50Ns, res.RawFdatasyncP50Ns = median(turnNs), median(rawNs)
	data, lines = nil, nil // not kept through the opens: a larger heap would pace the collector differently

	// Opening.
	prog.set("bench: opening", 0, 0)
	const opens = 5
	if res.ReadFloorNs, err = timeN(opens, func() error { _, err := os.ReadFile(file); return err }); err != nil {
		return nil, err
	}
	open := func(withContext bool) error {
		st, err := session.OpenFileStore(root, nil)
		if err != nil {
			return err
		}
		defer st.Close()
		s, err := session.Open(ctx, st, id)
		if err != nil {
			return err
		}
		if withContext && len(s.Context().Messages) != len(msgs) {
			return fmt.Errorf("context has %d messages, want %d", len(s.Context().Messages), len(msgs))
		}
		return nil
	}
	if res.OpenNs, err = timeN(opens, func() error { return open(false) }); err != nil {
		return nil, err
	}
	if res.OpenContextNs, err = timeN(opens, func() error { return open(true) }); err != nil {
		return nil, err
	}
	if res.PeakResidentGrowthBytes, res.HeapSharedBytes, res.HeapLiveBytes, err = measureOpen(root, id); err != nil {
		return nil, err
	}

	// Listing 1,000 sessions of 3 turns.
	prog.set("bench: listing 1,000 sessions", 0, 0)
	lroot := filepath.Join(base, "list")
	lstore, err := session.OpenFileStore(lroot, &session.FileStoreOptions{Sync: session.SyncNever})
	if err != nil {
		return nil, err
	}
	three := workload.Messages(0, 3)
	for i := range 1000 {
		s, err := session.Create(ctx, lstore, &session.CreateOptions{Cwd: fmt.Sprintf("/work/project-%d", i%10)})
		if err != nil {
			return nil, err
		}
		if err := s.SaveTurn(ctx, three, nil); err != nil {
			return nil, err
		}
	}
	list := func(st *session.FileStore) error {
		p, err := st.List(ctx, session.ListOptions{Limit: 1000})
		if err == nil && len(p.Sessions) != 1000 {
			err = fmt.Errorf("listed %d sessions, want 1000", len(p.Sessions))
		}
		return err
	}
	if res.List1000Ns, err = timeN(opens, func() error { return list(lstore) }); err != nil {
		return nil, err
	}
	lstore.Close()
	if res.List1000NewStoreNs, err = timeN(opens, func() error {
		st, err := session.OpenFileStore(lroot, nil)
		if err != nil {
			return err
		}
		defer st.Close()
		return list(st)
	}); err != nil {
		return nil, err
	}
	if err := benchForkCompact(ctx, res, base, root, file, id, opens, prog); err != nil {
		return nil, err
	}
	if err := benchResume(ctx, res, base, turns, prog); err != nil {
		return nil, err
	}
	res.OpenContextPerFloor = ratio(res.OpenContextNs, res.ReadFloorNs)
	res.FsyncTurnPerRawSync = ratio(res.FsyncTurnP50Ns, res.RawFdatasyncP50Ns)
	return res, nil
}

// measureOpen opens session id of the store at root and builds its
// context in a child process (this program again), and returns how much
// the child's resident memory grew at its peak (its heap and all, from
// the kernel's account: VmHWM on Linux; nil where it is not measured)
// and how large its heap stayed once the garbage was collected, with the
// session still open: with its messages shared (SharedMessages), then
// with a Context() held too.
func measureOpen(root, id string) (peak *uint64, shared, live uint64, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, 0, 0, err
	}
	cmd := exec.Command(exe, "bench-open", root, id)
	out, err := cmd.Output()
	if err != nil {
		return nil, 0, 0, fmt.Errorf("measuring the open in a child process: %w", err)
	}
	var r openMeasure
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, 0, 0, fmt.Errorf("measuring the open in a child process: %w", err)
	}
	if r.Measured {
		grew := uint64(0)
		if r.PeakRSS > r.BaselineRSS {
			grew = r.PeakRSS - r.BaselineRSS
		}
		peak = &grew
	}
	return peak, r.HeapShared, r.HeapLive, nil
}

// openMeasure is what the child of measureOpen prints.
type openMeasure struct {
	BaselineRSS uint64 `json:"baselineRss"`
	PeakRSS     uint64 `json:"peakRss"`
	HeapShared  uint64 `json:"heapShared"`
	HeapLive    uint64 `json:"heapLive"`
	Measured    bool   `json:"measured"` // the RSS figures are known
}

// cmdBenchOpen is the child of measureOpen: it notes its resident memory,
// opens the session with its context and prints what it measured.
var cmdBenchOpen = &command{
	name:    "bench-open",
	summary: "the child process of bench",
	usage:   "ROOT ID",
	help:    "The child process of bench, not for users: opens session ID of the store at ROOT and prints the memory it took.",
	nargs:   [2]int{2, 2},
	hidden:  true,
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		return func(args []string) int {
			// heap is the live heap after a collection. Twice: what a
			// sync.Pool held (the reader's scratch buffers) survives the
			// first, in the pool's victim cache, and would count.
			heap := func() uint64 {
				runtime.GC()
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				return ms.HeapAlloc
			}
			// above is how far h is above the baseline, 0 if below.
			above := func(h, base uint64) uint64 { return h - min(h, base) }
			base := heap()
			baseline, _, _ := currentRSS()
			store, err := session.OpenFileStore(args[0], nil)
			if err != nil {
				return c.fail("%v", err)
			}
			s, err := session.Open(context.Background(), store, args[1])
			if err != nil {
				return c.fail("%v", err)
			}
			msgs, err := s.SharedMessages(context.Background())
			if err != nil {
				return c.fail("%v", err)
			}
			shared := above(heap(), base)
			ctx := s.Context()
			live := above(heap(), base)
			runtime.KeepAlive(msgs)
			runtime.KeepAlive(ctx)
			runtime.KeepAlive(s)
			_, peak, ok := currentRSS()
			if err := c.printJSONLine(openMeasure{baseline, peak, shared, live, ok}); err != nil {
				return c.fail("%v", err)
			}
			return exitOK
		}
	},
}

// benchWriteThrough measures appends each written before Append returns
// (SyncOnFlush without Flush) against the floor: one write(2) of each of
// lines (those of the session the gathered appends wrote), already
// encoded, to a new file. Medians of three runs each, interleaved.
func benchWriteThrough(ctx context.Context, res *benchResult, base string, lines [][]byte, msgs []*session.Message, prog *progress) error {
	var through, floor []int64
	for run := range 3 {
		prog.set("bench: appending, each entry written", run, 3)
		root := filepath.Join(base, fmt.Sprintf("write-through-%d", run))
		store, err := session.OpenFileStore(root, &session.FileStoreOptions{Sync: session.SyncOnFlush})
		if err != nil {
			return err
		}
		s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/bench"})
		if err != nil {
			return err
		}
		runtime.GC()
		t := time.Now()
		for _, m := range msgs {
			if _, err := s.Append(ctx, m); err != nil {
				return err
			}
		}
		through = append(through, time.Since(t).Nanoseconds()/int64(len(msgs)))
		s.Close()
		store.Close()
		os.RemoveAll(root)

		f, err := os.Create(filepath.Join(base, "floor"))
		if err != nil {
			return err
		}
		runtime.GC()
		t = time.Now()
		for _, l := range lines {
			if _, err := f.Write(l); err != nil {
				f.Close()
				return err
			}
		}
		floor = append(floor, time.Since(t).Nanoseconds()/int64(max(len(lines), 1)))
		f.Close()
		os.Remove(f.Name())
	}
	res.WriteThroughNsPerEntry, res.WriteFloorNsPerEntry = median(through), median(floor)
	res.WriteThroughPerFloor = ratio(res.WriteThroughNsPerEntry, res.WriteFloorNsPerEntry)
	return nil
}

// startHog starts a process of this program that spins on one core
// (bench-hog) and returns what stops it.
func startHog() (stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "bench-hog")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}, nil
}

// cmdBenchHog is the CPU hog of bench --busy.
var cmdBenchHog = &command{
	name:    "bench-hog",
	summary: "the CPU hog of bench --busy",
	usage:   "",
	help:    "The CPU hog of bench --busy, not for users: spins on one core until killed.",
	nargs:   [2]int{0, 0},
	hidden:  true,
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		return func([]string) int {
			runtime.GOMAXPROCS(1)
			for n := uint64(0); ; n++ {
				if n == 1<<63 { // never: keeps the loop from being a plain for {}
					return exitOK
				}
			}
		}
	},
}

// benchForkCompact times a fork at the session's middle entry and a
// compaction, each on a session opened with its context built (not
// timed), in a copy of the store at root (file, session id), so that
// each run starts from the same file.
func benchForkCompact(ctx context.Context, res *benchResult, base, root, file, id string, runs int, prog *progress) error {
	rel, err := filepath.Rel(root, file)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	croot := filepath.Join(base, "fork-compact")
	cfile := filepath.Join(croot, rel)
	if err := os.MkdirAll(filepath.Dir(cfile), 0o700); err != nil {
		return err
	}
	var forks, floors, compacts []int64
	for run := range runs {
		prog.set("bench: fork and compact", run, runs)
		if err := os.WriteFile(cfile, data, 0o600); err != nil {
			return err
		}
		st, err := session.OpenFileStore(croot, nil)
		if err != nil {
			return err
		}
		s, err := session.Open(ctx, st, id)
		if err != nil {
			st.Close()
			return err
		}
		path, err := s.PathTo(s.LeafID())
		if err == nil && len(path) == 0 {
			err = errors.New("the session is empty")
		}
		if err != nil {
			st.Close()
			return err
		}
		_ = s.Context()
		runtime.GC()
		t := time.Now()
		f, err := s.Fork(ctx, &session.ForkOptions{At: path[max(len(path)/2-1, 0)].ID()})
		if err != nil {
			st.Close()
			return err
		}
		forks = append(forks, time.Since(t).Nanoseconds())
		floor, err := writeSyncedCopy(f, st, filepath.Join(base, "fork-floor"))
		if err == nil {
			floors = append(floors, floor)
			err = st.Delete(ctx, f.ID())
		}
		if err != nil {
			st.Close()
			return err
		}
		runtime.GC()
		t = time.Now()
		_, err = s.Compact(ctx, session.ExtractiveSummarizer{}, nil)
		compacts = append(compacts, time.Since(t).Nanoseconds())
		st.Close()
		if err != nil && !errors.Is(err, session.ErrNothingToCompact) {
			return err
		}
	}
	res.ForkNs, res.ForkFloorNs, res.CompactNs = median(forks), median(floors), median(compacts)
	if res.ForkFloorNs > 0 {
		res.ForkPerFloor = float64(res.ForkNs) / float64(res.ForkFloorNs)
	}
	return nil
}

// writeSyncedCopy times writing the bytes of session f's file (read
// first, not timed) to a new file at path and syncing it, and removes
// the copy.
func writeSyncedCopy(f *session.Session, st *session.FileStore, path string) (int64, error) {
	src, err := st.Path(f.ID())
	if err != nil {
		return 0, err
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return 0, err
	}
	t := time.Now()
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	defer os.Remove(path)
	_, err = out.Write(data)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return time.Since(t).Nanoseconds(), err
}
