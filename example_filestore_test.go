package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	session "github.com/agentsession/session"
)

// A FileStore keeps sessions in the seed layout; an agent started again
// in the same directory continues where it left off.
func ExampleOpenFileStore() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "sessions")

	store, _ := session.OpenFileStore(root, nil) // nil: SyncOnFlush and the other defaults
	s, _ := session.Create(ctx, store, &session.CreateOptions{Cwd: "/home/dev/project"})
	s.SaveTurn(ctx, []*session.Message{session.UserText("Hi"), session.AssistantText("Hello!")}, nil)
	s.Flush(ctx) // the end of a turn: written and synced
	s.SetTitle(ctx, "Greetings")
	s.Close()
	store.Close()

	// Later, in another process.
	store, _ = session.OpenFileStore(root, nil)
	defer store.Close()
	again, _ := session.Continue(ctx, store, "/home/dev/project")
	fmt.Println(again.Title(), len(again.Context().Messages))
	page, _ := store.List(ctx, session.ListOptions{Cwd: "/home/dev/project"})
	fmt.Println(len(page.Sessions), page.Sessions[0].Title, page.Sessions[0].Entries)
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
	fmt.Println(filepath.Base(filepath.Dir(files[0])))
	// Output:
	// Greetings 2
	// 1 Greetings 3
	// --home-dev-project--
}

// Images of 1 KiB or more are stored once, in a content-addressed blob
// store under the sessions' root (<root>/.blobs), and put back when the
// session is read.
func ExampleFileStoreOptions_blobs() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	store, _ := session.OpenFileStore(filepath.Join(dir, "sessions"), nil)
	defer store.Close()

	png := make([]byte, 4096) // a stand-in for an image
	s, _ := session.Create(ctx, store, nil)
	s.Append(ctx, session.User(session.Text("What is this?"), session.Image("image/png", png)))
	s.Close()

	blobs, _ := os.ReadDir(filepath.Join(dir, "sessions", ".blobs"))
	fmt.Println(len(blobs), "blob:", session.BlobRef(png) == session.BlobPrefix+blobs[0].Name())
	again, _ := session.Open(ctx, store, s.ID())
	img := again.Context().Messages[0].Content[1]
	fmt.Println(img.MimeType, len(img.Data))
	// Output:
	// 1 blob: true
	// image/png 5464
}

// Copy moves a session between stores, here from memory into files (a
// FileStore into pgstore and back works the same way); the destination
// is never overwritten.
func ExampleCopy() {
	ctx := context.Background()
	mem := session.NewMemoryStore()
	s, _ := session.Create(ctx, mem, &session.CreateOptions{Cwd: "/w"})
	s.SaveTurn(ctx, []*session.Message{session.UserText("Hi"), session.AssistantText("Hello!")}, nil)

	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	files, _ := session.OpenFileStore(dir, nil)
	defer files.Close()
	fmt.Println(session.Copy(ctx, files, mem, s.ID()))
	copied, _ := session.Open(ctx, files, s.ID())
	fmt.Println(len(copied.Context().Messages), copied.LeafID() == s.LeafID())
	err := session.Copy(ctx, files, mem, s.ID())
	fmt.Println(errors.Is(err, session.ErrExists))
	// Output:
	// <nil>
	// 2 true
	// true
}

// The flat layout keeps each session at <root>/<id>.jsonl, as Dive does,
// for hosts without a working directory.
func ExampleLayout() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	store, _ := session.OpenFileStore(dir, &session.FileStoreOptions{Layout: session.LayoutFlat})
	defer store.Close()
	s, _ := session.Create(ctx, store, &session.CreateOptions{ID: "alice@example.com"})
	s.Append(ctx, session.UserText("hello"))
	p, _ := store.Path("alice@example.com")
	fmt.Println(filepath.Base(p))
	// Output:
	// alice%40example.com.jsonl
}
