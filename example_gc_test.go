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

// A writer's blobs are pinned from its put to the append that refers to
// them: a collection spares them however long the writer takes, with no
// grace at all. PutBlob pins for the collections of other stores and
// processes (on Linux); a writer beside collections on its own store
// pins with PinBlobs, as here, which works everywhere.
func ExampleBlobPinner() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	store, _ := session.OpenFileStore(filepath.Join(dir, "sessions"), nil)
	defer store.Close()
	noGrace := &session.CollectOptions{Grace: -1}

	content := []byte("a file of the workspace")
	ref := session.BlobRef(content)
	store.PinBlobs(ctx, ref) // before the put
	store.PutBlob(ctx, content)

	// However long the writer takes: a collection spares the blob.
	res, _ := session.CollectBlobs(ctx, store, noGrace)
	fmt.Println("before the append:", len(res.Deleted), "deleted,", res.Young, "spared")

	// The append that refers to it releases the pin.
	s, _ := session.Create(ctx, store, &session.CreateOptions{Cwd: "/work"})
	s.AppendCustom(ctx, "host.file", map[string]string{"content": ref})
	s.Close()
	res, _ = session.CollectBlobs(ctx, store, noGrace)
	fmt.Println("after it:", len(res.Deleted), "deleted,", res.Kept, "kept")

	// Garbage is garbage: put, never referred to, not pinned.
	store.PutBlob(ctx, []byte("dropped"))
	res, _ = session.CollectBlobs(ctx, store, noGrace)
	fmt.Println("garbage:", len(res.Deleted), "deleted")
	// Output:
	// before the append: 0 deleted, 1 spared
	// after it: 0 deleted, 1 kept
	// garbage: 1 deleted
}
