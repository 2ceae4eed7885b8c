// Package convtest builds the conversations the provider conversion tests
// share. Each is made through a real Session and taken from
// Session.Messages, exactly as a host would hand it to a converter. For
// the other direction it reads server-sent events (SSE), saves a
// converted reply in a session (Turn) and checks what a response
// conversion promises (CheckReply).
//
// It imports the session package, internal/workload, internal/compattest
// and testing; only
// the provider packages' tests import it.
package convtest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/compattest"
)

// Case is one conversation.
type Case struct {
	Name string
	Msgs []*session.Message
}

// Model is the Claude model the conversations were "produced" by.
const Model = "claude-sonnet-4-5"

// PNG is a 1x1 PNG, base64.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

func claude(blocks ...session.Block) *session.Message {
	return session.Assistant(blocks...).WithModel("anthropic-messages", "anthropic", Model).
		WithUsage(session.Usage{Input: 100, Output: 20, TotalTokens: 120})
}

func gpt(blocks ...session.Block) *session.Message {
	return session.Assistant(blocks...).WithModel("openai-responses", "openai", "gpt-5")
}

func args(s string) json.RawMessage { return json.RawMessage(s) }

// RoleSystem is the role of a system message. The session package keeps
// messages of any role; "system" is how agents that write one name it.
const RoleSystem = "system"

// System returns a system message with a text block per text.
func System(texts ...string) *session.Message {
	m := &session.Message{Role: RoleSystem}
	for _, t := range texts {
		m.Content = append(m.Content, session.Text(t))
	}
	return m
}

// SystemTexts returns the non-blank text blocks of the system messages of
// msgs, in order: what must reach the request's system prompt.
func SystemTexts(msgs []*session.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role != RoleSystem {
			continue
		}
		for _, b := range m.Content {
			if b.Type == session.BlockText && strings.TrimSpace(b.Text) != "" {
				out = append(out, b.Text)
			}
		}
	}
	return out
}

// CheckSystem fails t unless every system message text of in appears in
// prompts (the request's system prompt blocks, or the contents of its
// system messages), in order: no system message is lost.
func CheckSystem(t testing.TB, in []*session.Message, prompts []string) {
	t.Helper()
	p, off := 0, 0 // where the next text is looked for
	for _, text := range SystemTexts(in) {
		for {
			if p == len(prompts) {
				t.Fatalf("system message text %q is not in the request's system prompt %q (in order)", text, prompts)
			}
			if k := strings.Index(prompts[p][off:], text); k >= 0 {
				off += k + len(text)
				break
			}
			p, off = p+1, 0
		}
	}
}

// Cases returns the conversations, each built in a fresh session.
func Cases(t testing.TB) []Case {
	t.Helper()
	ctx := context.Background()
	var out []Case
	add := func(name string, build func(s *session.Session)) {
		s := session.New()
		build(s)
		msgs, err := s.Messages(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, Case{name, msgs})
	}
	must := func(_ session.Entry, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	save := func(s *session.Session, msgs ...*session.Message) {
		t.Helper()
		if err := s.SaveTurn(ctx, msgs, nil); err != nil {
			t.Fatal(err)
		}
	}

	add("text", func(s *session.Session) {
		save(s, session.UserText("What is the capital of France?"))
		save(s, claude(session.Text("Paris.")))
		save(s, session.UserText("And of Italy?"))
	})

	add("image", func(s *session.Session) {
		save(s, session.User(session.Text("What colour is this pixel?"), session.ImageBase64("image/png", PNG)))
		save(s, claude(session.Text("It is red.")))
		save(s, session.User(session.ImageBase64("image/png", PNG)))
	})

	add("thinking", func(s *session.Session) {
		save(s, session.UserText("Think, then answer: 17*23?"))
		save(s, gpt(session.Thinking("Another provider's reasoning.", `{"type":"reasoning","id":"rs_1"}`), session.Text("I make it 391.")))
		save(s, session.UserText("Check it again."))
		redacted := session.Thinking("[Reasoning redacted]", "EncryptedRedactedData==")
		redacted.Redacted = true
		save(s, claude(
			session.Thinking("17*23 = 17*20 + 17*3 = 340 + 51 = 391.", "SignatureOfTheFirstBlock=="),
			redacted,
			session.Thinking("An unsigned block from an aborted stream.", ""),
			session.Text("391."),
		))
		save(s, session.UserText("And 19*21?"))
		save(s, session.Assistant(session.Thinking("Another Claude model's thinking.", "SignatureOfOpus=="), session.Text("399.")).
			WithModel("anthropic-messages", "anthropic", "claude-opus-4-1"))
		save(s, session.UserText("Thanks."))
	})

	add("parallel_tools", func(s *session.Session) {
		save(s, session.UserText("Show me a.go and b.go, and a screenshot."))
		save(s, claude(
			session.Text("Reading both files and taking a screenshot."),
			session.ToolCall("toolu_01A", "read", args(`{"path":"a.go"}`)),
			session.ToolCall("toolu_01B", "read", args(`{"path":"b.go"}`)),
			session.ToolCall("toolu_01C", "screenshot", nil),
		))
		save(s,
			session.ToolResult("toolu_01A", "read", "package a\n"),
			session.ToolError("toolu_01B", "read", "open b.go: no such file or directory"),
			&session.Message{Role: session.RoleToolResult, ToolCallID: "toolu_01C", ToolName: "screenshot",
				Content: []session.Block{session.ImageBase64("image/png", PNG)}},
		)
		save(s, claude(session.Text("a.go is one line; b.go does not exist.")))
	})

	add("documents", func(s *session.Session) {
		save(s, session.User(
			session.Text("Compare the spec with the notes."),
			session.DocumentBase64("application/pdf", "JVBERi0xLjQK").WithTitle("Spec").WithContext("Version 2").WithFilename("spec.pdf").WithCitations(),
			session.TextDocument("The parser must accept nested lists.").WithTitle("Notes"),
			session.DocumentURL("https://example.com/rfc.pdf"),
			session.DocumentFile("file_011CNha8iCJcU1wXNR6q4V8w"),
			session.Audio("audio/wav", []byte("RIFF")),
		))
		save(s, claude(
			session.RedactedThinking("EmwKAhgBEgy3va3pzix"),
			session.CitedText("The spec requires nested lists.", session.Citation{
				Type: "page_location", CitedText: "Nested lists are required.", DocumentIndex: 0, DocumentTitle: "Spec", StartPageNumber: 1, EndPageNumber: 2,
			}),
			session.Block{Type: session.BlockRedactedThinking, Data: "oh-my-pi's redacted thinking"},
			session.ToolCall("toolu_03", "fetch", args(`{"url":"https://example.com/b.pdf"}`)),
		))
		save(s, &session.Message{Role: session.RoleToolResult, ToolCallID: "toolu_03",
			Content: []session.Block{session.Text("fetched"), session.DocumentBase64("application/pdf", "JVBERi0xLjcK").WithFilename("b.pdf")}})
		save(s, session.Assistant(session.Refusal("I can't open that file."), session.Text("Part of it, then.")).
			WithModel("openai-responses", "openai", "gpt-5"))
		save(s, session.UserText("Thanks."))
	})

	add("summaries", func(s *session.Session) {
		save(s, session.UserText("Old question."))
		save(s, claude(session.Text("Old answer.")))
		save(s, session.UserText("Try the parser one way."))
		kept, _ := s.Entry(s.LeafID())
		save(s, claude(session.Text("Tried it one way.")))
		must(s.AppendCompaction(ctx, session.Compaction{
			Summary: "The user asked an old question and got an old answer.", FirstKeptEntryID: kept.ID(), TokensBefore: 5000,
		}))
		leaf, _ := s.Entry(s.LeafID())
		save(s, session.UserText("Try it another way."))
		save(s, claude(session.Text("Tried it another way.")))
		must(s.BranchWithSummary(ctx, leaf.ID(), "Tried the parser another way; it failed on nested lists.", nil))
		save(s, session.UserText("Go on from here."))
	})

	add("roles", func(s *session.Session) {
		save(s, session.BashExecution("go test ./...", "--- FAIL: TestX\nFAIL", 1))
		save(s, session.BashExecution("ls", "", 0))
		cancelled := session.BashExecution("sleep 100", "", 0)
		cancelled.Cancelled = true
		save(s, cancelled)
		hidden := session.BashExecution("cat secrets", "hunter2", 0)
		hidden.ExcludeFromContext = true
		save(s, hidden)
		save(s, session.UserText("Why did it fail?"))
		save(s, claude(session.ToolCall("toolu_02", "bash", args(`{"command":"go test -run TestX"}`))))
		must(s.AppendCustomMessage(ctx, session.CustomMessage("reminder", "Keep answers short.", false)))
		save(s, session.ToolResult("toolu_02", "bash", "TestX: want 2, got 3"))
		save(s, claude(session.Text("An off-by-one.")))
		must(s.AppendCustomMessage(ctx, &session.Message{Role: session.RoleCustom, CustomType: "attachment",
			Content: []session.Block{session.Text("The user attached:"), session.ImageBase64("image/png", PNG)}}))
		// A role this package does not know is left out by converters.
		save(s, &session.Message{Role: "futureRole", Content: []session.Block{session.Text("unknown")}})
	})

	add("ids", func(s *session.Session) {
		long := "call_9f8e7d6c5b4a39281706f5e4d3c2b1a0|fc_0123456789abcdef0123456789abcdef01234567"
		save(s, session.UserText("List the files."))
		save(s, gpt(session.ToolCall(long, "ls", args(`{}`)), session.ToolCall("call with spaces", "ls", args(`"not an object"`))))
		save(s, session.ToolResult(long, "ls", "a.go\nb.go"), session.ToolResult("call with spaces", "ls", ""))
		// A call that never got its result: Messages answers it.
		save(s, claude(session.ToolCall("toolu_03", "bash", args(`{"command":"make"}`))))
		save(s, session.UserText("Never mind, stop."))
	})

	add("reused_ids", func(s *session.Session) {
		// Some providers number calls from 0 on every turn.
		save(s, session.UserText("List, then list again."))
		save(s, gpt(session.ToolCall("call_0", "ls", args(`{}`))))
		save(s, session.ToolResult("call_0", "ls", "a.go"))
		save(s, gpt(session.ToolCall("call_0", "ls", args(`{}`))))
		save(s, session.ToolResult("call_0", "ls", "a.go b.go"))
		save(s, gpt(session.Text("One file appeared."), session.Text(" \n")))
		save(s, session.UserText("  \n"))
	})

	add("dated_model", func(s *session.Session) {
		// The API reports the dated id of the alias the request named.
		save(s, session.UserText("Hi."))
		save(s, session.Assistant(session.Thinking("Greet back.", "SigDated=="), session.Text("Hello.")).
			WithModel("anthropic-messages", "anthropic", Model+"-20250929"))
		save(s, session.UserText("Bye."))
	})

	// The acceptance case: an image, thinking blocks, two parallel tool
	// calls and a compaction summary in one conversation.
	add("full", func(s *session.Session) {
		save(s, session.UserText("Set up the project."))
		save(s, claude(session.Text("Done: go.mod and main.go.")))
		save(s, session.User(session.Text("Here is a screenshot of the failing page."), session.ImageBase64("image/png", PNG)))
		kept, _ := s.Entry(s.LeafID())
		save(s, claude(
			session.Thinking("The page fails to render; the handler or the template is wrong. Read both.", "SigA=="),
			session.Text("I'll read the handler and the template."),
			session.ToolCall("toolu_04A", "read", args(`{"path":"handler.go"}`)),
			session.ToolCall("toolu_04B", "read", args(`{"path":"page.tmpl"}`)),
		))
		save(s,
			session.ToolResult("toolu_04A", "read", "func handler(w http.ResponseWriter, r *http.Request) {\n\ttmpl.Execute(w, nil)\n}"),
			session.ToolResult("toolu_04B", "read", "<h1>{{.Title}}</h1>"),
		)
		save(s, claude(
			session.Thinking("The template reads .Title from nil data.", "SigB=="),
			session.Text("The handler passes nil data, and the template reads .Title."),
		))
		must(s.AppendCompaction(ctx, session.Compaction{
			Summary:          "The user set up a Go project (go.mod, main.go).",
			FirstKeptEntryID: kept.ID(), TokensBefore: 48000,
		}))
		save(s, session.UserText("Fix it."))
	})

	// A reply that failed mid-stream (pi writes it with stopReason
	// "error"), then the retry's reply: the failed one is not sent, so
	// its text never lands ahead of the retry's signed thinking.
	add("errored_retry", func(s *session.Session) {
		save(s, session.UserText("Explain the failing test."))
		failed := claude(session.Text("The test fails because")).WithStopReason(session.StopError)
		failed.ErrorMessage = "overloaded_error: Overloaded"
		save(s, failed)
		save(s, claude(
			session.Thinking("The assertion compares a slice with nil.", "SigRetry=="),
			session.Text("It compares an empty slice with nil."),
		))
		save(s, session.UserText("Fix it then."))
	})

	// An aborted reply with tool calls (the user pressed Escape), one of
	// them answered before the abort: neither the calls nor their results
	// (the real one and the one Messages makes up) are sent, and the retry
	// may use the same id again.
	add("aborted_tools", func(s *session.Session) {
		save(s, session.UserText("Run the tests and the linter."))
		save(s, claude(
			session.Thinking("Run both at once.", "SigAborted=="),
			session.Text("Running both."),
			session.ToolCall("toolu_06A", "bash", args(`{"command":"go test ./..."}`)),
			session.ToolCall("toolu_06B", "bash", args(`{"command":"go vet ./..."}`)),
		).WithStopReason(session.StopAborted),
			session.ToolError("toolu_06A", "bash", "Command aborted"))
		save(s, session.UserText("Only the tests, please."))
		save(s, claude(session.Text("Running the tests."), session.ToolCall("toolu_06A", "bash", args(`{"command":"go test ./..."}`))))
		save(s, session.ToolResult("toolu_06A", "bash", "ok"))
		save(s, claude(session.Text("They pass.")))
	})

	// Replies whose last block is thinking: signed thinking and a blank
	// text (left out), and thinking after the text of a reply cut short.
	add("thinking_last", func(s *session.Session) {
		save(s, session.UserText("Is 91 prime?"))
		save(s, claude(session.Thinking("91 = 7*13.", "SigLastA=="), session.Text(" \n")))
		save(s, session.UserText("Well?"))
		save(s, claude(session.Text("No: 91 = 7*13."), session.Thinking("Should I say more?", "SigLastB==")).
			WithStopReason(session.StopLength))
		save(s, session.UserText("And 97?"))
		save(s, claude(session.Thinking("Not divisible by 2, 3, 5 or 7.", "SigLastC==")).WithStopReason(session.StopLength))
	})

	// Thinking after other blocks: inside one reply, and when two replies
	// in a row are merged into one message.
	add("thinking_order", func(s *session.Session) {
		save(s, session.UserText("Read a.go, then tell me what it does."))
		save(s, claude(
			session.Thinking("Read it first.", "SigOrderA=="),
			session.Text("Reading a.go."),
			session.Thinking("The path is relative to the root.", "SigOrderB=="),
			session.ToolCall("toolu_07", "read", args(`{"path":"a.go"}`)),
		))
		save(s, session.ToolResult("toolu_07", "read", "package a\n"))
		save(s, claude(session.Text("It declares")).WithStopReason(session.StopLength))
		save(s, claude(session.Thinking("Finish the sentence.", "SigOrderC=="), session.Text("package a and nothing else.")))
		save(s, session.UserText("Thanks."))
	})

	// A system message in the middle of the conversation (some agents
	// write one when a setting changes).
	add("system_message", func(s *session.Session) {
		save(s, session.UserText("Hi."))
		save(s, claude(session.Text("Hello.")))
		save(s, System("From now on, answer in French."))
		save(s, session.UserText("How are you?"))
		save(s, claude(session.Text("Bien, merci.")))
		save(s, System("  \n"), System("Keep answers under ten words.", "Never use emoji."))
		save(s, session.UserText("Bye."))
	})

	// What a host sends after Messages left calls pending (the agent was
	// to run them) when it appends a new user message instead.
	ctx2, s := ctx, session.New()
	save(s, session.UserText("Build it."))
	save(s, claude(session.ToolCall("toolu_05A", "bash", args(`{"command":"make"}`)), session.ToolCall("toolu_05B", "bash", args(`{"command":"make test"}`))))
	msgs, err := s.Messages(ctx2)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, Case{"pending_then_user", append(msgs, session.UserText("Stop, do not build."))})

	// A context whose older tool results are cleared (ClearedMessages):
	// the first three turns' results are placeholders, the calls paired.
	s = session.New()
	for i, f := range []string{"a.go", "b.go", "c.go", "d.go"} {
		id := "toolu_06" + string(rune('A'+i))
		save(s, session.UserText("Read "+f+"."))
		save(s, claude(session.ToolCall(id, "read", args(`{"path":"`+f+`"}`))))
		save(s, session.ToolResult(id, "read", strings.Repeat("package main // "+f+"\n", 40)))
		save(s, claude(session.Text("Read "+f+".")))
	}
	cleared, st, err := s.ClearedMessages(ctx, &session.ClearOptions{KeepTurns: 1, Step: 1})
	if err != nil || st.Cleared != 3 {
		t.Fatalf("cleared: %+v, %v", st, err)
	}
	out = append(out, Case{"cleared", cleared})
	return out
}

// Corpus returns the context of every session in the compat corpus
// (../shared/compat/pi beside the checkout), by file name; none if the
// corpus is not there.
func Corpus(t testing.TB) []Case {
	t.Helper()
	names, _ := filepath.Glob(compattest.Path("*.jsonl"))
	sort.Strings(names)
	var out []Case
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		log, err := session.DecodeLog(data, nil)
		if err != nil {
			continue // the corpus has files that must not load
		}
		s := session.OpenLog(log)
		msgs, err := s.Messages(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Case{strings.TrimSuffix(filepath.Base(name), ".jsonl"), msgs})
	}
	return out
}
