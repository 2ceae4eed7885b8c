// Compaction runs a long coding session on a FileStore in a temporary
// directory, compacts it with the offline summarizer whenever its context
// outgrows a small model window, prunes what no context needs any more,
// and prints the context size and the file size before and after.
//
//	go run ./examples/compaction
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	session "github.com/agentsession/session"
)

func main() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "agentsession-compaction-")
	check(err)
	defer os.RemoveAll(dir)
	store, err := session.OpenFileStore(filepath.Join(dir, "sessions"), nil)
	check(err)
	defer store.Close()
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/src/shop", Title: "Add a cart"})
	check(err)

	// A model with a 32k-token window; keep 8k tokens of recent history.
	// ExtractiveSummarizer needs no model: a host passes its own Summarizer.
	opts := &session.CompactionOptions{ContextWindow: 32_000, ReserveTokens: 4_000, KeepRecentTokens: 8_000}
	var summarizer session.ExtractiveSummarizer

	for turn := 1; turn <= 120; turn++ {
		work(ctx, s, turn)
		if !s.NeedsCompaction(opts) {
			continue
		}
		res, err := s.Compact(ctx, summarizer, opts)
		check(err)
		fmt.Printf("turn %3d: compacted %3d messages: ~%d tokens -> ~%d (split turn: %v)\n",
			turn, len(res.Plan.Summarize)+len(res.Plan.TurnPrefix), res.Plan.TokensBefore, res.TokensAfter, res.Plan.SplitTurn)
	}

	c := s.Context()
	fmt.Printf("\nContext now: %d messages, ~%d tokens; it starts with the summary:\n\n%s\n\n",
		len(c.Messages), s.ContextTokens(nil), indent(c.Messages[0].Summary, 40))

	// Every compaction above was an appended entry: the file holds the
	// whole history. Prune rewrites it without what no context needs.
	path, err := store.Path(s.ID())
	check(err)
	before := fileSize(path)
	want := contextJSON(s)
	res, err := s.Prune(ctx, nil)
	check(err)
	fmt.Printf("Prune: %d entries dropped, %d kept; file %d KiB -> %d KiB; context unchanged: %v\n",
		res.Dropped, res.Kept, before/1024, fileSize(path)/1024, contextJSON(s) == want)
	check(s.Close())
}

// work appends one turn of an agent editing a file: a request, a call to
// a tool, its (long) output, and the answer.
func work(ctx context.Context, s *session.Session, turn int) {
	file := fmt.Sprintf("cart/item%d.go", turn%7)
	tool := "read"
	if turn%3 == 0 {
		tool = "edit"
	}
	args, _ := json.Marshal(map[string]string{"path": file})
	call := fmt.Sprintf("call_%d", turn)
	err := s.SaveTurn(ctx, []*session.Message{
		session.UserText(fmt.Sprintf("Step %d: look at %s and tidy it.", turn, file)),
		session.Assistant(session.Text("On it."), session.ToolCall(call, tool, args)).
			WithModel("anthropic-messages", "anthropic", "claude-sonnet-4-5"),
		session.ToolResult(call, tool, strings.Repeat(fmt.Sprintf("func step%d() {}\n", turn), 150)),
		session.AssistantText(fmt.Sprintf("Done with step %d.", turn)).
			WithModel("anthropic-messages", "anthropic", "claude-sonnet-4-5"),
	}, nil)
	check(err)
}

func contextJSON(s *session.Session) string {
	b, err := json.Marshal(s.Context())
	check(err)
	return string(b)
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	check(err)
	return st.Size()
}

func indent(s string, lines int) string {
	all := strings.Split(s, "\n")
	if len(all) > lines {
		all = append(all[:lines], "…")
	}
	return "    " + strings.Join(all, "\n    ")
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
