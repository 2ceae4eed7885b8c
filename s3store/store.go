package s3store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/s3store/internal/format"
)

// Options configure a Store (and Blobs).
type Options struct {
	// Bucket is the bucket's name (required). It must exist.
	Bucket string
	// Prefix is where the store's objects go in the bucket ("" for the
	// whole bucket); several stores can share a bucket under different
	// prefixes. A prefix that does not end with "/" gets one.
	Prefix string
	// Client is the S3 client to use. When nil, Open makes one the way
	// the AWS SDK for Go v2 does (config.LoadDefaultConfig: the
	// AWS_* environment variables, the shared config and credentials
	// files, the instance or container role), with Endpoint and
	// PathStyle below.
	Client *s3.Client
	// Endpoint is the URL of an S3-compatible server ("" for AWS, or for
	// what AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL says). Only used when
	// Client is nil.
	Endpoint string
	// PathStyle addresses the bucket in the path (http://host/bucket/key)
	// rather than the host name, as most self-hosted servers need. Only
	// used when Client is nil.
	PathStyle bool
	// Limits bound what the store writes and reads (session.Limits); an
	// object larger than the log limit is refused unread.
	Limits session.Limits
	// FoldParts is how many appends a generation takes before the next
	// writer folds them into a segment; default 32.
	FoldParts int
	// Grace is how long the objects a fold, rewrite or delete replaced
	// stay before they are removed; default one hour. A writer re-reads a
	// session's head before writing when it last read it more than half
	// of this ago, so that it never writes into what was removed. Every
	// store on one bucket and prefix must have the same Grace: one with a
	// longer grace could write into what one with a shorter grace removed.
	Grace time.Duration
	// PollInterval is how often a subscription (Subscribe) looks for the
	// changes of other processes; default one second.
	PollInterval time.Duration
	// CacheBytes bounds the logs the store keeps in memory between calls
	// (least recently used go first); default 256 MiB.
	CacheBytes int64
	// MinBlobBytes is the size of base64 image data from which an image
	// is kept as a blob (an object of its own, see Blobs) rather than in
	// its entry's part, as a FileStore does; default
	// session.DefaultMinBlobBytes, and < 0 keeps images in the entries.
	MinBlobBytes int
}

func (o *Options) withDefaults() {
	if o.FoldParts <= 0 {
		o.FoldParts = 32
	}
	if o.Grace <= 0 {
		o.Grace = time.Hour
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 256 << 20
	}
	if o.Prefix != "" && !strings.HasSuffix(o.Prefix, "/") {
		o.Prefix += "/"
	}
}

// Store is a session.Store on an S3 bucket. It is safe for concurrent
// use, and any number of Stores in any number of processes can share
// the bucket and prefix.
type Store struct {
	b      *bucket
	opts   Options
	limits session.Limits
	blobs  *Blobs
	hub    session.Hub

	mu       sync.Mutex
	sessions map[string]*entry
	lru      lruList
	cached   int64
	closed   bool
	poll     *poller
	idx      listIndex
}

var (
	_ session.Store              = (*Store)(nil)
	_ session.EntryCreator       = (*Store)(nil)
	_ session.Archiver           = (*Store)(nil)
	_ session.CompactionMarker   = (*Store)(nil)
	_ session.ConditionalRemover = (*Store)(nil)
	_ session.Subscriber         = (*Store)(nil)
	_ session.BlobStore          = (*Store)(nil)
	_ session.BlobCollector      = (*Store)(nil)
	_ session.BlobSweeper        = (*Store)(nil)
	_ session.TailLoader         = (*Store)(nil)
	_ session.PathLoader         = (*Store)(nil)
)

// Open returns the store of opts.Bucket under opts.Prefix, after
// checking that the bucket can be reached.
func Open(ctx context.Context, opts Options) (*Store, error) {
	b, err := openBucket(ctx, &opts)
	if err != nil {
		return nil, err
	}
	s := &Store{b: b, opts: opts, limits: opts.Limits.WithDefaults(), sessions: map[string]*entry{}}
	s.blobs = &Blobs{b: b}
	return s, nil
}

func openBucket(ctx context.Context, opts *Options) (*bucket, error) {
	opts.withDefaults()
	if opts.Bucket == "" {
		return nil, errors.New("s3store: no bucket")
	}
	client := opts.Client
	if client == nil {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3store: the AWS configuration: %w", err)
		}
		if opts.Endpoint != "" {
			if _, err := url.Parse(opts.Endpoint); err != nil {
				return nil, fmt.Errorf("s3store: endpoint: %w", err)
			}
		}
		client = s3.NewFromConfig(cfg, func(o *s3.Options) {
			if opts.Endpoint != "" {
				o.BaseEndpoint = aws.String(opts.Endpoint)
			}
			o.UsePathStyle = opts.PathStyle
			// Checksums only where the API requires them: many
			// S3-compatible servers reject the trailing checksums the SDK
			// sends by default.
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		})
	}
	lim := opts.Limits.WithDefaults()
	b := &bucket{client: client, name: opts.Bucket, prefix: opts.Prefix, maxObject: lim.MaxLogBytes}
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &b.name}); err != nil {
		var re *smithyhttp.ResponseError
		if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound {
			// A HEAD's 404 has no code: the bucket is missing, or (some
			// servers) the credentials are unknown.
			return nil, fmt.Errorf("s3store: bucket %s: not found, or the server does not know the credentials (HTTP 404)", b.name)
		}
		return nil, b.fail("open bucket", "", err)
	}
	return b, nil
}

// Requests returns how many requests the store (its blobs included) has
// sent so far.
func (s *Store) Requests() Requests { return s.b.requests.read() }

// Blobs returns the store's blobs (under the same prefix).
func (s *Store) Blobs() *Blobs { return s.blobs }

// PutBlob implements session.BlobStore (see Blobs).
func (s *Store) PutBlob(ctx context.Context, data []byte) (string, error) {
	return s.blobs.PutBlob(ctx, data)
}

// GetBlob implements session.BlobStore (see Blobs).
func (s *Store) GetBlob(ctx context.Context, ref string) ([]byte, error) {
	return s.blobs.GetBlob(ctx, ref)
}

// ListBlobs implements session.BlobCollector (see Blobs).
func (s *Store) ListBlobs(ctx context.Context, fn func(session.BlobInfo) error) error {
	return s.blobs.ListBlobs(ctx, fn)
}

// DeleteBlob implements session.BlobCollector (see Blobs).
func (s *Store) DeleteBlob(ctx context.Context, ref string) error {
	return s.blobs.DeleteBlob(ctx, ref)
}

// DeleteBlobIfOlder implements session.BlobSweeper (see Blobs).
func (s *Store) DeleteBlobIfOlder(ctx context.Context, ref string, cutoff time.Time) (bool, error) {
	return s.blobs.DeleteBlobIfOlder(ctx, ref, cutoff)
}

// Close stops the store's subscriptions and lets go of what it keeps in
// memory. The objects stay.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.sessions = map[string]*entry{}
	s.lru = lruList{}
	s.cached = 0
	s.mu.Unlock()
	s.hub.Close()
	return nil
}

// ---- the per-session lock and cache ----

// entry is the store's place for one session: a lock that orders this
// process's writes to it, and the state read last (nil when none, or
// dropped from the cache).
type entry struct {
	mu   sync.Mutex
	id   string
	st   *state
	size int64
	prev *entry
	next *entry
}

// lock returns the session's entry, locked.
func (s *Store) lock(ctx context.Context, id string) (*entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := session.ValidateID(id); err != nil {
		return nil, fmt.Errorf("s3store: %w", err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("s3store: the store is closed")
	}
	e := s.sessions[id]
	if e == nil {
		e = &entry{id: id}
		s.sessions[id] = e
	}
	s.mu.Unlock()
	e.mu.Lock()
	s.mu.Lock()
	evicted := s.sessions[id] != e // dropped from the cache while this waited
	s.mu.Unlock()
	if evicted {
		e.mu.Unlock()
		return s.lock(ctx, id)
	}
	return e, nil
}

// unlock records what e holds now and unlocks it; the cache lets go of
// the least recently used states over its bound.
func (s *Store) unlock(e *entry) {
	size := int64(0)
	if e.st != nil {
		size = e.st.size
	}
	s.mu.Lock()
	s.cached += size - e.size
	e.size = size
	s.lru.touch(e)
	for s.cached > s.opts.CacheBytes {
		old := s.lru.oldest()
		if old == nil || old == e {
			break
		}
		if !old.mu.TryLock() {
			s.lru.touch(old)
			break
		}
		s.cached -= old.size
		old.st, old.size = nil, 0
		s.lru.remove(old)
		delete(s.sessions, old.id)
		old.mu.Unlock()
	}
	s.mu.Unlock()
	e.mu.Unlock()
}

// current returns the session's state up to date: what e holds, caught
// up, or read from the head. fresh asks for the head to be read again
// (a Load must see a delete by another process).
func (s *Store) current(ctx context.Context, e *entry, fresh bool) (*state, error) {
	return s.known(ctx, e, fresh, true)
}

// known is current, or, with catchUp false, the state as e holds it
// (read from the head when it holds none or its head is old): what a
// write starts from, since its conditional put finds out whether it is
// behind.
func (s *Store) known(ctx context.Context, e *entry, fresh, catchUp bool) (*state, error) {
	st := e.st
	if old := st != nil && time.Since(st.checked) > s.opts.Grace/2; st != nil && (fresh || old) {
		h, etag, err := s.readHead(ctx, e.id)
		if err != nil {
			e.st = nil
			return nil, err
		}
		switch {
		case h.Inc != st.inc:
			st = nil // deleted and created again
		case old && format.GenOrdinal(h.Gen) > format.GenOrdinal(st.gen):
			// What st read may be gone (a grace has passed since):
			// read again from the head.
			st = nil
		default:
			// Generations replaced since st read its own are kept for
			// a grace: catching up follows their markers.
			st.headETag, st.head, st.checked = etag, h, time.Now()
		}
	}
	if st == nil {
		var err error
		if st, err = s.load(ctx, e.id); err != nil {
			e.st = nil
			return nil, err
		}
		e.st = st
		return st, nil
	}
	if !catchUp {
		return st, nil
	}
	if err := s.catchUp(ctx, st); err != nil {
		e.st = nil
		if !st.deleted {
			return nil, err
		}
		// This incarnation was deleted; one of the same id may have been
		// created since: the head says.
		if st, err = s.load(ctx, e.id); err != nil {
			return nil, err
		}
		e.st = st
	}
	return st, nil
}

// Load implements session.Store.
func (s *Store) Load(ctx context.Context, id string) (*session.Log, error) {
	e, err := s.lock(ctx, id)
	if err != nil {
		return nil, err
	}
	defer s.unlock(e)
	st, err := s.current(ctx, e, true)
	if err != nil {
		return nil, err
	}
	s.refreshHead(ctx, st)
	return s.resolved(ctx, &session.Log{Header: st.header.Clone(), Entries: append([]session.Entry(nil), st.entries...)})
}

// externalize moves the images of entries to blobs (MinBlobBytes).
func (s *Store) externalize(ctx context.Context, entries []session.Entry) ([]session.Entry, error) {
	if s.opts.MinBlobBytes < 0 || len(entries) == 0 {
		return entries, nil
	}
	return session.ExternalizeImages(ctx, entries, s.blobs, s.opts.MinBlobBytes)
}

// resolved puts the images of log back from their blobs.
func (s *Store) resolved(ctx context.Context, log *session.Log) (*session.Log, error) {
	if _, err := session.ResolveBlobs(ctx, log, s.blobs); err != nil {
		return nil, err
	}
	return log, nil
}

// LoadPath implements session.PathLoader with the whole log (Complete),
// which the interface allows: the store reads a session whole (its
// segments side by side), and keeps it, so a path alone would save the
// decoding of the entries before the latest compaction, not requests.
func (s *Store) LoadPath(ctx context.Context, id string) (*session.PathLog, error) {
	log, err := s.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	last := ""
	if n := len(log.Entries); n > 0 {
		last = log.Entries[n-1].ID()
	}
	return &session.PathLog{Log: log, Complete: true, Last: last}, nil
}

// LoadTail implements session.TailLoader: the entries after the first
// n, when the n-th is still last. With the session in the store's
// memory, two requests (its head, and the next part's absence).
func (s *Store) LoadTail(ctx context.Context, id string, n int, last string) (*session.Log, error) {
	e, err := s.lock(ctx, id)
	if err != nil {
		return nil, err
	}
	defer s.unlock(e)
	st, err := s.current(ctx, e, true)
	if err != nil {
		return nil, err
	}
	s.refreshHead(ctx, st)
	if n < 0 || n > len(st.entries) || (n > 0 && st.entries[n-1].ID() != last) || (n == 0 && last != "") {
		return nil, fmt.Errorf("%w: session %s no longer starts the way it was read", session.ErrConflict, id)
	}
	return s.resolved(ctx, &session.Log{Header: st.header.Clone(), Entries: append([]session.Entry(nil), st.entries[n:]...)})
}
