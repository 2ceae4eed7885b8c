package session_test

// Compression bombs: a small compressed archived session that
// decompresses to far more. Listing it reads it as a stream, holding a
// line at a time; opening it streams too and stops at the limits; the
// memory either takes is bounded by the limits (see Limits), measured
// in a child process of its own so that nothing else the test binary
// does counts.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/longtest"
)

// bombID is the session of every bomb.
const bombID = "bomb"

// writeBomb writes the archived session bombID under root as one zstd
// frame whose log is about plain bytes: "line", a header and one
// message line of the rest; "lines", a header and message lines of a
// MiB each, a chain; "window", a small log in a frame that asks for a
// decoder window of 512 MiB. It returns the compressed size.
func writeBomb(t testing.TB, root, kind string, plain int64) int64 {
	t.Helper()
	dir := filepath.Join(root, ".archive", "--w--")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	path := filepath.Join(dir, "2026-01-01T00-00-00-000Z_"+bombID+".jsonl")
	f, err := os.Create(path)
	require.NoError(t, err)
	opts := []zstd.EOption{zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedBetterCompression)}
	if kind == "window" {
		opts = append(opts, zstd.WithWindowSize(512<<20), zstd.WithSingleSegment(false))
	}
	enc, err := zstd.NewWriter(f, opts...)
	require.NoError(t, err)
	w := bufio.NewWriterSize(enc, 1<<20)
	fmt.Fprintln(w, `{"type":"session","version":3,"id":"`+bombID+`","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}`)
	mib := strings.Repeat("a", 1<<20)
	switch kind {
	case "line":
		fmt.Fprint(w, `{"type":"message","id":"m0","parentId":null,"message":{"role":"user","content":"`)
		for n := int64(0); n < plain; n += 1 << 20 {
			w.WriteString(mib)
		}
		fmt.Fprintln(w, `"}}`)
	case "lines", "window":
		parent := "null"
		for i := int64(0); i<<20 < plain; i++ {
			fmt.Fprintf(w, `{"type":"message","id":"m%d","parentId":%s,"message":{"role":"user","content":"%s"}}`+"\n", i, parent, mib)
			parent = fmt.Sprintf(`"m%d"`, i)
		}
	}
	require.NoError(t, w.Flush())
	require.NoError(t, enc.Close())
	fi, err := f.Stat()
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return fi.Size()
}

// bombResult is what the child reports of one operation.
type bombResult struct {
	TotalAlloc uint64 // bytes allocated during the operation
	HeapSys    uint64 // bytes of heap obtained from the system by its end: about the peak
	Listed     bool   // List: the session is listed
	Entries    int    // entries listed or opened
	Err        string // the error, if any
	TooLarge   bool   // errors.Is(err, session.ErrTooLarge)
	Corrupt    bool   // errors.Is(err, session.ErrCorrupt)
}

// TestBombChild is the child of runBomb: it runs one operation on the
// store at AGENTSESSION_ROOT and prints a bombResult.
func TestBombChild(t *testing.T) {
	op := os.Getenv("AGENTSESSION_BOMB_OP")
	if op == "" {
		t.Skip("the child of the bomb tests")
	}
	var lim session.Limits
	require.NoError(t, json.Unmarshal([]byte(os.Getenv("AGENTSESSION_BOMB_LIMITS")), &lim))
	ctx := context.Background()
	store, err := session.OpenFileStore(os.Getenv("AGENTSESSION_ROOT"), &session.FileStoreOptions{Limits: lim})
	require.NoError(t, err)
	defer store.Close()
	debug.SetGCPercent(50)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var res bombResult
	switch op {
	case "list":
		var p *session.ListPage
		if p, err = store.List(ctx, session.ListOptions{Archived: true}); err == nil {
			for _, info := range p.Sessions {
				if info.ID == bombID {
					res.Listed, res.Entries = true, info.Entries
				}
			}
		}
	case "open":
		var s *session.Session
		if s, err = session.Open(ctx, store, bombID); err == nil {
			res.Entries = s.Len()
			runtime.KeepAlive(s)
		}
	case "load":
		var log *session.Log
		if log, err = store.Load(ctx, bombID); err == nil {
			res.Entries = len(log.Entries)
		}
	}
	runtime.ReadMemStats(&after)
	res.TotalAlloc, res.HeapSys = after.TotalAlloc-before.TotalAlloc, after.HeapSys
	if err != nil {
		res.Err, res.TooLarge, res.Corrupt = err.Error(), errors.Is(err, session.ErrTooLarge), errors.Is(err, session.ErrCorrupt)
	}
	out, _ := json.Marshal(res)
	fmt.Printf("bomb-result %s\n", out)
}

// runBomb runs op on the store at root in a child process, with lim.
func runBomb(t *testing.T, root, op string, lim session.Limits) bombResult {
	t.Helper()
	limits, err := json.Marshal(lim)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestBombChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "AGENTSESSION_BOMB_OP="+op, "AGENTSESSION_ROOT="+root, "AGENTSESSION_BOMB_LIMITS="+string(limits))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	for _, line := range strings.Split(string(out), "\n") {
		if s, ok := strings.CutPrefix(line, "bomb-result "); ok {
			var res bombResult
			require.NoError(t, json.Unmarshal([]byte(s), &res))
			t.Logf("%s: allocated %d MiB, heap %d MiB; listed %v, entries %d, err %.120s", op, res.TotalAlloc>>20, res.HeapSys>>20, res.Listed, res.Entries, res.Err)
			return res
		}
	}
	t.Fatalf("no result from the child:\n%s", out)
	return bombResult{}
}

// TestCompressedBomb: the bomb of the issue, a compressed archived
// session of about 28 KiB holding a header and one 900 MiB line (within
// the default MaxLogBytes), is listed and opened in memory bounded by
// the limits, not by what it decompresses to: the line, over
// MaxLineBytes, is skipped as it streams past, never held.
func TestCompressedBomb(t *testing.T) {
	longtest.Skip(t, "decompresses 900 MiB in child processes")
	if testing.Short() || session.RaceEnabled {
		t.Skip("decompresses 900 MiB in child processes")
	}
	root := filepath.Join(t.TempDir(), "sessions")
	size := writeBomb(t, root, "line", 900<<20)
	require.Less(t, size, int64(64<<10), "a small file")
	var lim session.Limits
	def := lim.WithDefaults()
	// What a read holds besides the log it returns (see Limits): a line
	// being read, the decoder's window and buffers.
	bound := uint64(3*def.MaxLineBytes + 32<<20)

	list := runBomb(t, root, "list", lim)
	require.Empty(t, list.Err)
	require.True(t, list.Listed, "within the limits: listed")
	require.Zero(t, list.Entries, "its one line is over MaxLineBytes: no entry")
	require.LessOrEqual(t, list.TotalAlloc, bound, "List allocated %d MiB", list.TotalAlloc>>20)

	require.NoError(t, os.Remove(filepath.Join(root, ".index"))) // read it again
	for _, op := range []string{"open", "load"} {
		res := runBomb(t, root, op, lim)
		require.Empty(t, res.Err)
		require.Zero(t, res.Entries)
		require.LessOrEqual(t, res.TotalAlloc, bound, "%s allocated %d MiB", op, res.TotalAlloc>>20)
	}
}

// TestCompressedBombLines: a bomb of 1 MiB lines. Within the limits it
// is listed holding a line at a time, and opened holding about what the
// log keeps (its entries) and no second copy of it; past MaxLogBytes,
// the read stops there with a *LimitError and holds no more than the
// limit.
func TestCompressedBombLines(t *testing.T) {
	longtest.Skip(t, "decompresses hundreds of MiB in child processes")
	if testing.Short() || session.RaceEnabled {
		t.Skip("decompresses hundreds of MiB in child processes")
	}
	const plain = 256 << 20
	root := filepath.Join(t.TempDir(), "sessions")
	writeBomb(t, root, "lines", plain)
	lim := session.Limits{MaxLineBytes: 2 << 20}

	list := runBomb(t, root, "list", lim)
	require.Empty(t, list.Err)
	require.True(t, list.Listed)
	require.Equal(t, plain>>20, list.Entries)
	require.LessOrEqual(t, list.HeapSys, uint64(64<<20), "List's heap: %d MiB", list.HeapSys>>20)

	require.NoError(t, os.Remove(filepath.Join(root, ".index")))
	open := runBomb(t, root, "open", lim)
	require.Empty(t, open.Err)
	require.Equal(t, plain>>20, open.Entries)
	// The entries hold the log's text once; the file's bytes are never
	// all held besides them.
	require.LessOrEqual(t, open.HeapSys, uint64(plain+plain/2), "Open's heap: %d MiB", open.HeapSys>>20)

	// Past MaxLogBytes: refused having read about the limit.
	lim.MaxLogBytes = 32 << 20
	for _, op := range []string{"open", "list"} {
		res := runBomb(t, root, op, lim)
		require.False(t, res.Listed, "%s: over the limit: not listed", op)
		if op == "open" {
			require.True(t, res.TooLarge, "%s: %s", op, res.Err)
		}
		require.LessOrEqual(t, res.TotalAlloc, uint64(2*lim.MaxLogBytes+16<<20), "%s allocated %d MiB", op, res.TotalAlloc>>20)
	}
}

// TestCompressedBombWindow: a frame that asks for a decoder window far
// larger than any this package writes is refused as too large (a
// *LimitError, ErrTooLarge), without allocating the window.
func TestCompressedBombWindow(t *testing.T) {
	longtest.Skip(t, "decompression bombs in child processes")
	if testing.Short() {
		t.Skip("child processes")
	}
	root := filepath.Join(t.TempDir(), "sessions")
	writeBomb(t, root, "window", 256<<20)
	for _, op := range []string{"open", "list"} {
		res := runBomb(t, root, op, session.Limits{})
		require.False(t, res.Listed)
		if op == "open" {
			require.True(t, res.TooLarge, "%s", res.Err)
		}
		require.LessOrEqual(t, res.TotalAlloc, uint64(32<<20), "%s allocated %d MiB", op, res.TotalAlloc>>20)
	}
}

// TestCompressedStreamsEveryReader: the readers of a compressed log in
// memory or in a stream (DecodeLog, ReadLog, the Decoder) refuse a bomb
// past the limit having decompressed about the limit, whatever size its
// frame claims.
func TestCompressedStreamsEveryReader(t *testing.T) {
	root := t.TempDir()
	writeBomb(t, root, "lines", 64<<20)
	files, err := filepath.Glob(filepath.Join(root, ".archive", "--w--", "*.jsonl"))
	require.NoError(t, err)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	opts := &session.ReadOptions{Limits: session.Limits{MaxLogBytes: 8 << 20}}
	_, err = session.DecodeLog(data, opts)
	require.ErrorIs(t, err, session.ErrTooLarge)
	_, err = session.ReadLog(strings.NewReader(string(data)), opts)
	require.ErrorIs(t, err, session.ErrTooLarge)
	d := session.NewDecoder(io.MultiReader(strings.NewReader(string(data))), opts)
	n := 0
	for {
		if _, err = d.Next(); err != nil {
			break
		}
		n++
	}
	require.ErrorIs(t, err, session.ErrTooLarge)
	require.Less(t, n, 8, "stopped at the limit: "+strconv.Itoa(n))
}

// TestWholeReadsCheckSizeFirst: what reads a log whole to write it again
// (compressing an archived session, a rewrite) refuses a file over the
// store's MaxLogBytes from its size, before reading it, as a load does,
// and leaves it as it was.
func TestWholeReadsCheckSizeFirst(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	big := openFS(t, root, nil)
	s, err := session.Create(ctx, big, &session.CreateOptions{ID: "s-big", Cwd: "/w"})
	require.NoError(t, err)
	for i := range 40 {
		_, err := s.Append(ctx, session.UserText(fmt.Sprintf("turn %d %s", i, strings.Repeat("x", 1000))))
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	require.NoError(t, big.Archive(ctx, "s-big"))
	p, err := big.Path("s-big")
	require.NoError(t, err)
	before, err := os.ReadFile(p)
	require.NoError(t, err)

	small := openFS(t, root, &session.FileStoreOptions{Limits: session.Limits{MaxLogBytes: 16 << 10}})
	_, err = small.Load(ctx, "s-big")
	require.ErrorIs(t, err, session.ErrTooLarge)
	require.ErrorIs(t, small.CompressArchived(ctx, "s-big"), session.ErrTooLarge)
	h := session.Header{ID: "s-big", Cwd: "/w"}
	require.ErrorIs(t, small.Rewrite(ctx, "s-big", session.RewriteOptions{}, h, nil), session.ErrTooLarge)
	after, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, before, after, "left as it was")
}
