package session_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	session "github.com/agentsession/session"
)

// Create makes a session in a store; CreateOptions is optional (a new
// UUIDv7 id, no working directory).
func ExampleCreate() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sessions")
	defer os.RemoveAll(dir)
	store, err := session.OpenFileStore(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "fix-login", Cwd: "/src/app", Title: "Fix the login bug"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	fmt.Println(s.ID(), s.Title())
	_, err = session.Create(ctx, store, &session.CreateOptions{ID: "fix-login"})
	fmt.Println(errors.Is(err, session.ErrExists))
	// Output:
	// fix-login Fix the login bug
	// true
}

// Continue is what an agent started again in the same directory does: the
// most recent session of the directory, or a new one.
func ExampleContinue() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	first, _ := session.Continue(ctx, store, "/src/app") // none yet: created
	first.Append(ctx, session.UserText("Where is the login handler?"))

	again, err := session.Continue(ctx, store, "/src/app")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(again.ID() == first.ID(), len(again.Context().Messages))
	// Output:
	// true 1
}

// Branch moves the leaf: the next append starts a new branch there, and
// the path left behind stays in the tree.
func ExampleSession_Branch() {
	ctx := context.Background()
	s := session.New()
	q, _ := s.Append(ctx, session.UserText("Sort this list."))
	s.Append(ctx, session.AssistantText("Use bubble sort."))
	s.Branch(ctx, q.ID()) // try another answer to the same question
	s.Append(ctx, session.AssistantText("Use slices.Sort."))

	for n := range s.Tree() {
		m, _ := n.Entry.Message()
		fmt.Printf("%s%s leaf=%v\n", strings.Repeat("  ", n.Depth), m.Text(), n.Leaf)
	}
	// Output:
	// Sort this list. leaf=false
	//   Use bubble sort. leaf=false
	//   Use slices.Sort. leaf=true
}

// A checkpoint is a named place to come back to; Rewind goes back to it
// by name, and says how many entries left the path.
func ExampleSession_Checkpoint() {
	ctx := context.Background()
	s := session.New()
	s.Append(ctx, session.UserText("Refactor the parser."))
	s.Checkpoint(ctx, "before-refactor")
	s.Append(ctx, session.AssistantText("Rewrote everything; tests fail."))

	res, err := s.Rewind(ctx, "before-refactor")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("left the path:", res.Left) // the reply, and the checkpoint's own label entry
	fmt.Println("context:", len(s.Context().Messages), "message")
	// Output:
	// left the path: 2
	// context: 1 message
}

// NeedsCompaction tells when the context outgrows the model's window;
// Compact then summarizes the older history, or says why it cannot.
func ExampleSession_NeedsCompaction() {
	ctx := context.Background()
	s := session.New()
	for i := range 60 {
		s.SaveTurn(ctx, []*session.Message{
			session.UserText(fmt.Sprintf("Step %d: %s", i, strings.Repeat("details ", 40))),
			session.AssistantText("Done."),
		}, nil)
	}
	opts := &session.CompactionOptions{ContextWindow: 4096} // the reserve and the kept history scale to it
	fmt.Println("needs compaction:", s.NeedsCompaction(opts))
	if s.NeedsCompaction(opts) {
		res, err := s.Compact(ctx, session.ExtractiveSummarizer{}, opts)
		switch {
		case err == nil:
			fmt.Println("summarized:", len(res.Plan.Summarize), "messages")
		case errors.Is(err, session.ErrNothingToCompact), errors.Is(err, session.ErrCompactionDoesNotFit):
			fmt.Println("the latest turn alone is too long:", err)
		default:
			log.Fatal(err) // ErrCompactionSettings: options that can never fit the window
		}
	}
	fmt.Println("needs compaction:", s.NeedsCompaction(opts))
	// Output:
	// needs compaction: true
	// summarized: 84 messages
	// needs compaction: false
}

// Verify lists what a log holds that a reader had to repair, each with
// a severity: here a reply whose tool call never got a result, as an
// aborted turn leaves it (a warning: Messages answers it).
func ExampleVerify() {
	ctx := context.Background()
	s := session.New()
	s.Append(ctx, session.UserText("Build it."))
	s.Append(ctx, session.Assistant(session.ToolCall("call_1", "bash", []byte(`{"command":"make"}`))))
	s.Append(ctx, session.UserText("Never mind."))

	for _, f := range session.Verify(s.Log()) {
		fmt.Println(f.Severity(), f.Kind)
	}
	// Output:
	// warning dangling-call
}

// List pages through a store's sessions, most recently updated first,
// with the cursor each page gives.
func ExampleMemoryStore_List() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	for i := range 5 {
		s, _ := session.Create(ctx, store, &session.CreateOptions{ID: fmt.Sprintf("s%d", i), Cwd: "/src/app"})
		s.Append(ctx, session.UserText("hello"))
	}
	opts := session.ListOptions{Cwd: "/src/app", Limit: 2}
	for page := 1; ; page++ {
		p, err := store.List(ctx, opts)
		if err != nil {
			log.Fatal(err)
		}
		var ids []string
		for _, info := range p.Sessions {
			ids = append(ids, info.ID)
		}
		fmt.Println("page", page, ids)
		if p.Next == "" {
			break
		}
		opts.Cursor = p.Next
	}
	// Output:
	// page 1 [s4 s3]
	// page 2 [s2 s1]
	// page 3 [s0]
}
