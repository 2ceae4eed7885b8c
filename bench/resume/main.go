// Command resume resumes a session as an agent's new process does, for
// whole-process figures (issue 40): it opens a FileStore at ROOT, opens
// session ID, builds its context and the messages for the model, and
// prints how long that took, how many messages there are and the heap it
// holds. Run it under
// /usr/bin/time -v for the process's peak RSS:
//
//	go build -o /tmp/resume ./bench/resume
//	/usr/bin/time -v /tmp/resume ROOT ID
//
// The limit on a log's size is raised to 4 GiB (the default refuses logs
// over 1 GiB; the 2 GB workload is over it).
package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	session "github.com/agentsession/session"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: resume ROOT ID")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "resume:", err)
		os.Exit(1)
	}
}

func run(root, id string) error {
	ctx := context.Background()
	start := time.Now()
	store, err := session.OpenFileStore(root, &session.FileStoreOptions{Limits: session.Limits{MaxLogBytes: 4 << 30}})
	if err != nil {
		return err
	}
	defer store.Close()
	s, err := session.Open(ctx, store, id)
	if err != nil {
		return err
	}
	defer s.Close()
	_ = s.Context()
	msgs, err := s.Messages(ctx)
	if err != nil {
		return err
	}
	took := time.Since(start)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("resume %s: %.1f ms, %d messages, heap kept %.1f MiB\n", id, float64(took.Microseconds())/1000, len(msgs), float64(ms.HeapAlloc)/(1<<20))
	return nil
}
