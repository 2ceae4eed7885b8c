package importer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// The shape of a genuine Claude Code 2.1.39 transcript with parallel
// tool calls (testdata/claude/parallel/gen.py says where it is from).
const (
	clParallelID   = "4d5611e5-241a-462a-8d15-5122611a9569"
	clParallelFile = "testdata/claude/parallel/" + clParallelID + ".jsonl"
)

// clpAsst is an assistant line of API message msgID holding blocks.
func clpAsst(id, parent, msgID, blocks string) string {
	return fmt.Sprintf(`{"type":"assistant","uuid":%q,"parentUuid":%s,`+clTS+`,"message":{"id":%q,"role":"assistant","model":"claude-opus-4-6","content":%s,"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":9}}}`, id, clgParent(parent), msgID, blocks)
}

// clpCall is a tool_use block.
func clpCall(id string) string {
	return fmt.Sprintf(`{"type":"tool_use","id":%q,"name":"Bash","input":{"command":"echo %s"}}`, id, id)
}

// clpResult is the user line of the result of call, hanging from parent.
func clpResult(id, parent, call string) string {
	return fmt.Sprintf(`{"type":"user","uuid":%q,"parentUuid":%s,`+clTS+`,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"out of %s"}]},"toolUseResult":{"stdout":"out of %s"},"sourceToolAssistantUUID":%s}`, id, clgParent(parent), call, call, call, clgParent(parent))
}

func clpProgress(id, parent string) string {
	return fmt.Sprintf(`{"type":"progress","uuid":%q,"parentUuid":%s,`+clTS+`,"data":{"type":"hook_progress","hookEvent":"PostToolUse"}}`, id, clgParent(parent))
}

// Parallel tool calls as Claude Code 2.1 writes them: one API message
// over several lines (one block each, progress lines between them), and
// each call's result hanging from its own call's line, so that the
// chain Claude Code writes holds only the last result. The import is
// the conversation Claude Code shows and sent the API: one assistant
// message with every call, then every result, in the order written;
// one path, no result left on a side branch.
func TestClaudeParallelToolCalls(t *testing.T) {
	text := func(s string) string { return fmt.Sprintf(`[{"type":"text","text":%q}]`, s) }
	for _, c := range []struct {
		name  string
		path  string   // a file, or
		lines []string // the lines of s1.jsonl
		id    string
		calls []string // the calls of the merged message, in order
		// the roles of the context at the leaf, and the calls the
		// results answer, in order
		roles, results string
	}{
		{
			name: "genuine 2.1.39 shape, hooks", path: clParallelFile, id: clParallelID,
			calls:   []string{"toolu_01UwLnYYWGBvukzh1QE6JpfM", "toolu_01EqSqHoE2fyTCuK5BJ3azkA"},
			roles:   "user assistant toolResult toolResult assistant toolResult",
			results: "toolu_01UwLnYYWGBvukzh1QE6JpfM toolu_01EqSqHoE2fyTCuK5BJ3azkA toolu_019EkNmfE4exE11xktmWLjkX",
		},
		{
			name: "no hooks", id: "s1", lines: []string{
				clgUser("u", "", "run both"),
				clpAsst("a1", "u", "m1", text("Running both.")),
				clpAsst("a2", "a1", "m1", "["+clpCall("c1")+"]"),
				clpAsst("a3", "a2", "m1", "["+clpCall("c2")+"]"),
				clpResult("r1", "a2", "c1"),
				clpResult("r2", "a3", "c2"),
				clpAsst("a4", "r2", "m2", text("Both ran.")),
			},
			calls: []string{"c1", "c2"}, roles: "user assistant toolResult toolResult assistant", results: "c1 c2",
		},
		{
			name: "three calls, results in another order, progress between", id: "s1", lines: []string{
				clgUser("u", "", "run three"),
				clpAsst("a1", "u", "m1", "["+clpCall("c1")+"]"),
				clpProgress("p1", "a1"),
				clpAsst("a2", "p1", "m1", "["+clpCall("c2")+"]"),
				clpAsst("a3", "a2", "m1", "["+clpCall("c3")+"]"),
				clpResult("r2", "a2", "c2"),
				clpProgress("p2", "r2"),
				clpResult("r3", "a3", "c3"),
				clpResult("r1", "a1", "c1"),
				clpAsst("a4", "r1", "m2", text("All ran.")),
			},
			calls: []string{"c1", "c2", "c3"}, roles: "user assistant toolResult toolResult toolResult assistant", results: "c2 c3 c1",
		},
		{
			// Streaming tool execution: the first call's result is
			// written before the line of the second call, which hangs
			// from it.
			name: "a result between the lines of its message", id: "s1", lines: []string{
				clgUser("u", "", "run both"),
				clpAsst("a1", "u", "m1", "["+clpCall("c1")+"]"),
				clpResult("r1", "a1", "c1"),
				clpAsst("a2", "r1", "m1", "["+clpCall("c2")+"]"),
				clpResult("r2", "a2", "c2"),
				clpAsst("a3", "r2", "m2", text("Both ran.")),
			},
			calls: []string{"c1", "c2"}, roles: "user assistant toolResult toolResult assistant", results: "c1 c2",
		},
		{
			// The same, the second call's line hanging from the first's.
			name: "a result written before the next call's line", id: "s1", lines: []string{
				clgUser("u", "", "run both"),
				clpAsst("a1", "u", "m1", "["+clpCall("c1")+"]"),
				clpResult("r1", "a1", "c1"),
				clpAsst("a2", "a1", "m1", "["+clpCall("c2")+"]"),
				clpResult("r2", "a2", "c2"),
				clpAsst("a3", "r2", "m2", text("Both ran.")),
			},
			calls: []string{"c1", "c2"}, roles: "user assistant toolResult toolResult assistant", results: "c1 c2",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := c.path
			if path == "" {
				path = clFile(t, c.lines...)
			}
			for name, mk := range clStores(t) {
				t.Run(name, func(t *testing.T) {
					ctx := context.Background()
					store, reopen := mk()
					rep, err := Import(ctx, store, path, nil)
					if err != nil || len(rep.Errors) != 0 || len(rep.Imported) != 1 {
						t.Fatalf("import: %v %+v", err, rep)
					}
					for _, m := range rep.Imported[0].Malformed {
						t.Errorf("reported: %v", &m)
					}
					s, err := session.Open(ctx, reopen(), c.id)
					if err != nil {
						t.Fatal(err)
					}
					if n := len(s.Leaves()); n != 1 {
						t.Errorf("%d leaves, want one path", n)
					}
					msgs := s.Context().Messages
					if got := clRoles(msgs); got != c.roles {
						t.Errorf("context roles\n got %s\nwant %s", got, c.roles)
					}
					var asked, answered []string
					merged := 0
					for _, m := range msgs {
						var ids []string
						for _, b := range m.Content {
							if b.Type == session.BlockToolCall {
								ids = append(ids, b.ID)
							}
						}
						asked = append(asked, ids...)
						if strings.Join(ids, " ") == strings.Join(c.calls, " ") {
							merged++
						}
						if m.Role == session.RoleToolResult {
							answered = append(answered, m.ToolCallID)
						}
					}
					if merged != 1 {
						t.Errorf("no one assistant message holds the calls %v", c.calls)
					}
					if got := strings.Join(answered, " "); got != c.results {
						t.Errorf("results answer %s, want %s", got, c.results)
					}
					if len(asked) != len(answered) {
						t.Errorf("calls %v, results %v", asked, answered)
					}
				})
			}
		})
	}
}

// The genuine file imported from any prefix (a session Claude Code is
// still writing) resumes with the rest, but for a cut inside its first
// API message (whose merged entry grows), which is a conflict.
func TestClaudeParallelEveryPrefix(t *testing.T) {
	data, err := os.ReadFile(clParallelFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for n := 1; n < len(lines); n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ctx := context.Background()
			store := session.NewMemoryStore()
			path := filepath.Join(t.TempDir(), clParallelID+".jsonl")
			clFileRewrite(t, path, lines[:n])
			if _, err := Import(ctx, store, path, nil); err != nil {
				t.Fatal(err)
			}
			clFileRewrite(t, path, lines)
			rep, err := Import(ctx, store, path, nil)
			var ce *ConflictError
			if n >= 8 && n < 15 { // the message's lines are 8, 9, 10 and 15
				if !errors.As(err, &ce) {
					t.Fatalf("err %v, want a conflict", err)
				}
				return
			}
			if err != nil || len(rep.Imported) != 1 || rep.Imported[0].Resumed == 0 {
				t.Fatalf("err %v, %+v", err, rep)
			}
		})
	}
}

// A call on the path to the leaf whose result is in the file but not on
// that path (here, hanging from the prompt before the call) is a
// conversation the import cannot show as Claude Code would: an error,
// never an import that lacks the result.
func TestClaudeResultOffThePath(t *testing.T) {
	path := clFile(t,
		clgUser("u", "", "run both"),
		clpAsst("a1", "u", "m1", "["+clpCall("c1")+","+clpCall("c2")+"]"),
		clpResult("r1", "u", "c1"),
		clpResult("r2", "a1", "c2"),
		clpAsst("a2", "r2", "m2", `[{"type":"text","text":"done"}]`),
	)
	store := session.NewMemoryStore()
	rep, err := Import(context.Background(), store, path, nil)
	if !errors.Is(err, ErrClaudeConversation) || len(rep.Imported) != 0 {
		t.Fatalf("err %v, %+v", err, rep)
	}
	if !strings.Contains(err.Error(), "c1") {
		t.Errorf("the error does not name the call: %v", err)
	}
	if page, _ := store.List(context.Background(), session.ListOptions{}); page != nil && len(page.Sessions) != 0 {
		t.Errorf("stored %v", page.Sessions)
	}
}
