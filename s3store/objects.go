package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	session "github.com/agentsession/session"
)

// The few object operations the store is built from, over one bucket,
// with the server's answers turned into errors the store tests for:
// errPrecondition (412: a conditional write lost), errMissing (404).

var (
	errPrecondition = errors.New("s3store: precondition failed")
	errMissing      = errors.New("s3store: no such object")
)

type bucket struct {
	client *s3.Client
	name   string
	prefix string
	// maxObject bounds what get reads of one object (a hostile or broken
	// bucket cannot make the store read more): the log limit.
	maxObject int64
	requests  requestCounter
}

// object is what get returns.
type object struct {
	data []byte
	etag string
	mod  time.Time
}

// writeCond is the condition of a put: none, absent (If-None-Match: *),
// or the object's ETag (If-Match).
type writeCond struct {
	absent bool
	match  string
}

func (b *bucket) key(rel string) string { return b.prefix + rel }

// get reads a whole object of at most the log limit.
func (b *bucket) get(ctx context.Context, rel string) (*object, error) {
	return b.getMax(ctx, rel, b.maxObject)
}

// getMax reads a whole object of at most max bytes (ErrTooLarge).
func (b *bucket) getMax(ctx context.Context, rel string, max int64) (*object, error) {
	b.requests.add(opGet)
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.name, Key: aws.String(b.key(rel))})
	if err != nil {
		return nil, b.fail("get", rel, err)
	}
	defer out.Body.Close()
	if out.ContentLength != nil && *out.ContentLength > max {
		return nil, fmt.Errorf("s3store: object %s is %d bytes, over the %d allowed: %w", rel, *out.ContentLength, max, session.ErrTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(out.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("s3store: get %s: %w", rel, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("s3store: object %s is over %d bytes: %w", rel, max, session.ErrTooLarge)
	}
	return &object{data: data, etag: aws.ToString(out.ETag), mod: aws.ToTime(out.LastModified)}, nil
}

// head returns an object's ETag and time without its bytes.
func (b *bucket) head(ctx context.Context, rel string) (*object, int64, error) {
	b.requests.add(opHead)
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.name, Key: aws.String(b.key(rel))})
	if err != nil {
		return nil, 0, b.fail("head", rel, err)
	}
	return &object{etag: aws.ToString(out.ETag), mod: aws.ToTime(out.LastModified)}, aws.ToInt64(out.ContentLength), nil
}

// put writes an object under cond and returns its ETag.
func (b *bucket) put(ctx context.Context, rel string, data []byte, cond writeCond) (string, error) {
	b.requests.add(opPut)
	in := &s3.PutObjectInput{
		Bucket: &b.name, Key: aws.String(b.key(rel)), Body: bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	}
	switch {
	case cond.absent:
		in.IfNoneMatch = aws.String("*")
	case cond.match != "":
		in.IfMatch = aws.String(cond.match)
	}
	out, err := b.client.PutObject(ctx, in)
	if err != nil {
		return "", b.fail("put", rel, err)
	}
	return aws.ToString(out.ETag), nil
}

// del removes an object; one that is not there is no error.
func (b *bucket) del(ctx context.Context, rel string) error {
	b.requests.add(opDelete)
	_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.name, Key: aws.String(b.key(rel))})
	if err == nil {
		return nil
	}
	if err = b.fail("delete", rel, err); errors.Is(err, errMissing) {
		return nil
	}
	return err
}

// listed is one object of a listing.
type listed struct {
	rel  string // the key without the store's prefix
	etag string
	size int64
	mod  time.Time
}

// list calls fn for each object whose key starts with rel, in key order,
// a page of up to 1,000 per request.
func (b *bucket) list(ctx context.Context, rel string, fn func(listed) error) error {
	var token *string
	for {
		b.requests.add(opList)
		out, err := b.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
			Bucket: &b.name, Prefix: aws.String(b.key(rel)), ContinuationToken: token,
		})
		if err != nil {
			return b.fail("list", rel, err)
		}
		for _, o := range out.Contents {
			k := aws.ToString(o.Key)
			if !strings.HasPrefix(k, b.prefix) {
				continue
			}
			if err := fn(listed{rel: k[len(b.prefix):], etag: aws.ToString(o.ETag), size: aws.ToInt64(o.Size), mod: aws.ToTime(o.LastModified)}); err != nil {
				return err
			}
		}
		if !aws.ToBool(out.IsTruncated) || out.NextContinuationToken == nil {
			return nil
		}
		token = out.NextContinuationToken
	}
}

// fail turns an SDK error into the store's: errPrecondition for a
// condition that did not hold (412, or 409 for a conflicting conditional
// write on AWS), errMissing for 404, else the operation and key with the
// server's code. The SDK's errors carry no credentials; the message
// keeps the key, the status and the server's error code and request id.
func (b *bucket) fail(op, rel string, err error) error {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case http.StatusPreconditionFailed, http.StatusConflict:
			return fmt.Errorf("%w: %s %s", errPrecondition, op, rel)
		case http.StatusNotFound:
			// Only a missing key is a missing object: a server may answer
			// 404 for a missing bucket, or for credentials it does not
			// know (Versity Gateway: XAdminUserNotFound), and those are
			// errors, not sessions or blobs that are not there. A HEAD's
			// answer has no body, so no code but "NotFound".
			var api smithy.APIError
			if errors.As(err, &api) {
				switch api.ErrorCode() {
				case "NoSuchKey", "NotFound":
					return fmt.Errorf("%w: %s %s", errMissing, op, rel)
				case "NoSuchBucket":
					return fmt.Errorf("s3store: %s %s: bucket %s does not exist: %w", op, rel, b.name, err)
				}
			}
		}
	}
	return fmt.Errorf("s3store: %s %s: %w", op, rel, err)
}
