package session_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/stretchr/testify/require"
)

// Issue 40 break-it, second round: an open by path must answer as the
// same file read whole (session.OpenLog of store.Load), whatever the
// index beside the file holds. The index is a cache another program can
// write: one with a valid checksum must still never make an open return
// a context the file does not hold.

// forgedRec is one record of an index, decoded.
type forgedRec = session.IndexRec

// forgeIndex rewrites the index at path: edit gets its records and
// returns the new ones; the rest (the hash table, the checksums) is made
// again, so that the index is one a reader cannot tell from a real one.
func forgeIndex(t *testing.T, path string, edit func(recs []forgedRec) []forgedRec) {
	t.Helper()
	require.NoError(t, session.ForgePathIndex(path, edit))
}

// openFreshVsWhole opens id by path in a fresh store of dir and returns
// whether the handle is partial and its Context and LeafID, with the
// same of the file read whole.
func openFreshVsWhole(t *testing.T, dir, id string) (partial bool, got, want []any) {
	t.Helper()
	ctx := context.Background()
	ref, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	log, err := ref.Load(ctx, id)
	require.NoError(t, err)
	require.NoError(t, ref.Close())
	whole := session.OpenLog(log)
	defer whole.Close()
	fresh, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	defer fresh.Close()
	s, err := session.Open(ctx, fresh, id)
	require.NoError(t, err)
	defer s.Close()
	return session.IsPartial(s),
		[]any{s.LeafID(), contextView(s.Context())},
		[]any{whole.LeafID(), contextView(whole.Context())}
}

// TestBreakIt2ForgedIndexDropsLastEntries: an index whose last records
// are left out (with its hash table and checksum made again) still
// covers the whole file by its header: the open reads the path to the
// index's last record, a turn short of the file's, and says nothing.
func TestBreakIt2ForgedIndexDropsLastEntries(t *testing.T) {
	withPathIndexes(t)
	dir := t.TempDir()
	fs, id := indexedStore(t, dir, "longTail")
	forgeIndex(t, session.PathIndexFile(fs, id), func(recs []forgedRec) []forgedRec {
		return recs[:len(recs)-2] // the last turn: its user and assistant messages
	})
	partial, got, want := openFreshVsWhole(t, dir, id)
	require.Equal(t, want, got, "partial %v", partial)
}

// TestBreakIt2ForgedMarkerParent: the last line is a leaf marker (a
// Branch back); the index's record of it names as its parent the tip of
// the branch left behind. readPath reads the marker's line to check its
// id and kind, never its parent: the open answers with the old branch.
func TestBreakIt2ForgedMarkerParent(t *testing.T) {
	withPathIndexes(t)
	dir := t.TempDir()
	fs, id := indexedStore(t, dir, "moved")
	forgeIndex(t, session.PathIndexFile(fs, id), func(recs []forgedRec) []forgedRec {
		last := len(recs) - 1
		require.NotZero(t, recs[last].Flags&4, "the last record is a leaf marker")
		// The branch's old tip: the last record before the marker.
		tip := int32(last - 1)
		recs[last].Parent = tip
		recs[last].Depth = recs[tip].Depth + 1
		return recs
	})
	partial, got, want := openFreshVsWhole(t, dir, id)
	require.Equal(t, want, got, "partial %v", partial)
}

// TestBreakIt2ForgedOffsetWraps: a record whose offset is near the top
// of int64 wraps off+n below covered; get lets it through, and the read
// at that offset ends in io.EOF, which readEntries ignores (the worker's
// buffer keeps whatever it held). The open must still answer as whole.
func TestBreakIt2ForgedOffsetWraps(t *testing.T) {
	withPathIndexes(t)
	dir := t.TempDir()
	fs, id := indexedStore(t, dir, "longTail")
	forgeIndex(t, session.PathIndexFile(fs, id), func(recs []forgedRec) []forgedRec {
		r := &recs[len(recs)-1]
		r.Off = 1<<63 - 1 - int64(r.N)/2
		return recs
	})
	partial, got, want := openFreshVsWhole(t, dir, id)
	require.Equal(t, want, got, "partial %v", partial)
}

// TestBreakIt2ForgedSettingPointer: the record the path starts from
// names, as its nearest setting, a setting of another branch (or one
// after it); the open reads it before the path. Each such link is
// checked for depth only, not for being an ancestor.
func TestBreakIt2ForgedSettingPointer(t *testing.T) {
	withPathIndexes(t)
	dir := t.TempDir()
	fs, id := indexedStore(t, dir, "linear")
	require.NoError(t, fs.Close())
	// A setting on a side branch, appended by another writer after the
	// index: a thinking level the path does not hold.
	logPath := sessionFileOf(t, dir, id)
	log, err := session.DecodeLog(mustRead(t, logPath), nil)
	require.NoError(t, err)
	first := log.Entries[0].ID()
	appendRaw(t, logPath,
		fmt.Sprintf(`{"type":"thinking_level_change","id":"zzside01","parentId":%q,"timestamp":"2026-01-01T00:00:01.000Z","thinkingLevel":"minimal"}`, first),
		fmt.Sprintf(`{"type":"custom","customType":"agentsession.leaf","id":"zzside02","parentId":%q,"timestamp":"2026-01-01T00:00:02.000Z","data":{}}`, log.Entries[len(log.Entries)-1].ID()),
	)
	idx := pathIndexOf(t, dir, id)
	require.NoError(t, os.Remove(idx)) // built again, with the side setting
	_, _ = reindexFresh(t, dir, id)
	forgeIndex(t, idx, func(recs []forgedRec) []forgedRec {
		side := -1
		for i := len(recs) - 1; i >= 0; i-- {
			if recs[i].Flags&1 != 0 && recs[i].Depth == 1 {
				side = i
				break
			}
		}
		if side < 0 {
			t.Skip("the side setting got no record")
		}
		// Every record deeper than the side setting now names it as its
		// nearest setting (and it names none): the depths still fall.
		recs[side].Set = -1
		for i := range recs {
			if i != side && recs[i].Depth > 1 {
				recs[i].Set = int32(side)
			}
		}
		return recs
	})
	partial, got, want := openFreshVsWhole(t, dir, id)
	require.Equal(t, want, got, "partial %v", partial)
}

// reindexFresh opens id whole in a fresh store of dir, so that the index
// is built, and closes the store.
func reindexFresh(t *testing.T, dir, id string) (*session.FileStore, error) {
	t.Helper()
	fs, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	s, err := session.Open(context.Background(), fs, id)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	session.WaitPathIndexes(fs)
	return fs, fs.Close()
}

func pathIndexOf(t *testing.T, dir, id string) string {
	t.Helper()
	fs, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	defer fs.Close()
	p := session.PathIndexFile(fs, id)
	_, err = os.Stat(p)
	require.NoError(t, err, "an index")
	return p
}

// limitedOpen opens id in a store of dir with lim, by its path and
// whole, and returns the errors of both.
func limitedOpen(t *testing.T, dir, id string, lim session.Limits) (openErr, loadErr error, partial bool) {
	t.Helper()
	ctx := context.Background()
	small, err := session.OpenFileStore(dir, &session.FileStoreOptions{Limits: lim})
	require.NoError(t, err)
	defer small.Close()
	_, loadErr = small.Load(ctx, id)
	s, openErr := session.Open(ctx, small, id)
	if openErr == nil {
		partial = session.IsPartial(s)
		require.NoError(t, s.Close())
	}
	return openErr, loadErr, partial
}

// TestBreakIt2LongLineOffThePath: a message long before the latest
// compaction (after the first settings, before the others) is on a line
// longer than this store's MaxLineBytes. A whole read skips the line (a
// LineError in Log.Malformed): its child becomes a root, and the
// settings before it leave the path (the thinking level is "off"). An
// open by path through another store's index never reads the line (it
// checks MaxLineBytes on the lines it reads only) and keeps them.
func TestBreakIt2LongLineOffThePath(t *testing.T) {
	withPathIndexes(t)
	ctx := context.Background()
	dir := t.TempDir()
	fs, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	id := buildCompacted(t, fs, "longTail")
	require.NoError(t, fs.Close())
	logPath := sessionFileOf(t, dir, id)
	editInPlace(t, logPath, func(lines []string) {
		i := lineWith(t, lines, `"text":"question 4 `)
		lines[i] = strings.Replace(lines[i], "question 4 ", "question 4 "+strings.Repeat("long ", 40_000), 1)
	})
	reindex(t, dir, id)
	lim := &session.FileStoreOptions{Limits: session.Limits{MaxLineBytes: 100_000}}
	small, err := session.OpenFileStore(dir, lim)
	require.NoError(t, err)
	defer small.Close()
	log, err := small.Load(ctx, id)
	require.NoError(t, err)
	require.NotEmpty(t, log.Malformed, "a whole read skips the long line")
	whole := session.OpenLog(log)
	s, err := session.Open(ctx, small, id)
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, contextView(whole.Context()), contextView(s.Context()), "partial %v", session.IsPartial(s))
	require.Equal(t, whole.Len(), s.Len(), "partial %v", session.IsPartial(s))
}

// TestBreakIt2BlankLinesOverMaxEntries: MaxEntries bounds the lines after
// the header, blank ones too; the index counts entries. A log of blank
// lines among its entries, over this store's MaxEntries by its lines and
// under it by its entries.
func TestBreakIt2BlankLinesOverMaxEntries(t *testing.T) {
	withPathIndexes(t)
	dir := t.TempDir()
	fs, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	id := buildCompacted(t, fs, "longTail")
	require.NoError(t, fs.Close())
	logPath := sessionFileOf(t, dir, id)
	var entries int
	editInPlace(t, logPath, func(lines []string) {
		entries = len(lines) - 1
		for i := 1; i < len(lines)-10; i++ {
			lines[i] += "\n" // a blank line after each of the early ones
		}
	})
	reindex(t, dir, id)
	openErr, loadErr, partial := limitedOpen(t, dir, id, session.Limits{MaxEntries: entries + 5})
	require.ErrorIs(t, loadErr, session.ErrTooLarge, "a whole read counts the blank lines")
	require.ErrorIs(t, openErr, session.ErrTooLarge, "an open by path is refused as the whole read (partial %v)", partial)
}

// TestBreakIt2CopySharedAcrossGoroutines: an agent loop takes Messages
// and edits its answer in the goroutine that asked (the copy rule lets
// it: the list is its own); a UI goroutine asks for Context for the
// first time. Had Context's first answer started from the copies
// Messages handed out (as it did for a while), it would read,
// unsynchronized, the very copy the loop is editing: a data race under
// -race. The two kinds keep copies of their own.
func TestBreakIt2CopySharedAcrossGoroutines(t *testing.T) {
	ctx := context.Background()
	ms, id := compactedSession(t, "linear")
	s, err := session.Open(ctx, ms, id)
	require.NoError(t, err)
	defer s.Close()
	msgs, err := s.Messages(ctx)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The loop's own list: it marks the last message for a cache.
		m := msgs[len(msgs)-1]
		m.Content = append(m.Content, session.Text("cache here"))
	}()
	c := s.Context() // the UI's first Context
	<-done
	require.NotEmpty(t, c.Messages)
}

// TestBreakIt2CopySharedAcrossKinds: the same without goroutines. The
// loop's Messages, then the UI's first Context, then the loop edits its
// list (its own, by the copy rule): the UI's answer must not change
// with it (a loop cannot know of another caller's later call).
func TestBreakIt2CopySharedAcrossKinds(t *testing.T) {
	ctx := context.Background()
	ms, id := compactedSession(t, "linear")
	s, err := session.Open(ctx, ms, id)
	require.NoError(t, err)
	defer s.Close()
	msgs, err := s.Messages(ctx)
	require.NoError(t, err)
	c := s.Context()
	last := msgs[len(msgs)-1]
	last.Content[0].Text = "edited by the loop"
	require.NotEqual(t, "edited by the loop", c.Messages[len(c.Messages)-1].Content[0].Text, "the UI's answer is not the loop's")
}

const breakit2WriterEnv = "AGENTSESSION_BREAKIT2_WRITER"

// TestBreakIt2Writer is the child of TestBreakIt2OpenWhileOtherProcessAppends:
// it appends turns (and a compaction) to the session named in its
// environment, through a FileStore of its own.
func TestBreakIt2Writer(t *testing.T) {
	spec := os.Getenv(breakit2WriterEnv)
	if spec == "" {
		t.Skip("run by TestBreakIt2OpenWhileOtherProcessAppends")
	}
	withPathIndexes(t)
	dir, id, _ := strings.Cut(spec, "|")
	ctx := context.Background()
	fs, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	defer fs.Close()
	s, err := session.Open(ctx, fs, id)
	require.NoError(t, err)
	for i := range 60 {
		a := session.AssistantText(fmt.Sprintf("child answer %d %s", i, strings.Repeat("c ", 60)))
		a.Provider, a.Model = "child", fmt.Sprintf("m%d", i%4)
		require.NoError(t, s.SaveTurn(ctx, []*session.Message{session.UserText(fmt.Sprintf("child %d", i)), a}, nil))
		if i == 30 {
			_, err := s.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{ContextWindow: 4000, KeepRecentTokens: 600})
			require.NoError(t, err)
		}
	}
	require.NoError(t, s.Close())
}

// TestBreakIt2OpenWhileOtherProcessAppends: a child process appends
// turns and compacts while this one opens the session by its path again
// and again, each time through a fresh store (as a new process): every
// context an open gives must be the context, at the same leaf, of the
// file read whole once the child is done (appends only add entries).
func TestBreakIt2OpenWhileOtherProcessAppends(t *testing.T) {
	withPathIndexes(t)
	ctx := context.Background()
	dir := t.TempDir()
	_, id := indexedStore(t, dir, "longTail")
	cmd := exec.Command(os.Args[0], "-test.run=^TestBreakIt2Writer$", "-test.count=1")
	cmd.Env = append(os.Environ(), breakit2WriterEnv+"="+dir+"|"+id)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	type seen struct {
		leaf    string
		partial bool
		view    any
	}
	var got []seen
	open := func() {
		fs, err := session.OpenFileStore(dir, nil)
		require.NoError(t, err)
		s, err := session.Open(ctx, fs, id)
		require.NoError(t, err)
		got = append(got, seen{s.LeafID(), session.IsPartial(s), contextView(s.Context())})
		require.NoError(t, s.Close())
		session.WaitPathIndexes(fs)
		require.NoError(t, fs.Close())
	}
	for running := true; running; {
		select {
		case err := <-done:
			require.NoError(t, err, "%s", out.String())
			running = false
		default:
		}
		open()
	}
	open()
	ref, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	defer ref.Close()
	log, err := ref.Load(ctx, id)
	require.NoError(t, err)
	whole := session.OpenLog(log)
	defer whole.Close()
	partials := 0
	for i, g := range got {
		c, err := whole.ContextAt(g.leaf)
		require.NoError(t, err)
		require.Equal(t, contextView(c), g.view, "open %d of %d (partial %v) at %s", i, len(got), g.partial, g.leaf)
		if g.partial {
			partials++
		}
	}
	t.Logf("%d opens, %d by path", len(got), partials)
}

// TestBreakIt2ForeignAppends: after the index, another writer (pi, or a
// hand) appends odd lines: blank ones, one with trailing blanks, a group
// with our markers that is whole, one cut short by its writer (a whole
// read drops it), a marker-looking member inside a string. Each time a
// fresh open answers as a whole read.
func TestBreakIt2ForeignAppends(t *testing.T) {
	withPathIndexes(t)
	dir := t.TempDir()
	_, id := indexedStore(t, dir, "longTail")
	logPath := sessionFileOf(t, dir, id)
	msg := func(id, parent, text, extra string) string {
		return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":%q}%s}`, id, parent, text, extra)
	}
	steps := [][]string{
		{"", "   ", msg("zzf00001", lastEntryID(t, logPath), "after blanks", "") + " \t"},
		{msg("zzf00002", "zzf00001", "grouped 1", `,"agentsession.append":"0/2/zzf00003"`), msg("zzf00003", "zzf00002", "grouped 2", "")},
		{msg("zzf00004", "zzf00003", "cut group", `,"agentsession.append":"0/3/zzf00006"`), msg("zzf00007", "zzf00003", "after the cut", "")},
		{msg("zzf00008", "zzf00007", `ends like a marker ","agentsession.append":"0/2/zzf00009`, ""), `{"type":"custom","id":"zzf00009","parentId":"zzf00008","timestamp":"2026-01-01T00:00:02.000Z","customType":"x","data":"\",\"agentsession.append\":\"0/2/zzf00010"}`},
	}
	for i, lines := range steps {
		appendRaw(t, logPath, lines...)
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkAsWhole(t, dir, id) })
		fs, _ := reindex(t, dir, id)
		s, err := session.Open(context.Background(), fs, id)
		require.NoError(t, err)
		t.Logf("step %d: the next open by path: %v", i, session.IsPartial(s))
		require.NoError(t, s.Close())
	}
}
