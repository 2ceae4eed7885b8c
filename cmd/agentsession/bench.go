package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
)

// benchResult is what bench prints: durations in nanoseconds (medians
// unless named p50), sizes in bytes.
type benchResult struct {
	Turns                int    `json:"turns"`
	Dir                  string `json:"dir"`
	FileBytes            int64  `json:"file_bytes"`
	AppendNsPerEntry     int64  `json:"append_ns_per_entry"`
	FsyncTurnP50Ns       int64  `json:"fsync_turn_p50_ns"`
	RawFdatasyncP50Ns    int64  `json:"raw_fdatasync_p50_ns"`
	ReadFloorNs          int64  `json:"read_floor_ns"`
	OpenNs               int64  `json:"open_ns"`
	OpenContextNs        int64  `json:"open_context_ns"`
	PeakHeapBytes        uint64 `json:"peak_heap_bytes"`
	HeapLiveBytes        uint64 `json:"heap_live_bytes"`
	List1000Ns           int64  `json:"list_1000_ns"`
	List1000NewStoreNs   int64  `json:"list_1000_new_store_ns"`
	OpenContextPerFloor  string `json:"open_context_per_read_floor"`
	FsyncTurnPerRawFsync string `json:"fsync_turn_per_raw_fdatasync"`
}

func cmdBench(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentsession bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	turns := fs.Int("turns", workload.W10k, "turns of the workload (W10k: 10000)")
	dir := fs.String("dir", "", "directory to measure in (default: a new temporary directory, removed afterwards)")
	if rest, err := parseInterspersed(fs, args); err != nil || len(rest) > 0 || *turns < 1 {
		if err == nil {
			fmt.Fprintf(stderr, "agentsession bench: bad arguments\n%s", usage)
		}
		return exitError
	}
	base := *dir
	if base == "" {
		tmp, err := os.MkdirTemp("", "agentsession-bench-")
		if err != nil {
			fmt.Fprintf(stderr, "agentsession: %v\n", err)
			return exitError
		}
		defer os.RemoveAll(tmp)
		base = tmp
	} else {
		tmp, err := os.MkdirTemp(base, "agentsession-bench-")
		if err != nil {
			fmt.Fprintf(stderr, "agentsession: %v\n", err)
			return exitError
		}
		defer os.RemoveAll(tmp)
		base = tmp
	}
	r, err := runBench(base, *turns)
	if err != nil {
		fmt.Fprintf(stderr, "agentsession bench: %v\n", err)
		return exitError
	}
	out, _ := json.MarshalIndent(r, "", "  ")
	fmt.Fprintf(stdout, "%s\n", out)
	return exitOK
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

func runBench(base string, turns int) (*benchResult, error) {
	ctx := context.Background()
	res := &benchResult{Turns: turns, Dir: base}
	msgs := workload.Messages(0, turns)

	// Appends, no sync: the median of three sessions, the last kept for
	// the measures below.
	var root, id string
	var perEntry []int64
	for run := range 3 {
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
	line := make([]byte, 5600)
	for i := range line {
		line[i] = 'x'
	}
	line[len(line)-1] = '\n'
	var turnNs, rawNs []int64
	for k := range syncs {
		// Interleaved, so that both see the same disk weather.
		t := time.Now()
		if err := ss.SaveTurn(ctx, msgs[3*(k%turns):3*(k%turns)+3], nil); err != nil {
			return nil, err
		}
		if err := ss.Flush(ctx); err != nil {
			return nil, err
		}
		turnNs = append(turnNs, time.Since(t).Nanoseconds())
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

	// Opening.
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
	if res.PeakHeapBytes, res.HeapLiveBytes, err = measureOpen(root, id); err != nil {
		return nil, err
	}

	// Listing 1,000 sessions of 3 turns.
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
	res.OpenContextPerFloor = fmt.Sprintf("%.2f", float64(res.OpenContextNs)/float64(res.ReadFloorNs))
	res.FsyncTurnPerRawFsync = fmt.Sprintf("%.2f", float64(res.FsyncTurnP50Ns)/float64(res.RawFdatasyncP50Ns))
	return res, nil
}

// measureOpen opens session id of the store at root and builds its
// context in a child process (this program again), and returns how much
// the child's resident memory grew at its peak (its heap and all, from
// the kernel's account: VmHWM) and how large its heap stayed once the
// garbage was collected, with the session still open.
func measureOpen(root, id string) (peak, live uint64, err error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(exe, "bench-open", root, id)
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, fmt.Errorf("measuring the open in a child process: %w", err)
	}
	var r struct{ BaselineRSS, PeakRSS, HeapLive uint64 }
	if err := json.Unmarshal(out, &r); err != nil {
		return 0, 0, fmt.Errorf("measuring the open in a child process: %w", err)
	}
	if r.PeakRSS > r.BaselineRSS {
		peak = r.PeakRSS - r.BaselineRSS
	}
	return peak, r.HeapLive, nil
}

// cmdBenchOpen is the child of measureOpen: it notes its resident memory,
// opens the session with its context and prints what it measured.
func cmdBenchOpen(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "agentsession bench-open: expected ROOT ID")
		return exitError
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	baseline, _, _ := currentRSS()
	store, err := session.OpenFileStore(args[0], nil)
	if err != nil {
		fmt.Fprintf(stderr, "agentsession: %v\n", err)
		return exitError
	}
	s, err := session.Open(context.Background(), store, args[1])
	if err != nil {
		fmt.Fprintf(stderr, "agentsession: %v\n", err)
		return exitError
	}
	c := s.Context()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(c)
	runtime.KeepAlive(s)
	_, peak, _ := currentRSS()
	json.NewEncoder(stdout).Encode(struct{ BaselineRSS, PeakRSS, HeapLive uint64 }{baseline, peak, ms.HeapAlloc - base})
	return exitOK
}
