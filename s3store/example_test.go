package s3store_test

import (
	"context"
	"fmt"
	"log"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/s3store"
)

// Sessions on a bucket: credentials and region from the environment, as
// the AWS SDK reads them; Endpoint and PathStyle for a self-hosted
// server. (Not run by go test: it needs a server; examples/s3 is the
// runnable program.)
func ExampleOpen() {
	ctx := context.Background()
	store, err := s3store.Open(ctx, s3store.Options{
		Bucket:    "agent-sessions",
		Prefix:    "prod/",
		Endpoint:  "http://127.0.0.1:7070", // leave empty for AWS
		PathStyle: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	s, err := session.Continue(ctx, store, "/srv/agent")
	if err != nil {
		log.Fatal(err)
	}
	before := store.Requests()
	err = s.SaveTurn(ctx, []*session.Message{session.UserText("hi"), session.AssistantText("hello")}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("requests for the turn:", store.Requests().Sub(before).Total()) // 2: the part and the head
}

// PostgreSQL for the entries, a bucket for images and workspace files.
func ExampleWithBlobs() {
	ctx := context.Background()
	var pg session.Store // a *pgstore.Store, or a FileStore
	blobs, err := s3store.OpenBlobs(ctx, s3store.Options{Bucket: "agent-blobs"})
	if err != nil {
		log.Fatal(err)
	}
	store := s3store.WithBlobs(pg, blobs)
	s, err := session.Create(ctx, store, nil)
	if err != nil {
		log.Fatal(err)
	}
	png := []byte("\x89PNG...")
	// The image goes to the bucket; the entry in PostgreSQL refers to it.
	_, err = s.Append(ctx, session.User(session.Text("what is this?"), session.Image("image/png", png)))
	if err != nil {
		log.Fatal(err)
	}
}
