package s3store

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/s3store/internal/format"
	"github.com/agentsession/session/storekit"
)

// Listing: every session's head holds its listing (SessionInfo), so a
// listing reads the heads. To read only the heads that changed, the
// store keeps an index object (index.json) of the heads it read, each
// with its ETag: a listing lists the heads (one request per thousand
// sessions, which gives their ETags), reads the index, reads the heads
// whose ETag differs, and writes the index back, conditional on the one
// it read (a lost race only means the next listing reads those heads
// again). A listing of 1,000 unchanged sessions is three requests.

const indexKey = "index.json"

type indexObj struct {
	V     int                  `json:"v"`
	Heads map[string]indexHead `json:"heads"`
}

type indexHead struct {
	ETag string              `json:"etag"`
	Info session.SessionInfo `json:"info"`
}

// listIndex is the index as the store read or wrote it last.
type listIndex struct {
	mu    sync.Mutex
	etag  string
	heads map[string]indexHead
}

// List implements session.Store.
func (s *Store) List(ctx context.Context, opts session.ListOptions) (*session.ListPage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.Cursor != "" {
		if _, _, err := storekit.ParseCursor(opts.Cursor); err != nil {
			return nil, err
		}
	}
	infos, err := s.listInfos(ctx)
	if err != nil {
		return nil, err
	}
	var all []session.SessionInfo
	for _, info := range infos {
		if opts.Matches(info) {
			all = append(all, info)
		}
	}
	slices.SortFunc(all, storekit.CompareInfo)
	return storekit.Page(all, opts)
}

// listInfos returns the listing of every session in the bucket.
func (s *Store) listInfos(ctx context.Context) ([]session.SessionInfo, error) {
	s.idx.mu.Lock()
	defer s.idx.mu.Unlock()
	heads := map[string]string{} // rel → ETag
	err := s.b.list(ctx, "sessions/", func(o listed) error {
		if format.IsKeyID(strings.TrimPrefix(o.rel, "sessions/")) {
			heads[o.rel] = o.etag
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := s.readIndex(ctx); err != nil {
		return nil, err
	}
	var stale []string
	for rel, etag := range heads {
		if ih, ok := s.idx.heads[rel]; !ok || ih.ETag != etag {
			stale = append(stale, rel)
		}
	}
	changed := len(stale) > 0
	for rel := range s.idx.heads {
		if _, ok := heads[rel]; !ok {
			delete(s.idx.heads, rel)
			changed = true
		}
	}
	objs, errs := s.getEach(ctx, stale, func(int) int64 { return maxHeadBytes })
	for i, rel := range stale {
		if errs[i] != nil && !errors.Is(errs[i], session.ErrTooLarge) {
			return nil, errs[i] // the server's, not the head's
		}
		if objs[i] == nil {
			// Deleted since the listing, or over the size of a head:
			// left out, as a head that cannot be read.
			delete(s.idx.heads, rel)
			continue
		}
		h, err := format.ParseHead(objs[i].data)
		if err != nil || format.HeadKey(h.Info.ID) != rel {
			// Not a head this store can read: left out of the listing,
			// as a FileStore leaves out a file it cannot read.
			delete(s.idx.heads, rel)
			continue
		}
		s.idx.heads[rel] = indexHead{ETag: objs[i].etag, Info: h.Info}
	}
	if changed {
		s.writeIndex(ctx)
	}
	out := make([]session.SessionInfo, 0, len(s.idx.heads))
	for _, ih := range s.idx.heads {
		out = append(out, ih.Info)
	}
	return out, nil
}

// readIndex reads the index object unless it is the one held.
func (s *Store) readIndex(ctx context.Context) error {
	in := &s3.GetObjectInput{Bucket: &s.b.name, Key: aws.String(s.b.key(indexKey))}
	if s.idx.etag != "" {
		in.IfNoneMatch = aws.String(s.idx.etag)
	}
	s.b.requests.add(opGet)
	out, err := s.b.client.GetObject(ctx, in)
	if err != nil {
		var re *smithyhttp.ResponseError
		if errors.As(err, &re) && re.HTTPStatusCode() == 304 {
			return nil
		}
		if err = s.b.fail("get", indexKey, err); errors.Is(err, errMissing) {
			s.idx.etag, s.idx.heads = "", map[string]indexHead{}
			return nil
		}
		return err
	}
	defer out.Body.Close()
	var idx indexObj
	if err := json.NewDecoder(io.LimitReader(out.Body, s.b.maxObject)).Decode(&idx); err != nil || idx.V != 1 {
		// A damaged index is only a cache: read every head.
		s.idx.etag, s.idx.heads = aws.ToString(out.ETag), map[string]indexHead{}
		return nil
	}
	if idx.Heads == nil {
		idx.Heads = map[string]indexHead{}
	}
	s.idx.etag, s.idx.heads = aws.ToString(out.ETag), idx.Heads
	return nil
}

// writeIndex writes the index held, conditional on the one read.
func (s *Store) writeIndex(ctx context.Context) {
	raw, err := json.Marshal(indexObj{V: 1, Heads: s.idx.heads})
	if err != nil {
		return
	}
	cond := writeCond{absent: s.idx.etag == "", match: s.idx.etag}
	etag, err := s.b.put(ctx, indexKey, raw, cond)
	if err != nil {
		s.idx.etag = "" // read it again next time
		return
	}
	s.idx.etag = etag
}
