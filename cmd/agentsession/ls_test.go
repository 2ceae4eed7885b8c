package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lsFilterStore is a FileStore root with sessions told apart by their
// metadata, one archived, and one (f-late) created after the time it
// returns.
func lsFilterStore(t *testing.T) (root string, mid time.Time) {
	t.Helper()
	ctx := context.Background()
	root = filepath.Join(t.TempDir(), "sessions")
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	create := func(o session.CreateOptions) {
		t.Helper()
		s, err := session.Create(ctx, store, &o)
		require.NoError(t, err)
		_, err = s.Append(ctx, session.UserText("hello "+o.ID))
		require.NoError(t, err)
		require.NoError(t, s.Close())
	}
	create(session.CreateOptions{ID: "f-one", Cwd: "/w", Title: "one", ProjectID: "p1", AppVersion: "1.0", User: "ana", App: "coder",
		Metadata: map[string]string{"team": "core", "env": "prod"}})
	create(session.CreateOptions{ID: "f-two", Cwd: "/w", ProjectID: "p1", User: "bob", App: "coder",
		Metadata: map[string]string{"team": "core", "env": "dev"}})
	create(session.CreateOptions{ID: "f-three", Cwd: "/v", ProjectID: "p2", User: "ana", App: "chat"})
	create(session.CreateOptions{ID: "f-arch", Cwd: "/w", ProjectID: "p1", User: "ana", App: "coder",
		Metadata: map[string]string{"team": "core"}})
	require.NoError(t, store.Archive(ctx, "f-arch"))
	time.Sleep(20 * time.Millisecond)
	mid = time.Now()
	time.Sleep(20 * time.Millisecond)
	create(session.CreateOptions{ID: "f-late", Cwd: "/w"})
	return root, mid
}

// lsIDs runs ls --json --all and returns the ids it lists, sorted.
func lsIDs(t *testing.T, root string, args ...string) []string {
	t.Helper()
	out, errOut, code := runCLI(append([]string{"ls", "--json", "--all", "--root", root}, args...)...)
	require.Equal(t, exitOK, code, "%v: %s", args, errOut)
	ids := []string{}
	if strings.TrimSpace(out) == "" {
		return ids
	}
	for _, d := range decodeJSON(t, out) {
		ids = append(ids, d.(map[string]any)["id"].(string))
	}
	slices.Sort(ids)
	return ids
}

func TestLsFilters(t *testing.T) {
	root, mid := lsFilterStore(t)
	tomorrow := time.Now().AddDate(0, 0, 1).Format(time.DateOnly)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no filter", nil, []string{"f-late", "f-one", "f-three", "f-two"}},
		{"archived included", []string{"--archived"}, []string{"f-arch", "f-late", "f-one", "f-three", "f-two"}},
		{"only archived", []string{"--only-archived"}, []string{"f-arch"}},
		{"project", []string{"--project", "p1"}, []string{"f-one", "f-two"}},
		{"project none", []string{"--project", "nope"}, []string{}},
		{"user", []string{"--user", "ana"}, []string{"f-one", "f-three"}},
		{"app", []string{"--app", "chat"}, []string{"f-three"}},
		{"meta", []string{"--meta", "team=core"}, []string{"f-one", "f-two"}},
		{"meta all must match", []string{"--meta", "team=core", "--meta", "env=prod"}, []string{"f-one"}},
		{"meta value differs", []string{"--meta", "env=test"}, []string{}},
		{"meta value with =", []string{"--meta", "team=core=x"}, []string{}},
		{"since time", []string{"--since", mid.Format(time.RFC3339Nano)}, []string{"f-late"}},
		{"since date", []string{"--since", time.Now().AddDate(0, 0, -1).Format(time.DateOnly)}, []string{"f-late", "f-one", "f-three", "f-two"}},
		{"since tomorrow", []string{"--since", tomorrow}, []string{}},
		{"since duration", []string{"--since", "1h"}, []string{"f-late", "f-one", "f-three", "f-two"}},
		{"since days", []string{"--since", "2d"}, []string{"f-late", "f-one", "f-three", "f-two"}},
		{"since 1ms", []string{"--since", "1ms"}, []string{}},
		{"project and user", []string{"--project", "p1", "--user", "ana"}, []string{"f-one"}},
		{"project user app meta", []string{"--project", "p1", "--user", "ana", "--app", "coder", "--meta", "env=prod"}, []string{"f-one"}},
		{"project and since", []string{"--project", "p1", "--since", mid.Format(time.RFC3339Nano)}, []string{}},
		{"only archived and meta", []string{"--only-archived", "--project", "p1", "--meta", "team=core"}, []string{"f-arch"}},
		{"only archived, user differs", []string{"--only-archived", "--user", "bob"}, []string{}},
		{"archived and project", []string{"--archived", "--project", "p1"}, []string{"f-arch", "f-one", "f-two"}},
		{"cwd and user", []string{"--all=false", "--cwd", "/v", "--user", "ana"}, []string{"f-three"}},
		{"cwd and app", []string{"--all=false", "--cwd", "/w", "--app", "chat"}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "since 1ms" {
				time.Sleep(5 * time.Millisecond)
			}
			assert.Equal(t, tc.want, lsIDs(t, root, tc.args...))
		})
	}
}

func TestLsFilterUsageErrors(t *testing.T) {
	root := testStore(t, "s1")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"meta without =", []string{"--meta", "team"}, `invalid value "team" for flag -meta: "team" is not KEY=VALUE`},
		{"meta without key", []string{"--meta", "=core"}, `"=core" has no key`},
		{"meta key twice", []string{"--meta", "k=a", "--meta", "k=b"}, `key "k" given twice`},
		{"since garbage", []string{"--since", "yesterday"}, `--since: "yesterday" is neither`},
		{"since negative", []string{"--since", "-1h"}, `--since: "-1h" is neither`},
		{"since bad days", []string{"--since", "xd"}, `--since: "xd" is neither`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(append([]string{"ls", "--all", "--root", root}, tc.args...)...)
			assert.Equal(t, exitError, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.want)
		})
	}
	// The same key with the same value twice is no contradiction.
	assert.Equal(t, []string{}, lsIDs(t, root, "--meta", "k=a", "--meta", "k=a"))
}

func TestLsJSONMeta(t *testing.T) {
	root, _ := lsFilterStore(t)
	out, errOut, code := runCLI("ls", "--json", "--all", "--root", root, "--meta", "env=prod")
	require.Equal(t, exitOK, code, errOut)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, "f-one", got["id"])
	assert.Equal(t, "p1", got["projectId"])
	assert.Equal(t, "1.0", got["appVersion"])
	assert.Equal(t, "ana", got["user"])
	assert.Equal(t, "coder", got["app"])
	assert.Equal(t, map[string]any{"team": "core", "env": "prod"}, got["metadata"])
	assert.Equal(t, false, got["titleDerived"])
	assert.Contains(t, got, "compacting")
	assert.Nil(t, got["compacting"])

	// A session without metadata: empty strings and {}, a derived title.
	out, _, _ = runCLI("ls", "--json", "--all", "--root", root, "--since", "1h")
	var late map[string]any
	for _, d := range decodeJSON(t, out) {
		if m := d.(map[string]any); m["id"] == "f-late" {
			late = m
		}
	}
	require.NotNil(t, late, out)
	assert.Equal(t, "", late["projectId"])
	assert.Equal(t, map[string]any{}, late["metadata"])
	assert.Equal(t, true, late["titleDerived"])
}

func TestLsProjectColumn(t *testing.T) {
	root, _ := lsFilterStore(t)
	out, errOut, code := runCLI("ls", "--all", "--root", root, "--project", "p2")
	require.Equal(t, exitOK, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Regexp(t, `^UPDATED +ID +ENTRIES +SIZE +PROJECT +CWD +TITLE$`, lines[0])
	assert.Regexp(t, ` f-three +1 +\d+ B +p2 +/v `, lines[1])

	// No project among those listed: no column.
	out, _, _ = runCLI("ls", "--all", "--root", testStore(t, "s1"))
	assert.NotContains(t, out, "PROJECT")

	// Nothing matches: said on stderr, with the filters.
	out, errOut, code = runCLI("ls", "--all", "--root", root, "--user", "nobody")
	require.Equal(t, exitOK, code)
	assert.Empty(t, out)
	assert.Equal(t, "agentsession: no sessions in "+root+" that match the filters; --archived archived ones\n", errOut)
}

func TestParseSinceOrAgo(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"90m", now.Add(-90 * time.Minute)},
		{"7d", now.AddDate(0, 0, -7)},
		{"0s", now},
		{"2026-01-02T03:04:05Z", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"2026-01-02", time.Date(2026, 1, 2, 0, 0, 0, 0, time.Local)},
	} {
		got, err := parseSinceOrAgo(tc.in, now)
		require.NoError(t, err, tc.in)
		assert.True(t, tc.want.Equal(got), "%s: %v, want %v", tc.in, got, tc.want)
	}
}

// TestLsSaysWhatItCannotRead: a session file of the store that cannot be
// read is not left out in silence: each is named on stderr with the
// reason, as stats names them, and the exit status is stats' (0: the
// others are listed). Only the files of the directories listed count.
func TestLsSaysWhatItCannotRead(t *testing.T) {
	root := testStore(t, "s1", "s2")
	dir := filepath.Join(root, "--w--")
	garbage := filepath.Join(dir, "2026-01-01T00-00-00-000Z_bad.jsonl")
	require.NoError(t, os.WriteFile(garbage, []byte("\x00\x01binary"), 0o600))
	newer := filepath.Join(dir, "2026-01-01T00-00-01-000Z_future.jsonl")
	require.NoError(t, os.WriteFile(newer, []byte(`{"type":"session","version":9,"id":"future"}`+"\n"), 0o600))
	elsewhere := filepath.Join(root, "--v--", "2026-01-01T00-00-02-000Z_other.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(elsewhere), 0o700))
	require.NoError(t, os.WriteFile(elsewhere, nil, 0o600))
	archived := filepath.Join(root, ".archive", "--w--", "2026-01-01T00-00-03-000Z_old.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(archived), 0o700))
	require.NoError(t, os.WriteFile(archived, []byte("{not json\n"), 0o600))

	warnGarbage := "agentsession: warning: " + garbage + ": not a session file: line 1: no session header (it is not valid JSON); left out\n"
	warnNewer := "agentsession: warning: " + newer + ": not a session file: format version 9 is newer than this tool supports (3); left out\n"
	warnElsewhere := "agentsession: warning: " + elsewhere + ": not a session file: empty file; left out\n"
	warnArchived := "agentsession: warning: " + archived + ": not a session file"

	for _, tc := range []struct {
		name       string
		args       []string
		listed     []string
		warned     []string
		not        []string
		stdoutText bool
	}{
		{"all", []string{"--all"}, []string{"s1", "s2"}, []string{warnGarbage, warnNewer, warnElsewhere}, []string{warnArchived}, true},
		{"json", []string{"--all", "--json"}, []string{"s1", "s2"}, []string{warnGarbage, warnNewer, warnElsewhere}, []string{warnArchived}, false},
		{"cwd", []string{"--cwd", "/w"}, []string{"s1", "s2"}, []string{warnGarbage, warnNewer}, []string{warnElsewhere, warnArchived}, true},
		{"other cwd", []string{"--cwd", "/v"}, nil, []string{warnElsewhere}, []string{warnGarbage, warnNewer}, true},
		{"archived", []string{"--all", "--archived"}, []string{"s1", "s2"}, []string{warnGarbage, warnArchived}, nil, true},
		{"only archived", []string{"--all", "--only-archived"}, nil, []string{warnArchived}, []string{warnGarbage}, true},
		{"filtered", []string{"--all", "--user", "nobody"}, nil, []string{warnGarbage, warnNewer, warnElsewhere}, nil, true},
		{"limit", []string{"--all", "--limit", "1"}, []string{"s"}, []string{warnGarbage, warnNewer, warnElsewhere}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(append([]string{"ls", "--root", root}, tc.args...)...)
			assert.Equal(t, exitOK, code, errOut)
			for _, id := range tc.listed {
				assert.Contains(t, out, id)
			}
			for _, w := range tc.warned {
				assert.Contains(t, errOut, w)
			}
			for _, w := range tc.not {
				assert.NotContains(t, errOut, w)
			}
			assert.NotContains(t, out, "warning", "warnings go to stderr")
		})
	}
	// Nothing readable to list: both said.
	_, errOut, _ := runCLI("ls", "--root", root, "--cwd", "/v")
	assert.Contains(t, errOut, "no sessions in "+root+" for /v")
	assert.Contains(t, errOut, "1 unreadable left out")
	// The files are left as they were.
	data, err := os.ReadFile(garbage)
	require.NoError(t, err)
	assert.Equal(t, "\x00\x01binary", string(data))
}

// BenchmarkLs measures ls over a store of 2,000 sessions (the listing
// index warm): "list" the store's listing alone, "unlistable" the check
// ls adds for files it cannot read (a directory read; with filters, a
// second listing of the scope), "ls" the whole command.
func BenchmarkLs(b *testing.B) {
	ctx := context.Background()
	root := filepath.Join(b.TempDir(), "sessions")
	store, err := session.OpenFileStore(root, nil)
	require.NoError(b, err)
	for i := range 2000 {
		s, err := session.Create(ctx, store, &session.CreateOptions{ID: fmt.Sprintf("s-%04d", i), Cwd: fmt.Sprintf("/w/%d", i%20)})
		require.NoError(b, err)
		_, err = s.Append(ctx, session.UserText("hello"))
		require.NoError(b, err)
		require.NoError(b, s.Close())
	}
	defer store.Close()
	all := session.ListOptions{Limit: 1000}
	list := func() []session.SessionInfo {
		var infos []session.SessionInfo
		o := all
		for {
			p, err := store.List(ctx, o)
			require.NoError(b, err)
			infos = append(infos, p.Sessions...)
			if p.Next == "" {
				return infos
			}
			o.Cursor = p.Next
		}
	}
	infos := list()
	require.Len(b, infos, 2000)
	c := &call{root: root}
	b.Run("list", func(b *testing.B) {
		for b.Loop() {
			list()
		}
	})
	b.Run("unlistable", func(b *testing.B) {
		for b.Loop() {
			bad, err := c.unlistable(ctx, store, all, infos)
			require.NoError(b, err)
			require.Empty(b, bad)
		}
	})
	b.Run("unlistable-filtered", func(b *testing.B) {
		for b.Loop() {
			bad, err := c.unlistable(ctx, store, all, nil)
			require.NoError(b, err)
			require.Empty(b, bad)
		}
	})
	b.Run("ls", func(b *testing.B) {
		for b.Loop() {
			_, errOut, code := runCLI("ls", "--all", "--root", root)
			require.Equal(b, exitOK, code, errOut)
		}
	})
}
