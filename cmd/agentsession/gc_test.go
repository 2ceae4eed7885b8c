package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// gcStore makes a store of five sessions in two directories: old-a1,
// old-a2 and old-b1 last written 40 days ago, old-label too but with a
// checkpoint, new-a1 now.
func gcStore(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	made := filepath.Join(t.TempDir(), "made")
	store, err := session.OpenFileStore(made, nil)
	require.NoError(t, err)
	defer store.Close()
	// The files are copied to a root no store has listed yet: a store
	// keeps the update times it saw, and these are set back.
	root := filepath.Join(t.TempDir(), "sessions")
	old := time.Now().Add(-40 * 24 * time.Hour)
	for _, f := range []struct{ id, cwd string }{{"old-a1", "/a"}, {"old-a2", "/a"}, {"old-b1", "/b"}, {"old-label", "/b"}, {"new-a1", "/a"}} {
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: f.id, Cwd: f.cwd})
		require.NoError(t, err)
		_, err = s.Append(ctx, session.UserText("hello"))
		require.NoError(t, err)
		if f.id == "old-label" {
			_, err = s.Checkpoint(ctx, "keep")
			require.NoError(t, err)
		}
		require.NoError(t, s.Close())
		p, err := store.Path(f.id)
		require.NoError(t, err)
		rel, err := filepath.Rel(made, p)
		require.NoError(t, err)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		to := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o700))
		require.NoError(t, os.WriteFile(to, data, 0o600))
		if f.id[:3] == "old" {
			require.NoError(t, os.Chtimes(to, old, old))
			old = old.Add(time.Minute) // old-a1 oldest
		}
	}
	return root
}

func TestGC(t *testing.T) {
	type want struct {
		code     int
		stdout   []string
		stderr   []string
		left     []string // sessions listed (archived ones too) afterwards
		archive  []string // of which archived
		compress []string // of which compressed
	}
	all := []string{"new-a1", "old-a1", "old-a2", "old-b1", "old-label"}
	tests := []struct {
		name string
		args []string
		want want
	}{
		{"dry run", []string{"gc", "--older-than", "30d", "--dry-run"},
			want{code: exitOK, stdout: []string{"would delete old-a1", "would delete old-b1", "5 listed: 3 would delete, 0 would archive, 2 sessions kept (1 young, 1 labeled)"}, left: all}},
		{"delete", []string{"gc", "--older-than", "30d"},
			want{code: exitOK, stdout: []string{"deleted old-a1", "5 listed: 3 deleted, 0 archived, 2 sessions kept (1 young, 1 labeled), 0 blobs freed"}, left: []string{"new-a1", "old-label"}}},
		{"keep newest per cwd", []string{"gc", "--older-than", "30d", "--keep", "2"},
			want{code: exitOK, stdout: []string{"deleted old-a1", "5 listed: 1 deleted, 0 archived, 4 sessions kept (1 young, 3 newest)"}, left: []string{"new-a1", "old-a2", "old-b1", "old-label"}}},
		{"include labeled", []string{"gc", "--older-than", "30d", "--include-labeled"},
			want{code: exitOK, left: []string{"new-a1"}}},
		{"archive only", []string{"gc", "--older-than", "30d", "--archive-only"},
			want{code: exitOK, stdout: []string{"archived old-a1", "3 archived"}, left: all, archive: []string{"old-a1", "old-a2", "old-b1"}}},
		{"archive compressed", []string{"gc", "--older-than", "30d", "--archive-only", "--compress"},
			want{code: exitOK, stdout: []string{"archived old-a1", "3 archived", "3 compressed"}, left: all,
				archive: []string{"old-a1", "old-a2", "old-b1"}, compress: []string{"old-a1", "old-a2", "old-b1"}}},
		{"no age", []string{"gc"}, want{code: exitError, stderr: []string{"--older-than (or --delete-archived-after) is required"}, left: all}},
		{"bad age", []string{"gc", "--older-than", "soon"}, want{code: exitError, stderr: []string{`"soon" is no positive duration`}, left: all}},
		{"bad group", []string{"gc", "--older-than", "1d", "--group", "team"}, want{code: exitError, stderr: []string{`--group: "team"`}, left: all}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := gcStore(t)
			out, errOut, code := runCLI(append(tc.args, "--root", root)...)
			require.Equal(t, tc.want.code, code, "stdout %s\nstderr %s", out, errOut)
			for _, s := range tc.want.stdout {
				assert.Contains(t, out, s)
			}
			for _, s := range tc.want.stderr {
				assert.Contains(t, errOut, s)
			}
			store, err := session.OpenFileStore(root, nil)
			require.NoError(t, err)
			defer store.Close()
			p, err := store.List(context.Background(), session.ListOptions{Archived: true})
			require.NoError(t, err)
			var left, archived, compressed []string
			for _, in := range p.Sessions {
				left = append(left, in.ID)
				if in.Archived {
					archived = append(archived, in.ID)
				}
				if in.Compressed {
					compressed = append(compressed, in.ID)
				}
			}
			assert.ElementsMatch(t, tc.want.left, left)
			assert.ElementsMatch(t, tc.want.archive, archived)
			assert.ElementsMatch(t, tc.want.compress, compressed)
		})
	}
}

// TestGCArchiveThenDelete: archived sessions are kept until archived
// for --delete-archived-after (the library's tests delete them after).
func TestGCArchiveThenDelete(t *testing.T) {
	root := gcStore(t)
	_, errOut, code := runCLI("gc", "--older-than", "30d", "--archive-only", "--root", root)
	require.Equal(t, exitOK, code, errOut)
	out, errOut, code := runCLI("gc", "--older-than", "30d", "--archive-only", "--delete-archived-after", "1h", "--json", "--root", root)
	require.Equal(t, exitOK, code, errOut)
	var got gcJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Empty(t, got.Deleted, "archived a moment ago")
	assert.Empty(t, got.Archived)
	assert.Len(t, got.Kept, 5)
	young := 0
	for _, k := range got.Kept {
		if k.Reason == session.KeptYoung {
			young++
		}
	}
	assert.Equal(t, 4, young, "the archived three and new-a1: %+v", got.Kept)
}

// TestArchiveCompressed: archive --compress keeps the session compressed
// in the archive; ls, show, context and verify read it as before;
// unarchive brings it back plain.
func TestArchiveCompressed(t *testing.T) {
	root := gcStore(t)
	out, errOut, code := runCLI("archive", "--compress", "--json", "--root", root, "old-a1")
	require.Equal(t, exitOK, code, errOut)
	var got archiveJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.True(t, got.Compressed)
	data, err := os.ReadFile(got.Path)
	require.NoError(t, err)
	require.Equal(t, []byte{0x28, 0xb5, 0x2f, 0xfd}, data[:4], "zstd")
	out, errOut, code = runCLI("ls", "--all", "--archived", "--root", root)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "(archived, compressed)")
	for _, args := range [][]string{{"show", "old-a1"}, {"context", "old-a1"}, {"verify", "old-a1"}, {"verify", got.Path}, {"context", got.Path}} {
		out, errOut, code := runCLI(append(args, "--root", root)...)
		require.Equal(t, exitOK, code, "%v: %s %s", args, out, errOut)
	}
	out, errOut, code = runCLI("context", "--json", "--root", root, "old-a1")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "hello")
	_, errOut, code = runCLI("unarchive", "--root", root, "old-a1")
	require.Equal(t, exitOK, code, errOut)
	_, errOut, code = runCLI("archive", "--json", "--root", root, "old-a1")
	require.Equal(t, exitOK, code, errOut)
}
