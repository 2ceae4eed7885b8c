package importer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// clWriter writes a transcript as Claude Code 2.1 does: each line hangs
// from the line written last (the tip), but a tool result, which hangs
// from the line of its call (its sourceToolAssistantUUID). Subagent
// lines (isSidechain) make a chain of their own.
type clWriter struct {
	lines     []string
	tip, side string
	n         int
	call      map[string]string // call id -> the uuid of its line
	// spans are the line ranges [first, last] of the API messages
	// written over several lines, and the boundary lines: a cut inside
	// one changes an entry already stored.
	spans [][2]int
}

func (w *clWriter) uuid() string { w.n++; return fmt.Sprintf("l%d", w.n) }

func (w *clWriter) put(id, line string) {
	w.lines = append(w.lines, line)
	w.tip = id
}

// message writes one API message, its blocks one a line, with the
// events between its lines (and after them) in the order given.
func (w *clWriter) message(msgID string, blocks []string, between [][]func()) {
	first := len(w.lines) + 1
	for i, b := range blocks {
		id := w.uuid()
		w.put(id, clpAsst(id, w.tip, msgID, "["+b+"]"))
		if i == len(blocks)-1 && len(blocks) > 1 {
			w.spans = append(w.spans, [2]int{first, len(w.lines)})
		}
		for _, ev := range between[i] {
			ev()
		}
	}
}

func (w *clWriter) progress() {
	id := w.uuid()
	w.put(id, clpProgress(id, w.tip))
}

func (w *clWriter) result(call string) {
	id := w.uuid()
	w.lines = append(w.lines, clpResult(id, w.call[call], call))
	w.tip = id
}

func (w *clWriter) sidechain() {
	id := w.uuid()
	w.lines = append(w.lines, fmt.Sprintf(`{"type":"user","uuid":%q,"parentUuid":%s,"isSidechain":true,"agentId":"a1",`+clTS+`,"message":{"role":"user","content":"look"}}`, id, clgParent(w.side)))
	w.side = id
}

func (w *clWriter) compact() {
	b, s := w.uuid(), w.uuid()
	w.lines = append(w.lines, fmt.Sprintf(`{"type":"system","subtype":"compact_boundary","uuid":%q,"parentUuid":null,"logicalParentUuid":%q,`+clTS+`,"compactMetadata":{"trigger":"auto","preTokens":900}}`, b, w.tip))
	w.spans = append(w.spans, [2]int{len(w.lines), len(w.lines) + 1})
	w.put(s, fmt.Sprintf(`{"type":"user","uuid":%q,"parentUuid":%q,"isCompactSummary":true,`+clTS+`,"message":{"role":"user","content":"This session is being continued from a previous conversation. Summary."}}`, s, b))
}

// clRound is one parallel round as written: the calls of one message,
// and what the file holds in what order.
type clRound struct {
	calls, written []string // the calls, and their results in the order written
}

// clWrite writes a random session of rounds of parallel tool calls:
// each call's result written any time after its call's line (between
// the message's later lines too), hook progress lines and subagent
// lines anywhere, a compaction after some rounds.
func clWrite(r *rand.Rand, compactions, sidechains bool) (*clWriter, []clRound) {
	w := &clWriter{call: map[string]string{}}
	id := w.uuid()
	w.put(id, clgUser(id, "", "go"))
	var rounds []clRound
	for round := range 1 + r.IntN(3) {
		k := 1 + r.IntN(5)
		var blocks []string
		if r.IntN(2) == 0 {
			blocks = append(blocks, `{"type":"text","text":"Running."}`)
		}
		var rd clRound
		for i := range k {
			c := fmt.Sprintf("c%d_%d", round, i)
			rd.calls = append(rd.calls, c)
			blocks = append(blocks, clpCall(c))
		}
		between := make([][]func(), len(blocks))
		pending := []string{}
		for i := range blocks {
			if i >= len(blocks)-k { // a call's line: its result may come from now on
				c := rd.calls[i-(len(blocks)-k)]
				between[i] = append(between[i], func() { w.call[c] = w.tip })
				pending = append(pending, c)
			}
			last := i == len(blocks)-1
			for len(pending) > 0 && (last || r.IntN(3) == 0) {
				if r.IntN(3) == 0 {
					between[i] = append(between[i], w.progress)
				}
				if sidechains && r.IntN(4) == 0 {
					between[i] = append(between[i], w.sidechain)
				}
				j := r.IntN(len(pending))
				c := pending[j]
				pending = append(pending[:j], pending[j+1:]...)
				rd.written = append(rd.written, c)
				between[i] = append(between[i], func() { w.result(c) })
			}
		}
		w.message(fmt.Sprintf("m%d", round), blocks, between)
		rounds = append(rounds, rd)
		if compactions && r.IntN(3) == 0 {
			w.compact()
		}
	}
	id = w.uuid()
	w.put(id, clpAsst(id, w.tip, "mEnd", `[{"type":"text","text":"Done."}]`))
	return w, rounds
}

// Random sessions of parallel tool calls as Claude Code writes them,
// results in any order, between the message's lines or after them, with
// progress lines, subagent lines (1.x, in the same file) and
// compactions: each imports as one path, each round one assistant
// message with all its calls and then every result in the order
// written; and every prefix of a file without subagent lines resumes
// with the rest, but for cuts inside a message or a compaction, which
// are conflicts.
func TestClaudeParallelWriterModel(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			w, rounds := clWrite(rand.New(rand.NewPCG(seed, 7)), true, seed%2 == 1)
			ctx := context.Background()
			store := session.NewMemoryStore()
			rep, err := Import(ctx, store, clFile(t, w.lines...), nil)
			if err != nil || len(rep.Imported) == 0 || len(rep.Imported[0].Malformed) != 0 {
				t.Fatalf("import: %v %+v\n%s", err, rep, strings.Join(w.lines, "\n"))
			}
			s, err := session.Open(ctx, store, "s1")
			if err != nil {
				t.Fatal(err)
			}
			if n := len(s.Leaves()); n != 1 {
				t.Errorf("%d leaves", n)
			}
			clCheckRounds(t, s, rounds, w.lines)
			if len(rep.Imported) > 1 {
				return // a subagent's lines: clgGrow takes one session
			}
			for n := 1; n < len(w.lines); n++ {
				inside := false
				for _, sp := range w.spans {
					inside = inside || (n >= sp[0] && n < sp[1])
				}
				store := session.NewMemoryStore()
				p := clFile(t, w.lines[:n]...)
				if !inside {
					clgGrow(t, store, func() session.Store { return store }, p, w.lines[n:])
					continue
				}
				if _, err := Import(ctx, store, p, nil); err != nil {
					t.Fatal(err)
				}
				clFileRewrite(t, p, w.lines)
				var ce *ConflictError
				if _, err := Import(ctx, store, p, nil); !errors.As(err, &ce) {
					t.Fatalf("cut at %d: err %v, want a conflict", n, err)
				}
			}
		})
	}
}

// clCheckRounds checks the path to the session's leaf: for each round,
// one assistant message with all its calls, then its results in the
// order written, and no other call or result.
func clCheckRounds(t *testing.T, s *session.Session, rounds []clRound, lines []string) {
	t.Helper()
	path, err := s.PathTo(s.LeafID())
	if err != nil {
		t.Fatal(err)
	}
	var got []string // "A c1 c2 | R c2 | R c1 | A ..."
	for _, e := range path {
		m, err := e.Message()
		if err != nil || m == nil {
			continue
		}
		switch m.Role {
		case session.RoleAssistant:
			var ids []string
			for _, b := range m.Content {
				if b.Type == session.BlockToolCall {
					ids = append(ids, b.ID)
				}
			}
			if len(ids) > 0 {
				got = append(got, "A "+strings.Join(ids, " "))
			}
		case session.RoleToolResult:
			got = append(got, "R "+m.ToolCallID)
		}
	}
	var want []string
	for _, rd := range rounds {
		want = append(want, "A "+strings.Join(rd.calls, " "))
		for _, c := range rd.written {
			want = append(want, "R "+c)
		}
	}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Fatalf("path\n got %s\nwant %s\n%s", strings.Join(got, " | "), strings.Join(want, " | "), strings.Join(lines, "\n"))
	}
}

// A subagent's file (2.1: <session>/subagents/agent-<id>.jsonl) with
// parallel calls is rebuilt the same way, in its own session.
func TestClaudeParallelSubagent(t *testing.T) {
	w, rounds := clWrite(rand.New(rand.NewPCG(3, 3)), false, false)
	for i, l := range w.lines {
		if !strings.Contains(l, `"isSidechain":true`) {
			w.lines[i] = strings.Replace(l, `{"type":`, `{"isSidechain":true,"agentId":"x1","type":`, 1)
		}
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "s1", "subagents"), 0o755); err != nil {
		t.Fatal(err)
	}
	clFileRewrite(t, filepath.Join(dir, "s1.jsonl"), []string{clgUser("u0", "", "start")})
	clFileRewrite(t, filepath.Join(dir, "s1", "subagents", "agent-x1.jsonl"), w.lines)
	ctx := context.Background()
	store := session.NewMemoryStore()
	if _, err := Import(ctx, store, filepath.Join(dir, "s1.jsonl"), nil); err != nil {
		t.Fatal(err)
	}
	s, err := session.Open(ctx, store, "s1_agent-x1")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Leaves()); n != 1 {
		t.Errorf("%d leaves", n)
	}
	clCheckRounds(t, s, rounds, w.lines)
}

// Shapes the writer model does not make: what Claude Code shows is
// still one assistant message with every call, then every result.
func TestClaudeTurnShapes(t *testing.T) {
	calls := "[" + clpCall("c1") + "," + clpCall("c2") + "]"
	for _, c := range []struct {
		name   string
		lines  []string
		path   string // the messages on the path to the leaf
		leaves int
	}{
		{
			// A result written after the conversation went on (its
			// line hangs from its call's): Claude Code splices it in
			// after the calls, before what followed.
			name: "a result written after the next message", lines: []string{
				clgUser("u", "", "go"),
				clpAsst("a1", "u", "m1", "["+clpCall("c1")+"]"),
				clpAsst("a2", "a1", "m1", "["+clpCall("c2")+"]"),
				clpResult("r1", "a1", "c1"),
				clpAsst("a3", "r1", "m2", `[{"type":"text","text":"one of two"}]`),
				clpResult("r2", "a2", "c2"),
			},
			path: "user A:c1,c2 R:c1 R:c2 assistant", leaves: 1,
		},
		{
			// A result hanging from a hook's progress line below its
			// call, and the next prompt from the first result.
			name: "a result below a progress line, a prompt from the middle", lines: []string{
				clgUser("u", "", "go"),
				clpAsst("a1", "u", "m1", calls),
				clpProgress("p1", "a1"),
				clpResult("r1", "a1", "c1"),
				clpResult("r2", "p1", "c2"),
				clgUser("u2", "r1", "and then?"),
			},
			path: "user A:c1,c2 R:c1 R:c2 user", leaves: 1,
		},
		{
			// The second line of the message hanging from the prompt,
			// as the first does.
			name: "two lines of one message from the prompt", lines: []string{
				clgUser("u", "", "go"),
				clpAsst("a1", "u", "m1", "["+clpCall("c1")+"]"),
				clpAsst("a2", "u", "m1", "["+clpCall("c2")+"]"),
				clpResult("r2", "a2", "c2"),
				clpResult("r1", "a1", "c1"),
				clpAsst("a3", "r1", "m2", `[{"type":"text","text":"both"}]`),
			},
			path: "user A:c1,c2 R:c2 R:c1 assistant", leaves: 1,
		},
		{
			// An edit of the prompt after the turn branches where the
			// turn ends, both branches seeing every result.
			name: "two prompts after a turn", lines: []string{
				clgUser("u", "", "go"),
				clpAsst("a1", "u", "m1", "["+clpCall("c1")+"]"),
				clpAsst("a2", "a1", "m1", "["+clpCall("c2")+"]"),
				clpResult("r1", "a1", "c1"),
				clpResult("r2", "a2", "c2"),
				clgUser("u2", "r2", "first"),
				clgUser("u3", "r1", "edited"),
			},
			path: "user A:c1,c2 R:c1 R:c2 user", leaves: 2,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			store := session.NewMemoryStore()
			rep, err := Import(ctx, store, clFile(t, c.lines...), nil)
			if err != nil || len(rep.Imported) != 1 || len(rep.Imported[0].Malformed) != 0 {
				t.Fatalf("import: %v %+v", err, rep)
			}
			s, err := session.Open(ctx, store, "s1")
			if err != nil {
				t.Fatal(err)
			}
			if n := len(s.Leaves()); n != c.leaves {
				t.Errorf("%d leaves, want %d", n, c.leaves)
			}
			path, err := s.PathTo(s.LeafID())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range path {
				m, err := e.Message()
				if err != nil || m == nil {
					continue
				}
				var ids []string
				for _, b := range m.Content {
					if b.Type == session.BlockToolCall {
						ids = append(ids, b.ID)
					}
				}
				switch {
				case len(ids) > 0:
					got = append(got, "A:"+strings.Join(ids, ","))
				case m.Role == session.RoleToolResult:
					got = append(got, "R:"+m.ToolCallID)
				default:
					got = append(got, m.Role)
				}
			}
			if strings.Join(got, " ") != c.path {
				t.Errorf("path\n got %s\nwant %s", strings.Join(got, " "), c.path)
			}
		})
	}
}

// A line of an API message on the path that the import cannot place
// with it (here below another message) is an error naming the line.
func TestClaudeMessageOffThePath(t *testing.T) {
	path := clFile(t,
		clgUser("u", "", "go"),
		clpAsst("a1", "u", "m1", "["+clpCall("c1")+"]"),
		clpResult("r1", "a1", "c1"),
		clpAsst("a2", "r1", "m2", `[{"type":"text","text":"other"}]`),
		clpAsst("a3", "a2", "m1", "["+clpCall("c2")+"]"),
		clgUser("u2", "a1", "go on"),
	)
	store := session.NewMemoryStore()
	rep, err := Import(context.Background(), store, path, nil)
	if !errors.Is(err, ErrClaudeConversation) || len(rep.Imported) != 0 || !strings.Contains(err.Error(), `"a3"`) {
		t.Fatalf("err %v, %+v", err, rep)
	}
}
