package session_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentsession/session"
	"github.com/agentsession/session/internal/compattest"
	"github.com/agentsession/session/storekit"
)

// putFile writes a seed-format file into a FileStore root, where the
// store finds it (the seed layout), and returns its session id.
func putFile(t *testing.T, root string, data []byte) string {
	t.Helper()
	log, err := session.DecodeLog(data, nil)
	require.NoError(t, err)
	dir := filepath.Join(root, storekit.CwdDir(log.Header.Cwd))
	require.NoError(t, os.MkdirAll(dir, 0o700))
	name := "2026-01-15T10-00-00-000Z_" + log.Header.ID + ".jsonl"
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	return log.Header.ID
}

// sameSession checks that two stores hold the same session: the header,
// every entry byte for byte, and the context at every end of the tree.
func sameSession(t *testing.T, a, b session.Store, id string) {
	t.Helper()
	ctx := context.Background()
	la, err := a.Load(ctx, id)
	require.NoError(t, err)
	lb, err := b.Load(ctx, id)
	require.NoError(t, err)
	ha, err := la.Header.MarshalJSON()
	require.NoError(t, err)
	hb, err := lb.Header.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, string(ha), string(hb), "header")
	require.Len(t, lb.Entries, len(la.Entries))
	for i := range la.Entries {
		require.Equal(t, string(la.Entries[i].JSON()), string(lb.Entries[i].JSON()), "entry %d", i)
	}
	sa, err := session.Open(ctx, a, id)
	require.NoError(t, err)
	defer sa.Close()
	sb, err := session.Open(ctx, b, id)
	require.NoError(t, err)
	defer sb.Close()
	assert.Equal(t, sa.LeafID(), sb.LeafID())
	assert.Equal(t, contextsOfEnds(t, sa), contextsOfEnds(t, sb))
}

// TestCopyBetweenStores moves the pi fixtures (branches, labels,
// compaction, every entry type) from a FileStore into a MemoryStore, on
// into a second FileStore, and checks each hop, the last one after the
// stores are closed and reopened.
func TestCopyBetweenStores(t *testing.T) {
	compattest.Need(t)
	ctx := context.Background()
	for _, name := range []string{"01-linear-all-entry-types", "02-branching", "03-compaction", "05-labels", "06-createBranchedSession"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(compattest.Path(name + ".jsonl"))
			require.NoError(t, err)
			rootA, rootB := t.TempDir(), t.TempDir()
			id := putFile(t, rootA, data)
			a, err := session.OpenFileStore(rootA, nil)
			require.NoError(t, err)
			mem := session.NewMemoryStore()
			require.NoError(t, session.Copy(ctx, mem, a, id))
			sameSession(t, a, mem, id)

			b, err := session.OpenFileStore(rootB, nil)
			require.NoError(t, err)
			require.NoError(t, session.Copy(ctx, b, mem, id))
			require.NoError(t, b.Close())
			b, err = session.OpenFileStore(rootB, nil)
			require.NoError(t, err)
			defer b.Close()
			sameSession(t, a, b, id)
			require.NoError(t, a.Close())

			// The file written through the Store interface is the source
			// file line for line.
			path, err := b.Path(id)
			require.NoError(t, err)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, string(data), string(got))
		})
	}
}

func TestCopyNeverOverwrites(t *testing.T) {
	ctx := context.Background()
	src, dst := session.NewMemoryStore(), session.NewMemoryStore()
	s, err := session.Create(ctx, src, &session.CreateOptions{Cwd: "/w"})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("from the source"), reply("a"))
	require.NoError(t, dst.Create(ctx, session.Header{ID: s.ID(), Cwd: "/elsewhere"}))
	d, err := session.Open(ctx, dst, s.ID())
	require.NoError(t, err)
	appendAll(t, d, session.UserText("already here"))
	before, err := dst.Load(ctx, s.ID())
	require.NoError(t, err)

	err = session.Copy(ctx, dst, src, s.ID())
	require.ErrorIs(t, err, session.ErrExists)
	after, err := dst.Load(ctx, s.ID())
	require.NoError(t, err)
	assert.Equal(t, encodeLog(t, before), encodeLog(t, after), "the destination is untouched")

	_, err = session.Open(ctx, src, "missing")
	require.ErrorIs(t, session.Copy(ctx, dst, src, "missing"), session.ErrNotFound, err)
}

// TestCopyRefusesUnreadableLines: a lenient read skips a corrupt line;
// a copy made from it would lose the line for good, so Copy refuses.
func TestCopyRefusesUnreadableLines(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	id := putFile(t, root, []byte(`{"type":"session","version":3,"id":"s-bad","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}`+"\n"+
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-15T10:00:00.000Z","message":{"role":"user","content":"hi"}}`+"\n"+
		`{"type":"message","id":"a2",`+"\n"+
		`{"type":"message","id":"a3","parentId":"a1","timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":"again"}}`+"\n"))
	src, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer src.Close()
	dst := session.NewMemoryStore()
	err = session.Copy(ctx, dst, src, id)
	require.ErrorIs(t, err, session.ErrCorrupt)
	var ce *session.CorruptError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, 3, ce.Line)
	_, err = dst.Load(ctx, id)
	require.ErrorIs(t, err, session.ErrNotFound, "nothing is left in the destination")
}

// failingAppends is a real MemoryStore whose appends fail, as a network
// or disk failure would, to show Copy removes what it created.
type failingAppends struct{ *session.MemoryStore }

var errInjected = errors.New("injected append failure")

func (f failingAppends) Append(context.Context, string, session.AppendOptions, ...session.Entry) error {
	return errInjected
}

func TestCopyFailureLeavesNothing(t *testing.T) {
	ctx := context.Background()
	src := session.NewMemoryStore()
	s, err := session.Create(ctx, src, &session.CreateOptions{Cwd: "/w"})
	require.NoError(t, err)
	appendAll(t, s, session.UserText("q"), reply("a"))
	dst := failingAppends{session.NewMemoryStore()}
	require.ErrorIs(t, session.Copy(ctx, dst, src, s.ID()), errInjected)
	_, err = dst.Load(ctx, s.ID())
	require.ErrorIs(t, err, session.ErrNotFound)

	// An empty session is copied by Create alone.
	e, err := session.Create(ctx, src, &session.CreateOptions{Cwd: "/w"})
	require.NoError(t, err)
	require.NoError(t, session.Copy(ctx, dst, src, e.ID()))
	l, err := dst.Load(ctx, e.ID())
	require.NoError(t, err)
	assert.Empty(t, l.Entries)
}

func encodeLog(t *testing.T, l *session.Log) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, session.WriteLog(&b, l))
	return b.String()
}

// TestCopyRepeatedIDs: a file may repeat an entry id (the later line
// wins); the copy keeps both lines, as the source store does.
func TestCopyRepeatedIDs(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	id := putFile(t, root, []byte(`{"type":"session","version":3,"id":"s-dup","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}`+"\n"+
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-15T10:00:00.000Z","message":{"role":"user","content":"first"}}`+"\n"+
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":"second"}}`+"\n"))
	src, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer src.Close()
	dst := session.NewMemoryStore()
	require.NoError(t, session.Copy(ctx, dst, src, id))
	sameSession(t, src, dst, id)
}
