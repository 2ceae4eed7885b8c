package session_test

import (
	"context"
	"fmt"

	session "github.com/agentsession/session"
)

// CollectBlobs frees the blobs of deleted sessions. Each session here
// records a workspace snapshot the way the workspace package does: the
// file contents, then the manifest that lists them, then the entry.
func ExampleCollectBlobs() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	snapshot := func(s *session.Session, content string) {
		c, _ := store.PutBlob(ctx, []byte(content))
		m, _ := store.PutBlob(ctx, []byte(`{"files":[{"path":"main.go","content":"`+c+`"}]}`))
		s.AppendSnapshot(ctx, session.WorkspaceSnapshot{Snapshot: m, Files: 1})
	}
	kept, _ := session.Create(ctx, store, &session.CreateOptions{Cwd: "/work"})
	snapshot(kept, "package main\n")
	gone, _ := session.Create(ctx, store, &session.CreateOptions{Cwd: "/work"})
	snapshot(gone, "package scratch\n")
	gone.Close()
	store.Delete(ctx, gone.ID())

	// Within the grace (an hour by default) what was just put stays: a
	// writer may be about to refer to it.
	res, err := session.CollectBlobs(ctx, store, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("within the grace:", len(res.Deleted), "deleted,", res.Young, "spared")

	// With no grace, for a store no one writes to meanwhile, the deleted
	// session's manifest and content go.
	res, err = session.CollectBlobs(ctx, store, &session.CollectOptions{Grace: -1})
	if err != nil {
		panic(err)
	}
	fmt.Println("sessions read:", res.Sessions, "kept:", res.Kept, "deleted:", len(res.Deleted))
	// Output:
	// within the grace: 0 deleted, 2 spared
	// sessions read: 1 kept: 2 deleted: 2
}
