package s3store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	session "github.com/agentsession/session"
)

// Blobs keeps blobs (session.BlobStore) on a bucket, one object per
// blob under "blobs/<sha256 hex>", with what a collection needs
// (session.BlobCollector, session.BlobSweeper). A Store has one under
// its prefix (Store.Blobs); OpenBlobs gives one to put beside another
// store (WithBlobs): PostgreSQL for the entries, a bucket for images and
// workspace files.
//
// A put of bytes already there writes them again, which moves the
// object's time (BlobInfo.Touched, S3's LastModified: whole seconds)
// and its ETag: each object holds the blob's bytes and then a trailer of
// 16 bytes that differs at every put (the time and 8 random bytes).
// A collection deletes a blob (DeleteBlobIfOlder) only if its ETag is
// still the one the listing it decided on showed (ListBlobs keeps them),
// in the delete request itself (If-Match), so that a put of the same
// bytes since keeps the blob whatever the timing.
type Blobs struct {
	b *bucket

	mu   sync.Mutex
	seen map[string]listedBlob // ref → as the latest complete listing showed it
}

type listedBlob struct {
	etag string
	mod  time.Time
}

// blobTrailer is the length of what follows a blob's bytes in its
// object.
const blobTrailer = 16

var (
	_ session.BlobStore     = (*Blobs)(nil)
	_ session.BlobCollector = (*Blobs)(nil)
	_ session.BlobSweeper   = (*Blobs)(nil)
)

// OpenBlobs returns the blobs of opts.Bucket under opts.Prefix.
func OpenBlobs(ctx context.Context, opts Options) (*Blobs, error) {
	b, err := openBucket(ctx, &opts)
	if err != nil {
		return nil, err
	}
	return &Blobs{b: b}, nil
}

// Requests returns how many requests the blobs have sent so far.
func (bl *Blobs) Requests() Requests { return bl.b.requests.read() }

func blobKey(ref string) (string, error) {
	h, ok := strings.CutPrefix(ref, session.BlobPrefix)
	if !ok || len(h) != 64 {
		return "", fmt.Errorf("s3store: blob reference %.100q: %w", ref, session.ErrInvalidID)
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", fmt.Errorf("s3store: blob reference %.100q: %w", ref, session.ErrInvalidID)
		}
	}
	return "blobs/" + h, nil
}

// PutBlob implements session.BlobStore.
func (bl *Blobs) PutBlob(ctx context.Context, data []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if len(data) > session.DefaultMaxBlobBytes {
		return "", fmt.Errorf("s3store: blob of %d bytes is larger than the limit of %d: %w", len(data), session.DefaultMaxBlobBytes, session.ErrTooLarge)
	}
	ref := session.BlobRef(data)
	key, _ := blobKey(ref)
	obj := make([]byte, len(data), len(data)+blobTrailer)
	copy(obj, data)
	obj = binary.BigEndian.AppendUint64(obj, uint64(time.Now().UnixNano()))
	var nonce [8]byte
	rand.Read(nonce[:])
	obj = append(obj, nonce[:]...)
	if _, err := bl.b.put(ctx, key, obj, writeCond{}); err != nil {
		return "", err
	}
	return ref, nil
}

// GetBlob implements session.BlobStore. Bytes whose hash is not the
// reference's are ErrCorrupt.
func (bl *Blobs) GetBlob(ctx context.Context, ref string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key, err := blobKey(ref)
	if err != nil {
		return nil, err
	}
	o, err := bl.b.getMax(ctx, key, session.DefaultMaxBlobBytes+blobTrailer)
	if errors.Is(err, errMissing) {
		return nil, fmt.Errorf("s3store: blob %s: %w", ref, session.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if len(o.data) < blobTrailer {
		return nil, &session.CorruptError{Path: "s3://" + bl.b.name + "/" + bl.b.key(key), Err: errors.New("an object shorter than a blob's trailer")}
	}
	data := o.data[:len(o.data)-blobTrailer]
	sum := sha256.Sum256(data)
	if session.BlobPrefix+hex.EncodeToString(sum[:]) != ref {
		return nil, &session.CorruptError{Path: "s3://" + bl.b.name + "/" + bl.b.key(key), Err: errors.New("the bytes do not hash to the blob's reference")}
	}
	return data, nil
}

// ListBlobs implements session.BlobCollector.
func (bl *Blobs) ListBlobs(ctx context.Context, fn func(session.BlobInfo) error) error {
	seen := map[string]listedBlob{}
	err := bl.b.list(ctx, "blobs/", func(o listed) error {
		ref := session.BlobPrefix + strings.TrimPrefix(o.rel, "blobs/")
		if _, err := blobKey(ref); err != nil {
			return nil // not a blob of this store's
		}
		seen[ref] = listedBlob{o.etag, o.mod}
		return fn(session.BlobInfo{Ref: ref, Size: max(o.size-blobTrailer, 0), Touched: o.mod})
	})
	if err == nil {
		bl.mu.Lock()
		bl.seen = seen
		bl.mu.Unlock()
	}
	return err
}

// DeleteBlob implements session.BlobCollector.
func (bl *Blobs) DeleteBlob(ctx context.Context, ref string) error {
	key, err := blobKey(ref)
	if err != nil {
		return err
	}
	if _, _, err := bl.b.head(ctx, key); err != nil {
		if errors.Is(err, errMissing) {
			return fmt.Errorf("s3store: blob %s: %w", ref, session.ErrNotFound)
		}
		return err
	}
	return bl.b.del(ctx, key)
}

// DeleteBlobIfOlder implements session.BlobSweeper (see Blobs for what
// it promises on which servers).
func (bl *Blobs) DeleteBlobIfOlder(ctx context.Context, ref string, cutoff time.Time) (bool, error) {
	key, err := blobKey(ref)
	if err != nil {
		return false, err
	}
	o, _, err := bl.b.head(ctx, key)
	if errors.Is(err, errMissing) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	bl.mu.Lock()
	l, ok := bl.seen[ref]
	bl.mu.Unlock()
	if !ok { // not listed: as it is now
		l = listedBlob{o.etag, o.mod}
	}
	if o.etag != l.etag {
		return false, nil // put since the listing
	}
	if !l.mod.Before(cutoff) {
		return false, nil
	}
	// If-Match: a put since wrote a new trailer, so a new ETag.
	in := &s3.DeleteObjectInput{Bucket: &bl.b.name, Key: aws.String(bl.b.key(key)), IfMatch: aws.String(l.etag)}
	bl.b.requests.add(opDelete)
	if _, err = bl.b.client.DeleteObject(ctx, in); err != nil {
		err = bl.b.fail("delete", key, err)
		if errors.Is(err, errPrecondition) || errors.Is(err, errMissing) {
			return false, nil // put again since: it stays
		}
		return false, err
	}
	bl.mu.Lock()
	delete(bl.seen, ref)
	bl.mu.Unlock()
	return true, nil
}
