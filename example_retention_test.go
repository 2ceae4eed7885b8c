package session_test

import (
	"context"
	"fmt"
	"os"
	"time"

	session "github.com/agentsession/session"
)

// Sweep applies a retention policy: here sessions untouched for 30 days
// expire, except the newest of each working directory and those with a
// named checkpoint. The sweep's clock is set 31 days ahead to show it.
func ExampleSweep() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	for _, id := range []string{"api-1", "api-2", "web-1", "web-2"} {
		s, _ := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/src/" + id[:3]})
		s.Append(ctx, session.UserText("hello"))
		if id == "web-1" {
			s.Checkpoint(ctx, "release")
		}
		s.Close()
	}
	res, err := session.Sweep(ctx, store, &session.SweepPolicy{
		OlderThan:  30 * 24 * time.Hour,
		KeepNewest: 1, // per working directory
		Now:        func() time.Time { return time.Now().Add(31 * 24 * time.Hour) },
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("deleted:", res.Deleted)
	for _, k := range res.Kept {
		fmt.Println("kept:", k.ID, k.Reason)
	}
	// Output:
	// deleted: [api-1]
	// kept: api-2 newest
	// kept: web-1 labeled
	// kept: web-2 newest
}

// A FileStore keeps archived sessions compressed; they read as before,
// and an append brings them back.
func ExampleFileStore_CompressArchived() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sessions")
	defer os.RemoveAll(dir)
	store, err := session.OpenFileStore(dir, &session.FileStoreOptions{CompressArchive: true})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	s, _ := session.Create(ctx, store, &session.CreateOptions{ID: "old-task", Cwd: "/src/app"})
	for i := range 50 {
		s.Append(ctx, session.UserText(fmt.Sprintf("step %d: run the tests again and read the output", i)))
	}
	s.Close()

	if err := store.Archive(ctx, "old-task"); err != nil { // compressed, as the option says
		panic(err)
	}
	page, _ := store.List(ctx, session.ListOptions{OnlyArchived: true})
	info := page.Sessions[0]
	fmt.Println("archived:", info.Archived, "compressed:", info.Compressed, "entries:", info.Entries)

	s, _ = session.Open(ctx, store, "old-task") // read transparently
	fmt.Println("messages:", len(s.Context().Messages))
	s.Append(ctx, session.UserText("one more thing")) // unarchives it, plain again
	s.Close()
	page, _ = store.List(ctx, session.ListOptions{})
	fmt.Println("archived:", page.Sessions[0].Archived, "compressed:", page.Sessions[0].Compressed, "entries:", page.Sessions[0].Entries)
	// Output:
	// archived: true compressed: true entries: 50
	// messages: 50
	// archived: false compressed: false entries: 51
}
