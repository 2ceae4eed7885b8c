package session_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/stretchr/testify/require"
)

// Issue 40 break-it: inputs a session opened by its path must answer as
// the same file read whole, whatever the file or its index holds.

// appendRaw appends lines to the file at path, as another writer (pi)
// would: no markers.
func appendRaw(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	for _, l := range lines {
		_, err = f.WriteString(l + "\n")
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
}

// lastEntryID is the id of the file's last entry.
func lastEntryID(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	log, err := session.DecodeLog(data, nil)
	require.NoError(t, err)
	return log.Entries[len(log.Entries)-1].ID()
}

// checkAsWhole opens id in a fresh FileStore of dir (as another process
// would) and compares every view with the file read whole (Load, by
// another fresh store), each asked of a fresh handle.
func checkAsWhole(t *testing.T, dir, id string) {
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
	for _, v := range partialViews {
		p, err := session.Open(ctx, fresh, id)
		require.NoError(t, err)
		require.Equal(t, v.get(whole), v.get(p), "%s (partial %v)", v.name, session.IsPartial(p))
		require.NoError(t, p.Close())
	}
}

// TestBreakItMissingParentAppendedLater: an entry whose parent names no
// entry is a root; when another writer appends an entry of that id, a
// whole read links the root to it, so the new entry (here a setting) is
// on the path. The index, extended over the append, must not keep the
// old root.
func TestBreakItMissingParentAppendedLater(t *testing.T) {
	withPathIndexes(t)
	dir := t.TempDir()
	fs, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	id := buildCompacted(t, fs, "linear")
	require.NoError(t, fs.Close())
	logPath := sessionFileOf(t, dir, id)
	// The first entry names a parent no entry has.
	editInPlace(t, logPath, func(lines []string) {
		require.Contains(t, lines[1], `"parentId":null`)
		lines[1] = strings.Replace(lines[1], `"parentId":null`, `"parentId":"zzmissing"`, 1)
	})
	fs, id2 := reindex(t, dir, id)
	_ = fs
	require.Equal(t, id, id2)
	leaf := lastEntryID(t, logPath)
	appendRaw(t, logPath,
		`{"type":"ttsr_injection","id":"zzmissing","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","injectedRules":["rule-root"]}`,
		fmt.Sprintf(`{"type":"message","id":"zzafter1","parentId":%q,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"after"}}`, leaf),
	)
	checkAsWhole(t, dir, id)
}

// reindex opens id once in a new FileStore of dir, so that its index is
// built if the log gets one, and returns the store.
func reindex(t *testing.T, dir, id string) (*session.FileStore, string) {
	t.Helper()
	fs, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	t.Cleanup(func() { fs.Close() })
	s, err := session.Open(context.Background(), fs, id)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	session.WaitPathIndexes(fs)
	return fs, id
}

// TestBreakItLimitsOnPathOpen: a store whose Limits a whole read of the
// file exceeds (MaxLogBytes here) refuses Load with a LimitError; opened
// by its path (through an index another store left), the session opens,
// and the views that need the rest of the history (Len, Tree...) answer
// from the chain alone, since wholeNoCtx drops the error.
func TestBreakItLimitsOnPathOpen(t *testing.T) {
	withPathIndexes(t)
	ctx := context.Background()
	dir := t.TempDir()
	fs, id := indexedStore(t, dir, "longTail")
	_ = fs
	st, err := os.Stat(sessionFileOf(t, dir, id))
	require.NoError(t, err)
	small, err := session.OpenFileStore(dir, &session.FileStoreOptions{Limits: session.Limits{MaxLogBytes: st.Size() / 2}})
	require.NoError(t, err)
	defer small.Close()
	_, lerr := small.Load(ctx, id)
	require.ErrorIs(t, lerr, session.ErrTooLarge, "a whole read is refused")
	s, err := session.Open(ctx, small, id)
	require.ErrorIs(t, err, session.ErrTooLarge, "an open by path is refused as the whole read is")
	if err == nil {
		defer s.Close()
		// If the open is allowed, no view may answer from the chain as
		// if it were the history.
		log, err := fs.Load(ctx, id)
		require.NoError(t, err)
		require.Equal(t, len(log.Entries), s.Len(), "Len of a partial handle whose whole read fails (partial %v)", session.IsPartial(s))
	}
}

// TestBreakItCRLF: a log whose lines end in CRLF (written on Windows, or
// by an editor), indexed, then appended to with CRLF lines by another
// writer: opened by its path as read whole.
func TestBreakItCRLF(t *testing.T) {
	withPathIndexes(t)
	dir := t.TempDir()
	fs, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	id := buildCompacted(t, fs, "longTail")
	require.NoError(t, fs.Close())
	logPath := sessionFileOf(t, dir, id)
	editInPlace(t, logPath, func(lines []string) {
		for i := range lines {
			lines[i] += "\r"
		}
	})
	reindex(t, dir, id)
	checkAsWhole(t, dir, id)
	leaf := lastEntryID(t, logPath)
	appendRaw(t, logPath,
		fmt.Sprintf(`{"type":"message","id":"zzcrlf01","parentId":%q,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"after"}}`+"\r", leaf),
		`{"type":"thinking_level_change","id":"zzcrlf02","parentId":"zzcrlf01","timestamp":"2026-01-01T00:00:02.000Z","thinkingLevel":"low"}`+"\r",
	)
	checkAsWhole(t, dir, id)
}

// TestBreakItMarkerBeforeCompaction: the last line is a leaf marker to
// an entry before the latest compaction (a Branch back into history):
// then one more turn on it by another writer (pi: no marker).
func TestBreakItMarkerBeforeCompaction(t *testing.T) {
	withPathIndexes(t)
	ctx := context.Background()
	dir := t.TempDir()
	fs, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	id := buildCompacted(t, fs, "linear")
	s, err := session.Open(ctx, fs, id)
	require.NoError(t, err)
	ids := s.Context().EntryIDs
	p, err := s.PathTo(ids[0])
	require.NoError(t, err)
	require.Greater(t, len(p), 5)
	require.NoError(t, s.Branch(ctx, p[len(p)-4].ID())) // before the compaction
	require.NoError(t, s.Close())
	require.NoError(t, fs.Close())
	reindex(t, dir, id)
	checkAsWhole(t, dir, id)
	logPath := sessionFileOf(t, dir, id)
	appendRaw(t, logPath,
		fmt.Sprintf(`{"type":"message","id":"zzmk0001","parentId":%q,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"after"}}`, p[len(p)-4].ID()),
	)
	checkAsWhole(t, dir, id)
}

// TestBreakItUndecodableModelMessage: the one assistant message naming
// the model before the kept entries has a content member that is not a
// list; a whole read takes its model from the provider and model members
// (assistantModel), the index builder from the decoded message
// (entryFlags): both must agree (they do: the decoder is lenient).
func TestBreakItUndecodableModelMessage(t *testing.T) {
	withPathIndexes(t)
	dir := t.TempDir()
	fs, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	id := buildCompacted(t, fs, "modelEarly")
	require.NoError(t, fs.Close())
	logPath := sessionFileOf(t, dir, id)
	editInPlace(t, logPath, func(lines []string) {
		i := lineWith(t, lines, `"text":"answer 2 `)
		lines[i] = strings.Replace(lines[i], `"content":[`, `"content":7,"c":[`, 1)
	})
	fs2, _ := reindex(t, dir, id)
	s, err := session.Open(context.Background(), fs2, id)
	require.NoError(t, err)
	require.True(t, session.IsPartial(s))
	require.NoError(t, s.Close())
	checkAsWhole(t, dir, id)
}

// TestBreakItOldIDAfterPathOpen: after an open by path, the store must
// refuse an append whose id an entry of the history (not on the path)
// already has, as it does after a whole read.
func TestBreakItOldIDAfterPathOpen(t *testing.T) {
	withPathIndexes(t)
	ctx := context.Background()
	dir := t.TempDir()
	_, id := indexedStore(t, dir, "longTail")
	log, err := session.DecodeLog(mustRead(t, sessionFileOf(t, dir, id)), nil)
	require.NoError(t, err)
	old := log.Entries[3].ID() // long before the latest compaction
	fresh, err := session.OpenFileStore(dir, nil)
	require.NoError(t, err)
	defer fresh.Close()
	s, err := session.Open(ctx, fresh, id)
	require.NoError(t, err)
	require.True(t, session.IsPartial(s))
	e, err := session.NewEntry(session.TypeMessage, old, s.LeafID(), time.Now(), map[string]any{"message": session.UserText("dup")})
	require.NoError(t, err)
	err = fresh.Append(ctx, id, session.AppendOptions{}, e)
	require.ErrorIs(t, err, session.ErrConflict, "an id of the history is taken")
	e, err = session.NewEntry(session.TypeMessage, "zznewid1", s.LeafID(), time.Now(), map[string]any{"message": session.UserText("new")})
	require.NoError(t, err)
	require.NoError(t, fresh.Append(ctx, id, session.AppendOptions{}, e), "a new id is not")
	require.NoError(t, s.Close())
}
