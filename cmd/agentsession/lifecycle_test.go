package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lcFixture is a store with a known family of sessions: p-parent (with
// metadata, state, and usage of two models), its fork c-child (its first
// turn), c-child's fork g-grand, and o-other (an image in a blob, no
// usage).
type lcFixture struct {
	root                string
	user, asst, second  string // entries of p-parent: the first user message and answer, the second user message
	leaf                string
	asstTime            time.Time
	otherFile, blobsDir string
}

func newLCFixture(t *testing.T) *lcFixture {
	t.Helper()
	ctx := context.Background()
	base := t.TempDir()
	f := &lcFixture{root: filepath.Join(base, "sessions"), blobsDir: filepath.Join(base, "sessions", ".blobs")}
	store, err := session.OpenFileStore(f.root, nil)
	require.NoError(t, err)
	defer store.Close()
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "p-parent", Cwd: "/w",
		ProjectID: "proj", AppVersion: "1.2", User: "ana", App: "coder", Metadata: map[string]string{"team": "core"}})
	require.NoError(t, err)
	e, err := s.Append(ctx, session.UserText("fix the build\nplease"))
	require.NoError(t, err)
	f.user = e.ID()
	e, err = s.Append(ctx, session.AssistantText("done").WithModel("messages", "anthropic", "claude-x").
		WithUsage(session.Usage{Input: 100, Output: 20, CacheRead: 1000, CacheWrite: 50, TotalTokens: 1170, Cost: session.Cost{Total: 0.5}}))
	require.NoError(t, err)
	f.asst, f.asstTime = e.ID(), e.Time()
	require.NoError(t, s.UpdateState(ctx, map[string]any{"step": 2, "plan": "tests"}))
	require.NoError(t, s.UpdateMeta(ctx, session.MetaUpdate{Set: map[string]string{"ticket": "T-9"}}))
	e, err = s.Append(ctx, session.UserText("more"))
	require.NoError(t, err)
	f.second = e.ID()
	_, err = s.Append(ctx, session.AssistantText("ok").WithModel("responses", "openai", "gpt-y").
		WithUsage(session.Usage{Input: 10, Output: 5, TotalTokens: 15, Cost: session.Cost{Total: 0.01}}))
	require.NoError(t, err)
	e, err = s.Append(ctx, session.AssistantText("again").WithModel("messages", "anthropic", "claude-x").
		WithUsage(session.Usage{Input: 200, Output: 30, TotalTokens: 230, Cost: session.Cost{Total: 1}}))
	require.NoError(t, err)
	f.leaf = e.ID()
	c, err := s.Fork(ctx, &session.ForkOptions{ID: "c-child", At: f.asst, Title: "the child"})
	require.NoError(t, err)
	g, err := c.Fork(ctx, &session.ForkOptions{ID: "g-grand", Title: "the grandchild"})
	require.NoError(t, err)
	o, err := session.Create(ctx, store, &session.CreateOptions{ID: "o-other", Cwd: "/v", Title: "other"})
	require.NoError(t, err)
	_, err = o.Append(ctx, session.User(session.Text("look"), session.Image("image/png", bytes.Repeat([]byte{9, 8, 7, 6}, 1000))))
	require.NoError(t, err)
	for _, x := range []*session.Session{s, c, g, o} {
		require.NoError(t, x.Close())
	}
	f.otherFile, err = store.Path("o-other")
	require.NoError(t, err)
	return f
}

func (f *lcFixture) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCLI(append(args, "--root", f.root)...)
}

func (f *lcFixture) blobs(t *testing.T) int {
	t.Helper()
	n := 0
	filepath.WalkDir(f.blobsDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
			n++
		}
		return nil
	})
	return n
}

func TestShow(t *testing.T) {
	f := newLCFixture(t)
	out, errOut, code := f.run(t, "show", "--json", "p-par")
	require.Equal(t, exitOK, code, errOut)
	var got showJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	assert.Equal(t, "p-parent", got.ID)
	assert.Equal(t, "fix the build", got.Title)
	assert.True(t, got.TitleDerived)
	assert.Equal(t, "/w", got.Cwd)
	assert.Equal(t, f.leaf, got.LeafID)
	assert.False(t, got.Archived)
	assert.Nil(t, got.ArchivedAt)
	assert.Nil(t, got.Compacting)
	assert.Equal(t, metaJSON{"proj", "1.2", "ana", "coder", map[string]string{"team": "core", "ticket": "T-9"}}, got.Meta)
	assert.JSONEq(t, `2`, string(got.State["step"]))
	assert.JSONEq(t, `"tests"`, string(got.State["plan"]))
	require.Len(t, got.Usage.Models, 2)
	assert.Equal(t, modelUsage{Provider: "anthropic", Model: "claude-x", Messages: 2, Input: 300, Output: 50, CacheRead: 1000, CacheWrite: 50, Total: 1400, Cost: 1.5}, got.Usage.Models[0])
	assert.Equal(t, modelUsage{Provider: "openai", Model: "gpt-y", Messages: 1, Input: 10, Output: 5, Total: 15, Cost: 0.01}, got.Usage.Models[1])
	assert.Equal(t, 3, got.Usage.Total.Messages)
	assert.InDelta(t, 1.51, got.Usage.Total.Cost, 1e-9)
	require.Len(t, got.Children, 1)
	assert.Equal(t, "c-child", got.Children[0].ID)
	assert.Equal(t, "the child", got.Children[0].Title)

	out, errOut, code = f.run(t, "show", "p-parent")
	require.Equal(t, exitOK, code, errOut)
	for _, want := range []string{
		"session     p-parent\n",
		"title       fix the build  (from the first message)\n",
		"archived    no\n",
		"  project      proj\n",
		"  ticket       T-9\n",
		"state at the leaf\n",
		`  plan  "tests"`,
		"\n  anthropic/claude-x  2         300    50      1,000       50           1,400  $1.50\n",
		"\n  total               3",
		"  c-child  2        the child\n",
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "\x1b[")
	out, _, code = runTTY(terminal{outTTY: true, color: true}, "show", "--no-pager", "--root", f.root, "p-parent")
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "\n\x1b[1mmetadata\x1b[0m\n", "colors on a terminal")
	assert.Contains(t, out, "\x1b[2m  (from the first message)\x1b[0m")

	// A session without anything: every section says so.
	out, errOut, code = f.run(t, "show", "o-other")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "(no usage recorded)")
	assert.Contains(t, out, "children\n  (none)\n")
	assert.Contains(t, out, "  project      -\n")
}

func TestTitleLabelRewind(t *testing.T) {
	f := newLCFixture(t)
	out, errOut, code := f.run(t, "title", "--json", "p-parent", "  A better title ")
	require.Equal(t, exitOK, code, errOut)
	var title struct{ Title, Previous, EntryID string }
	require.NoError(t, json.Unmarshal([]byte(out), &title))
	assert.Equal(t, "A better title", title.Title)
	assert.Empty(t, title.Previous, "a derived title is no title")
	out, _, _ = f.run(t, "ls", "--all")
	assert.Contains(t, out, "A better title")
	out, _, _ = f.run(t, "show", "--json", "p-parent")
	assert.Contains(t, out, `"titleDerived": false`)
	_, errOut, code = f.run(t, "title", "p-parent", " ")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "the title is empty")

	// label: the entry named by a prefix; then a checkpoint to rewind to.
	out, errOut, code = f.run(t, "label", "p-parent", f.user[:6], "start")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "entry "+f.user+` labeled "start"`)
	out, _, _ = f.run(t, "checkpoints", "--json", "p-parent")
	assert.Contains(t, out, `"name":"start","entryId":"`+f.user+`"`)
	out, errOut, code = f.run(t, "label", "--json", "p-parent", "start", "begin")
	require.Equal(t, exitOK, code, errOut)
	assert.JSONEq(t, `{"path":"`+jsonPath(t, f, "p-parent")+`","id":"p-parent","entryId":"`+f.user+`","label":"begin","previous":"start"}`, out)
	_, errOut, code = f.run(t, "label", "p-parent", "nope", "x")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "entry nope not found")

	out, errOut, code = f.run(t, "rewind", "--json", "p-parent", "begin")
	require.Equal(t, exitOK, code, errOut)
	var rw struct {
		From, To string
		Left     int
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rw))
	assert.Equal(t, f.user, rw.To)
	assert.NotEmpty(t, rw.From)
	assert.Positive(t, rw.Left)
	out, _, _ = f.run(t, "show", "--json", "p-parent")
	var got showJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, f.user, got.LeafID)
	assert.Empty(t, got.State, "the state at the first message: before any update")
	// And back: the old leaf is kept.
	out, errOut, code = f.run(t, "rewind", "p-parent", rw.From)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "rewound from "+f.user+" to "+rw.From)
	out, _, _ = f.run(t, "show", "--json", "p-parent")
	got = showJSON{}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.JSONEq(t, `2`, string(got.State["step"]))
}

func jsonPath(t *testing.T, f *lcFixture, id string) string {
	t.Helper()
	out, _, code := f.run(t, "show", "--json", id)
	require.Equal(t, exitOK, code)
	var got showJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	raw, _ := json.Marshal(got.Path)
	return strings.Trim(string(raw), `"`)
}

func TestArchiveUnarchive(t *testing.T) {
	f := newLCFixture(t)
	out, errOut, code := f.run(t, "archive", "o-oth")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "archived session o-other: moved to ")
	assert.Contains(t, out, string(filepath.Separator)+".archive"+string(filepath.Separator))
	out, _, _ = f.run(t, "ls", "--all")
	assert.NotContains(t, out, "o-other")
	out, _, _ = f.run(t, "ls", "--all", "--archived")
	assert.Contains(t, out, "(archived) other")
	out, _, _ = f.run(t, "show", "o-other")
	assert.Contains(t, out, "archived    yes")
	out, _, _ = f.run(t, "archive", "--json", "o-other")
	assert.Contains(t, out, `"changed": false`)

	out, errOut, code = f.run(t, "unarchive", "--json", "o-other")
	require.Equal(t, exitOK, code, errOut)
	var got archiveJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, archiveJSON{ID: "o-other", Path: f.otherFile, Archived: false, Changed: true}, got)
	out, _, _ = f.run(t, "ls", "--all")
	assert.Contains(t, out, "o-other")

	// A file outside any store has no store to archive it in.
	p := write(t, "s.jsonl", sample)
	_, errOut, code = runCLI("archive", p)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "not in a session store")
}

func TestDelete(t *testing.T) {
	f := newLCFixture(t)
	blobs := f.blobs(t)
	require.Positive(t, blobs)
	tests := []struct {
		name     string
		args     []string
		code     int
		deleted  []string // sessions gone afterwards
		stdout   []string
		stderr   []string
		jsonWant *deleteJSON
	}{
		{name: "refused without --yes", args: []string{"delete", "c-child"}, code: exitError,
			stderr: []string{"not deleting without --yes", "  c-child  the child", "and leave 1 child session (g-grand); --children deletes them too."}},
		{name: "dry run", args: []string{"delete", "--dry-run", "--children", "c-child"}, code: exitOK,
			stdout: []string{"would delete g-grand  the grandchild", "would delete c-child  the child"}},
		{name: "with children", args: []string{"delete", "-y", "--children", "--json", "c-child"}, code: exitOK,
			deleted:  []string{"c-child", "g-grand"},
			jsonWant: &deleteJSON{ID: "c-child", Sessions: []deletedJSON{{ID: "g-grand", Title: "the grandchild"}, {ID: "c-child", Title: "the child"}}, ChildrenLeft: []string{}}},
		{name: "blobs freed", args: []string{"delete", "--yes", "o-other"}, code: exitOK, deleted: []string{"o-other"},
			stdout: []string{"deleted o-other  other", "1 session deleted, 1 blob freed"}},
		{name: "gone", args: []string{"delete", "--yes", "o-other"}, code: exitError, stderr: []string{"no session o-other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := f.run(t, tt.args...)
			require.Equal(t, tt.code, code, "%s%s", out, errOut)
			for _, w := range tt.stdout {
				assert.Contains(t, out, w)
			}
			for _, w := range tt.stderr {
				assert.Contains(t, errOut, w)
			}
			if tt.jsonWant != nil {
				var got deleteJSON
				require.NoError(t, json.Unmarshal([]byte(out), &got), out)
				for i := range got.Sessions {
					assert.NotEmpty(t, got.Sessions[i].Path)
					got.Sessions[i].Path = ""
				}
				assert.Equal(t, *tt.jsonWant, got)
			}
			ls, _, _ := f.run(t, "ls", "--all", "--archived")
			for _, id := range tt.deleted {
				assert.NotContains(t, ls, id)
			}
		})
	}
	assert.Equal(t, blobs-1, f.blobs(t))
	ls, _, _ := f.run(t, "ls", "--all", "--archived")
	assert.Contains(t, ls, "p-parent", "the parent stays")
}

func TestStats(t *testing.T) {
	f := newLCFixture(t)
	out, errOut, code := f.run(t, "stats", "--json", "--daily")
	require.Equal(t, exitOK, code, errOut)
	var got statsJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	assert.Equal(t, 4, got.Sessions)
	assert.Zero(t, got.Archived)
	assert.Zero(t, got.Unreadable)
	// p-parent: 5 messages and 2 custom entries; c-child and g-grand:
	// the first turn (2 each); o-other: 1.
	assert.Equal(t, 7+2+2+1, got.Entries)
	var size int64
	for _, id := range []string{"p-parent", "c-child", "g-grand", "o-other"} {
		fi, err := os.Stat(pathOf(t, f, id))
		require.NoError(t, err)
		size += fi.Size()
	}
	assert.Equal(t, size, got.Size)
	// The forks' copies of the first answer are counted once.
	require.Len(t, got.Models, 2)
	assert.Equal(t, modelUsage{Provider: "anthropic", Model: "claude-x", Messages: 2, Input: 300, Output: 50, CacheRead: 1000, CacheWrite: 50, Total: 1400, Cost: 1.5}, got.Models[0])
	assert.Equal(t, int64(1415), got.Total.Total)
	require.Len(t, got.Days, 1)
	assert.Equal(t, f.asstTime.Local().Format(time.DateOnly), got.Days[0].Date)
	assert.Equal(t, got.Total, got.Days[0].Total)

	_, _, code = f.run(t, "archive", "o-other")
	require.Equal(t, exitOK, code)
	out, errOut, code = f.run(t, "stats")
	require.Equal(t, exitOK, code, errOut)
	for _, w := range []string{"sessions  4 (1 archived)\n", "tokens    1,415\n", "cost      $1.51\n", "anthropic/claude-x  2", "total "} {
		assert.Contains(t, out, w)
	}

	// --since: nothing after tomorrow.
	tomorrow := time.Now().Add(48 * time.Hour).Format(time.DateOnly)
	out, _, code = f.run(t, "stats", "--json", "--since", tomorrow)
	require.Equal(t, exitOK, code)
	got = statsJSON{}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Zero(t, got.Sessions)
	assert.Empty(t, got.Models)
	_, errOut, code = f.run(t, "stats", "--since", "last week")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "neither YYYY-MM-DD nor an RFC 3339 time")
}

func pathOf(t *testing.T, f *lcFixture, id string) string {
	t.Helper()
	store, err := session.OpenFileStore(f.root, nil)
	require.NoError(t, err)
	defer store.Close()
	p, err := store.Path(id)
	require.NoError(t, err)
	return p
}
