package langchaingo_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/integrations/langchaingo"
	"github.com/tmc/langchaingo/memory"
)

// A langchaingo conversation buffer whose history is a session file in
// pi's JSONL format: it survives a restart, and Clear deletes nothing.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "langchaingo-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "sessions") // blobs go beside it, in dir/blobs

	store, err := session.OpenFileStore(root, nil)
	if err != nil {
		log.Fatal(err)
	}
	h, err := langchaingo.New(ctx, store, "support-42")
	if err != nil {
		log.Fatal(err)
	}
	mem := memory.NewConversationBuffer(memory.WithChatHistory(h))
	if err := mem.SaveContext(ctx, map[string]any{"input": "Where is my order?"}, map[string]any{"output": "It ships today."}); err != nil {
		log.Fatal(err)
	}
	h.Close()
	store.Close()

	// Another run of the program: the same session, from the file.
	store, err = session.OpenFileStore(root, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	h, err = langchaingo.New(ctx, store, "support-42")
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	mem = memory.NewConversationBuffer(memory.WithChatHistory(h))
	vars, err := mem.LoadMemoryVariables(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(vars["history"])

	// Clear starts a new branch: the old conversation stays in the tree.
	old := h.Session().LeafID()
	if err := mem.Clear(ctx); err != nil {
		log.Fatal(err)
	}
	msgs, _ := h.Messages(ctx)
	fmt.Println("after Clear:", len(msgs), "messages")
	if err := h.Session().Branch(ctx, old); err != nil { // restore it
		log.Fatal(err)
	}
	msgs, _ = h.Messages(ctx)
	fmt.Println("restored:", len(msgs), "messages")
	// Output:
	// Human: Where is my order?
	// AI: It ships today.
	// after Clear: 0 messages
	// restored: 2 messages
}
