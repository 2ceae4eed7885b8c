package session_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	session "github.com/agentsession/session"
)

// CollectBlobs frees the blobs of deleted sessions. A FileStore keeps
// images of 1 KiB or more as blobs, once per content: here two sessions
// share one screenshot and one of them has another of its own.
func ExampleCollectBlobs() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	store, _ := session.OpenFileStore(filepath.Join(dir, "sessions"), nil)
	defer store.Close()
	shared := bytes.Repeat([]byte("shared screenshot "), 100)
	own := bytes.Repeat([]byte("a screenshot of its own "), 100)
	say := func(s *session.Session, images ...[]byte) {
		m := session.UserText("What is on the screen?")
		for _, img := range images {
			m.Content = append(m.Content, session.Image("image/png", img))
		}
		s.Append(ctx, m)
		s.Close()
	}
	kept, _ := session.Create(ctx, store, &session.CreateOptions{Cwd: "/work"})
	say(kept, shared)
	gone, _ := session.Create(ctx, store, &session.CreateOptions{Cwd: "/work"})
	say(gone, shared, own)
	store.Delete(ctx, gone.ID())

	// Within the grace (an hour by default) what was just put stays: a
	// writer may be about to refer to it.
	res, err := session.CollectBlobs(ctx, store, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("within the grace:", len(res.Deleted), "deleted,", res.Young, "spared")

	// With no grace, for a store no one writes to meanwhile, the image
	// only the deleted session held goes; the shared one stays.
	res, err = session.CollectBlobs(ctx, store, &session.CollectOptions{Grace: -1})
	if err != nil {
		panic(err)
	}
	fmt.Println("sessions read:", res.Sessions, "kept:", res.Kept, "deleted:", len(res.Deleted))
	// Output:
	// within the grace: 0 deleted, 1 spared
	// sessions read: 1 kept: 1 deleted: 1
}
