package export_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/export"
	"github.com/agentsession/session/redact"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var t0 = time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)

// entryBuilder appends hand-built entries with fixed ids and times.
type entryBuilder struct {
	t       testing.TB
	entries []session.Entry
	n       int
}

func (b *entryBuilder) add(typ, id, parent string, payload any) string {
	b.n++
	e, err := session.NewEntry(typ, id, parent, t0.Add(time.Duration(b.n)*time.Second), payload)
	require.NoError(b.t, err)
	b.entries = append(b.entries, e)
	return id
}

func (b *entryBuilder) msg(id, parent string, m *session.Message) string {
	m.Timestamp = t0.Add(time.Duration(b.n+1) * time.Second).UnixMilli()
	return b.add(session.TypeMessage, id, parent, struct {
		Message *session.Message `json:"message"`
	}{m})
}

func assistant(blocks ...session.Block) *session.Message {
	return session.Assistant(blocks...).WithModel("anthropic-messages", "anthropic", "claude-sonnet-4-5").
		WithUsage(session.Usage{Input: 1234, Output: 321, CacheRead: 5000, TotalTokens: 6555,
			Cost: session.Cost{Input: 0.0037, Output: 0.0048, CacheRead: 0.0015, Total: 0.01}})
}

// everyKind is a hand-built session with an entry of every kind the
// transcript shows, a branch left behind and a label.
func everyKind(t testing.TB, store session.Store) *session.Session {
	ctx := context.Background()
	b := &entryBuilder{t: t}
	long := make([]string, 55)
	for i := range long {
		long[i] = fmt.Sprintf("line %02d: some `output`", i+1)
	}
	u1 := b.msg("u1", "", session.User(session.Text("Fix the failing test, please.\n\nIt is in `pkg/a`."),
		session.Image("image/png", []byte("\x89PNG fake image bytes"))))
	mc := b.add(session.TypeModelChange, "mc", u1, session.ModelChange{Provider: "anthropic", ModelID: "claude-sonnet-4-5"})
	tl := b.add(session.TypeThinkingLevelChange, "tl", mc, session.ThinkingLevelChange{ThinkingLevel: "high"})
	a1 := b.msg("a1", tl, assistant(session.Thinking("The test probably\nneeds a fixture.", "sig"), session.Text("Let me look."),
		session.ToolCall("call_1", "bash", json.RawMessage(`{"command":"go test ./pkg/a","timeout":60}`))))
	b.msg("x1", a1, session.UserText("an abandoned branch")) // not on the path
	r1 := b.msg("r1", a1, session.ToolResult("call_1", "bash", strings.Join(long, "\n")))
	a2 := b.msg("a2", r1, assistant(session.ToolCall("call_2", "read", json.RawMessage(`{"path":"missing.go"}`))))
	r2 := b.msg("r2", a2, session.ToolError("call_2", "read", "open missing.go: no such file"))
	bx := b.msg("bx", r2, session.BashExecution("ls ```weird", "a.go\nb.go", 2))
	cm := b.add(session.TypeCustomMessage, "cm", bx, map[string]any{"customType": "reminder", "content": "Remember the style guide.", "display": true})
	cp := b.add(session.TypeCompaction, "cp", cm, session.Compaction{Summary: "The user asked to fix a test; the assistant ran it.", FirstKeptEntryID: "r2", TokensBefore: 48213})
	bs := b.add(session.TypeBranchSummary, "bs", cp, session.BranchSummary{FromID: "x1", Summary: "Tried another way; it did not work."})
	si := b.add(session.TypeSessionInfo, "si", bs, session.SessionInfoEntry{Name: "Fixing pkg/a"})
	md := b.add(session.TypeModeChange, "md", si, session.ModeChange{Mode: "plan"})
	tr := b.add(session.TypeTTSRInjection, "tr", md, session.TTSRInjection{InjectedRules: []string{"no-panics", "small-files"}})
	in := b.add(session.TypeSessionInit, "in", tr, session.SessionInit{Task: "review the fix"})
	cu := b.add(session.TypeCustom, "cu", in, session.Custom{CustomType: "ext.state", Data: json.RawMessage(`{"k":1}`)})
	un := b.add("weird_thing", "un", cu, map[string]int{"n": 1})
	a3m := assistant(session.Block{Type: session.BlockThinking, Redacted: true}, session.Text("Overloaded, sorry."))
	a3m.StopReason, a3m.ErrorMessage = session.StopError, "529 overloaded"
	a3 := b.msg("a3", un, a3m)
	b.add(session.TypeLabel, "lb", a3, session.Label{TargetID: "a1", Label: "before-fix"})
	b.msg("u4", "lb", session.UserText("Thanks!"))

	h := session.Header{Version: session.CurrentVersion, ID: "0195f0a8-every-kind", Timestamp: t0, Cwd: "/home/dev/project"}
	require.NoError(t, store.Create(ctx, h))
	require.NoError(t, store.Append(ctx, h.ID, session.AppendOptions{}, b.entries...))
	s, err := session.Open(ctx, store, h.ID)
	require.NoError(t, err)
	return s
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./export -run %s -update to write it", t.Name())
	assert.Equal(t, string(want), string(got))
}

func TestMarkdownGolden(t *testing.T) {
	s := everyKind(t, session.NewMemoryStore())
	var buf bytes.Buffer
	require.NoError(t, export.Markdown(context.Background(), &buf, s, nil))
	golden(t, "transcript.md", buf.Bytes())
	out := buf.String()
	assert.NotContains(t, out, "abandoned branch", "only the current branch")
	assert.Contains(t, out, "<details><summary>15 more lines</summary>")
}

func TestMarkdownBranch(t *testing.T) {
	ctx := context.Background()
	s := everyKind(t, session.NewMemoryStore())
	var buf bytes.Buffer
	require.NoError(t, export.Markdown(ctx, &buf, s, &export.Options{Branch: "x1"}))
	out := buf.String()
	assert.Contains(t, out, "an abandoned branch")
	assert.NotContains(t, out, "Thanks!")
	assert.Contains(t, out, "> **Label:** `before-fix`")
	err := export.Markdown(ctx, &buf, s, &export.Options{Branch: "nope"})
	assert.ErrorIs(t, err, export.ErrUnknownBranch)
}

func TestMarkdownBlobsAndRedaction(t *testing.T) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	ref, err := store.PutBlob(ctx, []byte("png bytes"))
	require.NoError(t, err)
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/home/alice/x"})
	require.NoError(t, err)
	_, err = s.Append(ctx, session.User(session.Text("token=hunter2"), session.ImageBase64("image/png", ref)))
	require.NoError(t, err)

	var buf bytes.Buffer
	require.NoError(t, export.Markdown(ctx, &buf, s, nil))
	assert.Contains(t, buf.String(), "_[image: image/png, blob:sha256:")
	assert.Contains(t, buf.String(), "not included]_")

	buf.Reset()
	r := redact.New(&redact.Options{Custom: func(v string) (string, int) {
		n := strings.Count(v, "hunter2") + strings.Count(v, "alice")
		return strings.NewReplacer("hunter2", "[REDACTED]", "alice", "user").Replace(v), n
	}})
	require.NoError(t, export.Markdown(ctx, &buf, s, &export.Options{Blobs: true, Redactor: r}))
	out := buf.String()
	assert.Contains(t, out, "![image](data:image/png;base64,cG5nIGJ5dGVz)")
	assert.NotContains(t, out, "hunter2")
	assert.NotContains(t, out, "alice")
	assert.Contains(t, out, "- **Redacted:** 2 replacements")
}

func TestMarkdownEmpty(t *testing.T) {
	s, err := session.Create(context.Background(), session.NewMemoryStore(), &session.CreateOptions{Title: "nothing yet"})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, export.Markdown(context.Background(), &buf, s, nil))
	assert.True(t, strings.HasPrefix(buf.String(), "# nothing yet\n"))
}

// TestMarkdownFolds checks the folding of long outputs: by lines, by
// bytes, and a single line longer than the byte limit.
func TestMarkdownFolds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		output string
		folded bool
	}{
		{"short", "one\ntwo", false},
		{"40 lines", strings.Repeat("x\n", 40), false},
		{"41 lines", strings.Repeat("x\n", 41) + "y", true},
		{"bytes", strings.Repeat(strings.Repeat("é", 100)+"\n", 30), true},
		{"one long line", strings.Repeat("é", 5000), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := session.Create(ctx, session.NewMemoryStore(), nil)
			require.NoError(t, err)
			_, err = s.Append(ctx, session.BashExecution("run", tc.output, 0))
			require.NoError(t, err)
			var buf bytes.Buffer
			require.NoError(t, export.Markdown(ctx, &buf, s, nil))
			out := buf.String()
			assert.Equal(t, tc.folded, strings.Contains(out, "<details>"), out)
			assert.Equal(t, strings.Count(tc.output, "é"), strings.Count(out, "é"), "nothing lost, no character split")
		})
	}
}
