package session_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/longtest"
)

// Retention against real processes: a sweep killed at any moment, and
// sessions compressed in the archive while another process writes them.

// sessionFiles maps each session id under root to the files holding it
// (temporary files and marks left out).
func sessionFiles(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") || !strings.HasSuffix(d.Name(), ".jsonl") {
			return err
		}
		_, id, ok := strings.Cut(strings.TrimSuffix(d.Name(), ".jsonl"), "_")
		require.True(t, ok, p)
		out[id] = append(out[id], p)
		return nil
	})
	require.NoError(t, err)
	return out
}

// TestSweepKilled kills a process in the middle of a sweep, again and
// again, each time at another moment, then checks what it left: every
// session is whole (each entry it had) or gone, in one file, never half
// deleted or in two places, and every blob a remaining session refers to
// is there. A last sweep then finishes the work. Both a sweep that
// deletes and one that archives compressed are killed.
func TestSweepKilled(t *testing.T) {
	longtest.Skip(t, "kills a child sweeping")
	if testing.Short() || session.RaceEnabled {
		t.Skip("spawns processes (under the race detector too slow for what it adds: its point is the kills)")
	}
	for _, mode := range []string{"delete", "archive"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			root := filepath.Join(t.TempDir(), "sessions")
			store, err := session.OpenFileStore(root, nil)
			require.NoError(t, err)
			const n = 80
			want := map[string]int{}
			for i := range n {
				id := fmt.Sprintf("s-%02d", i)
				s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: fmt.Sprintf("/w%d", i%3)})
				require.NoError(t, err)
				img := bytes.Repeat([]byte{byte(i), 1, 2, 3}, 600) // a blob of its own
				for k := range 20 {
					m := session.UserText(fmt.Sprintf("%s line %d %s", id, k, strings.Repeat("x", 300)))
					if k == 3 {
						m = session.User(session.Text("see"), session.Image("image/png", img))
					}
					_, err = s.Append(ctx, m)
					require.NoError(t, err)
				}
				require.NoError(t, s.Close())
				want[id] = 20
			}
			require.NoError(t, store.Close())

			rng := rand.New(rand.NewPCG(1, uint64(len(mode))))
			kills := 0
			for round := 0; round < 12; round++ {
				cmd := exec.Command(os.Args[0], "-test.run=^TestSweepChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), "AGENTSESSION_SWEEP_KILL=1", "AGENTSESSION_ROOT="+root, "AGENTSESSION_MODE="+mode)
				stdout, err := cmd.StdoutPipe()
				require.NoError(t, err)
				require.NoError(t, cmd.Start())
				// Killed at a random point of the sweep's work: the child
				// says when it has listed, and takes about a millisecond a
				// session from there.
				var out bytes.Buffer
				buf := make([]byte, 1)
				for !strings.Contains(out.String(), "listed\n") {
					k, err := stdout.Read(buf)
					out.Write(buf[:k])
					if err != nil {
						break
					}
				}
				left := 0 // the sessions the sweep has left to do
				for _, ps := range sessionFiles(t, root) {
					if mode == "delete" || !strings.Contains(ps[0], ".archive") || !bytes.HasPrefix(must(os.ReadFile(ps[0])), zstdMagic) {
						left++
					}
				}
				time.Sleep(time.Duration(rng.IntN(max(left*2/3, 1))) * time.Millisecond)
				_ = cmd.Process.Kill()
				_, _ = out.ReadFrom(stdout)
				if err := cmd.Wait(); err != nil {
					kills++
				} else {
					require.Contains(t, out.String(), "PASS", out.String())
				}
				checkAfterSweep(t, root, want, mode)
			}
			// Finished by a sweep that is not killed.
			store, err = session.OpenFileStore(root, nil)
			require.NoError(t, err)
			defer store.Close()
			res, err := session.Sweep(ctx, store, sweepChildPolicy(mode))
			require.NoError(t, err)
			require.Empty(t, res.Errors)
			checkAfterSweep(t, root, want, mode)
			files := sessionFiles(t, root)
			if mode == "delete" {
				require.Empty(t, files, "every session swept")
				// The blobs of sessions a killed sweep deleted are
				// garbage a collection finds.
				_, err := session.CollectBlobs(ctx, store, &session.CollectOptions{Grace: -1})
				require.NoError(t, err)
				left := 0
				require.NoError(t, store.ListBlobs(ctx, func(session.BlobInfo) error { left++; return nil }))
				require.Zero(t, left, "every blob collected")
			} else {
				require.Len(t, files, n)
				for id, ps := range files {
					require.Contains(t, ps[0], ".archive", id)
					require.True(t, bytes.HasPrefix(must(os.ReadFile(ps[0])), zstdMagic), id)
				}
			}
			t.Logf("%d of 12 sweeps killed", kills)
		})
	}
}

func sweepChildPolicy(mode string) *session.SweepPolicy {
	return &session.SweepPolicy{
		OlderThan:   time.Hour,
		Now:         func() time.Time { return time.Now().Add(2 * time.Hour) },
		ArchiveOnly: mode == "archive",
		Compress:    mode == "archive",
		BlobGrace:   -1,
	}
}

// checkAfterSweep opens the store a killed sweep left and checks it.
func checkAfterSweep(t *testing.T, root string, want map[string]int, mode string) {
	t.Helper()
	ctx := context.Background()
	for id, ps := range sessionFiles(t, root) {
		require.Len(t, ps, 1, "session %s in one file", id)
	}
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	page, err := store.List(ctx, session.ListOptions{Archived: true, Limit: 1000})
	require.NoError(t, err)
	listed := map[string]bool{}
	for _, info := range page.Sessions {
		listed[info.ID] = true
	}
	for id, n := range want {
		log, err := store.Load(ctx, id)
		if errors.Is(err, session.ErrNotFound) {
			require.Equal(t, "delete", mode, "%s lost by an archiving sweep", id)
			require.False(t, listed[id], "%s listed but gone", id)
			continue
		}
		require.NoError(t, err, id)
		require.True(t, listed[id], "%s there but not listed", id)
		require.Len(t, log.Entries, n, id)
		require.Empty(t, log.Malformed, id)
		require.Nil(t, log.Torn, id)
		p, err := store.Path(id)
		require.NoError(t, err)
		f, err := os.Open(p)
		require.NoError(t, err)
		findings, _, err := session.VerifyReader(ctx, f, store.Blobs(), nil)
		f.Close()
		require.NoError(t, err, id)
		require.Empty(t, findings, "%s: its blobs are there", id)
	}
}

// TestSweepChild is the sweep TestSweepKilled kills; it does nothing in
// a normal run.
func TestSweepChild(t *testing.T) {
	if os.Getenv("AGENTSESSION_SWEEP_KILL") == "" {
		t.Skip("run as a child process by TestSweepKilled")
	}
	mode := os.Getenv("AGENTSESSION_MODE")
	store, err := session.OpenFileStore(os.Getenv("AGENTSESSION_ROOT"), nil)
	require.NoError(t, err)
	defer store.Close()
	p := sweepChildPolicy(mode)
	started := false
	p.Progress = func(done, total int) {
		if !started {
			started = true
			fmt.Println("listed")
		}
		time.Sleep(time.Millisecond) // a window for the kill
	}
	_, err = session.Sweep(context.Background(), store, p)
	require.NoError(t, err)
}

// TestCompressBesideAWriterProcess archives (compressed) and unarchives
// sessions again and again while another process appends to them: every
// append it acknowledged is there once, and each session is in one file.
func TestCompressBesideAWriterProcess(t *testing.T) {
	if testing.Short() || session.RaceEnabled {
		t.Skip("spawns a process (under the race detector too slow for what it adds)")
	}
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	store, err := session.OpenFileStore(root, &session.FileStoreOptions{CompressArchive: true})
	require.NoError(t, err)
	defer store.Close()
	var ids []string
	for i := range 6 {
		id := fmt.Sprintf("s-%d", i)
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w"})
		require.NoError(t, err)
		_, err = s.Append(ctx, session.UserText("first "+strings.Repeat("f", 2000)))
		require.NoError(t, err)
		require.NoError(t, s.Close())
		ids = append(ids, id)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCompressWriterChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AGENTSESSION_COMPRESS_CHILD=1", "AGENTSESSION_ROOT="+root,
		"AGENTSESSION_DIR="+dir, "AGENTSESSION_IDS="+strings.Join(ids, ","))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	require.NoError(t, cmd.Start())
	compressed := 0
	deadline := time.Now().Add(3 * time.Second)
	for r := 0; time.Now().Before(deadline); r++ {
		id := ids[r%len(ids)]
		if r%3 == 2 {
			require.NoError(t, store.Unarchive(ctx, id))
			continue
		}
		require.NoError(t, store.Archive(ctx, id))
		if p, err := store.Path(id); err == nil && strings.Contains(p, ".archive") {
			if data, err := os.ReadFile(p); err == nil && bytes.HasPrefix(data, zstdMagic) {
				compressed++
			}
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stop"), nil, 0o600))
	require.NoError(t, cmd.Wait(), out.String())
	acked := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if id, k, ok := strings.Cut(line, " "); ok && strings.HasPrefix(id, "s-") {
			acked[id], _ = strconv.Atoi(k)
		}
	}
	require.Len(t, acked, len(ids), out.String())
	for id, ps := range sessionFiles(t, root) {
		require.Len(t, ps, 1, "session %s in one file", id)
	}
	again, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer again.Close()
	total := 0
	for _, id := range ids {
		log, err := again.Load(ctx, id)
		require.NoError(t, err)
		require.Len(t, log.Entries, 1+acked[id], id)
		seen := map[string]bool{}
		for _, e := range log.Entries {
			require.False(t, seen[e.ID()], "%s: %s twice", id, e.ID())
			seen[e.ID()] = true
		}
		total += acked[id]
	}
	require.Positive(t, compressed, "some archives were compressed")
	t.Logf("%d appends from the writer; %d times found compressed in the archive", total, compressed)
}

// TestCompressWriterChild appends to the sessions of
// TestCompressBesideAWriterProcess until told to stop, and prints how
// many appends to each returned.
func TestCompressWriterChild(t *testing.T) {
	if os.Getenv("AGENTSESSION_COMPRESS_CHILD") == "" {
		t.Skip("run as a child process by TestCompressBesideAWriterProcess")
	}
	ctx := context.Background()
	store, err := session.OpenFileStore(os.Getenv("AGENTSESSION_ROOT"), nil)
	require.NoError(t, err)
	defer store.Close()
	ids := strings.Split(os.Getenv("AGENTSESSION_IDS"), ",")
	sessions := make([]*session.Session, len(ids))
	for i, id := range ids {
		sessions[i], err = session.Open(ctx, store, id)
		require.NoError(t, err)
	}
	acked := make([]int, len(ids))
	stop := filepath.Join(os.Getenv("AGENTSESSION_DIR"), "stop")
	for r := 0; ; r++ {
		if _, err := os.Stat(stop); err == nil {
			break
		}
		i := r % len(ids)
		_, err := sessions[i].Append(ctx, session.UserText(fmt.Sprintf("more %d", r)))
		require.NoError(t, err)
		acked[i]++
		if r%7 == 0 {
			time.Sleep(time.Millisecond) // let the archiver in
		}
	}
	for i, id := range ids {
		require.NoError(t, sessions[i].Close())
		fmt.Printf("%s %d\n", id, acked[i])
	}
}

// TestSweepCompress: a sweep with Compress compresses what it archives
// and what was archived plain before; a dry run only says so; a store
// that cannot compress refuses the policy.
func TestSweepCompress(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	for _, id := range []string{"s-old", "s-archived", "s-young"} {
		compressFixture(t, store, id, 3)
	}
	require.NoError(t, store.Archive(ctx, "s-archived"))
	policy := &session.SweepPolicy{OlderThan: time.Hour, ArchiveOnly: true, Compress: true, DryRun: true,
		Now: func() time.Time { return time.Now().Add(2 * time.Hour) }}
	res, err := session.Sweep(ctx, store, policy)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"s-old", "s-young"}, res.Archived)
	require.ElementsMatch(t, []string{"s-old", "s-young", "s-archived"}, res.Compressed)
	for id, ps := range sessionFiles(t, root) {
		require.False(t, bytes.HasPrefix(must(os.ReadFile(ps[0])), zstdMagic), "dry run: %s as it was", id)
	}
	policy.DryRun = false
	res, err = session.Sweep(ctx, store, policy)
	require.NoError(t, err)
	require.Empty(t, res.Errors)
	require.ElementsMatch(t, []string{"s-old", "s-young", "s-archived"}, res.Compressed)
	for id, ps := range sessionFiles(t, root) {
		require.Contains(t, ps[0], ".archive", id)
		require.True(t, bytes.HasPrefix(must(os.ReadFile(ps[0])), zstdMagic), id)
	}
	res, err = session.Sweep(ctx, store, policy)
	require.NoError(t, err)
	require.Empty(t, res.Compressed, "nothing left to compress")

	_, err = session.Sweep(ctx, session.NewMemoryStore(), policy)
	require.ErrorIs(t, err, errors.ErrUnsupported)
}
