package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"unicode/utf8"

	session "github.com/agentsession/session"
)

// byteReader returns a function that takes the next byte of *data, 0
// once they are used up.
func byteReader(data *[]byte) func() int {
	return func() int {
		if len(*data) == 0 {
			return 0
		}
		b := int((*data)[0])
		*data = (*data)[1:]
		return b
	}
}

// randomLog turns fuzz bytes into a session log whose tree may hold
// anything: duplicate ids, self and missing parents, cycles, tool results
// without calls, compactions keeping from anywhere.
func randomLog(data []byte) []byte {
	next := byteReader(&data)
	id := func(b int) string { return fmt.Sprintf("e%02d", b%12) }
	var sb strings.Builder
	sb.WriteString(`{"type":"session","version":3,"id":"fuzz","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/"}` + "\n")
	for n := 0; len(data) > 0 && n < 48; n++ {
		self := id(next())
		parent := "null"
		switch p := next() % 14; p {
		case 0:
		case 1:
			parent = `"missing"`
		default:
			parent = `"` + id(p) + `"`
		}
		env := fmt.Sprintf(`"id":%q,"parentId":%s,"timestamp":"2026-01-15T10:00:%02d.000Z"`, self, parent, n%60)
		call := fmt.Sprintf("c%d", next()%4)
		switch next() % 12 {
		case 10:
			fmt.Fprintf(&sb, `{"type":"custom",%s,"customType":"agentsession.suspension","data":{"calls":[{"callId":%q}]}}`, env, call)
		case 11:
			fmt.Fprintf(&sb, `{"type":"custom",%s,"customType":"agentsession.suspension_end","data":{"outcome":"cancelled","callIds":[%q]}}`, env, call)
		case 0:
			fmt.Fprintf(&sb, `{"type":"message",%s,"message":{"role":"user","content":"u%d","timestamp":1}}`, env, n)
		case 1, 2:
			fmt.Fprintf(&sb, `{"type":"message",%s,"message":{"role":"assistant","content":[{"type":"text","text":"a%d"},{"type":"toolCall","id":%q,"name":"t","arguments":{}},{"type":"toolCall","id":"c%d","name":"t","arguments":{}}],"provider":"p","model":"m","stopReason":"toolUse","timestamp":2}}`, env, n, call, next()%4)
		case 3, 4:
			fmt.Fprintf(&sb, `{"type":"message",%s,"message":{"role":"toolResult","toolCallId":%q,"toolName":"t","content":[{"type":"text","text":"r%d"}],"isError":false,"timestamp":3}}`, env, call, n)
		case 5:
			fmt.Fprintf(&sb, `{"type":"compaction",%s,"summary":"s%d","firstKeptEntryId":%q,"tokensBefore":1}`, env, n, id(next()))
		case 6:
			fmt.Fprintf(&sb, `{"type":"branch_summary",%s,"fromId":"x","summary":"b%d"}`, env, n)
		case 7:
			fmt.Fprintf(&sb, `{"type":"label",%s,"targetId":%q,"label":"l%d"}`, env, id(next()), n)
		case 8:
			fmt.Fprintf(&sb, `{"type":"custom",%s,"customType":"agentsession.leaf"}`, env)
		default:
			fmt.Fprintf(&sb, `{"type":"message",%s,"message":{"role":"bashExecution","command":"c","output":"o","exitCode":0,"cancelled":false,"truncated":false,"excludeFromContext":%v,"timestamp":4}}`, env, next()%2 == 0)
		}
		sb.WriteByte('\n')
	}
	return []byte(sb.String())
}

// FuzzContext rebuilds contexts over random, possibly corrupt trees: it
// must never hang or panic, and what Messages hands to a model must always
// pair tool calls and results.
func FuzzContext(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 2, 1, 2, 3, 2, 3, 3, 4, 4, 5, 5})
	f.Add([]byte{1, 3, 0, 2, 1, 2, 3, 1, 4, 4, 4, 4, 4, 4, 4, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add([]byte("cycles and duplicates: a tree that loops back on itself"))
	f.Fuzz(func(t *testing.T, data []byte) {
		log, s := openGenerated(t, randomLog(data))
		ctx := context.Background()
		msgs, err := s.Messages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		checkPairing(t, msgs)
		if rebuilt := s.Context().ForModel(); len(rebuilt) != len(msgs) {
			t.Fatalf("ForModel rebuilds %d messages, Messages gives %d", len(rebuilt), len(msgs))
		}
		cleared, _, err := s.ClearedMessages(ctx, &session.ClearOptions{KeepTurns: 1, Step: 1, MinTokens: 1})
		if err != nil || len(cleared) != len(msgs) {
			t.Fatalf("cleared: %d messages of %d, %v", len(cleared), len(msgs), err)
		}
		checkPairing(t, cleared)
		for _, e := range log.Entries {
			c, err := s.ContextAt(e.ID())
			if err != nil {
				t.Fatal(err)
			}
			checkPairing(t, c.ForModel())
		}
		n := 0
		for range s.Tree() {
			n++
		}
		if n > len(log.Entries) {
			t.Fatalf("tree shows %d nodes for %d entries", n, len(log.Entries))
		}
		_ = session.Verify(log)
		// The session stays usable: append a turn and answer what is pending.
		if _, err := s.Append(ctx, session.UserText("more")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, callMsg("call", "z1")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, session.ToolResult("z1", "bash", "ok")); err != nil {
			t.Fatal(err)
		}
		msgs, _ = s.Messages(ctx)
		checkPairing(t, msgs)
		// The cleared view, grown from the one above.
		cleared, _, err = s.ClearedMessages(ctx, &session.ClearOptions{KeepTurns: 1, Step: 1, MinTokens: 1})
		if err != nil || len(cleared) != len(msgs) {
			t.Fatalf("cleared after appends: %d messages of %d, %v", len(cleared), len(msgs), err)
		}
		checkPairing(t, cleared)
	})
}

// randomTree turns fuzz bytes into a structurally sound session log
// (unique ids, every parent an earlier entry) with branches, compactions
// keeping from anywhere, labels, leaf markers, settings and call ids that
// repeat: the trees Prune works on.
func randomTree(data []byte) []byte {
	next := byteReader(&data)
	var sb strings.Builder
	sb.WriteString(`{"type":"session","version":3,"id":"fuzz","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/"}` + "\n")
	var ids []string
	earlier := func() string { return ids[next()%len(ids)] }
	for n := 0; len(data) > 0 && n < 64; n++ {
		self := fmt.Sprintf("e%02d", n)
		parent := "null"
		switch {
		case n == 0:
		case next()%5 == 0: // a branch
			parent = `"` + earlier() + `"`
		default:
			parent = `"` + ids[len(ids)-1] + `"`
		}
		env := fmt.Sprintf(`"id":%q,"parentId":%s,"timestamp":"2026-01-15T10:%02d:%02d.000Z"`, self, parent, n/60, n%60)
		call := fmt.Sprintf("c%d", next()%3)
		switch k := next() % 12; {
		case k < 3:
			fmt.Fprintf(&sb, `{"type":"message",%s,"message":{"role":"user","content":"u%d %s","timestamp":1}}`, env, n, strings.Repeat("w", next()))
		case k < 5:
			fmt.Fprintf(&sb, `{"type":"message",%s,"message":{"role":"assistant","content":[{"type":"text","text":"a%d"},{"type":"toolCall","id":%q,"name":"t","arguments":{}}],"provider":"p","model":"m%d","stopReason":"toolUse","timestamp":2}}`, env, n, call, next()%3)
		case k < 7:
			fmt.Fprintf(&sb, `{"type":"message",%s,"message":{"role":"toolResult","toolCallId":%q,"toolName":"t","content":[{"type":"text","text":"r%d %s"}],"isError":false,"timestamp":3}}`, env, call, n, strings.Repeat("o", next()))
		case k == 7 && n > 0:
			fmt.Fprintf(&sb, `{"type":"compaction",%s,"summary":"s%d","firstKeptEntryId":%q,"tokensBefore":1}`, env, n, earlier())
		case k == 8:
			fmt.Fprintf(&sb, `{"type":"branch_summary",%s,"fromId":"x","summary":"b%d"}`, env, n)
		case k == 9 && n > 0:
			fmt.Fprintf(&sb, `{"type":"label",%s,"targetId":%q,"label":"l%d"}`, env, earlier(), n%3)
		case k == 10:
			fmt.Fprintf(&sb, `{"type":"model_change",%s,"provider":"p","modelId":"m%d"}`, env, n)
		default:
			fmt.Fprintf(&sb, `{"type":"custom_message",%s,"customType":"hook","content":"n%d","display":true}`, env, n)
		}
		sb.WriteByte('\n')
		ids = append(ids, self)
	}
	return []byte(sb.String())
}

// FuzzCompaction compacts and prunes random trees: a compaction never
// leaves a tool result without its call that was not already one, what
// Messages hands to a model stays paired, and prune changes no context.
// Corrupt trees (randomLog) are compacted too, and prune refuses them.
func FuzzCompaction(f *testing.F) {
	f.Add(byte(3), []byte{0, 0, 0, 1, 2, 1, 2, 3, 2, 3, 3, 4, 4, 5, 5, 9, 2, 1, 0, 0, 3, 1, 2, 3})
	f.Add(byte(1), []byte{1, 3, 0, 2, 1, 2, 3, 1, 4, 4, 4, 4, 4, 4, 4, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add(byte(0), []byte("a long conversation with tool calls and compactions in it"))
	f.Add(byte(40), []byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x20\x21\x22\x23\x24\x25\x26\x27\x28\x29\x2a\x2b\x2c\x2d\x2e\x2f"))
	f.Fuzz(func(t *testing.T, keep byte, data []byte) {
		for _, gen := range []func([]byte) []byte{randomTree, randomLog} {
			_, s := openGenerated(t, gen(data))
			ctx := context.Background()
			orphans := len(s.Context().Orphans)
			_, err := s.Compact(ctx, session.ExtractiveSummarizer{MaxChars: 200}, &session.CompactionOptions{KeepRecentTokens: int64(keep) + 1})
			if err != nil && !errors.Is(err, session.ErrNothingToCompact) {
				t.Fatal(err)
			}
			if n := len(s.Context().Orphans); n > orphans {
				t.Fatalf("the compaction left %d tool results without their calls, there were %d", n, orphans)
			}
			msgs, err := s.Messages(ctx)
			if err != nil {
				t.Fatal(err)
			}
			checkPairing(t, msgs)

			before := contextsOfEnds(t, s)
			leaf := s.LeafID()
			if _, err := s.Prune(ctx, nil); err != nil {
				if errors.Is(err, session.ErrUnclean) {
					continue
				}
				t.Fatal(err)
			}
			if after := contextsOfEnds(t, s); !maps.Equal(before, after) {
				t.Fatalf("prune changed a context:\nbefore %v\nafter  %v", before, after)
			}
			if s.LeafID() != leaf {
				t.Fatalf("prune moved the leaf from %s to %s", leaf, s.LeafID())
			}
		}
	})
}

// FuzzExtractiveSummary feeds the offline summarizer arbitrary earlier
// summaries (which it reads back when they are its own): it never panics,
// stays within its size, keeps valid text valid, and summarizing its own
// summary again keeps its goal, progress and last answer.
func FuzzExtractiveSummary(f *testing.F) {
	f.Add("## Conversation so far (summarized without a model)\n\n## Goal\nfix it\n\n## Progress\n- … 3 earlier requests\n- b\n\n## Tools used\n- read ×2\n", "next")
	f.Add("a model's summary\n\nwith paragraphs", "")
	f.Add("## Conversation so far (summarized without a model)\n## Tools used\n- ×\n- a ×x\n## Progress\n- … -5 earlier requests", "q")
	f.Fuzz(func(t *testing.T, prev, ask string) {
		// The default-like limit, and one from 1 to 300 bytes.
		for _, limit := range []int{600, 1 + (len(prev)+len(ask))%300} {
			x := session.ExtractiveSummarizer{MaxChars: limit}
			ctx := context.Background()
			msgs := []*session.Message{session.UserText(ask), session.Assistant(session.ToolCall("c", "read", json.RawMessage(`{}`)))}
			out, err := x.Summarize(ctx, &session.SummaryRequest{Messages: msgs, PreviousSummary: prev})
			if err != nil {
				t.Fatal(err)
			}
			if len(out) > limit {
				t.Fatalf("%d bytes, over the limit of %d", len(out), limit)
			}
			if utf8.ValidString(prev) && utf8.ValidString(ask) && !utf8.ValidString(out) {
				t.Fatalf("invalid UTF-8 out of valid input: %q", out)
			}
			again, err := x.Summarize(ctx, &session.SummaryRequest{PreviousSummary: out})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"Goal", "Progress", "Last answer"} {
				if want := sectionOf(out, name); want != "" && sectionOf(again, name) != want {
					t.Fatalf("limit %d: the %s %q was lost:\n%s\nread back as\n%s", limit, name, want, out, again)
				}
			}
		}
	})
}

// sectionOf returns the first line of a "## name" section.
func sectionOf(s, name string) string {
	_, rest, ok := strings.Cut(s, "\n## "+name+"\n")
	if !ok {
		return ""
	}
	line, _, _ := strings.Cut(rest, "\n")
	return line
}

// openGenerated reads and opens a log made by randomLog or randomTree,
// which must read strictly.
func openGenerated(t *testing.T, data []byte) (*session.Log, *session.Session) {
	t.Helper()
	log, err := session.DecodeLog(data, &session.ReadOptions{Strict: true})
	if err != nil {
		t.Fatalf("generated log is not readable: %v", err)
	}
	s := session.OpenLog(log)
	return log, s
}
