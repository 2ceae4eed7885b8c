// S3 keeps agent sessions on an S3-compatible bucket: it saves a turn
// with an image (a blob), opens the session again through a second store
// (another machine, in production), continues it there, and prints the
// listing, the context and the requests each store sent.
//
//	AGENTSESSION_S3_ENDPOINT=http://127.0.0.1:7070 AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... \
//	AWS_REGION=us-east-1 go run ./examples/s3
//
// (from the s3store folder; on AWS leave AGENTSESSION_S3_ENDPOINT out
// and set AGENTSESSION_S3_BUCKET to a bucket of yours). It creates the
// bucket when it is missing, and deletes the session it made.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/s3store"
)

func main() {
	ctx := context.Background()
	endpoint := os.Getenv("AGENTSESSION_S3_ENDPOINT")
	bucket := os.Getenv("AGENTSESSION_S3_BUCKET")
	if bucket == "" {
		bucket = "agentsession-example"
	}
	ensureBucket(ctx, endpoint, bucket)
	opts := s3store.Options{Bucket: bucket, Prefix: "example/", Endpoint: endpoint, PathStyle: endpoint != ""}

	// Machine A saves a turn whose user message holds an image: the
	// image goes to the bucket as a blob, the entry refers to it.
	a := must(s3store.Open(ctx, opts))
	defer a.Close()
	s := must(session.Create(ctx, a, &session.CreateOptions{Cwd: "/srv/agent"}))
	defer a.Delete(ctx, s.ID())
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64<<10)...)
	check(s.SaveTurn(ctx, []*session.Message{
		session.User(session.Text("What does this screenshot show?"), session.Image("image/png", png)),
		session.Assistant(session.Text("A login form with an empty password field.")),
	}, nil))
	check(s.SetTitle(ctx, "screenshot question"))
	fmt.Printf("machine A saved session %s in s3://%s/%s\n", s.ID(), bucket, opts.Prefix)

	// Machine B, a store of its own on the same bucket, resumes it.
	b := must(s3store.Open(ctx, opts))
	defer b.Close()
	t := must(session.Open(ctx, b, s.ID()))
	check(t.SaveTurn(ctx, []*session.Message{
		session.UserText("Is the form over HTTPS?"),
		session.Assistant(session.Text("The screenshot does not show the address bar.")),
	}, nil))
	msgs := t.Context().Messages
	img := msgs[0].Content[1]
	fmt.Printf("machine B continued it: %d messages, the image's %d base64 bytes read back from its blob\n", len(msgs), len(img.Data))
	blobs := 0
	check(b.ListBlobs(ctx, func(session.BlobInfo) error { blobs++; return nil }))
	fmt.Printf("blobs in the bucket's prefix: %d\n", blobs)

	page := must(b.List(ctx, session.ListOptions{}))
	for _, info := range page.Sessions {
		if info.ID == s.ID() {
			fmt.Printf("listed: %q, %d entries\n", info.Title, info.Entries)
		}
	}
	fmt.Printf("requests: machine A %d, machine B %d\n", a.Requests().Total(), b.Requests().Total())
}

// ensureBucket creates the bucket when it is missing (an example's
// convenience; a host's bucket exists).
func ensureBucket(ctx context.Context, endpoint, bucket string) {
	cfg := must(config.LoadDefaultConfig(ctx))
	c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
		}
	})
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	var owned *types.BucketAlreadyOwnedByYou
	var exists *types.BucketAlreadyExists
	if err != nil && !errors.As(err, &owned) && !errors.As(err, &exists) {
		log.Fatalf("create bucket %s: %v", bucket, err)
	}
}

func must[T any](v T, err error) T {
	check(err)
	return v
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
