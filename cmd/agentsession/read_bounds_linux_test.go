package main

// The commands read a session file as a FileStore does: the size is
// checked before anything is read, the file is read in chunks (a
// compressed one as a stream), a line over the limit is never held. Run
// as real processes (the test binary standing in for the command) whose
// peak resident memory the kernel reports.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// runMeasured runs the command with args in a process of its own and
// returns its output, exit status and peak resident memory in bytes.
func runMeasured(t *testing.T, args ...string) (stdout, stderr string, code int, rss int64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "AGENTSESSION_TEST_MAIN=1", "NO_COLOR=1", "PAGER=cat")
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	rss = ru.Maxrss << 10 // KiB on Linux
	t.Logf("%s: exit %d, peak RSS %d MiB", strings.Join(args, " "), code, rss>>20)
	return o.String(), e.String(), code, rss
}

// longLineFile writes a session file in version version whose second
// line is a message of n bytes, between two short ones.
func longLineFile(t *testing.T, version int, n int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "long.jsonl")
	f, err := os.Create(p)
	require.NoError(t, err)
	w := bufio.NewWriterSize(f, 1<<20)
	ids := func(id, parent string) string {
		if version < 2 {
			return ""
		}
		return fmt.Sprintf(`"id":%q,"parentId":%s,`, id, parent)
	}
	fmt.Fprintf(w, `{"type":"session","version":%d,"id":"s-long","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}`+"\n", version)
	fmt.Fprintf(w, `{"type":"message",%s"message":{"role":"user","content":"before"}}`+"\n", ids("u1", "null"))
	fmt.Fprintf(w, `{"type":"message",%s"message":{"role":"user","content":"`, ids("u2", `"u1"`))
	chunk := strings.Repeat("x", 1<<20)
	for k := 0; k < n; k += len(chunk) {
		w.WriteString(chunk[:min(len(chunk), n-k)])
	}
	fmt.Fprintf(w, `"}}`+"\n"+`{"type":"message",%s"message":{"role":"user","content":"after"}}`+"\n", ids("u3", `"u1"`))
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	return p
}

// TestReadsAreBounded: context, tree and migrate of a file holding a
// line far over Limits.MaxLineBytes take memory of the size of the
// limit's chunks, not of the line; a file over MaxLogBytes is refused
// before it is read.
func TestReadsAreBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes files of hundreds of MiB")
	}
	const line = 320 << 20 // five times DefaultMaxLineBytes
	const bound = 128 << 20
	p := longLineFile(t, session.CurrentVersion, line)
	for _, args := range [][]string{{"context", p}, {"tree", p}, {"show", p}} {
		out, errOut, code, rss := runMeasured(t, args...)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, errOut, "1 malformed line skipped", "the line over the limit")
		if args[0] == "context" {
			require.Contains(t, out, "after")
		}
		require.Less(t, rss, int64(bound), "%s held the line", args[0])
	}
	out, errOut, code, rss := runMeasured(t, "migrate", "--dry-run", p)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "already version 3")
	require.Less(t, rss, int64(bound))

	// An older version, which a migration must read whole: refused,
	// having read up to the line over the limit.
	old := longLineFile(t, 1, line)
	for _, args := range [][]string{{"migrate", "--dry-run", old}, {"migrate", old}} {
		_, errOut, code, rss := runMeasured(t, args...)
		require.Equal(t, exitError, code)
		require.Contains(t, errOut, "line 3 is over the limit")
		require.Less(t, rss, int64(bound))
	}
	// Read as a stream, migrated line by line: the line at hand is held
	// up to the limit (see session.Limits).
	_, errOut, code, rss = runMeasured(t, "context", old)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "1 malformed line skipped")
	require.Less(t, rss, int64(2*session.DefaultMaxLineBytes+32<<20))

	// Over MaxLogBytes: refused from its size (a sparse file: its
	// zeros are never written, and never read).
	big := filepath.Join(t.TempDir(), "big.jsonl")
	require.NoError(t, os.WriteFile(big, []byte(`{"type":"session","version":3,"id":"s-big","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}`+"\n"), 0o600))
	require.NoError(t, os.Truncate(big, session.DefaultMaxLogBytes+1))
	for _, cmd := range []string{"context", "migrate"} {
		_, errOut, code, rss := runMeasured(t, cmd, big)
		require.Equal(t, exitError, code)
		require.Contains(t, errOut, "over the limit of 1073741824 (Limits.MaxLogBytes)")
		require.Less(t, rss, int64(64<<20))
	}
}
