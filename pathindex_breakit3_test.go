package session

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 40 break-it, third round: the path index's format ASPATHX4 (a
// walk column, records read by blocks with a checksum each). Whatever
// the index holds, session.Open must give what a whole read gives, or an
// error a whole read gives; it must not hang, panic or read outside the
// log; and after an open by path an append must still refuse an id the
// log holds.

// b3Session builds in a new FileStore of dir a session with settings
// before several compactions (the path starts at the latest one's first
// kept entry), indexes it, and returns its id.
func b3Session(t *testing.T, dir string, at3 ...func(s *Session)) string {
	t.Helper()
	old := SetPathIndexMin(0)
	t.Cleanup(func() { SetPathIndexMin(old) })
	ctx := context.Background()
	fs, err := OpenFileStore(dir, nil)
	require.NoError(t, err)
	s, err := Create(ctx, fs, &CreateOptions{ID: "breakit3"})
	require.NoError(t, err)
	_, err = s.AppendThinkingLevel(ctx, "high")
	require.NoError(t, err)
	for i := range 20 {
		a := AssistantText(fmt.Sprintf("answer %d %s", i, strings.Repeat("b ", 300)))
		a.Provider, a.Model = "p", fmt.Sprintf("m%d", i)
		require.NoError(t, s.SaveTurn(ctx, []*Message{UserText(fmt.Sprintf("q %d", i)), a}, nil))
		if i == 3 {
			for _, f := range at3 {
				f(s)
			}
		}
		if i%5 == 4 {
			_, err := s.Compact(ctx, ExtractiveSummarizer{}, &CompactionOptions{ContextWindow: 2000, KeepRecentTokens: 400})
			require.NoError(t, err)
		}
	}
	// Turns after the latest compaction, so that it keeps some.
	for i := range 3 {
		require.NoError(t, s.SaveTurn(ctx, []*Message{UserText(fmt.Sprintf("late %d", i)), AssistantText("ok")}, nil))
	}
	require.NoError(t, s.Close())
	require.NoError(t, fs.Close())
	b3Reindex(t, dir, "breakit3")
	return "breakit3"
}

// b3Reindex opens id whole in a fresh store of dir, after removing its
// index, so that the index is built again.
func b3Reindex(t *testing.T, dir, id string) {
	t.Helper()
	fs, err := OpenFileStore(dir, nil)
	require.NoError(t, err)
	idx := PathIndexFile(fs, id)
	require.NoError(t, os.RemoveAll(idx))
	s, err := Open(context.Background(), fs, id)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	WaitPathIndexes(fs)
	require.NoError(t, fs.Close())
	_, err = os.Stat(idx)
	require.NoError(t, err, "an index")
}

func b3IndexPath(t *testing.T, dir, id string) string {
	t.Helper()
	fs, err := OpenFileStore(dir, nil)
	require.NoError(t, err)
	defer fs.Close()
	return PathIndexFile(fs, id)
}

func b3LogPath(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "--*--", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	return files[0]
}

// b3View is what the comparisons look at of a context.
func b3View(c *Context) []any {
	return []any{c.LeafID, c.EntryIDs, c.ThinkingLevel, c.Model, c.Models, c.Mode, string(c.ModeData), c.InjectedRules}
}

// b3OpenVsWhole opens id in a fresh store of dir by Open, and the file
// whole (OpenLog of Load), and returns whether the first is partial, and
// both views.
func b3OpenVsWhole(t *testing.T, dir, id string) (partial bool, got, want []any) {
	t.Helper()
	ctx := context.Background()
	ref, err := OpenFileStore(dir, nil)
	require.NoError(t, err)
	log, err := ref.Load(ctx, id)
	require.NoError(t, err)
	require.NoError(t, ref.Close())
	whole := OpenLog(log)
	defer whole.Close()
	fresh, err := OpenFileStore(dir, nil)
	require.NoError(t, err)
	defer fresh.Close()
	s, err := Open(ctx, fresh, id)
	require.NoError(t, err)
	defer s.Close()
	return IsPartial(s), b3View(s.Context()), b3View(whole.Context())
}

// b3Hashes returns the offset of the hash table in the index bytes idx,
// and its length in entries.
func b3Hashes(idx []byte) (int, int) {
	le := binary.LittleEndian
	n, nf, per := int(le.Uint32(idx[40:])), int(le.Uint32(idx[44:])), int(le.Uint32(idx[56:]))
	nb := (n + per - 1) / per
	return pathIndexHdrSize + n*pathWalkSize + nb*4 + nf, n
}

// b3DropHash rewrites the index at path with the hash of id in its hash
// table changed to one no id has (the table still sorted), and every
// checksum made right: the records are untouched.
func b3DropHash(t *testing.T, path, id string) {
	t.Helper()
	idx, err := os.ReadFile(path)
	require.NoError(t, err)
	le := binary.LittleEndian
	off, n := b3Hashes(idx)
	h := stableIDHash(id)
	for k := range n {
		e := idx[off+k*hashRefSize:]
		if le.Uint64(e) != h {
			continue
		}
		nh := h + 1
		if k+1 < n && le.Uint64(idx[off+(k+1)*hashRefSize:]) <= nh {
			nh = h - 1
			require.True(t, k == 0 || le.Uint64(idx[off+(k-1)*hashRefSize:]) < nh)
		}
		le.PutUint64(e, nh)
		fixPathIndexSums(idx)
		require.NoError(t, os.WriteFile(path, idx, 0o600))
		return
	}
	t.Fatalf("no hash of %s in the index", id)
}

// b3FirstKept returns the first kept entry of the log's last compaction.
func b3FirstKept(t *testing.T, logPath string) string {
	t.Helper()
	log, err := DecodeLog(mustReadB3(t, logPath), nil)
	require.NoError(t, err)
	for i := len(log.Entries) - 1; i >= 0; i-- {
		if log.Entries[i].kind == kindCompaction {
			var cp Compaction
			log.Entries[i].payload(&cp)
			require.NotEmpty(t, cp.FirstKeptEntryID)
			return cp.FirstKeptEntryID
		}
	}
	t.Fatal("no compaction")
	return ""
}

func mustReadB3(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// TestBreakIt3HashOmitsFirstKept: the records are all right, but the
// hash table (covered by the index's checksum, made right) lacks the
// hash of the latest compaction's first kept entry. readPath takes "not
// in the table" as "not on the path" (x.lookup fails: no kept entries)
// and the open starts at the compaction: the kept messages are silently
// left out of the context. FuzzPathIndex finds this within a few hundred
// runs (mode 2, a byte of the hash table changed).
func TestBreakIt3HashOmitsFirstKept(t *testing.T) {
	dir := t.TempDir()
	id := b3Session(t, dir)
	partial, got, want := b3OpenVsWhole(t, dir, id)
	require.True(t, partial)
	require.Equal(t, want, got, "the index as built")
	b3DropHash(t, b3IndexPath(t, dir, id), b3FirstKept(t, b3LogPath(t, dir)))
	partial, got, want = b3OpenVsWhole(t, dir, id)
	require.Equal(t, want, got, "partial %v", partial)
}

// TestBreakIt3HashOmitsOldID: the hash table lacks an old entry's id
// (records right, checksums made right). After an open by path the store
// takes the index's table as the log's ids (idSet), and accepts an
// append of that id: the log then holds it twice.
func TestBreakIt3HashOmitsOldID(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	id := b3Session(t, dir)
	log, err := DecodeLog(mustReadB3(t, b3LogPath(t, dir)), nil)
	require.NoError(t, err)
	old := log.Entries[3].ID()
	b3DropHash(t, b3IndexPath(t, dir, id), old)
	fresh, err := OpenFileStore(dir, nil)
	require.NoError(t, err)
	defer fresh.Close()
	s, err := Open(ctx, fresh, id)
	require.NoError(t, err)
	defer s.Close()
	e, err := NewEntry(TypeMessage, old, s.LeafID(), time.Now(), map[string]any{"message": UserText("dup")})
	require.NoError(t, err)
	err = fresh.Append(ctx, id, AppendOptions{}, e)
	require.ErrorIs(t, err, ErrConflict, "an id the log holds")
}

// TestBreakIt3WalkThroughSideBranch: round 2's forged setting pointer
// (a setting of another branch named as an ancestor's) is now refused by
// ancestorsAgree, which checks the settings against a walk up the walk
// column. But the walk column is the records' parents, which the forger
// writes too: one unread ancestor's parent moved to a setting on a side
// branch of the same depth (and the records' setting links made again to
// match), and the walk meets that setting. The open answers with the
// side branch's thinking level; a whole read with the path's.
//
// This is the limit the path index accepts (filestore_pathindex.go): the
// parents of lines an open does not read are the index's word. Checking
// them is reading every ancestor's line, the whole history; an index
// forged consistently by a program that can write the store's root
// (which could as well write the log) is not what its checks are for.
// BREAKIT3=1 runs the test, which then fails.
func TestBreakIt3WalkThroughSideBranch(t *testing.T) {
	if os.Getenv("BREAKIT3") == "" {
		t.Skip("accepted limit: an index forged consistently (checksums, walk fields and records) for the ancestors an open does not read is believed")
	}
	dir := t.TempDir()
	var z string // q 4's entry, whose parent the forger moves
	// After turn 3: a side branch off q 3 with a setting of its own,
	// written before q 4 (parents come before their children: get).
	id := b3Session(t, dir, b3SideSetting(t))
	log, err := DecodeLog(mustReadB3(t, b3LogPath(t, dir)), nil)
	require.NoError(t, err)
	side := ""
	for _, e := range log.Entries {
		if e.kind == kindThinkingLevelChange && bytes.Contains(e.AppendJSON(nil), []byte("minimal")) {
			side = e.ID()
		}
		if bytes.Contains(e.AppendJSON(nil), []byte(`"q 4"`)) && z == "" {
			z = e.ID()
		}
	}
	require.NotEmpty(t, side)
	partial, got, want := b3OpenVsWhole(t, dir, id)
	require.True(t, partial)
	require.Equal(t, want, got, "the index as built")
	require.NoError(t, ForgePathIndex(b3IndexPath(t, dir, id), func(recs []IndexRec) []IndexRec {
		at := func(h uint64) int32 {
			for i, r := range recs {
				if r.IDH == h {
					return int32(i)
				}
			}
			t.Fatal("no record")
			return -1
		}
		side, zi := at(stableIDHash(side)), at(stableIDHash(z))
		require.Equal(t, recs[side].Depth+1, recs[zi].Depth)
		recs[zi].Parent = side
		// The nearest setting and assistant of each record, from its
		// parent, as the builder makes them (parents come first).
		for i := range recs {
			r := &recs[i]
			r.Set, r.Asst = -1, -1
			if p := r.Parent; p >= 0 {
				pr := recs[p]
				r.Set, r.Asst = pr.Set, pr.Asst
				if pr.Flags&prSetting != 0 {
					r.Set = p
				}
				if pr.Flags&prAssistant != 0 {
					r.Asst = p
				}
			}
		}
		return recs
	}))
	partial, got, want = b3OpenVsWhole(t, dir, id)
	require.Equal(t, want, got, "partial %v", partial)
}

// TestBreakIt3BlockSizes: the same index written with other block sizes
// (the header says its own) still opens by path, as the file reads
// whole; and headers whose sizes are out of range or overflow (block
// size 0, over 2^20, a record count or fold length near 2^32), their
// checksums made right where the layout allows, make the open go whole.
func TestBreakIt3BlockSizes(t *testing.T) {
	dir := t.TempDir()
	id := b3Session(t, dir)
	idxPath := b3IndexPath(t, dir, id)
	orig := mustReadB3(t, idxPath)
	for _, per := range []int{1, 2, 3, 1 << 20} {
		t.Run(fmt.Sprintf("per %d", per), func(t *testing.T) {
			x, err := decodePathIndex(orig)
			require.NoError(t, err)
			out, err := x.encodeBlocks(per)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(idxPath, out, 0o600))
			partial, got, want := b3OpenVsWhole(t, dir, id)
			require.Equal(t, want, got)
			require.True(t, partial, "an index of blocks of %d", per)
		})
	}
	t.Run("per 3, extended and written again", func(t *testing.T) {
		// An index of another block size, extended over another
		// store's appends (enough for the open to write it again, in
		// this process's block size): the open and the next answer as
		// whole, and the next goes by the path through the new index.
		x, err := decodePathIndex(orig)
		require.NoError(t, err)
		out, err := x.encodeBlocks(3)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(idxPath, out, 0o600))
		other, err := OpenFileStore(dir, &FileStoreOptions{Strict: true})
		require.NoError(t, err)
		ctx := context.Background()
		s, err := Open(ctx, other, id)
		require.NoError(t, err)
		for i := range 40 {
			require.NoError(t, s.SaveTurn(ctx, []*Message{UserText(fmt.Sprintf("more %d", i)), AssistantText("ok")}, nil))
		}
		require.NoError(t, s.Close())
		require.NoError(t, other.Close())
		require.Equal(t, out, mustReadB3(t, idxPath), "a strict store leaves the index alone")
		for k := range 2 {
			partial, got, want := b3OpenVsWhole(t, dir, id)
			require.Equal(t, want, got, "open %d", k)
			require.True(t, partial, "open %d", k)
		}
		now := mustReadB3(t, idxPath)
		require.Equal(t, uint32(pathRecBlock), binary.LittleEndian.Uint32(now[56:]), "written again")
		require.NoError(t, os.WriteFile(idxPath, orig, 0o600))
	})
	le := binary.LittleEndian
	for _, c := range []struct {
		name string
		edit func(b []byte) []byte
	}{
		{"per 0", func(b []byte) []byte { le.PutUint32(b[56:], 0); return b }},
		{"per 2^20+1", func(b []byte) []byte { le.PutUint32(b[56:], 1<<20+1); return b }},
		{"per 2^32-1", func(b []byte) []byte { le.PutUint32(b[56:], 1<<32-1); return b }},
		{"n 2^32-1", func(b []byte) []byte { le.PutUint32(b[40:], 1<<32-1); return b }},
		{"n 2^31-1", func(b []byte) []byte { le.PutUint32(b[40:], 1<<31-1); return b }},
		{"nf 2^32-1", func(b []byte) []byte { le.PutUint32(b[44:], 1<<32-1); return b }},
		{"n+1, nf-57", func(b []byte) []byte {
			// The same size of file, another layout.
			le.PutUint32(b[40:], le.Uint32(b[40:])+1)
			le.PutUint32(b[44:], le.Uint32(b[44:])-57)
			return b
		}},
		{"covered huge", func(b []byte) []byte { le.PutUint64(b[16:], 1<<63-1); return b }},
		{"hdrEnd huge", func(b []byte) []byte { le.PutUint64(b[28:], 1<<62); return b }},
		{"lines negative", func(b []byte) []byte { le.PutUint32(b[36:], 1<<31); return b }},
		{"longest negative", func(b []byte) []byte { le.PutUint64(b[48:], 1<<63); return b }},
		{"records cut", func(b []byte) []byte { return b[:len(b)-pathRecSize] }},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.edit(bytes.Clone(orig))
			fixPathIndexSums(b)
			require.NoError(t, os.WriteFile(idxPath, b, 0o600))
			_, got, want := b3OpenVsWhole(t, dir, id)
			require.Equal(t, want, got)
		})
	}
}

// TestBreakIt3IndexChangedWhileHeld: the index file an open holds (its
// records read by blocks as the walk reaches them) is cut short, or
// overwritten in place with another session's bytes, after the open read
// its head: the blocks then fail to read or their checksums, and the
// open goes whole; a new index renamed in meanwhile is not seen.
func TestBreakIt3IndexChangedWhileHeld(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(t *testing.T, idx string)
	}{
		{"cut to its head", func(t *testing.T, idx string) {
			b := mustReadB3(t, idx)
			off, n := b3Hashes(b)
			require.NoError(t, os.Truncate(idx, int64(off+n*hashRefSize+4)))
		}},
		{"cut to nothing", func(t *testing.T, idx string) { require.NoError(t, os.Truncate(idx, 0)) }},
		{"records zeroed in place", func(t *testing.T, idx string) {
			b := mustReadB3(t, idx)
			off, n := b3Hashes(b)
			clear(b[off+n*hashRefSize+4:])
			require.NoError(t, os.WriteFile(idx, b, 0o600))
		}},
		{"replaced by rename", func(t *testing.T, idx string) {
			require.NoError(t, os.WriteFile(idx+".new", []byte("not an index"), 0o600))
			require.NoError(t, os.Rename(idx+".new", idx))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			id := b3Session(t, dir)
			fs, err := OpenFileStore(dir, nil)
			require.NoError(t, err)
			defer fs.Close()
			x := fs.readPathIndex(id)
			require.NotNil(t, x)
			defer x.close()
			c.change(t, PathIndexFile(fs, id))
			lf, err := os.Open(b3LogPath(t, dir))
			require.NoError(t, err)
			defer lf.Close()
			pl, err := x.readPath(lf, id, Limits{}.withDefaults())
			if c.name == "replaced by rename" {
				require.NoError(t, err, "the file held is the one read")
				return
			}
			require.Error(t, err, "records of a block that no longer reads: %v", pl)
			require.True(t, errors.Is(err, errNoIndex) || errors.Is(err, errNoPath), "%v", err)
		})
	}
}

// TestBreakIt3HashPointsElsewhere: the hash table's entries name the
// wrong records (two entries' record numbers swapped: the table still
// sorted, every record right, the checksums made right). Another writer
// then appends to the log; extend links each new line to the record the
// table names for its parent (lookup, never checked against that
// record's hash), and an unread new line hangs off another branch: the
// walk up from the start goes through it, and the open takes that
// branch's setting. A whole read: the path's.
func TestBreakIt3HashPointsElsewhere(t *testing.T) {
	dir := t.TempDir()
	id := b3Session(t, dir, b3SideSetting(t))
	logPath := b3LogPath(t, dir)
	log, err := DecodeLog(mustReadB3(t, logPath), nil)
	require.NoError(t, err)
	side := ""
	for _, e := range log.Entries {
		if e.kind == kindThinkingLevelChange && bytes.Contains(e.AppendJSON(nil), []byte("minimal")) {
			side = e.ID()
		}
	}
	last := log.Entries[len(log.Entries)-1].ID()
	// Swap the records of last's and side's hashes in the table.
	idxPath := b3IndexPath(t, dir, id)
	idx := mustReadB3(t, idxPath)
	le := binary.LittleEndian
	off, n := b3Hashes(idx)
	var at []int
	for k := range n {
		if h := le.Uint64(idx[off+k*hashRefSize:]); h == stableIDHash(last) || h == stableIDHash(side) {
			at = append(at, off+k*hashRefSize+8)
		}
	}
	require.Len(t, at, 2)
	a, b := le.Uint32(idx[at[0]:]), le.Uint32(idx[at[1]:])
	le.PutUint32(idx[at[0]:], b)
	le.PutUint32(idx[at[1]:], a)
	fixPathIndexSums(idx)
	require.NoError(t, os.WriteFile(idxPath, idx, 0o600))
	// Another writer's turn after last, and a compaction that keeps its
	// second message: the first is read by no open.
	f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fmt.Fprintf(f, `{"type":"message","id":"zzx00001","parentId":%q,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"x"}}`+"\n"+
		`{"type":"message","id":"zzm00001","parentId":"zzx00001","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"m"}}`+"\n"+
		`{"type":"compaction","id":"zzc00001","parentId":"zzm00001","timestamp":"2026-01-01T00:00:03.000Z","summary":"s","firstKeptEntryId":"zzm00001","tokensBefore":1000}`+"\n", last)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	partial, got, want := b3OpenVsWhole(t, dir, id)
	require.Equal(t, want, got, "partial %v", partial)
}

// b3SideSetting returns the step b3Session takes after turn 3 for the
// tests of a side branch: a branch off q 3 with a thinking level of its
// own ("minimal"), and back to the answer.
func b3SideSetting(t *testing.T) func(*Session) {
	return func(s *Session) {
		ctx := context.Background()
		ids := s.Context().EntryIDs
		q3, a3 := ids[len(ids)-2], ids[len(ids)-1]
		require.NoError(t, s.Branch(ctx, q3))
		_, err := s.AppendThinkingLevel(ctx, "minimal")
		require.NoError(t, err)
		require.NoError(t, s.Branch(ctx, a3))
	}
}
