package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/storetest"
)

// A write can happen and its answer be lost, as when a database commits
// and the connection drops. Calling the same method again is safe: the
// turn is stored once.
func ExampleSession_SaveTurn_retry() {
	ctx := context.Background()
	store := &storetest.LostReply{Store: session.NewMemoryStore()} // commits, then fails when armed
	s, _ := session.Create(ctx, store, nil)
	turn := []*session.Message{session.UserText("Run the tests"), session.AssistantText("All pass.")}

	store.Arm(1)
	err := s.SaveTurn(ctx, turn, nil)
	fmt.Println(errors.Is(err, storetest.ErrReplyLost))
	for err != nil { // what a host does: try again (with a pause, in real life)
		err = s.SaveTurn(ctx, turn, nil)
	}
	again, _ := session.Open(ctx, store, s.ID())
	fmt.Println(again.Len(), len(again.Leaves()))
	// Output:
	// true
	// 2 1
}

// An image whose blob cannot be read back (deleted, corrupt) keeps its
// reference, is reported, and is never sent to a model as data.
func ExampleBlock_Unresolved() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	store, _ := session.OpenFileStore(filepath.Join(dir, "sessions"), nil)
	defer store.Close()
	s, _ := session.Create(ctx, store, nil)
	s.Append(ctx, session.User(session.Text("What is this?"), session.Image("image/png", make([]byte, 4096))))
	s.Close()
	os.RemoveAll(filepath.Join(dir, "sessions", ".blobs")) // the blob is gone

	again, _ := session.Open(ctx, store, s.ID())
	for _, u := range again.Log().Unresolved {
		fmt.Println(errors.Is(u, session.ErrNotFound))
	}
	fmt.Println(again.Context().Messages[0].Content[1].Unresolved(), len(again.Context().Unresolved))
	msgs, _ := again.Messages(ctx)
	fmt.Println(msgs[0].Content[1].Text)
	// Output:
	// true
	// true 1
	// [image unavailable: its data could not be read from the blob store]
}
