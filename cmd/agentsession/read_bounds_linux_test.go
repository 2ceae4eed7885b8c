package main

// The commands read a session file as a FileStore does: the size is
// checked before anything is read, the file is read in chunks (a
// compressed one as a stream), a line over the limit is never held. Run
// as real processes (the test binary standing in for the command) that
// report their peak resident memory.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// runMeasured runs the command with args in a process of its own and
// returns its output, exit status and peak resident memory in bytes:
// its own (VmHWM), which the rusage of a child is not (it counts what
// the parent held when it started the child).
func runMeasured(t *testing.T, args ...string) (stdout, stderr string, code int, rss int64) {
	t.Helper()
	var o, e strings.Builder
	code, rss = runMeasuredTo(t, &o, &e, args...)
	return o.String(), e.String(), code, rss
}

// runMeasuredTo is runMeasured writing to stdout and stderr.
func runMeasuredTo(t *testing.T, stdout, stderr io.Writer, args ...string) (code int, rss int64) {
	t.Helper()
	hwm := filepath.Join(t.TempDir(), "hwm")
	cmd := exec.Command(os.Args[0], "-test.run=^TestMeasuredChild$", "-test.count=1")
	enc, err := json.Marshal(args)
	require.NoError(t, err)
	cmd.Env = append(os.Environ(), "AGENTSESSION_MEASURED_ARGS="+string(enc), "AGENTSESSION_HWM_FILE="+hwm, "NO_COLOR=1", "PAGER=cat")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	data, err := os.ReadFile(hwm)
	require.NoError(t, err, "the child reported no peak")
	rss, err = strconv.ParseInt(string(data), 10, 64)
	require.NoError(t, err)
	t.Logf("%s: exit %d, peak RSS %d MiB", strings.Join(args, " "), code, rss>>20)
	return code, rss
}

// TestMeasuredChild is the child of runMeasured: it runs the command,
// writes its peak resident memory to AGENTSESSION_HWM_FILE and exits
// with the command's status.
func TestMeasuredChild(t *testing.T) {
	enc, ok := os.LookupEnv("AGENTSESSION_MEASURED_ARGS")
	if !ok {
		t.Skip("the child of runMeasured")
	}
	var args []string
	if err := json.Unmarshal([]byte(enc), &args); err != nil {
		panic(err)
	}
	code := run(args, os.Stdout, os.Stderr)
	_, peak, _ := currentRSS()
	if err := os.WriteFile(os.Getenv("AGENTSESSION_HWM_FILE"), []byte(strconv.FormatUint(peak, 10)), 0o600); err != nil {
		panic(err)
	}
	os.Exit(code)
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
	if testing.Short() || raceEnabled {
		t.Skip("writes files of hundreds of MiB; measures memory, which the race detector multiplies")
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

// TestContextJSONOfImagesIsBounded: the JSON of a context of 96
// messages holding one 2 MiB image (256 MiB of output) is printed a
// message at a time: the process holds about a message's JSON, not the
// whole output marshalled and then indented.
func TestContextJSONOfImagesIsBounded(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measures memory, which the race detector multiplies")
	}
	const n, size = 96, 2 << 20
	p := imageStore(t, n, size)
	out, err := os.Create(filepath.Join(t.TempDir(), "out.json"))
	require.NoError(t, err)
	defer out.Close()
	var errOut strings.Builder
	code, rss := runMeasuredTo(t, out, &errOut, "context", "--json", p)
	require.Equal(t, 0, code, errOut.String())
	fi, err := out.Stat()
	require.NoError(t, err)
	t.Logf("printed %d MiB holding at most %d MiB", fi.Size()>>20, rss>>20)
	require.Greater(t, fi.Size(), int64(n*size*4/3))
	require.Less(t, rss, fi.Size()/4, "the output is not held whole")
}
