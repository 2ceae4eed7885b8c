package s3store_test

// A hostile review of s3store (issue 41): each test looks for one way to
// break a promise of the package doc or of the session.Store contract.
// The defects the review found (stale decisions, crafted heads and
// descriptors, listings, events, credentials) are fixed; their tests
// stay, beside those of what it looked for and did not find.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
	"github.com/agentsession/session/s3store"
)

func encID(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

// rawPut writes an object under the store's prefix, as another program.
func rawPut(t *testing.T, opts s3store.Options, rel string, body []byte) {
	t.Helper()
	if _, err := opts.Client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &opts.Bucket, Key: aws.String(opts.Prefix + rel), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}

// ids returns the ids of log's entries, joined.
func ids(log *session.Log) string {
	var s []string
	for _, e := range log.Entries {
		s = append(s, e.ID())
	}
	return strings.Join(s, ",")
}

// infoOf returns the listing of id as store lists it (archived too).
func infoOf(t *testing.T, store *s3store.Store, id string) (session.SessionInfo, bool) {
	t.Helper()
	page, err := store.List(context.Background(), session.ListOptions{Archived: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range page.Sessions {
		if info.ID == id {
			return info, true
		}
	}
	return session.SessionInfo{}, false
}

// staleAB returns two stores on one prefix, and session id created by a
// with entry e1, which both hold in memory.
func staleAB(t *testing.T, id string) (s3store.Options, *s3store.Store, *s3store.Store) {
	t.Helper()
	ctx := context.Background()
	opts := options(t)
	a, b := openStore(t, opts), openStore(t, opts)
	if err := a.Create(ctx, header(id)); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, id, session.AppendOptions{}, entry(t, "e1", "", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Load(ctx, id); err != nil {
		t.Fatal(err)
	}
	return opts, a, b
}

// ---- 1. writers, and what a store remembers ----

// TestBreakStaleIfLast: a store whose memory of a session is behind
// (another store appended since) refuses an append conditional on the
// log's real last entry: the condition is checked on its memory and never
// confirmed against the bucket (only writes are, by the conditional put).
func TestBreakStaleIfLast(t *testing.T) {
	ctx := context.Background()
	_, a, b := staleAB(t, "iflast")
	if err := b.Append(ctx, "iflast", session.AppendOptions{IfLast: "e1"}, entry(t, "e2", "e1", 2)); err != nil {
		t.Fatal(err)
	}
	// The log ends at e2, for every reader.
	if err := a.Append(ctx, "iflast", session.AppendOptions{IfLast: "e2"}, entry(t, "e3", "e2", 3)); err != nil {
		t.Fatalf("append IfLast e2 to a log ending at e2, through a store that last saw e1: %v", err)
	}
}

// TestBreakStaleIfUnchanged: DeleteIfUnchanged and ArchiveIfUnchanged
// with the mark of the log as it is refused by a store whose memory is
// behind.
func TestBreakStaleIfUnchanged(t *testing.T) {
	ctx := context.Background()
	for _, op := range []string{"delete", "archive"} {
		t.Run(op, func(t *testing.T) {
			_, a, b := staleAB(t, "unch")
			if err := b.Append(ctx, "unch", session.AppendOptions{}, entry(t, "e2", "e1", 2)); err != nil {
				t.Fatal(err)
			}
			seen := session.LogMark{Last: "e2", Entries: 2} // the log as it is
			var err error
			if op == "delete" {
				err = a.DeleteIfUnchanged(ctx, "unch", seen)
			} else {
				err = a.ArchiveIfUnchanged(ctx, "unch", seen)
			}
			if err != nil {
				t.Fatalf("%sIfUnchanged with the log's own mark, through a store that last saw e1: %v", op, err)
			}
		})
	}
}

// TestBreakStaleRewriteConditions: a conditional rewrite on the log as it
// is refused by a store whose memory is behind.
func TestBreakStaleRewriteConditions(t *testing.T) {
	ctx := context.Background()
	opts, a, b := staleAB(t, "rwc")
	if err := b.Append(ctx, "rwc", session.AppendOptions{}, entry(t, "e2", "e1", 2)); err != nil {
		t.Fatal(err)
	}
	log, err := openStore(t, opts).Load(ctx, "rwc") // the log as it is, read by a third process
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Rewrite(ctx, "rwc", session.RewriteOptions{IfLast: "e2", IfEntries: 2}, log.Header, log.Entries[:1]); err != nil {
		t.Fatalf("a rewrite conditional on the log as it is, through a store that last saw e1: %v", err)
	}
}

// TestBreakStaleArchiveIsANoOp: a store that did not see another store
// archive a session answers Unarchive with nil and writes nothing: the
// session stays archived. The same for MarkCompacting (clearing a mark
// it did not see).
func TestBreakStaleArchiveIsANoOp(t *testing.T) {
	ctx := context.Background()
	t.Run("unarchive", func(t *testing.T) {
		opts, a, b := staleAB(t, "arch")
		if err := a.Archive(ctx, "arch"); err != nil {
			t.Fatal(err)
		}
		if err := b.Unarchive(ctx, "arch"); err != nil { // b last saw it unarchived
			t.Fatal(err)
		}
		if info, ok := infoOf(t, openStore(t, opts), "arch"); !ok || info.Archived {
			t.Fatalf("Unarchive returned nil, and the session is listed with Archived %v", info.Archived)
		}
	})
	t.Run("compacting", func(t *testing.T) {
		opts, a, b := staleAB(t, "comp")
		since := time.Now().UTC().Truncate(time.Millisecond)
		if err := a.MarkCompacting(ctx, "comp", since); err != nil {
			t.Fatal(err)
		}
		if err := b.MarkCompacting(ctx, "comp", time.Time{}); err != nil { // b last saw no mark
			t.Fatal(err)
		}
		if info, ok := infoOf(t, openStore(t, opts), "comp"); !ok || !info.Compacting.IsZero() {
			t.Fatalf("MarkCompacting(zero) returned nil, and the session is listed compacting since %v", info.Compacting)
		}
	})
}

// TestBreakRetryAfterDeleteAndCreate: a store holds a session with e1;
// another deletes it and creates it again (empty). An append of e1
// through the first store is taken for a retry, on its memory of the old
// session: nil, and e1 is in no log.
func TestBreakRetryAfterDeleteAndCreate(t *testing.T) {
	ctx := context.Background()
	opts, a, b := staleAB(t, "again")
	if err := b.Delete(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	if err := b.Create(ctx, header("again")); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, "again", session.AppendOptions{}, entry(t, "e1", "", 1)); err != nil {
		t.Fatalf("append: %v", err)
	}
	log, err := openStore(t, opts).Load(ctx, "again")
	if err != nil {
		t.Fatal(err)
	}
	if ids(log) != "e1" {
		t.Fatalf("an append acknowledged is not in the log: the log holds [%s]", ids(log))
	}
}

// TestBreakAppendAfterDeleteAndCreate: an append (a new entry) through a
// store that held the session before another deleted and created it
// again is ErrNotFound, though the session exists.
func TestBreakAppendAfterDeleteAndCreate(t *testing.T) {
	ctx := context.Background()
	opts, a, b := staleAB(t, "recreated")
	if err := b.Delete(ctx, "recreated"); err != nil {
		t.Fatal(err)
	}
	if err := b.Create(ctx, header("recreated")); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, "recreated", session.AppendOptions{}, entry(t, "n1", "", 1)); err != nil {
		t.Fatalf("append to an existing session: %v", err)
	}
	if log, err := openStore(t, opts).Load(ctx, "recreated"); err != nil || ids(log) != "n1" {
		t.Fatalf("load: [%v] %v", ids(log), err)
	}
}

// TestBreakStaleRetryRecognised: what works — a retried append through
// a store whose memory is behind, and two stores appending the same
// entries at once, leave the entries in the log once.
func TestBreakStaleRetryRecognised(t *testing.T) {
	ctx := context.Background()
	opts, a, b := staleAB(t, "retry")
	e2 := entry(t, "e2", "e1", 2)
	if err := b.Append(ctx, "retry", session.AppendOptions{}, e2); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, "retry", session.AppendOptions{}, e2); err != nil {
		t.Fatalf("a retry through a store that was behind: %v", err)
	}
	if err := a.Append(ctx, "retry", session.AppendOptions{}, entry(t, "e2", "e1", 99)); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("the id of an entry in the log with other content: %v, want ErrConflict", err)
	}
	e3 := entry(t, "e3", "e2", 3)
	var wg sync.WaitGroup
	for _, s := range []*s3store.Store{a, b} {
		wg.Go(func() {
			if err := s.Append(ctx, "retry", session.AppendOptions{}, e3); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	log, err := openStore(t, opts).Load(ctx, "retry")
	if err != nil || ids(log) != "e1,e2,e3" {
		t.Fatalf("log [%s], %v; want e1,e2,e3", ids(log), err)
	}
}

// TestBreakRewriteDuplicateIDs: a rewrite whose entries repeat an id is
// taken by MemoryStore; here it must either be refused before anything
// is written or leave a log that reads back.
func TestBreakRewriteDuplicateIDs(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	s := openStore(t, opts)
	if err := s.Create(ctx, header("dup")); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "dup", session.AppendOptions{}, entry(t, "e1", "", 1)); err != nil {
		t.Fatal(err)
	}
	werr := s.Rewrite(ctx, "dup", session.RewriteOptions{}, header("dup"), []session.Entry{entry(t, "a", "", 1), entry(t, "a", "", 2)})
	log, err := openStore(t, opts).Load(ctx, "dup")
	if err != nil {
		t.Fatalf("rewrite: %v; then load: %v", werr, err)
	}
	t.Logf("rewrite: %v; log [%s]", werr, ids(log))
}

// TestBreakTinyCache: with a cache of one byte and a tiny grace, stores
// writing several sessions side by side (evicting each other's states
// all the time) keep every acknowledged append once.
func TestBreakTinyCache(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	opts.CacheBytes = 1
	opts.FoldParts = 3
	stores := []*s3store.Store{openStore(t, opts), openStore(t, opts)}
	sessions := []string{"c0", "c1", "c2"}
	for _, id := range sessions {
		if err := stores[0].Create(ctx, header(id)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for w := range 4 {
		s := stores[w%2]
		wg.Go(func() {
			for i := range 8 {
				id := sessions[(w+i)%len(sessions)]
				if err := s.Append(ctx, id, session.AppendOptions{}, entry(t, fmt.Sprintf("w%d-%d", w, i), "", i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	total := 0
	for _, id := range sessions {
		log, err := openStore(t, opts).Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		total += len(log.Entries)
	}
	if total != 32 {
		t.Fatalf("%d entries in the logs, want 32", total)
	}
}

// TestBreakTinyGrace: with a grace of a millisecond (what a fold,
// rewrite or delete replaced goes at the next fold), two stores append to
// one session side by side: an append may fail, but one acknowledged is
// in the log once.
func TestBreakTinyGrace(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	opts.Grace = time.Millisecond
	opts.FoldParts = 2
	stores := []*s3store.Store{openStore(t, opts), openStore(t, opts)}
	if err := stores[0].Create(ctx, header("grace")); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[string]bool{}
	failed := 0
	var wg sync.WaitGroup
	for w, s := range stores {
		wg.Go(func() {
			for i := range 25 {
				id := fmt.Sprintf("w%d-%02d", w, i)
				err := s.Append(ctx, "grace", session.AppendOptions{}, entry(t, id, "", i))
				mu.Lock()
				if err == nil {
					acked[id] = true
				} else {
					failed++
					t.Logf("append %s: %v", id, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	log, err := openStore(t, opts).Load(ctx, "grace")
	if err != nil {
		t.Fatalf("load after %d appends (%d failed): %v", len(acked), failed, err)
	}
	seen := map[string]int{}
	for _, e := range log.Entries {
		seen[e.ID()]++
	}
	for id := range acked {
		if seen[id] != 1 {
			t.Errorf("acknowledged %s is in the log %d times", id, seen[id])
		}
	}
	t.Logf("%d acknowledged, %d failed, %d in the log", len(acked), failed, len(log.Entries))
}

// ---- 2. reading what another program wrote ----

const (
	hInc = "0123456789abcdef"
	hGen = "g0000000000-abcdef01"
)

func hostileHead(id, gen string, seq int64) []byte {
	return fmt.Appendf(nil, `{"v":1,"inc":"%s","gen":"%s","seq":%d,"info":{"ID":"%s"}}`, hInc, gen, seq, id)
}

func hostileDesc(id string) []byte {
	return fmt.Appendf(nil, `{"v":1,"header":{"type":"session","version":3,"id":"%s","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"},"entries":0}`, id)
}

func hostileLog(id string) string { return "log/" + encID(id) + "/" + hInc + "/" }

// loadNoPanic loads id, turning a panic into an error.
func loadNoPanic(s *s3store.Store, id string) (log *session.Log, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return s.Load(context.Background(), id)
}

// TestBreakHeadSeqHuge: a head whose seq is the largest int makes Load
// panic (a slice of len(segments)+seq keys); any seq up to ~2^44 makes it
// try to allocate 16 bytes a part, and a few thousand is as many GETs.
func TestBreakHeadSeqHuge(t *testing.T) {
	opts := options(t)
	s := openStore(t, opts)
	rawPut(t, opts, "sessions/"+encID("seqmax"), hostileHead("seqmax", hGen, math.MaxInt64))
	rawPut(t, opts, hostileLog("seqmax")+hGen+"/0000000000", hostileDesc("seqmax"))
	if _, err := loadNoPanic(s, "seqmax"); err == nil || strings.HasPrefix(err.Error(), "panic") {
		t.Fatalf("a head with seq %d: %v, want an ErrCorrupt", int64(math.MaxInt64), err)
	}
}

// TestBreakHeadSeqRequests: a head that says seq 3000 on a session of
// one part makes a load read 3000 keys.
func TestBreakHeadSeqRequests(t *testing.T) {
	opts := options(t)
	s := openStore(t, opts)
	rawPut(t, opts, "sessions/"+encID("seqbig"), hostileHead("seqbig", hGen, 3000))
	rawPut(t, opts, hostileLog("seqbig")+hGen+"/0000000000", hostileDesc("seqbig"))
	before := s.Requests()
	_, err := s.Load(context.Background(), "seqbig")
	got := s.Requests().Sub(before).Get
	t.Logf("load: %v, %d GETs", err, got)
	if got > 20 {
		t.Fatalf("a load of a session of no parts whose head says seq 3000 sent %d GETs", got)
	}
}

// TestBreakRepeatedSegment: a descriptor that names one segment many
// times makes a load read it that many times (all of it held in memory
// at once, twice) before the log limit refuses it.
func TestBreakRepeatedSegment(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	opts.Limits = session.Limits{MaxLogBytes: 64 << 10}
	s := openStore(t, opts)
	const n = 200
	seg := fmt.Appendf(nil, `{"type":"s3test","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00Z","pad":"%s"}`+"\n", strings.Repeat("x", 8000))
	rawPut(t, opts, hostileLog("rep")+"seg/aaaa", seg)
	var segs []string
	for range n {
		segs = append(segs, fmt.Sprintf(`{"key":"seg/aaaa","entries":1,"bytes":%d}`, len(seg)))
	}
	desc := fmt.Appendf(nil, `{"v":1,"header":{"type":"session","version":3,"id":"rep","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"},"segments":[%s],"entries":%d}`, strings.Join(segs, ","), n)
	rawPut(t, opts, "sessions/"+encID("rep"), hostileHead("rep", hGen, 0))
	rawPut(t, opts, hostileLog("rep")+hGen+"/0000000000", desc)
	before := s.Requests()
	_, err := s.Load(ctx, "rep")
	got := s.Requests().Sub(before).Get
	t.Logf("load: %v; %d GETs, %d bytes read for a 64 KiB limit", err, got, int(got)*len(seg))
	if !errors.Is(err, session.ErrTooLarge) && !errors.Is(err, session.ErrCorrupt) {
		t.Fatalf("load: %v, want ErrTooLarge or ErrCorrupt", err)
	}
	if got > 20 {
		t.Fatalf("%d GETs (%d bytes) read before a log over the 64 KiB limit was refused", got, int(got)*len(seg))
	}
}

// TestBreakMarkerChain: markers that go forward to a missing generation,
// or to one whose descriptor is garbage or of a newer version, give a
// typed error and change nothing.
func TestBreakMarkerChain(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	s := openStore(t, opts)
	g1 := "g0000000001-abcdef01"
	cases := []struct {
		name string
		desc string // of g1 ("" for none)
		want error
	}{
		{"to a missing generation", "", session.ErrCorrupt},
		{"to a garbage descriptor", "{{{", session.ErrCorrupt},
		{"to a newer descriptor", `{"v":7}`, session.ErrUnsupportedVersion},
	}
	for i, tc := range cases {
		id := fmt.Sprintf("mk%d", i)
		rawPut(t, opts, "sessions/"+encID(id), hostileHead(id, hGen, 0))
		rawPut(t, opts, hostileLog(id)+hGen+"/0000000000", hostileDesc(id))
		rawPut(t, opts, hostileLog(id)+hGen+"/0000000001", []byte(`{"k":"next","t":"2026-01-01T00:00:00Z","gen":"`+g1+`"}`+"\n"))
		if tc.desc != "" {
			rawPut(t, opts, hostileLog(id)+g1+"/0000000000", []byte(tc.desc))
		}
		if _, err := s.Load(ctx, id); !errors.Is(err, tc.want) {
			t.Errorf("%s: load: %v, want %v", tc.name, err, tc.want)
		}
		if err := s.Append(ctx, id, session.AppendOptions{}, entry(t, "x", "", 1)); !errors.Is(err, tc.want) {
			t.Errorf("%s: append: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestBreakGenerationOrdinalOverflow: a session at generation ordinal
// 9999999999 (ten digits, as the key format allows) folds into "g" and
// eleven digits, a name its own readers refuse: the commit marker makes
// the session unreadable.
func TestBreakGenerationOrdinalOverflow(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	opts.FoldParts = 1
	s := openStore(t, opts)
	gen := "g9999999999-abcdef01"
	rawPut(t, opts, "sessions/"+encID("ord"), hostileHead("ord", gen, 0))
	rawPut(t, opts, hostileLog("ord")+gen+"/0000000000", hostileDesc("ord"))
	aerr := s.Append(ctx, "ord", session.AppendOptions{}, entry(t, "e1", "", 1))
	_, err := openStore(t, opts).Load(ctx, "ord")
	if aerr == nil && err != nil {
		t.Fatalf("append acknowledged; then load: %v", err)
	}
}

// TestBreakListingSurvivesAHugeHead: a head over the object limit (or
// one that cannot be read) must not break the listing of the others.
func TestBreakListingSurvivesAHugeHead(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	opts.Limits = session.Limits{MaxLogBytes: 64 << 10}
	s := openStore(t, opts)
	if err := s.Create(ctx, header("fine")); err != nil {
		t.Fatal(err)
	}
	big := append(hostileHead("big", hGen, 0)[:0:0], hostileHead("big", hGen, 0)...)
	big = append(big[:len(big)-1], []byte(`,"pad":"`+strings.Repeat("x", 100<<10)+`"}`)...)
	rawPut(t, opts, "sessions/"+encID("big"), big)
	page, err := s.List(ctx, session.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	// A head is read up to its own bound (1 MiB), not the log's: this
	// one is a readable head, and may be listed; the others must be.
	found := false
	for _, info := range page.Sessions {
		found = found || info.ID == "fine"
	}
	if !found {
		t.Fatalf("listed %+v, want fine among them", page.Sessions)
	}
}

// TestBreakDamagedIndex: an index.json of garbage, of a newer version,
// or naming sessions that are not there, changes no listing.
func TestBreakDamagedIndex(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	a := openStore(t, opts)
	for _, id := range []string{"i1", "i2"} {
		if err := a.Create(ctx, header(id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, idx := range []string{"{{{", `{"v":2,"heads":{}}`, `{"v":1,"heads":{"sessions/` + encID("ghost") + `":{"etag":"x","info":{"ID":"ghost"}}}}`, `{"v":1,"heads":null}`} {
		rawPut(t, opts, "index.json", []byte(idx))
		page, err := openStore(t, opts).List(ctx, session.ListOptions{})
		if err != nil {
			t.Fatalf("index %s: %v", idx, err)
		}
		var got []string
		for _, info := range page.Sessions {
			got = append(got, info.ID)
		}
		if strings.Join(got, ",") != "i2,i1" && strings.Join(got, ",") != "i1,i2" {
			t.Fatalf("index %s: listed %v", idx, got)
		}
	}
}

// TestBreakListingAfterOtherStores: a store lists what other stores did
// since its last listing: an append (entries, updated), an archive, a
// delete and a create again, a long (hashed) id; pages with a cursor
// hold each session once.
func TestBreakListingAfterOtherStores(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	a, b := openStore(t, opts), openStore(t, opts)
	long := strings.Repeat("long-id-", 40)
	for _, id := range []string{"l1", "l2", "l3", long} {
		if err := a.Create(ctx, header(id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.List(ctx, session.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(ctx, "l1", session.AppendOptions{}, entry(t, "e1", "", 1), entry(t, "e2", "e1", 2)); err != nil {
		t.Fatal(err)
	}
	if err := b.Archive(ctx, "l2"); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(ctx, "l3", session.AppendOptions{}, entry(t, "e1", "", 1)); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "l3"); err != nil {
		t.Fatal(err)
	}
	if err := b.Create(ctx, header("l3")); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(ctx, long, session.AppendOptions{}, entry(t, "e1", "", 1)); err != nil {
		t.Fatal(err)
	}
	infos := map[string]session.SessionInfo{}
	cursor := ""
	for {
		page, err := a.List(ctx, session.ListOptions{Limit: 1, Cursor: cursor, Archived: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range page.Sessions {
			if _, dup := infos[info.ID]; dup {
				t.Fatalf("%s listed twice", info.ID)
			}
			infos[info.ID] = info
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	if len(infos) != 4 || infos["l1"].Entries != 2 || !infos["l2"].Archived || infos["l3"].Entries != 0 || infos[long].Entries != 1 {
		t.Fatalf("listing after other stores' writes: %+v", infos)
	}
	page, err := a.List(ctx, session.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range page.Sessions {
		if info.ID == "l2" {
			t.Fatal("an archived session in a listing without Archived")
		}
	}
	if log, err := openStore(t, opts).Load(ctx, long); err != nil || ids(log) != "e1" {
		t.Fatalf("the long id loads: [%s] %v", ids(log), err)
	}
}

// ---- 4. blobs ----

// imageEntry is a message entry with an image of n random bytes.
func imageEntry(t *testing.T, id string, n int) session.Entry {
	t.Helper()
	img := make([]byte, n)
	rand.Read(img)
	line := `{"type":"message","id":"` + id + `","parentId":null,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":[{"type":"image","data":"` +
		base64.StdEncoding.EncodeToString(img) + `","mimeType":"image/png"}],"timestamp":1}}`
	e, err := session.ParseEntry([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestBreakImageRetries: an append of an entry with an image, sent again
// (as it was, or as another store read it back), stays a retry: on the
// bucket store, and through WithBlobs over a MemoryStore.
func TestBreakImageRetries(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	e := imageEntry(t, "img", 4096)
	stores := map[string][2]session.Store{
		"s3store": {openStore(t, opts), openStore(t, opts)},
	}
	mem := s3store.WithBlobs(session.NewMemoryStore(), newBlobs(t))
	stores["withblobs-memory"] = [2]session.Store{mem, mem}
	root := t.TempDir()
	blobs := newBlobs(t)
	var fss [2]session.Store
	for i := range fss {
		fs, err := session.OpenFileStore(root, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fs.Close() })
		fss[i] = s3store.WithBlobs(fs, blobs)
	}
	stores["withblobs-file"] = fss
	if dsn := os.Getenv("AGENTSESSION_PG_DSN"); dsn != "" {
		pool := pgPool(t, dsn)
		if err := pgstore.Migrate(ctx, pool); err != nil {
			t.Fatal(err)
		}
		pblobs := newBlobs(t)
		var pgs [2]session.Store
		for i := range pgs {
			pg, err := pgstore.New(ctx, pool, nil)
			if err != nil {
				t.Fatal(err)
			}
			pgs[i] = s3store.WithBlobs(pg, pblobs)
		}
		stores["withblobs-pg"] = pgs
	}
	for name, pair := range stores {
		t.Run(name, func(t *testing.T) {
			a, b := pair[0], pair[1]
			if err := a.Create(ctx, header("imgs")); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := a.Append(ctx, "imgs", session.AppendOptions{}, e); err != nil {
					t.Fatalf("append (again): %v", err)
				}
			}
			log, err := b.Load(ctx, "imgs")
			if err != nil {
				t.Fatal(err)
			}
			if len(log.Unresolved) != 0 || ids(log) != "img" {
				t.Fatalf("read back: [%s], unresolved %v", ids(log), log.Unresolved)
			}
			if err := b.Append(ctx, "imgs", session.AppendOptions{}, log.Entries[0]); err != nil {
				t.Fatalf("the entry as read back, appended again: %v", err)
			}
			if log, err = b.Load(ctx, "imgs"); err != nil || ids(log) != "img" {
				t.Fatalf("[%s] %v", ids(log), err)
			}
			if !bytes.Contains(log.Entries[0].JSON(), []byte(`"image/png"`)) || bytes.Contains(log.Entries[0].JSON(), []byte(session.BlobPrefix)) {
				t.Fatal("the image did not come back as data")
			}
		})
	}
}

// TestBreakBlobPutAfterListing: a collector that listed a blob does not
// delete it once a writer put the same bytes again; GetBlob refuses
// bytes that do not hash to the reference.
func TestBreakBlobPutAfterListing(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	s := openStore(t, opts)
	data := []byte("the same bytes, put twice")
	ref, err := s.PutBlob(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ListBlobs(ctx, func(session.BlobInfo) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := openStore(t, opts).PutBlob(ctx, data); err != nil { // another process
		t.Fatal(err)
	}
	deleted, err := s.DeleteBlobIfOlder(ctx, ref, time.Now().Add(time.Hour))
	if err != nil || deleted {
		t.Fatalf("DeleteBlobIfOlder after a put since the listing: %v, %v", deleted, err)
	}
	if got, err := s.GetBlob(ctx, ref); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the blob after: %q %v", got, err)
	}
	// Bytes of another blob under ref's name, and an object shorter than
	// the trailer.
	h := strings.TrimPrefix(ref, session.BlobPrefix)
	rawPut(t, opts, "blobs/"+h, append([]byte("other bytes"), make([]byte, 16)...))
	if _, err := s.GetBlob(ctx, ref); !errors.Is(err, session.ErrCorrupt) {
		t.Fatalf("a blob whose bytes are another's: %v, want ErrCorrupt", err)
	}
	rawPut(t, opts, "blobs/"+h, []byte("short"))
	if _, err := s.GetBlob(ctx, ref); !errors.Is(err, session.ErrCorrupt) {
		t.Fatalf("a blob object shorter than its trailer: %v, want ErrCorrupt", err)
	}
	if _, err := s.GetBlob(ctx, session.BlobPrefix+"../../x"); !errors.Is(err, session.ErrInvalidID) {
		t.Fatalf("a reference that is a path: %v", err)
	}
}

// ---- 5. events ----

// nextChange waits for the next change of sub of the kinds given (others
// skipped), up to a minute.
func nextChange(t *testing.T, sub *session.Subscription, kinds ...session.ChangeKind) session.Change {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case c, ok := <-sub.C():
			if !ok {
				t.Fatal("subscription closed")
			}
			for _, k := range kinds {
				if c.Kind == k {
					return c
				}
			}
		case <-timeout:
			t.Fatalf("no %v change within a minute", kinds)
		}
	}
}

// TestBreakEventsOwnWriteHidesRemote: appends by another store, then one
// of the subscriber's store's own before the next poll: the own append
// catches up past the remote ones and records the session as told, so
// the remote appends are never reported.
func TestBreakEventsOwnWriteHidesRemote(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	a, b := openStore(t, opts), openStore(t, opts)
	if err := a.Create(ctx, header("ev")); err != nil {
		t.Fatal(err)
	}
	sub, err := a.Subscribe(ctx, session.SubscribeOptions{Session: "ev"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// A first remote change, repeated until one arrives: the poll that
	// primes the subscription reports nothing.
	var got []string
	for i := 0; len(got) == 0; i++ {
		id := fmt.Sprintf("p%d", i)
		if err := b.Append(ctx, "ev", session.AppendOptions{}, entry(t, id, "", i)); err != nil {
			t.Fatal(err)
		}
		wait := time.After(2 * time.Second)
	drain:
		for {
			select {
			case c := <-sub.C():
				if c.Kind == session.ChangeAppended {
					for _, r := range c.Entries {
						got = append(got, r.ID)
					}
				}
			case <-wait:
				break drain
			}
			if len(got) > 0 {
				break
			}
		}
	}
	got = got[:0]
	want := []string{"own1", "r1", "r2", "own2", "r3"}
	for _, id := range want {
		s := b
		if strings.HasPrefix(id, "own") {
			s = a
		}
		if err := s.Append(ctx, "ev", session.AppendOptions{}, entry(t, id, "", 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Append(ctx, "ev", session.AppendOptions{}, entry(t, "end", "", 1)); err != nil {
		t.Fatal(err)
	}
	for !slicesContains(got, "end") {
		c := nextChange(t, sub, session.ChangeAppended)
		for _, r := range c.Entries {
			got = append(got, r.ID)
		}
	}
	// Drain what the prime loop might have left (p*) and check the rest.
	var rest []string
	for _, id := range got {
		if !strings.HasPrefix(id, "p") {
			rest = append(rest, id)
		}
	}
	if strings.Join(rest, ",") != strings.Join(append(want, "end"), ",") {
		t.Fatalf("changes %v, want %v once each, in order", rest, append(want, "end"))
	}
}

func slicesContains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// TestBreakEventsRewriteThenFold: another store rewrites a session and
// then folds it between two polls: the subscriber is told of appends (or
// of nothing) rather than of the rewrite, since the poller asks only
// whether the latest generation is a fold.
func TestBreakEventsRewriteThenFold(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	opts.FoldParts = 2
	a := openStore(t, opts)
	bopts := opts
	b := openStore(t, bopts)
	if err := b.Create(ctx, header("rf")); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(ctx, "rf", session.AppendOptions{}, entry(t, "e1", "", 1)); err != nil {
		t.Fatal(err)
	}
	sub, err := a.Subscribe(ctx, session.SubscribeOptions{Session: "rf"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// Prime: remote appends until one is reported.
	for i := 0; ; i++ {
		if err := b.Append(ctx, "rf", session.AppendOptions{}, entry(t, fmt.Sprintf("p%d", i), "", i)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-sub.C():
		case <-time.After(2 * time.Second):
			continue
		}
		break
	}
	// Right after a poll: rewrite to the same number of entries (other
	// ones), then fold, well within the 100 ms to the next poll on an
	// idle machine.
	log, err := b.Load(ctx, "rf")
	if err != nil {
		t.Fatal(err)
	}
	var re []session.Entry
	for i := range log.Entries {
		re = append(re, entry(t, fmt.Sprintf("r%d", i), "", i))
	}
	if err := b.Rewrite(ctx, "rf", session.RewriteOptions{}, log.Header, re); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := b.Append(ctx, "rf", session.AppendOptions{}, entry(t, fmt.Sprintf("f%d", i), "", i)); err != nil {
			t.Fatal(err)
		}
	}
	c := nextChange(t, sub, session.ChangeRewritten, session.ChangeAppended)
	if c.Kind != session.ChangeRewritten {
		t.Fatalf("a remote rewrite then fold reported as %s %v", c.Kind, c.Entries)
	}
}

// TestBreakSubscribeReadsEveryLog: the first poll of a subscription
// (which reports nothing) reads every session of the bucket whole, its
// descriptor, segments and parts: a subscription costs the history of
// every session, not the listing of the heads.
func TestBreakSubscribeReadsEveryLog(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	opts.FoldParts = 1000
	b := openStore(t, opts)
	const sessions, parts = 8, 12
	for i := range sessions {
		id := fmt.Sprintf("sub%d", i)
		if err := b.Create(ctx, header(id)); err != nil {
			t.Fatal(err)
		}
		for j := range parts {
			if err := b.Append(ctx, id, session.AppendOptions{}, entry(t, fmt.Sprintf("e%d", j), "", j)); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := openStore(t, opts)
	before := a.Requests()
	sub, err := a.Subscribe(ctx, session.SubscribeOptions{Session: "sub0"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for i := 0; ; i++ {
		if err := b.Append(ctx, "sub0", session.AppendOptions{}, entry(t, fmt.Sprintf("p%d", i), "", i)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-sub.C():
		case <-time.After(2 * time.Second):
			continue
		}
		break
	}
	r := a.Requests().Sub(before)
	t.Logf("subscribed and told of one append: %+v", r)
	if r.Get > 4*sessions {
		t.Fatalf("%d GETs to subscribe to a bucket of %d sessions of %d parts", r.Get, sessions, parts)
	}
}

// ---- 6. credentials ----

// TestBreakWrongSecret: a store whose credentials go wrong (a rotated
// key) fails with errors that hold neither the secret nor the key id,
// and that do not say a live session or blob is missing.
func TestBreakWrongSecret(t *testing.T) {
	ep := endpoint(t)
	ctx := context.Background()
	const secret = "Wr0ngSecretKeyForTheBreakItTest/abcdefghij"
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	real, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newClient := func(cfg aws.Config) *s3.Client {
		return s3.NewFromConfig(cfg, func(o *s3.Options) {
			o.BaseEndpoint = aws.String(ep)
			o.UsePathStyle = true
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		})
	}
	check := func(t *testing.T, keyID string, err error) {
		t.Helper()
		if err == nil {
			t.Fatal("succeeded with wrong credentials")
		}
		m := err.Error()
		if strings.Contains(m, secret) || strings.Contains(m, secret[:12]) {
			t.Fatalf("the secret in an error: %s", m)
		}
		if strings.Contains(m, keyID) {
			t.Errorf("the access key id in an error")
		}
	}
	t.Run("wrong secret", func(t *testing.T) {
		cfg := cfg.Copy()
		cfg.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: real.AccessKeyID, SecretAccessKey: secret}, nil
		})
		opts := s3store.Options{Bucket: testBucket(t), Prefix: newPrefix(t), Client: newClient(cfg)}
		_, err := s3store.Open(ctx, opts)
		check(t, real.AccessKeyID, err)
		_, err = s3store.OpenBlobs(ctx, opts)
		check(t, real.AccessKeyID, err)
	})
	// A key that stops working (rotated, revoked) under a store in use.
	t.Run("unknown key id", func(t *testing.T) {
		const keyID = "AKIABREAKITTESTKEYID"
		var wrong atomic.Bool
		cfg := cfg.Copy()
		cfg.Credentials = aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
			c := real
			if wrong.Load() {
				c = aws.Credentials{AccessKeyID: keyID, SecretAccessKey: secret}
			}
			c.CanExpire, c.Expires = true, time.Now() // asked again at each request
			return c, nil
		})
		opts := s3store.Options{Bucket: testBucket(t), Prefix: newPrefix(t), Client: newClient(cfg)}
		s := openStore(t, opts)
		if err := s.Create(ctx, header("sec")); err != nil {
			t.Fatal(err)
		}
		ref, err := s.PutBlob(ctx, []byte("blob"))
		if err != nil {
			t.Fatal(err)
		}
		wrong.Store(true)
		var errs []error
		_, err = s3store.Open(ctx, opts)
		errs = append(errs, err)
		_, err = s.Load(ctx, "sec")
		errs = append(errs, err)
		errs = append(errs, s.Append(ctx, "sec", session.AppendOptions{}, entry(t, "e", "", 1)))
		_, err = s.List(ctx, session.ListOptions{})
		errs = append(errs, err)
		_, err = s.GetBlob(ctx, ref)
		errs = append(errs, err)
		_, err = s.PutBlob(ctx, []byte("other"))
		errs = append(errs, err)
		missing := 0
		for i, err := range errs {
			check(t, keyID, err)
			if m := err.Error(); errors.Is(err, session.ErrNotFound) || strings.Contains(m, "no such object") {
				missing++
				t.Logf("call %d: %s", i, m)
			}
		}
		if missing > 0 {
			t.Fatalf("%d of %d calls with wrong credentials said the session, blob or bucket is missing", missing, len(errs))
		}
	})
}
