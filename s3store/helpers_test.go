package s3store_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentsession/session/s3store"
)

// The tests run against a real S3-compatible server: .ci/s3 starts one
// and prints the settings (AGENTSESSION_S3_ENDPOINT and the AWS_*
// credentials the SDK reads). Without them the tests skip.
const endpointEnv = "AGENTSESSION_S3_ENDPOINT"

var (
	bucketOnce sync.Once
	bucketName string
	bucketErr  error
)

func endpoint(t testing.TB) string {
	t.Helper()
	e := os.Getenv(endpointEnv)
	if e == "" {
		t.Skip(endpointEnv + " is not set: the s3store tests need a server (.ci/s3 start starts one; see docs/s3.md)")
	}
	return e
}

// client returns an S3 client for the test server, as a host makes one.
func client(t testing.TB) *s3.Client {
	t.Helper()
	ep := endpoint(t)
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(ep)
		o.UsePathStyle = true
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
}

// testBucket returns the bucket the tests share (each store under a
// prefix of its own), created once.
func testBucket(t testing.TB) string {
	t.Helper()
	c := client(t)
	bucketOnce.Do(func() {
		bucketName = fmt.Sprintf("agentsession-test-%d", time.Now().UnixNano())
		_, bucketErr = c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucketName)})
	})
	if bucketErr != nil {
		t.Fatalf("create bucket: %v", bucketErr)
	}
	return bucketName
}

var prefixes sync.Map

// newPrefix returns a prefix no other store of the run uses.
func newPrefix(t testing.TB) string {
	for i := 0; ; i++ {
		p := fmt.Sprintf("t%d-%d/", time.Now().UnixNano(), i)
		if _, dup := prefixes.LoadOrStore(p, true); !dup {
			return p
		}
	}
}

// options returns the options of a store of the test's own.
func options(t testing.TB) s3store.Options {
	return s3store.Options{Bucket: testBucket(t), Prefix: newPrefix(t), Client: client(t), PollInterval: 100 * time.Millisecond}
}

// openStore opens a store on opts, closed when the test ends.
func openStore(t testing.TB, opts s3store.Options) *s3store.Store {
	t.Helper()
	s, err := s3store.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newStore(t testing.TB) *s3store.Store { return openStore(t, options(t)) }
