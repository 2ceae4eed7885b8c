package s3store

import (
	"context"
	"encoding/json"
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
	"github.com/agentsession/session/storekit"
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

// ---- Store ----

// Create implements session.Store.
func (s *Store) Create(ctx context.Context, h session.Header) error {
	return s.create(ctx, h, nil)
}

// CreateWithEntries implements session.EntryCreator: the session and
// its first entries appear in one step.
func (s *Store) CreateWithEntries(ctx context.Context, h session.Header, entries []session.Entry) error {
	if err := storekit.CheckEntries(entries); err != nil {
		return err
	}
	return s.create(ctx, h, entries)
}

func (s *Store) create(ctx context.Context, h session.Header, entries []session.Entry) error {
	entries, err := s.externalize(ctx, entries)
	if err != nil {
		return err
	}
	e, err := s.lock(ctx, h.ID)
	if err != nil {
		return err
	}
	defer s.unlock(e)
	if err := s.limits.CheckLog(h, entries); err != nil {
		return fmt.Errorf("s3store: create %s: %w", h.ID, err)
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return err
	}
	// The header as every reader will see it (strings as stored).
	read, err := session.DecodeLog(append(hdr, '\n'), &session.ReadOptions{Strict: true, Limits: s.limits})
	if err != nil {
		return fmt.Errorf("s3store: create %s: %w", h.ID, err)
	}
	for attempt := 0; ; attempt++ {
		st := &state{id: h.ID, inc: format.RandomHex(8), gen: format.NewGen(0), header: read.Header, hdrRaw: hdr, ids: map[string]int{}, size: int64(len(hdr)) + 1}
		now := time.Now().UTC()
		st.updated = now
		d := format.Descriptor{V: 1, Header: hdr, Updated: now}
		var written []string
		if len(entries) > 0 {
			sg, err := s.putSegment(ctx, st, entries)
			if err != nil {
				return err
			}
			d.Segments, d.Entries = []format.Segment{sg}, len(entries)
			written = append(written, format.LogDir(st.id, st.inc)+sg.Key)
		}
		st.desc = d
		st.add(entries)
		raw, _ := json.Marshal(d)
		dkey := format.PartKey(st.id, st.inc, st.gen, 0)
		if _, err := s.b.put(ctx, dkey, raw, writeCond{absent: true}); err != nil {
			return err
		}
		written = append(written, dkey)
		st.head = format.Head{V: 1, Inc: st.inc, Gen: st.gen, Info: st.info()}
		hraw, _ := json.Marshal(st.head)
		etag, err := s.b.put(ctx, format.HeadKey(h.ID), hraw, writeCond{absent: true})
		if err == nil {
			st.headETag, st.checked = etag, time.Now()
			e.st = st
			s.publish(h.ID, st, append([]session.Change{{Kind: session.ChangeCreated, Session: h.ID, Time: now}},
				session.ChangesOf(h.ID, entries, now)...)...)
			return nil
		}
		s.removeAll(written)
		if !errors.Is(err, errPrecondition) {
			return err
		}
		// The id is taken, unless by a session deleted half-way (its
		// head outlived its log's delete marker): finish that delete,
		// once, and create again.
		if attempt == 0 && s.finishDelete(ctx, h.ID) {
			continue
		}
		return fmt.Errorf("s3store: session %s: %w", h.ID, session.ErrExists)
	}
}

// finishDelete removes the head of a session whose log ends with a
// delete marker, and reports whether it did.
func (s *Store) finishDelete(ctx context.Context, id string) bool {
	_, etag, err := s.readHead(ctx, id)
	if err != nil {
		return false
	}
	if _, err := s.load(ctx, id); !errors.Is(err, session.ErrNotFound) {
		return false
	}
	return s.delHead(ctx, id, etag) == nil
}

func (s *Store) delHead(ctx context.Context, id, etag string) error {
	s.b.requests.add(opDelete)
	_, err := s.b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.b.name, Key: aws.String(s.b.key(format.HeadKey(id))), IfMatch: aws.String(etag)})
	if err != nil {
		return s.b.fail("delete", format.HeadKey(id), err)
	}
	return nil
}

// removeAll removes objects the store wrote and no one refers to (a
// lost race), as well as it can: what stays is garbage, never read.
func (s *Store) removeAll(keys []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, k := range keys {
		_ = s.b.del(ctx, k)
	}
}

// putSegment writes entries as a new segment of st's session.
func (s *Store) putSegment(ctx context.Context, st *state, entries []session.Entry) (format.Segment, error) {
	var buf []byte
	for _, e := range entries {
		buf = e.AppendJSON(buf)
		buf = append(buf, '\n')
	}
	sg := format.Segment{Key: "seg/" + format.RandomHex(12), Entries: len(entries), Bytes: int64(len(buf))}
	if _, err := s.b.put(ctx, format.LogDir(st.id, st.inc)+sg.Key, buf, writeCond{absent: true}); err != nil {
		return sg, err
	}
	return sg, nil
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

// Append implements session.Store. One request when the store's state
// of the session is current and no other writer came in between (two
// with the listing's update, three when it folds).
func (s *Store) Append(ctx context.Context, id string, opts session.AppendOptions, entries ...session.Entry) error {
	if err := storekit.CheckEntries(entries); err != nil {
		return err
	}
	entries, err := s.externalize(ctx, entries)
	if err != nil {
		return err
	}
	e, err := s.lock(ctx, id)
	if err != nil {
		return err
	}
	defer s.unlock(e)
	var st *state
	err = s.claim(ctx, e, func(cur *state) (format.PartHead, []session.Entry, error) {
		st = cur
		if done, err := retried(cur, entries); err != nil || done {
			return format.PartHead{}, nil, errDone(err)
		}
		if err := storekit.CheckAppend(opts, cur.last()); err != nil {
			return format.PartHead{}, nil, err
		}
		if err := s.limits.CheckAppend(cur.size, len(cur.entries), entries); err != nil {
			return format.PartHead{}, nil, fmt.Errorf("s3store: append to %s: %w", id, err)
		}
		return format.PartHead{K: format.PartAppend, T: time.Now().UTC()}, entries, nil
	})
	if errors.Is(err, errNothing) {
		return nil
	}
	if err != nil {
		return err
	}
	s.publish(id, st, session.ChangesOf(id, entries, st.updated)...)
	if st.parts >= s.opts.FoldParts {
		s.fold(ctx, st) // best effort: the append is in
	}
	s.refreshHead(ctx, st)
	return nil
}

// errNothing is what a claim's decide returns (through errDone) when
// the write is done already: a retried append.
var errNothing = errors.New("s3store: nothing to write")

func errDone(err error) error {
	if err != nil {
		return err
	}
	return errNothing
}

// claim writes the next part of e's session, the one decide returns for
// the session's current state: a conditional put of the next seq, which
// fails when another writer took it first; the store then reads what
// that writer wrote and asks decide again. This is the one point where
// writers are ordered.
//
// A decision not to write (a condition that fails, nothing to do, a
// retried append) is only taken on the log as it is: one made on the
// store's memory of it is made again after catching up.
func (s *Store) claim(ctx context.Context, e *entry, decide func(*state) (format.PartHead, []session.Entry, error)) error {
	caught := false
	for attempt := 0; ; attempt++ {
		st, err := s.known(ctx, e, false, caught)
		if err != nil {
			return err
		}
		ph, entries, err := decide(st)
		if err != nil {
			if !caught {
				caught = true
				continue
			}
			return err
		}
		data := format.EncodePart(ph, entries)
		seq := st.seq + 1
		pre := toldOf(st, "")
		st.pre = &pre
		_, err = s.b.put(ctx, format.PartKey(st.id, st.inc, st.gen, seq), data, writeCond{absent: true})
		if errors.Is(err, errPrecondition) {
			if err := ctx.Err(); err != nil {
				return err
			}
			if attempt > 0 {
				backoff(ctx, attempt)
			}
			caught = true
			continue // another writer took seq: read it, decide again
		}
		if err != nil {
			// The part may or may not be in (a reply lost): read again
			// next time.
			e.st = nil
			return err
		}
		if ph.K == format.PartDeleted {
			st.seq, st.deleted = seq, true
			return nil
		}
		if err := s.applyPart(ctx, st, seq, data); err != nil {
			e.st = nil
			return err
		}
		return nil
	}
}

// backoff waits a little, more after each lost race, so that writers
// contending for one session do not keep colliding.
func backoff(ctx context.Context, attempt int) {
	d := time.Duration(attempt) * 5 * time.Millisecond
	if d > 200*time.Millisecond {
		d = 200 * time.Millisecond
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// retried recognises an append of entries st holds already: all of them,
// with the same bytes, is a retry (done); some of them, or other bytes,
// is a conflict.
func retried(st *state, entries []session.Entry) (bool, error) {
	found := 0
	for _, e := range entries {
		if _, ok := st.ids[e.ID()]; ok {
			found++
		}
	}
	switch {
	case found == 0:
		return false, nil
	case found < len(entries):
		return false, fmt.Errorf("%w: an entry id of the append is already in session %s", session.ErrConflict, st.id)
	}
	for _, e := range entries {
		if string(st.entries[st.ids[e.ID()]].JSON()) != string(e.JSON()) {
			return false, fmt.Errorf("%w: the ids of the appended entries are in session %s with other content", session.ErrConflict, st.id)
		}
	}
	return true, nil
}

// Rewrite implements session.Store: a new generation with the new log,
// which becomes the session's when its marker takes the next seq, so
// that an append that came in between makes the rewrite fail (or, with
// no conditions, try again) rather than be dropped.
func (s *Store) Rewrite(ctx context.Context, id string, opts session.RewriteOptions, h session.Header, entries []session.Entry) error {
	if h.ID != id {
		return fmt.Errorf("s3store: rewrite of %s with a header for %s", id, h.ID)
	}
	for i, x := range entries {
		if x.IsZero() {
			return fmt.Errorf("s3store: rewrite with zero Entry at %d", i)
		}
	}
	if err := s.limits.CheckLog(h, entries); err != nil {
		return fmt.Errorf("s3store: rewrite of %s: %w", id, err)
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if entries, err = s.externalize(ctx, entries); err != nil {
		return err
	}
	// The new log as a reader will read it, refused before anything is
	// written if it cannot be read back.
	read, err := session.DecodeLog(append(append(hdr[:len(hdr):len(hdr)], '\n'), joinLines(entries)...), &session.ReadOptions{Strict: true, Limits: s.limits})
	if err != nil {
		return fmt.Errorf("s3store: rewrite of %s: %w", id, err)
	}
	e, err := s.lock(ctx, id)
	if err != nil {
		return err
	}
	defer s.unlock(e)
	caught := false
	for attempt := 0; ; attempt++ {
		st, err := s.known(ctx, e, false, caught)
		if err != nil {
			return err
		}
		if err := opts.Check(st.last(), len(st.entries)); err != nil {
			if !caught { // decided on the store's memory: again on the log
				caught = true
				continue
			}
			return err
		}
		now := time.Now().UTC()
		won, err := s.newGeneration(ctx, st, hdr, entries, now, read)
		if err != nil {
			return err
		}
		if !won {
			backoff(ctx, attempt+1)
			caught = true
			continue
		}
		s.publish(id, st, session.Change{Kind: session.ChangeRewritten, Session: id, Time: now})
		s.refreshHead(ctx, st)
		return nil
	}
}

// newGeneration writes a generation after st's holding hdr and entries
// (in new segments, or, for a fold, st's segments and one more), then
// its marker at st's next seq. It reports false when another writer
// took that seq first (what it wrote is removed, st is behind). On
// success st is in the new generation.
//
// read is the new log as a reader will read it (a rewrite's, checked
// before anything is written); nil for a fold.
func (s *Store) newGeneration(ctx context.Context, st *state, hdr []byte, entries []session.Entry, now time.Time, read *session.Log) (bool, error) {
	fold := read == nil
	next := format.GenOrdinal(st.gen) + 1
	if next > format.MaxGenOrdinal {
		return false, s.corrupt(format.GenDir(st.id, st.inc, st.gen), fmt.Errorf("generation %s is the last one a name can hold: the session cannot be folded or rewritten", st.gen))
	}
	gen := format.NewGen(next)
	d := format.Descriptor{V: 1, Header: hdr, Entries: len(entries), Fold: fold, Updated: now,
		Archived: st.archived, ArchivedAt: st.archAt, Compacting: st.compact, Epoch: st.desc.Epoch}
	if !fold {
		d.Epoch++
	}
	if fold {
		d.Updated = st.updated
	}
	var written []string
	segs, err := s.segmentsFor(ctx, st, entries, fold, &written)
	if err != nil {
		s.removeAll(written)
		return false, err
	}
	d.Segments = segs
	// What the old generation leaves: its objects, and its segments the
	// new one does not keep; removed after the grace.
	keep := map[string]bool{}
	for _, sg := range segs {
		keep[sg.Key] = true
	}
	gone := format.Retired{Gen: st.gen, At: now}
	for _, sg := range st.desc.Segments {
		if !keep[sg.Key] {
			gone.Segments = append(gone.Segments, sg.Key)
		}
	}
	var due []format.Retired
	for _, r := range st.desc.Retired {
		if now.Sub(r.At) > s.opts.Grace {
			due = append(due, r)
		} else {
			d.Retired = append(d.Retired, r)
		}
	}
	d.Retired = append(d.Retired, gone)
	raw, _ := json.Marshal(d)
	dkey := format.PartKey(st.id, st.inc, gen, 0)
	if _, err := s.b.put(ctx, dkey, raw, writeCond{absent: true}); err != nil {
		s.removeAll(written)
		return false, err
	}
	written = append(written, dkey)
	pre := toldOf(st, "")
	st.pre = &pre
	marker := format.EncodePart(format.PartHead{K: format.PartNext, T: now, Gen: gen}, nil)
	_, err = s.b.put(ctx, format.PartKey(st.id, st.inc, st.gen, st.seq+1), marker, writeCond{absent: true})
	if errors.Is(err, errPrecondition) {
		s.removeAll(written)
		return false, nil
	}
	if err != nil {
		s.removeAll(written) // if the marker did land, readers find no descriptor: an error, not a loss
		return false, err
	}
	if !fold {
		log := read
		st.header, st.hdrRaw = log.Header, hdr
		st.entries, st.ids, st.size, st.fold = nil, map[string]int{}, int64(len(hdr))+1, session.InfoFold{}
		st.add(log.Entries)
		st.updated = now
	}
	st.gen, st.seq, st.parts, st.desc = gen, 0, 0, d
	s.purge(st, due)
	return true, nil
}

func joinLines(entries []session.Entry) []byte {
	var buf []byte
	for _, e := range entries {
		buf = e.AppendJSON(buf)
		buf = append(buf, '\n')
	}
	return buf
}

// segmentsFor returns the segments of a new generation: for a rewrite,
// one new segment of entries; for a fold, st's segments and one of the
// entries of its parts, merged with the ones before it while they are
// no more than twice its size (so that a long session has few segments
// and each entry is copied a logarithmic number of times).
func (s *Store) segmentsFor(ctx context.Context, st *state, entries []session.Entry, fold bool, written *[]string) ([]format.Segment, error) {
	if !fold {
		if len(entries) == 0 {
			return nil, nil
		}
		sg, err := s.putSegment(ctx, st, entries)
		if err != nil {
			return nil, err
		}
		*written = append(*written, format.LogDir(st.id, st.inc)+sg.Key)
		return []format.Segment{sg}, nil
	}
	segs := append([]format.Segment(nil), st.desc.Segments...)
	start := 0 // where the entries the segments do not hold begin
	for _, sg := range segs {
		start += sg.Entries
	}
	var size int64
	for _, e := range st.entries[start:] {
		size += int64(e.Len()) + 1
	}
	for len(segs) > 0 && segs[len(segs)-1].Bytes <= 2*size {
		last := segs[len(segs)-1]
		segs = segs[:len(segs)-1]
		start -= last.Entries
		size += last.Bytes
	}
	tail := st.entries[start:]
	if len(tail) == 0 {
		return segs, nil
	}
	sg, err := s.putSegment(ctx, st, tail)
	if err != nil {
		return nil, err
	}
	*written = append(*written, format.LogDir(st.id, st.inc)+sg.Key)
	return append(segs, sg), nil
}

// fold folds the appends of st's generation into a segment, in a new
// generation. Losing the race to another writer leaves things as they
// were; the next writer folds.
func (s *Store) fold(ctx context.Context, st *state) {
	_, _ = s.newGeneration(ctx, st, st.hdrRaw, st.entries, time.Now().UTC(), nil)
}

// purge removes what generations retired more than the grace ago left.
func (s *Store) purge(st *state, due []format.Retired) {
	if len(due) == 0 {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		for _, r := range due {
			if r.Gen != "" && format.GenOrdinal(r.Gen) >= 0 {
				_ = s.b.list(ctx, format.GenDir(st.id, st.inc, r.Gen), func(o listed) error { return s.b.del(ctx, o.rel) })
			}
			for _, k := range r.Segments {
				if format.CheckRel(k) == nil {
					_ = s.b.del(ctx, format.LogDir(st.id, st.inc)+k)
				}
			}
		}
	}()
}

// refreshHead writes st's position and listing to the head, if the head
// is behind: a conditional put on the head as the store read it. A
// failure leaves the head behind, which readers go past (and the next
// write or load brings it up); the listing lags until then.
func (s *Store) refreshHead(ctx context.Context, st *state) {
	for range 3 {
		if st.head.Gen == st.gen && st.head.Seq == st.seq && st.headETag != "" {
			return
		}
		if format.GenOrdinal(st.head.Gen) > format.GenOrdinal(st.gen) || (st.head.Gen == st.gen && st.head.Seq > st.seq) {
			return // a writer ahead of this state wrote it
		}
		h := format.Head{V: 1, Inc: st.inc, Gen: st.gen, Seq: st.seq, Epoch: st.desc.Epoch, Info: st.info()}
		raw, _ := json.Marshal(h)
		etag, err := s.b.put(ctx, format.HeadKey(st.id), raw, writeCond{match: st.headETag})
		if err == nil {
			st.head, st.headETag = h, etag
			return
		}
		if !errors.Is(err, errPrecondition) {
			return
		}
		cur, etag, err := s.readHead(ctx, st.id)
		if err != nil || cur.Inc != st.inc {
			return
		}
		st.head, st.headETag, st.checked = cur, etag, time.Now()
	}
}

// Delete implements session.Store: a delete marker at the next seq (no
// writer appends after it), then the head; the log's objects go after
// the grace (Purge).
func (s *Store) Delete(ctx context.Context, id string) error {
	return s.remove(ctx, id, nil)
}

// DeleteIfUnchanged implements session.ConditionalRemover.
func (s *Store) DeleteIfUnchanged(ctx context.Context, id string, seen session.LogMark) error {
	return s.remove(ctx, id, &seen)
}

func (s *Store) remove(ctx context.Context, id string, seen *session.LogMark) error {
	e, err := s.lock(ctx, id)
	if err != nil {
		return err
	}
	defer s.unlock(e)
	var st *state
	err = s.claim(ctx, e, func(cur *state) (format.PartHead, []session.Entry, error) {
		st = cur
		if seen != nil {
			if err := seen.Check(id, cur.last(), len(cur.entries)); err != nil {
				return format.PartHead{}, nil, err
			}
		}
		return format.PartHead{K: format.PartDeleted, T: time.Now().UTC()}, nil, nil
	})
	if errors.Is(err, session.ErrNotFound) {
		s.finishDelete(ctx, id) // a delete another writer left half-done
	}
	if err != nil {
		return err
	}
	e.st = nil
	if err := s.delHead(ctx, id, st.headETag); err != nil && !errors.Is(err, errMissing) {
		// The head changed since it was read: read it and delete it if
		// it is still this session's.
		if h, etag, err2 := s.readHead(ctx, id); err2 == nil && h.Inc == st.inc {
			_ = s.delHead(ctx, id, etag)
		}
	}
	s.trash(ctx, id, st.inc)
	s.publish(id, nil, session.Change{Kind: session.ChangeDeleted, Session: id, Time: time.Now()})
	return nil
}
