package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/s3store"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func header(id string) session.Header {
	return session.Header{Version: session.CurrentVersion, ID: id, Timestamp: t0, Cwd: "/work"}
}

// entry makes an entry of a type no agent knows, named id.
func entry(t testing.TB, id, parent string, n int) session.Entry {
	t.Helper()
	e, err := session.NewEntry("s3test", id, parent, t0.Add(time.Duration(n)*time.Millisecond), map[string]any{"n": n, "text": strings.Repeat("x", n%50)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func status(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// TestServerRefusesConflictingWrites: the store's safety rests on the
// server refusing a conditional put that does not hold. On a server that
// ignored the headers this fails, and so does the suite.
func TestServerRefusesConflictingWrites(t *testing.T) {
	ctx := context.Background()
	c, bucket := client(t), testBucket(t)
	key := aws.String(newPrefix(t) + "k")
	put := func(body string, ifNoneMatch, ifMatch *string) (*s3.PutObjectOutput, error) {
		return c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: key, Body: strings.NewReader(body), IfNoneMatch: ifNoneMatch, IfMatch: ifMatch})
	}
	first, err := put("one", aws.String("*"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := put("two", aws.String("*"), nil); status(err) != 412 {
		t.Fatalf("a second If-None-Match: * put: %v, want 412", err)
	}
	if _, err := put("two", nil, aws.String(`"0123456789abcdef0123456789abcdef"`)); status(err) != 412 {
		t.Fatalf("an If-Match put with another ETag: %v, want 412", err)
	}
	if _, err := put("two", nil, first.ETag); err != nil {
		t.Fatalf("an If-Match put with the ETag: %v", err)
	}
	if _, err := put("three", nil, first.ETag); status(err) != 412 {
		t.Fatalf("an If-Match put with a stale ETag: %v, want 412", err)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(out.Body)
	if b.String() != "two" {
		t.Fatalf("the object holds %q after the refused puts, want two", b.String())
	}
	// Many writers racing for one key: exactly one wins.
	race := aws.String(newPrefix(t) + "race")
	var wins sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 8 {
		wins.Go(func() {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: race, Body: strings.NewReader(fmt.Sprint(i)), IfNoneMatch: aws.String("*")})
			if err == nil {
				mu.Lock()
				won++
				mu.Unlock()
			} else if status(err) != 412 && status(err) != 409 {
				t.Error(err)
			}
		})
	}
	wins.Wait()
	if won != 1 {
		t.Fatalf("%d of 8 racing If-None-Match puts won, want 1", won)
	}
}

// TestFoldsKeepTheLogAndFewSegments: a session appended to far past
// FoldParts reads back whole, in order, from a store that never saw it,
// through a logarithmic number of segments.
func TestFoldsKeepTheLogAndFewSegments(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	opts.FoldParts = 4
	a := openStore(t, opts)
	if err := a.Create(ctx, header("fold")); err != nil {
		t.Fatal(err)
	}
	const n = 300
	var want []string
	parent := ""
	for i := range n {
		id := fmt.Sprintf("e%04d", i)
		if err := a.Append(ctx, "fold", session.AppendOptions{IfLast: parent}, entry(t, id, parent, i)); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		want = append(want, id)
		parent = id
	}
	b := openStore(t, opts)
	log, err := b.Load(ctx, "fold")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range log.Entries {
		got = append(got, e.ID())
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("loaded %d entries, want the %d appended in order", len(got), n)
	}
	segs := countObjects(t, opts, "log/", "/seg/")
	// Folds every 4 appends, segments merged while no more than twice
	// the new one: about log2(300/4) live, plus what the grace keeps.
	t.Logf("%d appends, %d segment objects in the bucket", n, segs)
	if segs > 3*n/opts.FoldParts {
		t.Fatalf("%d segment objects for %d appends", segs, n)
	}
	before := b.Requests()
	if _, err := b.Load(ctx, "fold"); err != nil {
		t.Fatal(err)
	}
	if got := b.Requests().Sub(before).Total(); got > 3 {
		t.Fatalf("a load of a session the store holds took %d requests, want at most 3", got)
	}
}

// countObjects counts the objects under the store's prefix whose key
// holds sub.
func countObjects(t *testing.T, opts s3store.Options, under, sub string) int {
	t.Helper()
	n := 0
	p := s3.NewListObjectsV2Paginator(opts.Client, &s3.ListObjectsV2Input{Bucket: &opts.Bucket, Prefix: aws.String(opts.Prefix + under)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			if strings.Contains(*o.Key, sub) {
				n++
			}
		}
	}
	return n
}

// TestStoresShareASession: several stores (as several processes would
// have, each its own memory of the session) append to one session side
// by side, with and without conditions, while another rewrites it: every
// append acknowledged is in the log once, and every store reads the same
// log.
func TestStoresShareASession(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	opts.FoldParts = 5
	stores := make([]*s3store.Store, 4)
	for i := range stores {
		stores[i] = openStore(t, opts)
	}
	if err := stores[0].Create(ctx, header("shared")); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	for w, s := range stores[:3] {
		wg.Go(func() {
			for i := range 20 {
				id := fmt.Sprintf("w%d-%02d", w, i)
				var err error
				if w == 2 { // conditional: on the last entry it read
					for {
						log, lerr := s.Load(ctx, "shared")
						if lerr != nil {
							t.Error(lerr)
							return
						}
						last := ""
						if n := len(log.Entries); n > 0 {
							last = log.Entries[n-1].ID()
						}
						err = s.Append(ctx, "shared", session.AppendOptions{IfLast: last, IfEmpty: last == ""}, entry(t, id, last, i))
						if !errors.Is(err, session.ErrConflict) {
							break
						}
					}
				} else {
					err = s.Append(ctx, "shared", session.AppendOptions{}, entry(t, id, "", i))
				}
				if err != nil {
					t.Errorf("append %s: %v", id, err)
					return
				}
				mu.Lock()
				acked[id] = true
				mu.Unlock()
			}
		})
	}
	// The fourth store rewrites the log it read, with one entry more,
	// conditional on it: it succeeds only where no append came between.
	rewrites := 0
	wg.Go(func() {
		s := stores[3]
		for i := range 10 {
			log, err := s.Load(ctx, "shared")
			if err != nil {
				t.Error(err)
				return
			}
			n := len(log.Entries)
			last := ""
			if n > 0 {
				last = log.Entries[n-1].ID()
			}
			id := fmt.Sprintf("rw-%02d", i)
			err = s.Rewrite(ctx, "shared", session.RewriteOptions{IfLast: last, IfEntries: n, IfEmpty: n == 0}, log.Header,
				append(log.Entries, entry(t, id, last, i)))
			if errors.Is(err, session.ErrConflict) {
				continue
			}
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			acked[id] = true
			rewrites++
			mu.Unlock()
		}
	})
	wg.Wait()
	if t.Failed() {
		return
	}
	// A rewrite with no writer beside it succeeds; the writers, whose
	// memory of the session is from before it, then append after it.
	log, err := stores[3].Load(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	last := log.Entries[len(log.Entries)-1].ID()
	if err := stores[3].Rewrite(ctx, "shared", session.RewriteOptions{IfLast: last, IfEntries: len(log.Entries)}, log.Header,
		append(log.Entries, entry(t, "rw-last", last, 0))); err != nil {
		t.Fatal(err)
	}
	acked["rw-last"] = true
	for w, s := range stores[:3] {
		id := fmt.Sprintf("after-%d", w)
		if err := s.Append(ctx, "shared", session.AppendOptions{}, entry(t, id, "", w)); err != nil {
			t.Fatal(err)
		}
		acked[id] = true
	}
	var logs [][]string
	for _, s := range stores {
		log, err := s.Load(ctx, "shared")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		seen := map[string]bool{}
		for _, e := range log.Entries {
			if seen[e.ID()] {
				t.Fatalf("entry %s twice in the log", e.ID())
			}
			seen[e.ID()] = true
			ids = append(ids, e.ID())
		}
		for id := range acked {
			if !seen[id] {
				t.Fatalf("acknowledged entry %s is not in the log", id)
			}
		}
		logs = append(logs, ids)
	}
	for _, l := range logs[1:] {
		if strings.Join(l, ",") != strings.Join(logs[0], ",") {
			t.Fatal("two stores read different logs")
		}
	}
	t.Logf("%d entries acknowledged, %d of them by rewrites", len(acked), rewrites)
}

// TestDeleteSeenByOtherStores: a store that held a session finds it
// deleted by another, and a session created again under the same id is
// the new one.
func TestDeleteSeenByOtherStores(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	a, b := openStore(t, opts), openStore(t, opts)
	if err := a.Create(ctx, header("gone")); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, "gone", session.AppendOptions{}, entry(t, "old", "", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Load(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Load(ctx, "gone"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("load of a session another store deleted: %v, want ErrNotFound", err)
	}
	if err := b.Append(ctx, "gone", session.AppendOptions{}, entry(t, "late", "", 2)); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("append to a session another store deleted: %v, want ErrNotFound", err)
	}
	if err := a.Create(ctx, header("gone")); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, "gone", session.AppendOptions{}, entry(t, "new", "", 3)); err != nil {
		t.Fatal(err)
	}
	log, err := b.Load(ctx, "gone")
	if err != nil || len(log.Entries) != 1 || log.Entries[0].ID() != "new" {
		t.Fatalf("the session created again, read by the other store: %v, %v", log, err)
	}
	// Purge leaves the deleted session's objects alone until its grace
	// has passed.
	if err := a.Purge(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRequestsPerTurn: an append to a session the store holds is one
// request for the part and one for the head; with a fold, a few more.
func TestRequestsPerTurn(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	s := openStore(t, opts)
	sess, err := session.Create(ctx, s, &session.CreateOptions{ID: "turns", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	const turns = 64
	before := s.Requests()
	for i := range turns {
		turn := []*session.Message{session.UserText(fmt.Sprint("q", i)), session.AssistantText(fmt.Sprint("a", i))}
		if err := sess.SaveTurn(ctx, turn, nil); err != nil {
			t.Fatal(err)
		}
	}
	r := s.Requests().Sub(before)
	per := float64(r.Total()) / turns
	t.Logf("%d turns: %+v, %.2f requests a turn", turns, r, per)
	if per > 3 {
		t.Fatalf("%.2f requests a turn, want at most 3", per)
	}
}
