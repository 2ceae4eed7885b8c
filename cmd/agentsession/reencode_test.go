package main

// The read commands encode nothing they were given again: an entry's
// message is decoded once, when the file is read (an image resolved
// from its blob once, its data shared by every entry that refers to
// it), and listing, describing or folding the entries reads that; the
// JSON of a context is printed a message at a time.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/compattest"
)

// imageStore makes, in a store under a temporary directory, session
// "s-img" of n user messages that each hold the same image of size
// bytes (one blob, n references), and returns the session's file.
func imageStore(t *testing.T, n, size int) string {
	t.Helper()
	ctx := context.Background()
	store, err := session.OpenFileStore(filepath.Join(t.TempDir(), "sessions"), nil)
	require.NoError(t, err)
	defer store.Close()
	img := make([]byte, size)
	for i := range img {
		img[i] = byte(i * 7919 >> 3)
	}
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-img", Cwd: "/w"})
	require.NoError(t, err)
	for range n {
		_, err := s.Append(ctx, session.User(session.Text("look"), session.Image("image/png", img)))
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	p, err := store.Path("s-img")
	require.NoError(t, err)
	return p
}

// allocatedBy returns the bytes fn allocates.
func allocatedBy(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestReadCommandsDoNotReencode: tree, show, checkpoints and context of
// a session of 16 references to one 8 MiB image allocate about what
// resolving the image once takes (its blob read, its base64 made), not
// a copy of the image per entry.
func TestReadCommandsDoNotReencode(t *testing.T) {
	const n, size = 16, 8 << 20
	p := imageStore(t, n, size)
	for _, cmd := range []string{"tree", "show", "checkpoints", "context"} {
		var code int
		var errOut string
		got := allocatedBy(func() { _, errOut, code = runCLI(cmd, p) })
		require.Equal(t, 0, code, errOut)
		require.NotContains(t, errOut, "blob references", "every image resolved")
		t.Logf("%s: %d MiB allocated", cmd, got>>20)
		require.Less(t, got, uint64(6*size), "%s allocated %d MiB", cmd, got>>20)
	}
}

// TestContextJSONPrintedAsBefore: the context's JSON, printed a message
// at a time, is byte for byte what marshalling it whole and indenting it
// printed.
func TestContextJSONPrintedAsBefore(t *testing.T) {
	files := map[string]string{"sample": write(t, "s.jsonl", sample), "empty": write(t, "e.jsonl", header+"\n")}
	if compattest.Present() {
		for _, name := range []string{"01-linear-all-entry-types.jsonl", "02-branching.jsonl", "03-compaction.jsonl"} {
			files[name] = compattest.Path(name)
		}
	}
	for name, p := range files {
		for _, extra := range [][]string{nil, {"--for-model"}, {"--limit", "2"}} {
			args := append(append([]string{"context", "--json"}, extra...), p)
			out, errOut, code := runCLI(args...)
			require.Equal(t, 0, code, errOut)

			data, err := os.ReadFile(p)
			require.NoError(t, err)
			log, err := session.DecodeLog(data, nil)
			require.NoError(t, err)
			s := session.OpenLog(log)
			ctx := s.Context()
			msgs := ctx.Messages
			if len(extra) > 0 && extra[0] == "--for-model" {
				msgs = ctx.ForModel()
			}
			omitted := 0
			if len(extra) > 0 && extra[0] == "--limit" && len(msgs) > 2 {
				omitted = len(msgs) - 2
			}
			msgs = msgs[omitted:]
			whole := struct {
				LeafID        *string            `json:"leafId"`
				ThinkingLevel string             `json:"thinkingLevel"`
				Model         *session.ModelRef  `json:"model"`
				Messages      []*session.Message `json:"messages"`
				Omitted       int                `json:"omitted,omitempty"`
			}{ThinkingLevel: ctx.ThinkingLevel, Model: ctx.Model, Messages: msgs, Omitted: omitted}
			if ctx.LeafID != "" {
				whole.LeafID = &ctx.LeafID
			}
			if whole.Messages == nil {
				whole.Messages = []*session.Message{}
			}
			raw, err := json.Marshal(whole)
			require.NoError(t, err)
			var want bytes.Buffer
			require.NoError(t, json.Indent(&want, raw, "", "  "))
			want.WriteByte('\n')
			require.Equal(t, want.String(), out, "%s %v", name, extra)
		}
	}
}
