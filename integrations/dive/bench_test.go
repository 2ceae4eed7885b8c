package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/deepnoodle-ai/dive"
	"github.com/deepnoodle-ai/dive/llm"
	divesession "github.com/deepnoodle-ai/dive/session"

	session "github.com/agentsession/session/integrations/dive"
)

// The benchmarks compare this package's FileStore with Dive's own, through
// Dive's API only: SaveTurn at a depth, reopening (a new store, Open and
// Messages), and a whole agent turn (Messages, the model, SaveTurn).
//
//	go test -run '^$' -bench . -benchmem -count 6 > bench.txt
//	benchstat -col /store bench.txt

// benchStores opens a session of each kind of FileStore, in a fresh store
// over dir (so that nothing is cached between opens).
var benchStores = []struct {
	name string
	open func(b *testing.B, dir, id string) dive.Session
}{
	{"agentsession", func(b *testing.B, dir, id string) dive.Session {
		st, err := session.NewFileStore(dir)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		s, err := st.Open(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}},
	{"dive", func(b *testing.B, dir, id string) dive.Session {
		st, err := divesession.NewFileStore(dir)
		if err != nil {
			b.Fatal(err)
		}
		s, err := st.Open(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}},
}

// benchTurn is a coding agent's turn: a prompt, a reply calling a tool, the
// tool's result (1 KiB), and the final answer.
func benchTurn(i int) []*llm.Message {
	id := fmt.Sprintf("toolu_%d", i)
	return []*llm.Message{
		llm.NewUserTextMessage(fmt.Sprintf("Step %d: read the file and tell me what changed. ", i) + strings.Repeat("context ", 20)),
		{Role: llm.Assistant, Content: []llm.Content{
			&llm.TextContent{Text: "Let me read it."},
			&llm.ToolUseContent{ID: id, Name: "read_file", Input: json.RawMessage(`{"path":"src/main.go"}`)},
		}},
		llm.NewToolResultMessage(&llm.ToolResultContent{ToolUseID: id, Content: []*dive.ToolResultContent{
			{Type: dive.ToolResultContentTypeText, Text: strings.Repeat("func main() { fmt.Println(\"hello\") }\n", 28)},
		}}),
		llm.NewAssistantTextMessage("The main function now prints a greeting. " + strings.Repeat("detail ", 30)),
	}
}

var benchUsage = &llm.Usage{InputTokens: 1200, OutputTokens: 150, CacheReadInputTokens: 800}

func fill(b *testing.B, s dive.Session, turns int) {
	ctx := context.Background()
	for i := range turns {
		if err := s.SaveTurn(ctx, benchTurn(i), benchUsage); err != nil {
			b.Fatal(err)
		}
	}
}

var benchDepths = []int{10, 100, 1000}

// BenchmarkSaveTurn saves one more turn (four messages) in a session of
// depth turns.
func BenchmarkSaveTurn(b *testing.B) {
	ctx := context.Background()
	for _, depth := range benchDepths {
		for _, st := range benchStores {
			b.Run(fmt.Sprintf("depth=%d/store=%s", depth, st.name), func(b *testing.B) {
				s := st.open(b, b.TempDir(), "bench")
				fill(b, s, depth)
				turns := make([][]*llm.Message, 64)
				for i := range turns {
					turns[i] = benchTurn(depth + i)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := s.SaveTurn(ctx, turns[i%len(turns)], benchUsage); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkReopen opens a session of depth turns in a new store and reads
// its messages, as a process resuming a conversation does.
func BenchmarkReopen(b *testing.B) {
	ctx := context.Background()
	for _, depth := range benchDepths {
		for _, st := range benchStores {
			b.Run(fmt.Sprintf("depth=%d/store=%s", depth, st.name), func(b *testing.B) {
				dir := b.TempDir()
				fill(b, st.open(b, dir, "bench"), depth)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					s := st.open(b, dir, "bench")
					msgs, err := s.Messages(ctx)
					if err != nil || len(msgs) != 4*depth {
						b.Fatalf("%d messages, %v", len(msgs), err)
					}
				}
			})
		}
	}
}

// echoModel replies to every request with the same text at once, so that
// an agent turn measures the session's part.
type echoModel struct{}

func (echoModel) Name() string { return "echo" }
func (echoModel) Generate(ctx context.Context, opts ...llm.Option) (*llm.Response, error) {
	return &llm.Response{
		ID: "resp", Model: "echo", Role: llm.Assistant, Type: "message", StopReason: "stop",
		Content: []llm.Content{&llm.TextContent{Text: "Done: " + strings.Repeat("ok ", 50)}},
		Usage:   *benchUsage,
	}, nil
}

// BenchmarkAgentTurn runs one Dive agent turn (load the history, call the
// model, save the turn) on a session of depth turns.
func BenchmarkAgentTurn(b *testing.B) {
	ctx := context.Background()
	for _, depth := range []int{10, 100} {
		for _, st := range benchStores {
			b.Run(fmt.Sprintf("depth=%d/store=%s", depth, st.name), func(b *testing.B) {
				s := st.open(b, b.TempDir(), "bench")
				fill(b, s, depth)
				agent, err := dive.NewAgent(dive.AgentOptions{Model: echoModel{}, Session: s})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := agent.CreateResponse(ctx, dive.WithInput("and now?")); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkMessages is an agent loop's read of the history through Dive's
// API, on a session in memory of 100, 1,000 or 10,000 turns: turn saves
// one more turn (four messages) then reads the window, as Dive's agent
// does before each call of the model; read reads it again with nothing
// new. Each stored message is converted once (pieceCache): what a turn
// costs beyond the copy of the window follows its own messages.
func BenchmarkMessages(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []string{"turn", "read"} {
		for _, depth := range []int{100, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/depth=%d", mode, depth), func(b *testing.B) {
				s := session.New("bench")
				fill(b, s, depth)
				if _, err := s.Messages(ctx); err != nil {
					b.Fatal(err)
				}
				turns := make([][]*llm.Message, 64)
				for i := range turns {
					turns[i] = benchTurn(depth + i)
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if mode == "turn" {
						if err := s.SaveTurn(ctx, turns[i%len(turns)], benchUsage); err != nil {
							b.Fatal(err)
						}
						i++
					}
					if msgs, err := s.Messages(ctx); err != nil || len(msgs) < 4*depth {
						b.Fatalf("%d messages, %v", len(msgs), err)
					}
				}
			})
		}
	}
}
