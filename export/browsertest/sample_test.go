package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// Texts only one branch of the sample holds, so a test can tell which
// branch the page shows.
const (
	onlyA = "the test passed 200 runs in a row"
	onlyB = "Plan B: the upload path becomes a field of Uploader"
)

// sample is the small session of the tests and of the README's
// screenshot, with every kind of entry the viewer shows.
type sample struct {
	s          *session.Session
	checkpoint string // the label
	leafA      string // the leaf of the branch not current
}

func usage(in, out, cache int64, cost float64) session.Usage {
	return session.Usage{
		Input: in, Output: out, CacheRead: cache, TotalTokens: in + out + cache,
		Cost: session.Cost{Input: cost * 0.4, Output: cost * 0.6, Total: cost},
	}
}

func opus(m *session.Message) *session.Message {
	return m.WithModel("anthropic-messages", "anthropic", "claude-opus-4-1")
}

func sonnet(m *session.Message) *session.Message {
	return m.WithModel("anthropic-messages", "anthropic", "claude-sonnet-4-5")
}

// chart draws a small bar chart, the image a user pastes.
func chart(t testing.TB) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 240, 120))
	for x := range 240 {
		for y := range 120 {
			img.Set(x, y, color.RGBA{0xf4, 0xf6, 0xfa, 0xff})
		}
	}
	bars := []int{40, 75, 30, 100, 62}
	for k, h := range bars {
		for x := 20 + 44*k; x < 50+44*k; x++ {
			for y := 110 - h; y < 110; y++ {
				img.Set(x, y, color.RGBA{0x3a, 0x63, 0xd8, 0xff})
			}
		}
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func testOutput() string {
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		if i == 7 || i == 16 {
			fmt.Fprintf(&b, "--- FAIL: TestUpload/parallel_%d (0.02s)\n    upload_test.go:48: open /tmp/upload/part-0: no such file or directory\n", i)
			continue
		}
		fmt.Fprintf(&b, "=== RUN   TestUpload/parallel_%d\n--- PASS: TestUpload/parallel_%d (0.01s)\n", i, i)
	}
	b.WriteString("FAIL\nFAIL\tgithub.com/acme/storage\t0.412s\n")
	return b.String()
}

func newSample(t testing.TB) *sample {
	t.Helper()
	ctx := context.Background()
	s, err := session.Create(ctx, session.NewMemoryStore(), &session.CreateOptions{Cwd: "/home/dev/acme/storage"})
	require.NoError(t, err)
	add := func(m *session.Message) string {
		t.Helper()
		e, err := s.Append(ctx, m)
		require.NoError(t, err)
		return e.ID()
	}
	require.NoError(t, s.SetTitle(ctx, "Fix the flaky upload test"))
	add(session.UserText("TestUpload in storage/upload_test.go fails about one run in ten. Can you find out why?"))
	add(sonnet(session.Assistant(
		session.Thinking("A test that fails one run in ten is usually a race or shared state. Run it many times first.", "sig"),
		session.Text("Let me run it a few times to see the failure."),
		session.ToolCall("call_1", "bash", json.RawMessage(`{"command":"go test -run TestUpload -count=20 ./storage/","timeout":120}`)),
	).WithUsage(usage(2150, 96, 0, 0.0079))))
	add(session.ToolResult("call_1", "bash", testOutput()))
	kept := add(sonnet(session.Assistant(
		session.Text("Two of twenty runs failed with `no such file or directory`. The parallel subtests share one directory, /tmp/upload, and each removes it when it ends."),
		session.ToolCall("call_2", "read", json.RawMessage(`{"path":"storage/upload_test.go","offset":40,"limit":12}`)),
	).WithUsage(usage(3410, 142, 2150, 0.0112))))
	add(session.ToolResult("call_2", "read", "40\tfunc TestUpload(t *testing.T) {\n41\t\tdir := \"/tmp/upload\"\n42\t\tfor i := range 20 {\n43\t\t\tt.Run(fmt.Sprint(\"parallel_\", i), func(t *testing.T) {\n44\t\t\t\tt.Parallel()\n45\t\t\t\tdefer os.RemoveAll(dir)"))
	_, err = s.Checkpoint(ctx, "diagnosed")
	require.NoError(t, err)
	_, err = s.AppendCompaction(ctx, session.Compaction{
		Summary:          "The user asked why TestUpload fails one run in ten. Running it 20 times showed two failures: the parallel subtests share /tmp/upload and remove it when they end.",
		FirstKeptEntryID: kept, TokensBefore: 48210,
	})
	require.NoError(t, err)
	switched, err := s.AppendModelChange(ctx, "anthropic", "claude-opus-4-1")
	require.NoError(t, err)
	add(session.UserText("Fix it with a directory per subtest."))
	a := add(opus(session.AssistantText("Fixed: each subtest now gets its own t.TempDir(), and " + onlyA + ".")).WithUsage(usage(4020, 210, 3410, 0.0431)))

	// Back to before the fix, to try the other way.
	require.NoError(t, s.Branch(ctx, switched.ID()))
	_, err = s.AppendEntry(ctx, session.TypeBranchSummary, session.BranchSummary{
		FromID: a, Summary: "Tried a t.TempDir() per subtest: it fixed the test.",
	})
	require.NoError(t, err)
	add(session.User(session.Text("Rather, make the upload path injectable. Here is the failure rate per day:"), session.Image("image/png", chart(t))))
	add(opus(session.AssistantText(onlyB + ", set by NewUploader; the tests pass their own t.TempDir().")).WithUsage(usage(4388, 187, 3410, 0.0447)))
	return &sample{s: s, checkpoint: "diagnosed", leafA: a}
}
