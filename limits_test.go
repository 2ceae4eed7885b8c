package session_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/longtest"
)

// TestWrittenIsReadable: what a store accepts, every reader reads back
// (a 1.1 MiB title opens by id and by path); what a reader would refuse
// is refused when written, with ErrTooLarge, and nothing is written.
func TestWrittenIsReadable(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("t", 1100<<10)
	for name, newStore := range storeKinds(t) {
		t.Run(name, func(t *testing.T) {
			store := newStore(t)
			s, err := session.Create(ctx, store, &session.CreateOptions{Title: long, Cwd: "/w"})
			require.NoError(t, err)
			appendAll(t, s, session.UserText("q"))
			require.NoError(t, s.Close())
			r, err := session.Open(ctx, store, s.ID())
			require.NoError(t, err)
			assert.Equal(t, long, r.Title())
			if fs, ok := innerFileStore(store); ok {
				path, err := fs.Path(s.ID())
				require.NoError(t, err)
				byPath, st, err := session.OpenFile(ctx, path, nil)
				require.NoError(t, err, "a session this store wrote opens by path")
				assert.Equal(t, long, byPath.Title())
				require.NoError(t, byPath.Close())
				require.NoError(t, st.Close())
			}

			// Over the limit: refused before anything is written.
			huge := strings.Repeat("h", session.DefaultMaxLineBytes)
			_, err = session.Create(ctx, store, &session.CreateOptions{ID: "s-huge", Title: huge})
			assert.ErrorIs(t, err, session.ErrTooLarge)
			_, err = store.Load(ctx, "s-huge")
			assert.ErrorIs(t, err, session.ErrNotFound, "nothing was created")
			n := r.Len()
			// (Strings over FileStoreOptions.MaxStringChars are cut: many
			// blocks under it make the line too long.)
			var blocks []session.Block
			for range session.DefaultMaxLineBytes/(400<<10) + 1 {
				blocks = append(blocks, session.Text(strings.Repeat("h", 400<<10)))
			}
			_, err = r.Append(ctx, session.User(blocks...))
			assert.ErrorIs(t, err, session.ErrTooLarge)
			log, err := store.Load(ctx, s.ID())
			require.NoError(t, err)
			assert.Len(t, log.Entries, n, "nothing was appended")
		})
	}
}

func innerFileStore(s session.Store) (*session.FileStore, bool) {
	if o, ok := s.(*session.ObservedStore); ok {
		s = o.Unwrap()
	}
	fs, ok := s.(*session.FileStore)
	return fs, ok
}

// TestFileStoreLimits: a store with lower limits refuses appends and
// files over them with clear errors.
func TestFileStoreLimits(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	lim := session.Limits{MaxLineBytes: 4 << 10, MaxEntries: 10, MaxLogBytes: 16 << 10}
	store := openFS(t, root, &session.FileStoreOptions{Limits: lim, MaxStringChars: -1})
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-lim", Cwd: "/w"})
	require.NoError(t, err)
	_, err = s.Append(ctx, session.UserText(strings.Repeat("x", 5<<10)))
	var le *session.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "line", le.What)
	assert.Contains(t, err.Error(), "MaxLineBytes")
	for range 10 {
		_, err = s.Append(ctx, session.UserText("small"))
		require.NoError(t, err)
	}
	_, err = s.Append(ctx, session.UserText("one too many"))
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "entries", le.What)
	assert.Equal(t, 10, s.Len())

	// A file over the limits, written by someone else, is refused whole.
	path := sessionFileOf(t, root, "s-lim")
	require.NoError(t, s.Close())
	require.NoError(t, store.Close())
	data := mustRead(t, path)
	var more bytes.Buffer
	more.Write(data)
	for range 20 {
		more.WriteString(`{"type":"custom","id":"` + strings.Repeat("a", 8) + `x` + string(rune('a'+more.Len()%26)) + `","parentId":null,"timestamp":"2026-01-15T10:00:00.000Z","customType":"x"}` + "\n")
	}
	require.NoError(t, os.WriteFile(path, more.Bytes(), 0o600))
	_, err = session.Open(ctx, openFS(t, root, &session.FileStoreOptions{Limits: lim}), "s-lim")
	require.ErrorIs(t, err, session.ErrTooLarge)
	assert.Contains(t, err.Error(), path, "the error names the file")
	// With the default limits it opens.
	_, err = session.Open(ctx, openFS(t, root, nil), "s-lim")
	require.NoError(t, err)
}

// hostileLog writes a session file whose second entry line is n bytes
// long (a JSON string member of n bytes).
func hostileLog(t *testing.T, dir string, n int) string {
	t.Helper()
	path := filepath.Join(dir, "hostile.jsonl")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	f.WriteString(`{"type":"session","version":3,"id":"s-hostile","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}` + "\n")
	f.WriteString(`{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":"before","timestamp":1}}` + "\n")
	f.WriteString(`{"type":"custom","id":"big","parentId":"m1","timestamp":"2026-01-15T10:00:02.000Z","customType":"x","data":"`)
	chunk := bytes.Repeat([]byte("A"), 1<<20)
	for w := 0; w < n; w += len(chunk) {
		f.Write(chunk[:min(len(chunk), n-w)])
	}
	f.WriteString(`"}` + "\n")
	f.WriteString(`{"type":"message","id":"m2","parentId":"m1","timestamp":"2026-01-15T10:00:03.000Z","message":{"role":"user","content":"after","timestamp":3}}` + "\n")
	return path
}

// allocated runs fn and returns the bytes it allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHostileLongLine: a line far over the limit is skipped as it is
// read, never held in memory, and reported as a malformed line; every
// reader agrees, and a strict read refuses it.
func TestHostileLongLine(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 48 MB file")
	}
	ctx := context.Background()
	dir := t.TempDir()
	path := hostileLog(t, dir, 48<<20)
	// A limit far below the line, so that what is allocated tells
	// whether the line was held.
	lim := session.Limits{MaxLineBytes: 1 << 20}
	check := func(t *testing.T, log *session.Log) {
		t.Helper()
		require.Len(t, log.Entries, 2)
		require.Len(t, log.Malformed, 1)
		assert.Equal(t, 3, log.Malformed[0].Line)
		assert.ErrorIs(t, log.Malformed[0].Err, session.ErrTooLarge)
	}
	var s *session.Session
	var store *session.FileStore
	alloc := allocated(func() {
		var err error
		s, store, err = session.OpenFile(ctx, path, &session.FileStoreOptions{Limits: lim})
		require.NoError(t, err)
	})
	check(t, s.Log())
	assert.Less(t, alloc, uint64(16<<20), "opening allocated %d MB for a 48 MB line", alloc>>20)
	require.NoError(t, s.Close())
	require.NoError(t, store.Close())

	alloc = allocated(func() {
		log, err := session.ReadLog(mustOpen(t, path), &session.ReadOptions{Limits: lim})
		require.NoError(t, err)
		check(t, log)
	})
	assert.Less(t, alloc, uint64(8<<20), "ReadLog allocated %d MB", alloc>>20)
	_, err := session.ReadLog(mustOpen(t, path), &session.ReadOptions{Strict: true, Limits: lim})
	assert.ErrorIs(t, err, session.ErrTooLarge)

	data := mustRead(t, path)
	log, err := session.DecodeLog(data, &session.ReadOptions{Limits: lim})
	require.NoError(t, err)
	check(t, log)
	_, err = session.DecodeLog(data, &session.ReadOptions{Strict: true, Limits: lim})
	assert.ErrorIs(t, err, session.ErrTooLarge)
	// With the default limit (64 MiB) it is an entry like any other.
	log, err = session.DecodeLog(data, nil)
	require.NoError(t, err)
	assert.Len(t, log.Entries, 3)
}

// TestHostileManyEntries: a log of more lines than the limit is refused
// before its entries are decoded, by every reader.
func TestHostileManyEntries(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var b bytes.Buffer
	b.WriteString(`{"type":"session","version":3,"id":"s-many","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}` + "\n")
	for i := range 5000 {
		b.WriteString(`{"type":"custom","id":"e` + strings.Repeat("0", 6) + itoa(i) + `","parentId":null,"customType":"x"}` + "\n")
	}
	path := filepath.Join(dir, "many.jsonl")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o600))
	lim := session.Limits{MaxEntries: 4999}
	_, err := session.DecodeLog(b.Bytes(), &session.ReadOptions{Limits: lim})
	assert.ErrorIs(t, err, session.ErrTooLarge)
	_, err = session.ReadLog(bytes.NewReader(b.Bytes()), &session.ReadOptions{Limits: lim})
	assert.ErrorIs(t, err, session.ErrTooLarge)
	_, _, err = session.OpenFile(ctx, path, &session.FileStoreOptions{Limits: lim})
	assert.ErrorIs(t, err, session.ErrTooLarge)
	var le *session.LimitError
	require.True(t, errors.As(err, &le))
	assert.Equal(t, "entries", le.What)
	// One more allowed, and it opens.
	s, st, err := session.OpenFile(ctx, path, &session.FileStoreOptions{Limits: session.Limits{MaxEntries: 5000}})
	require.NoError(t, err)
	assert.Equal(t, 5000, s.Len())
	st.Close()
	// And a whole-log limit.
	_, err = session.DecodeLog(b.Bytes(), &session.ReadOptions{Limits: session.Limits{MaxLogBytes: 1000}})
	assert.ErrorIs(t, err, session.ErrTooLarge)
}

// TestListWithinLimits: a listing reads each file as it goes, never whole
// into memory, and leaves out a file a Load would refuse.
func TestListWithinLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 48 MB file")
	}
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-small", Cwd: "/w"})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("q"))
	require.NoError(t, s.Close())
	require.NoError(t, store.Close())
	// A big file in the store's layout.
	big := hostileLog(t, t.TempDir(), 48<<20)
	data := mustRead(t, big)
	id := putFile(t, root, data)

	lim := session.Limits{MaxLineBytes: 1 << 20, MaxLogBytes: 8 << 20}
	var page *session.ListPage
	alloc := allocated(func() {
		var err error
		page, err = openFS(t, root, &session.FileStoreOptions{Limits: lim}).List(ctx, session.ListOptions{})
		require.NoError(t, err)
	})
	assert.Equal(t, []string{"s-small"}, infoIDs(page.Sessions), "a file over MaxLogBytes is not listed, as Load refuses it")
	assert.Less(t, alloc, uint64(16<<20), "the listing allocated %d MB", alloc>>20)
	// With room for it, it is listed, its long line counted as no entry.
	page, err = openFS(t, root, &session.FileStoreOptions{Limits: session.Limits{MaxLineBytes: 1 << 20}}).List(ctx, session.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Sessions, 2)
	for _, info := range page.Sessions {
		if info.ID == id {
			assert.Equal(t, 2, info.Entries, "the line over the limit is no entry, as for Load")
		}
	}
}

// TestTailWithinLimits: catching up with what another writer appended
// keeps to the limits a Load keeps to.
func TestTailWithinLimits(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	lim := session.Limits{MaxEntries: 10}
	a, err := session.Create(ctx, openFS(t, root, &session.FileStoreOptions{Limits: lim}), &session.CreateOptions{ID: "s-tl", Cwd: "/w"})
	require.NoError(t, err)
	appendAll(t, a, session.UserText("one"))
	// Another writer with higher limits takes the session past a's.
	b, err := session.Open(ctx, openFS(t, root, nil), "s-tl")
	require.NoError(t, err)
	for range 15 {
		appendAll(t, b, session.UserText("more"))
	}
	err = a.Reload(ctx)
	assert.ErrorIs(t, err, session.ErrTooLarge)
	_, err = a.Append(ctx, session.UserText("and a's"))
	assert.ErrorIs(t, err, session.ErrTooLarge)
	assert.Equal(t, 1, a.Len(), "a learned nothing past its limits")
}

// maxOpenCost is the documented bound on what opening a log costs in
// memory: about twice its bytes for the text it holds, and about 1 KB for
// each entry (a decoded message is some 600 bytes, its index entry a few
// hundred), which a file of tiny entries makes up to 20 times its size;
// plus what reading needs whatever the file (chunk buffers, decoders).
func maxOpenCost(size int) uint64 { return 20*uint64(size) + 32<<20 }

// TestOpenCostBound opens random hostile logs (tiny entries by the
// hundred thousand, long lines past the limit, long texts, malformed
// lines, cut appends, deep chains, wide trees) and checks that the memory
// an open session holds stays within maxOpenCost of the file.
func TestOpenCostBound(t *testing.T) {
	longtest.Skip(t, "writes and opens megabytes of random logs")
	if testing.Short() || session.RaceEnabled {
		t.Skip("writes and opens megabytes of random logs (run without -short and the race detector)")
	}
	ctx := context.Background()
	lim := session.Limits{MaxLineBytes: 256 << 10}
	worst := 0.0
	defer func() { t.Logf("at most %.1f times the file's size held", worst) }()
	for seed := range 24 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		var b bytes.Buffer
		b.WriteString(`{"type":"session","version":3,"id":"s-cost","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}` + "\n")
		target := 1<<20 + rng.IntN(6<<20)
		parent, n := "null", 0
		for b.Len() < target {
			id := fmt.Sprintf("e%07d", n)
			n++
			if rng.IntN(3) == 0 {
				parent = "null" // a wide tree
			}
			kind := rng.IntN(8)
			switch seed % 4 {
			case 0: // only tiny entries: the most per byte
				kind = rng.IntN(4)
			case 1: // tiny, malformed and cut
				kind = []int{0, 2, 3, 6, 7}[rng.IntN(5)]
			case 2: // no line past the limit
				kind = rng.IntN(5)
			}
			switch kind {
			case 0, 1:
				fmt.Fprintf(&b, `{"type":"x","id":%q,"parentId":%s}`+"\n", id, parent)
			case 2, 3:
				fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"message":{"role":"user","content":"x"}}`+"\n", id, parent)
			case 4:
				fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"message":{"role":"assistant","content":[{"type":"text","text":%q}]}}`+"\n", id, parent, strings.Repeat("t", rng.IntN(64<<10)))
			case 5:
				fmt.Fprintf(&b, `{"type":"x","id":%q,"parentId":%s,"data":%q}`+"\n", id, parent, strings.Repeat("L", 300<<10)) // past the limit
			case 6:
				b.WriteString("{not json at all\n")
			case 7:
				fmt.Fprintf(&b, `{"type":"x","id":%q,"parentId":%s,"agentsession.append":"0/3/zz%d"}`+"\n", id, parent, n) // cut
			}
			parent = fmt.Sprintf("%q", id)
		}
		root := t.TempDir()
		id := putFile(t, root, b.Bytes())
		var s *session.Session
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		store := openFS(t, root, &session.FileStoreOptions{Limits: lim})
		s, err := session.Open(ctx, store, id)
		require.NoError(t, err, "seed %d", seed)
		_ = s.Context()
		runtime.GC()
		runtime.ReadMemStats(&after)
		held := after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
		assert.LessOrEqual(t, held, maxOpenCost(b.Len()), "seed %d: a %d-byte log of %d lines holds %d bytes open", seed, b.Len(), n, held)
		worst = max(worst, float64(held)/float64(b.Len()))
		runtime.KeepAlive(s)
		require.NoError(t, store.Close())
	}
}

// TestNoLineLimit: a negative MaxLineBytes (no limit) reads every line,
// in every reader: the streaming ones (ReadLog, the Decoder, ReadLogAt
// of a compressed log) took "no limit" for a limit of less than nothing.
func TestNoLineLimit(t *testing.T) {
	data := `{"type":"session","version":3,"id":"s1","cwd":"/w"}` + "\n" +
		`{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}` + "\n"
	opts := &session.ReadOptions{Limits: session.Limits{MaxLineBytes: -1, MaxLogBytes: -1}}
	log, err := session.ReadLog(strings.NewReader(data), opts)
	require.NoError(t, err)
	require.Len(t, log.Entries, 1)
	log, err = session.ReadLogAt(strings.NewReader(data), int64(len(data)), opts)
	require.NoError(t, err)
	require.Len(t, log.Entries, 1)
}
