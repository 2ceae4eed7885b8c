// Package storetest is the conformance suite every session.Store must
// pass. A backend's test calls it in one line:
//
//	func TestMyStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) session.Store { return newMyStore(t) })
//	}
//
// newStore must return an empty store each time it is called; the suite
// calls it once per subtest. The suite checks the Store contract only
// through the interface, so it holds for memory, files and databases
// alike: create and exists, append order, all-or-nothing appends, the
// IfLast and IfEmpty conditions, load equals what was written, rewrite,
// listing order, filters and cursor paging, delete, concurrent appends,
// conditional rewrites (alone and racing appends), context
// cancellation, copy semantics, Session round trips, and retried appends
// (an append whose entries are stored already succeeds without writing;
// a Session over a store that commits and then fails, LostReply, stores
// the retried turn once). For a store that keeps blobs (session.BlobsOf):
// round trips, one blob per content, ErrNotFound, and a put of bytes
// already stored refreshing the blob's time; for one that can list and
// delete them (session.BlobCollector), session.CollectBlobs: it keeps
// what entries, workspace manifests and archived sessions refer to,
// frees a deleted session's own blobs, spares young ones, and never
// deletes what a writer beside it puts and then refers to. Those cases
// skip on a store without blobs.
//
// Then the lifecycle (issue 16): OpenOrCreate racing with itself ends
// with one session; metadata given at creation and updated later is
// listed without loading entries, with every ListOptions filter and the
// title derived from the first user message; the state at any entry,
// through reopen, branch and fork, and the shared user and app scopes
// (on a SharedStateStore); archive and unarchive (on an Archiver): hidden
// by default, listed with ArchivedAt, no update; compaction marks (on a
// CompactionMarker); DeleteSession with children and blobs, and handles
// on deleted sessions failing with ErrNotFound; tenant isolation through
// ForUser; message pagination; and events (on a Subscriber): every
// change of a session in order, the per-session filter, and a subscriber
// that does not read never holding a writer back.
//
// It imports the session package, storekit and testing; stores import it
// from their tests only.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/storekit"
)

// without says in the test's log what a case leaves unchecked because
// the store (or its blob store) x lacks an ability. A case that checks
// nothing without it skips instead (t.Skipf), with the same message.
func without(t *testing.T, x any, ability, unchecked string) {
	t.Helper()
	t.Logf("%T has no %s: %s not checked", x, ability, unchecked)
}

// Run runs the whole suite against stores made by newStore.
func Run(t *testing.T, newStore func(t *testing.T) session.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, session.Store)
	}{
		{"CreateAndLoad", testCreateAndLoad},
		{"InvalidIDs", testInvalidIDs},
		{"HostIDs", testHostIDs},
		{"AppendOrder", testAppendOrder},
		{"AppendAllOrNothing", testAppendAllOrNothing},
		{"IfLast", testIfLast},
		{"LoadEqualsWritten", testLoadEqualsWritten},
		{"Rewrite", testRewrite},
		{"List", testList},
		{"ListPaging", testListPaging},
		{"Delete", testDelete},
		{"ConcurrentAppends", testConcurrentAppends},
		{"ConcurrentConditionalAppends", testConcurrentConditionalAppends},
		{"ContextCanceled", testContextCanceled},
		{"CopySemantics", testCopySemantics},
		{"SessionRoundTrip", testSessionRoundTrip},
		{"SharedSession", testSharedSession},
		{"ConditionalRewrite", testConditionalRewrite},
		{"RewriteRacingAppends", testRewriteRacingAppends},
		{"PruneSeesOtherWriters", testPruneSeesOtherWriters},
		{"PruneRacingAppends", testPruneRacingAppends},
		{"LoadTail", testLoadTail},
		{"LoadPath", testLoadPath},
		{"UnusualStrings", testUnusualStrings},
		{"RetriedAppend", testRetriedAppend},
		{"Blobs", testBlobs},
		{"BlobTouch", testBlobTouch},
		{"CollectBlobs", testCollectBlobs},
		{"CollectBlobsDeletedSession", testCollectDeletedSession},
		{"CollectBlobsConcurrentWriter", testCollectConcurrentWriter},
		{"OpenOrCreateRace", testOpenOrCreateRace},
		{"Metadata", testMetadata},
		{"StateAtEntry", testStateAtEntry},
		{"Archive", testArchive},
		{"Compacting", testCompacting},
		{"DeleteWithBlobsAndChildren", testDeleteWithBlobsAndChildren},
		{"TenantIsolation", testTenantIsolation},
		{"MessagePagination", testMessagePagination},
		{"Events", testEvents},
		{"SlowSubscriber", testSlowSubscriber},
		{"CreateWithEntries", testCreateWithEntries},
		{"DeferredSession", testDeferredSession},
		{"SweepWithWriters", testSweepWithWriters},
		{"SweepArchive", testSweepArchive},
		{"ConditionalRemover", testConditionalRemover},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

var base = time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC)

func header(id, cwd string) session.Header {
	return session.Header{Version: session.CurrentVersion, ID: id, Timestamp: base, Cwd: cwd}
}

// entry makes an entry of a type no agent knows, with a payload that
// tells which writer made it and in which order.
func entry(t *testing.T, id, parent string, writer, seq int) session.Entry {
	t.Helper()
	e, err := session.NewEntry("storetest", id, parent, base.Add(time.Duration(seq)*time.Millisecond),
		map[string]any{"writer": writer, "seq": seq, "text": "line with \"quotes\", tabs\tand unicode é"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func entries(t *testing.T, prefix string, n int) []session.Entry {
	var out []session.Entry
	parent := ""
	for i := range n {
		id := fmt.Sprintf("%s%04d", prefix, i)
		out = append(out, entry(t, id, parent, 0, i))
		parent = id
	}
	return out
}

func create(t *testing.T, s session.Store, id string) {
	t.Helper()
	if err := s.Create(context.Background(), header(id, "/work")); err != nil {
		t.Fatalf("Create(%s): %v", id, err)
	}
}

func load(t *testing.T, s session.Store, id string) *session.Log {
	t.Helper()
	l, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatalf("Load(%s): %v", id, err)
	}
	return l
}

func ids(l *session.Log) []string {
	out := make([]string, len(l.Entries))
	for i, e := range l.Entries {
		out[i] = e.ID()
	}
	return out
}

func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// encode renders a log in the seed format, the ground truth of equality.
func encode(t *testing.T, l *session.Log) string {
	t.Helper()
	var b bytes.Buffer
	if err := session.WriteLog(&b, l); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func testCreateAndLoad(t *testing.T, s session.Store) {
	ctx := context.Background()
	h := header("s-create", "/home/dev/project")
	h.Title = "A title"
	h.ParentSession = "s-parent"
	h.Extra.Set("futureField", json.RawMessage(`{"x":[1,2]}`))
	if err := s.Create(ctx, h); err != nil {
		t.Fatal(err)
	}
	l := load(t, s, "s-create")
	if len(l.Entries) != 0 {
		t.Fatalf("new session has %d entries", len(l.Entries))
	}
	g := l.Header
	if g.ID != h.ID || g.Cwd != h.Cwd || g.Title != h.Title || g.ParentSession != h.ParentSession ||
		!g.Timestamp.Equal(h.Timestamp) || g.Version != session.CurrentVersion {
		t.Fatalf("header changed: got %+v, want %+v", g, h)
	}
	if v, ok := g.Extra.Get("futureField"); !ok || string(v) != `{"x":[1,2]}` {
		t.Fatalf("unknown header field lost: %q %v", v, ok)
	}
	wantErr(t, s.Create(ctx, h), session.ErrExists, "second Create")
	_, err := s.Load(ctx, "s-missing")
	wantErr(t, err, session.ErrNotFound, "Load of a missing session")
	wantErr(t, s.Append(ctx, "s-missing", session.AppendOptions{}, entry(t, "e1", "", 0, 0)), session.ErrNotFound, "Append to a missing session")
	wantErr(t, s.Rewrite(ctx, "s-missing", session.RewriteOptions{}, header("s-missing", ""), nil), session.ErrNotFound, "Rewrite of a missing session")
	wantErr(t, s.Delete(ctx, "s-missing"), session.ErrNotFound, "Delete of a missing session")
}

// HostileIDs are session ids every store must refuse with ErrInvalidID
// before they touch a path, a key or a query: empty, too long, not UTF-8,
// or holding a control character.
var HostileIDs = []string{
	"", "a\x00b", "\x00", "a\nb", "a\rb", "tab\there", "\x7f", "\u0085", "bad\xffutf8", "\xc3",
	strings.Repeat("a", session.MaxIDLength+1), strings.Repeat("é", session.MaxIDLength/2) + "a",
}

// HostIDs are session ids hosts name sessions by, which every store must
// take, keep apart and give back exactly: user and chat names, e-mail
// addresses, ids with spaces, dots, separators, device names and
// non-ASCII letters, and ids of the greatest length allowed.
var HostIDs = []string{
	"user:42", "alice@example.com", "chat 7", "Ünïcode", ".hidden", ".", "..", "../x", "..\\x",
	"a/b", "a\\b", "/abs", "C:\\x", "c:", "CON", "con", "NUL", "nul.jsonl", "COM1", "LPT9.txt",
	"~user", "$HOME", "a*b?c|d<e>f\"g", "%2e%2e", "%41", "A", "a", "é", "e\u0301", "\u202e", "日本語のセッション",
	" lead", "trail ", strings.Repeat("a", session.MaxIDLength), strings.Repeat("é", session.MaxIDLength/2),
	strings.Repeat("x/", session.MaxIDLength/2-1) + "yz",
}

func testInvalidIDs(t *testing.T, s session.Store) {
	ctx := context.Background()
	for _, id := range HostileIDs {
		err := s.Create(ctx, header(id, "/work"))
		if !errors.Is(err, session.ErrInvalidID) {
			t.Errorf("Create(%q) = %v, want ErrInvalidID", id, err)
		}
	}
	p, err := s.List(ctx, session.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sessions) != 0 {
		t.Fatalf("hostile ids created sessions: %v", p.Sessions)
	}
}

// testHostIDs: each of HostIDs is a session of its own, listed, loaded
// and appended to by exactly that id.
func testHostIDs(t *testing.T, s session.Store) {
	ctx := context.Background()
	for _, id := range HostIDs {
		if err := s.Create(ctx, header(id, "/work")); err != nil {
			t.Fatalf("Create(%q) = %v", id, err)
		}
		if err := s.Append(ctx, id, session.AppendOptions{}, entry(t, "e-"+id, "", 0, 0)); err != nil {
			t.Fatalf("Append(%q) = %v", id, err)
		}
	}
	listed := map[string]bool{}
	for _, info := range listAll(t, s, session.ListOptions{}) {
		listed[info.ID] = true
	}
	for _, id := range HostIDs {
		if !listed[id] {
			t.Errorf("List does not give %q", id)
		}
		l := load(t, s, id)
		if l.Header.ID != id || len(l.Entries) != 1 || l.Entries[0].ID() != "e-"+id {
			t.Errorf("Load(%q) = header %q, entries %v", id, l.Header.ID, ids(l))
		}
	}
	if len(listed) != len(HostIDs) {
		t.Errorf("List gives %d sessions for %d ids", len(listed), len(HostIDs))
	}
}

func testAppendOrder(t *testing.T, s session.Store) {
	ctx := context.Background()
	create(t, s, "s-order")
	all := entries(t, "e", 10)
	for _, batch := range [][]session.Entry{all[:1], all[1:4], all[4:5], all[5:10]} {
		if err := s.Append(ctx, "s-order", session.AppendOptions{}, batch...); err != nil {
			t.Fatal(err)
		}
	}
	l := load(t, s, "s-order")
	if len(l.Entries) != len(all) {
		t.Fatalf("%d entries, want %d", len(l.Entries), len(all))
	}
	for i, e := range l.Entries {
		if !bytes.Equal(e.JSON(), all[i].JSON()) {
			t.Fatalf("entry %d: got %s, want %s", i, e.JSON(), all[i].JSON())
		}
	}
}

func testAppendAllOrNothing(t *testing.T, s session.Store) {
	ctx := context.Background()
	create(t, s, "s-atomic")
	first := entries(t, "a", 3)
	if err := s.Append(ctx, "s-atomic", session.AppendOptions{}, first...); err != nil {
		t.Fatal(err)
	}
	good := []session.Entry{entry(t, "b1", "a0002", 0, 3), entry(t, "b2", "b1", 0, 4)}
	// A batch of many entries (as a fork or an import makes) whose last
	// repeats one in the middle: stores check those with a set.
	many := []session.Entry{entry(t, "m00", "a0002", 0, 3)}
	for i := 1; i < 40; i++ {
		many = append(many, entry(t, fmt.Sprintf("m%02d", i), fmt.Sprintf("m%02d", i-1), 0, 3+i))
	}
	many = append(many, entry(t, "m17", "m39", 0, 43))
	cases := []struct {
		name  string
		opts  session.AppendOptions
		batch []session.Entry
		want  error
	}{
		{"stale IfLast", session.AppendOptions{IfLast: "a0001"}, good, session.ErrConflict},
		{"IfEmpty on a non-empty session", session.AppendOptions{IfEmpty: true}, good, session.ErrConflict},
		{"id already stored", session.AppendOptions{}, append(slices.Clone(good), entry(t, "a0000", "b2", 0, 5)), session.ErrConflict},
		{"id twice in the batch", session.AppendOptions{}, append(slices.Clone(good), entry(t, "b1", "b2", 0, 5)), session.ErrConflict},
		{"id twice in a batch of many", session.AppendOptions{}, many, session.ErrConflict},
		{"zero entry", session.AppendOptions{}, append(slices.Clone(good), session.Entry{}), nil},
	}
	for _, c := range cases {
		err := s.Append(ctx, "s-atomic", c.opts, c.batch...)
		if err == nil {
			t.Fatalf("%s: append succeeded", c.name)
		}
		if c.want != nil {
			wantErr(t, err, c.want, c.name)
		}
		if got := ids(load(t, s, "s-atomic")); !slices.Equal(got, []string{"a0000", "a0001", "a0002"}) {
			t.Fatalf("%s: a failed append changed the log: %v", c.name, got)
		}
	}
	if err := s.Append(ctx, "s-atomic", session.AppendOptions{IfLast: "a0002"}, good...); err != nil {
		t.Fatal(err)
	}
	if got := ids(load(t, s, "s-atomic")); !slices.Equal(got, []string{"a0000", "a0001", "a0002", "b1", "b2"}) {
		t.Fatalf("log %v", got)
	}
}

func testIfLast(t *testing.T, s session.Store) {
	ctx := context.Background()
	create(t, s, "s-cas")
	e := entries(t, "c", 3)
	wantErr(t, s.Append(ctx, "s-cas", session.AppendOptions{IfLast: "nothing"}, e[0]), session.ErrConflict, "IfLast on an empty session")
	if err := s.Append(ctx, "s-cas", session.AppendOptions{IfEmpty: true}, e[0]); err != nil {
		t.Fatalf("IfEmpty on an empty session: %v", err)
	}
	wantErr(t, s.Append(ctx, "s-cas", session.AppendOptions{IfEmpty: true}, e[1]), session.ErrConflict, "second IfEmpty")
	if err := s.Append(ctx, "s-cas", session.AppendOptions{IfLast: "c0000"}, e[1]); err != nil {
		t.Fatalf("IfLast on the last entry: %v", err)
	}
	wantErr(t, s.Append(ctx, "s-cas", session.AppendOptions{IfLast: "c0000"}, e[2]), session.ErrConflict, "IfLast on a stale entry")
	if got := ids(load(t, s, "s-cas")); !slices.Equal(got, []string{"c0000", "c0001"}) {
		t.Fatalf("log %v", got)
	}
}

// wireLines is a seed-format log with what stores must carry unchanged:
// unknown header fields, unknown entry types and fields, odd spacing and
// escapes, every known entry type.
var wireLines = []string{
	`{"type":"message","id":"m0000001","parentId":null,"timestamp":"2026-01-15T10:00:05.000Z","message":{"role":"user","content":[{"type":"text","text":"é \"quoted\"\n\ttab <html>"}],"timestamp":1768471204000},"futureField":[1,{"a":null}]}`,
	`{"type":"message","id":"m0000002","parentId":"m0000001","timestamp":"2026-01-15T10:00:07.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"toolu_1","name":"bash","arguments":{"command":"ls"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0.00030000000000000003,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.00030000000000000003}},"stopReason":"toolUse","timestamp":1768471206000}}`,
	`{"type":"message","id":"m0000003","parentId":"m0000002","timestamp":"2026-01-15T10:00:09.000Z","message":{"role":"toolResult","toolCallId":"toolu_1","toolName":"bash","content":[{"type":"text","text":"a\nb\n"}],"isError":false,"timestamp":1768471208000}}`,
	`{"type":"a_future_type","id":"f0000001","parentId":"m0000003","timestamp":"2026-01-15T10:00:10.000Z","whatever":{"deep":[true,false]}}`,
	`{ "type" : "label", "id":"l0000001","parentId":"f0000001","timestamp":"2026-01-15T10:00:11.000Z","targetId":"m0000001","label":"start" }`,
	`{"type":"compaction","id":"c0000001","parentId":"l0000001","timestamp":"2026-01-15T10:00:12.000Z","summary":"s","firstKeptEntryId":"m0000002","tokensBefore":5,"details":{"readFiles":[]}}`,
	`{"type":"session_info","id":"i0000001","parentId":"c0000001","timestamp":"2026-01-15T10:00:13.000Z","name":"Named \u00e9"}`,
}

func wireLog(t *testing.T, id string) *session.Log {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-01-15T10:00:01.000Z","cwd":"/home/dev/project","unknownHeaderField":{"k":"v"}}` + "\n")
	for _, l := range wireLines {
		b.WriteString(l + "\n")
	}
	l, err := session.DecodeLog([]byte(b.String()), &session.ReadOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func testLoadEqualsWritten(t *testing.T, s session.Store) {
	ctx := context.Background()
	l := wireLog(t, "s-wire")
	if err := s.Create(ctx, l.Header); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "s-wire", session.AppendOptions{}, l.Entries[:3]...); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "s-wire", session.AppendOptions{IfLast: "m0000003"}, l.Entries[3:]...); err != nil {
		t.Fatal(err)
	}
	got := load(t, s, "s-wire")
	for i, e := range got.Entries {
		if string(e.JSON()) != wireLines[i] {
			t.Fatalf("entry %d changed:\n got %s\nwant %s", i, e.JSON(), wireLines[i])
		}
	}
	if v, ok := got.Header.Extra.Get("unknownHeaderField"); !ok || string(v) != `{"k":"v"}` {
		t.Fatalf("unknown header field: %s %v", v, ok)
	}
	if a, b := encode(t, got), encode(t, l); a != b {
		t.Fatalf("log changed:\n got %s\nwant %s", a, b)
	}
}

func testRewrite(t *testing.T, s session.Store) {
	ctx := context.Background()
	l := wireLog(t, "s-rewrite")
	if err := s.Create(ctx, l.Header); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "s-rewrite", session.AppendOptions{}, l.Entries...); err != nil {
		t.Fatal(err)
	}
	h := l.Header.Clone()
	h.Title = "Rewritten"
	kept := []session.Entry{l.Entries[0], l.Entries[2], l.Entries[4]}
	if err := s.Rewrite(ctx, "s-rewrite", session.RewriteOptions{}, h, kept); err != nil {
		t.Fatal(err)
	}
	got := load(t, s, "s-rewrite")
	if want := (&session.Log{Header: h, Entries: kept}); encode(t, got) != encode(t, want) {
		t.Fatalf("after rewrite:\n got %s\nwant %s", encode(t, got), encode(t, want))
	}
	// Appends continue after the rewritten log; ids that were dropped are free.
	wantErr(t, s.Append(ctx, "s-rewrite", session.AppendOptions{IfLast: "i0000001"}, entry(t, "x1", "", 0, 0)), session.ErrConflict, "IfLast on a dropped entry")
	if err := s.Append(ctx, "s-rewrite", session.AppendOptions{IfLast: "l0000001"}, l.Entries[1]); err != nil {
		t.Fatalf("append after rewrite: %v", err)
	}
	if got := ids(load(t, s, "s-rewrite")); !slices.Equal(got, []string{"m0000001", "m0000003", "l0000001", "m0000002"}) {
		t.Fatalf("log %v", got)
	}
	// Rewriting to nothing leaves an empty session.
	if err := s.Rewrite(ctx, "s-rewrite", session.RewriteOptions{}, h, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(load(t, s, "s-rewrite").Entries); n != 0 {
		t.Fatalf("%d entries after rewrite to none", n)
	}
}

func listAll(t *testing.T, s session.Store, opts session.ListOptions) []session.SessionInfo {
	t.Helper()
	var out []session.SessionInfo
	for pages := 0; ; pages++ {
		p, err := s.List(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Sessions...)
		if p.Next == "" {
			return out
		}
		if pages > 1000 {
			t.Fatal("listing does not end")
		}
		opts.Cursor = p.Next
	}
}

func infoIDs(infos []session.SessionInfo) []string {
	out := make([]string, len(infos))
	for i, x := range infos {
		out[i] = x.ID
	}
	return out
}

func testList(t *testing.T, s session.Store) {
	ctx := context.Background()
	for i := range 6 {
		h := header(fmt.Sprintf("s-list-%d", i), []string{"/a", "/b"}[i%2])
		switch i {
		case 4:
			h.ParentSession = "s-list-0"
		case 5: // as pi writes a fork's parent: its file
			h.ParentSession = "/home/dev/.pi/agent/sessions/--a--/2026-01-15T10-00-00-000Z_s-list-0.jsonl"
		}
		if err := s.Create(ctx, h); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, h.ID, session.AppendOptions{}, entries(t, "e", i+1)...); err != nil {
			t.Fatal(err)
		}
	}
	// Touch s-list-1 last: it must come first.
	title, err := session.NewEntry(session.TypeSessionInfo, "title1", "e0001", base, session.SessionInfoEntry{Name: "Second"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "s-list-1", session.AppendOptions{}, title); err != nil {
		t.Fatal(err)
	}
	all := listAll(t, s, session.ListOptions{})
	if len(all) != 6 || all[0].ID != "s-list-1" {
		t.Fatalf("listing %v, want 6 with s-list-1 first", infoIDs(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].Updated.After(all[i-1].Updated) {
			t.Fatalf("not most recent first: %v", infoIDs(all))
		}
	}
	first := all[0]
	if first.Title != "Second" || first.Cwd != "/b" || first.Entries != 3 || first.Size <= 0 || !first.Created.Equal(base) {
		t.Fatalf("info %+v", first)
	}
	if got := infoIDs(listAll(t, s, session.ListOptions{Cwd: "/a"})); !slices.Equal(got, []string{"s-list-4", "s-list-2", "s-list-0"}) {
		t.Fatalf("cwd /a: %v", got)
	}
	// A parent named by id or by file path (session.ParentID) matches.
	if got := infoIDs(listAll(t, s, session.ListOptions{ParentSession: "s-list-0"})); !slices.Equal(got, []string{"s-list-5", "s-list-4"}) {
		t.Fatalf("children of s-list-0: %v", got)
	}
	// The filter is a session id, matched exactly: anything else (a path,
	// a pattern, a value no id has) matches no session, not even those
	// without a parent.
	for _, p := range []string{"s-list-0/", "/", "s-list-%", "s-list-_", "%", "s-list", "nobody", "--a--/2026-01-15T10-00-00-000Z_s-list-0.jsonl"} {
		if got := infoIDs(listAll(t, s, session.ListOptions{ParentSession: p})); len(got) != 0 {
			t.Fatalf("children of %q: %v, want none", p, got)
		}
	}
	mid := all[3].Updated
	after := listAll(t, s, session.ListOptions{UpdatedAfter: mid})
	before := listAll(t, s, session.ListOptions{UpdatedBefore: mid})
	if !slices.Equal(infoIDs(after), infoIDs(all[:3])) || !slices.Equal(infoIDs(before), infoIDs(all[4:])) {
		t.Fatalf("updated after %v / before %v around %s", infoIDs(after), infoIDs(before), all[3].ID)
	}
	if _, err := s.List(ctx, session.ListOptions{Cursor: "not a cursor"}); err == nil {
		t.Fatal("invalid cursor accepted")
	}
}

func testListPaging(t *testing.T, s session.Store) {
	ctx := context.Background()
	const n = 23
	for i := range n {
		create(t, s, fmt.Sprintf("s-page-%02d", i))
	}
	all := listAll(t, s, session.ListOptions{})
	if len(all) != n {
		t.Fatalf("%d sessions listed, want %d", len(all), n)
	}
	for _, limit := range []int{1, 2, 5, n, n + 1} {
		paged := listAll(t, s, session.ListOptions{Limit: limit})
		if !slices.Equal(infoIDs(paged), infoIDs(all)) {
			t.Fatalf("limit %d: %v, want %v", limit, infoIDs(paged), infoIDs(all))
		}
		p, err := s.List(ctx, session.ListOptions{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Sessions) > limit {
			t.Fatalf("limit %d: page of %d", limit, len(p.Sessions))
		}
	}
	// A session updated while paging moves to the front and is not repeated.
	p, err := s.List(ctx, session.ListOptions{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, p.Sessions[0].ID, session.AppendOptions{}, entry(t, "late", "", 0, 0)); err != nil {
		t.Fatal(err)
	}
	rest := listAll(t, s, session.ListOptions{Limit: 5, Cursor: p.Next})
	seen := map[string]bool{}
	for _, x := range append(p.Sessions, rest...) {
		if seen[x.ID] {
			t.Fatalf("%s listed twice", x.ID)
		}
		seen[x.ID] = true
	}
	if len(seen) != n {
		t.Fatalf("%d sessions seen while paging, want %d", len(seen), n)
	}
}

func testDelete(t *testing.T, s session.Store) {
	ctx := context.Background()
	create(t, s, "s-del")
	create(t, s, "s-keep")
	if err := s.Append(ctx, "s-del", session.AppendOptions{}, entries(t, "d", 2)...); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "s-del"); err != nil {
		t.Fatal(err)
	}
	_, err := s.Load(ctx, "s-del")
	wantErr(t, err, session.ErrNotFound, "Load after Delete")
	wantErr(t, s.Delete(ctx, "s-del"), session.ErrNotFound, "second Delete")
	if got := infoIDs(listAll(t, s, session.ListOptions{})); !slices.Equal(got, []string{"s-keep"}) {
		t.Fatalf("listing after delete: %v", got)
	}
	create(t, s, "s-del") // the id is free again, and empty
	if n := len(load(t, s, "s-del").Entries); n != 0 {
		t.Fatalf("recreated session has %d entries", n)
	}
}

type payload struct {
	Writer int `json:"writer"`
	Seq    int `json:"seq"`
}

func checkWriters(t *testing.T, l *session.Log, writers, each int) {
	t.Helper()
	if len(l.Entries) != writers*each {
		t.Fatalf("%d entries, want %d", len(l.Entries), writers*each)
	}
	next := make([]int, writers)
	for _, e := range l.Entries {
		var p payload
		if err := e.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Seq != next[p.Writer] {
			t.Fatalf("writer %d: entry %d after %d", p.Writer, p.Seq, next[p.Writer]-1)
		}
		next[p.Writer]++
	}
}

func testConcurrentAppends(t *testing.T, s session.Store) {
	ctx := context.Background()
	create(t, s, "s-conc")
	const writers, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				var batch []session.Entry
				if i%4 == 0 && i+1 < each {
					continue // appended with the next one, as a pair
				}
				if i%4 == 1 {
					batch = append(batch, entry(t, fmt.Sprintf("w%d-%d", w, i-1), "", w, i-1))
				}
				batch = append(batch, entry(t, fmt.Sprintf("w%d-%d", w, i), "", w, i))
				if err := s.Append(ctx, "s-conc", session.AppendOptions{}, batch...); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkWriters(t, load(t, s, "s-conc"), writers, each)
}

func testConcurrentConditionalAppends(t *testing.T, s session.Store) {
	ctx := context.Background()
	create(t, s, "s-cas-conc")
	const writers, each = 4, 15
	var wg sync.WaitGroup
	var mu sync.Mutex
	conflicts := 0
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; {
				l, err := s.Load(ctx, "s-cas-conc")
				if err != nil {
					errs <- err
					return
				}
				opts := session.AppendOptions{IfEmpty: len(l.Entries) == 0}
				parent := ""
				if n := len(l.Entries); n > 0 {
					opts.IfLast = l.Entries[n-1].ID()
					parent = opts.IfLast
				}
				err = s.Append(ctx, "s-cas-conc", opts, entry(t, fmt.Sprintf("w%d-%d", w, i), parent, w, i))
				switch {
				case err == nil:
					i++
				case errors.Is(err, session.ErrConflict):
					mu.Lock()
					conflicts++
					mu.Unlock()
				default:
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	l := load(t, s, "s-cas-conc")
	checkWriters(t, l, writers, each)
	// Each entry's parent is the entry before it: no writer appended on a
	// stale view.
	for i := 1; i < len(l.Entries); i++ {
		if l.Entries[i].ParentID() != l.Entries[i-1].ID() {
			t.Fatalf("entry %d appended on a stale last entry", i)
		}
	}
	t.Logf("%d conflicts among %d conditional appends", conflicts, writers*each)
}

func testContextCanceled(t *testing.T, s session.Store) {
	create(t, s, "s-ctx")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e := entry(t, "x", "", 0, 0)
	checks := map[string]error{
		"Create":  s.Create(ctx, header("s-ctx2", "")),
		"Append":  s.Append(ctx, "s-ctx", session.AppendOptions{}, e),
		"Rewrite": s.Rewrite(ctx, "s-ctx", session.RewriteOptions{}, header("s-ctx", ""), []session.Entry{e}),
		"Delete":  s.Delete(ctx, "s-ctx"),
	}
	_, checks["Load"] = s.Load(ctx, "s-ctx")
	_, checks["List"] = s.List(ctx, session.ListOptions{})
	for name, err := range checks {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context: %v", name, err)
		}
	}
	l := load(t, s, "s-ctx")
	if len(l.Entries) != 0 {
		t.Fatal("a canceled append was stored")
	}
	if _, err := s.Load(context.Background(), "s-ctx2"); !errors.Is(err, session.ErrNotFound) {
		t.Fatal("a canceled create was stored")
	}
}

func testCopySemantics(t *testing.T, s session.Store) {
	ctx := context.Background()
	l := wireLog(t, "s-copy")
	h := l.Header.Clone()
	if err := s.Create(ctx, h); err != nil {
		t.Fatal(err)
	}
	want := encode(t, &session.Log{Header: l.Header.Clone(), Entries: slices.Clone(l.Entries)})
	batch := slices.Clone(l.Entries)
	if err := s.Append(ctx, "s-copy", session.AppendOptions{}, batch...); err != nil {
		t.Fatal(err)
	}
	// Change what was passed in.
	batch[0] = batch[1]
	h.Title = "changed"
	h.Extra[0].Value[2] = 'X'
	// Change what comes out.
	got := load(t, s, "s-copy")
	got.Entries[0] = got.Entries[2]
	got.Entries = append(got.Entries[:1], got.Entries[3:]...)
	got.Header.Title = "changed too"
	got.Header.Extra[0].Value[2] = 'Y'
	b := got.Entries[1].JSON()
	b[0] = '['
	if again := encode(t, load(t, s, "s-copy")); again != want {
		t.Fatalf("stored log changed by its callers:\n got %s\nwant %s", again, want)
	}
	// And after a rewrite.
	kept := slices.Clone(l.Entries[:2])
	if err := s.Rewrite(ctx, "s-copy", session.RewriteOptions{}, l.Header, kept); err != nil {
		t.Fatal(err)
	}
	kept[0] = l.Entries[5]
	if got := ids(load(t, s, "s-copy")); !slices.Equal(got, []string{"m0000001", "m0000002"}) {
		t.Fatalf("rewritten log changed by its caller: %v", got)
	}
}

// testSessionRoundTrip drives a Session on the store: close, reopen, and
// the context, leaf and labels are the same.
func testSessionRoundTrip(t *testing.T, s session.Store) {
	ctx := context.Background()
	sess, err := session.Create(ctx, s, &session.CreateOptions{ID: "s-session", Cwd: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	must := func(_ session.Entry, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	u, err := sess.Append(ctx, session.UserText("List the files"))
	if err != nil {
		t.Fatal(err)
	}
	must(sess.Append(ctx, session.Assistant(session.Text("Listing."), session.ToolCall("call_1", "bash", json.RawMessage(`{"command":"ls"}`))).
		WithModel("anthropic-messages", "anthropic", "claude-sonnet-4-5")))
	must(sess.Append(ctx, session.ToolResult("call_1", "bash", "a.go\nb.go\n")))
	a, err := sess.Append(ctx, session.AssistantText("Two files.").WithModel("anthropic-messages", "anthropic", "claude-sonnet-4-5"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Label(ctx, u.ID(), "start"); err != nil {
		t.Fatal(err)
	}
	if err := sess.Branch(ctx, u.ID()); err != nil {
		t.Fatal(err)
	}
	must(sess.Append(ctx, session.AssistantText("Another answer.")))
	if err := sess.Branch(ctx, a.ID()); err != nil {
		t.Fatal(err)
	}
	before := sess.Context()
	beforeJSON, _ := json.Marshal(before)
	leaf := sess.LeafID()
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Append(ctx, session.UserText("late")); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("append after Close: %v", err)
	}

	re, err := session.Open(ctx, s, "s-session")
	if err != nil {
		t.Fatal(err)
	}
	if re.LeafID() != leaf || leaf != a.ID() {
		t.Fatalf("leaf %s after reopen, want %s", re.LeafID(), leaf)
	}
	afterJSON, _ := json.Marshal(re.Context())
	if string(afterJSON) != string(beforeJSON) {
		t.Fatalf("context changed by reopen:\n got %s\nwant %s", afterJSON, beforeJSON)
	}
	if re.LabelOf(u.ID()) != "start" {
		t.Fatalf("label lost: %q", re.LabelOf(u.ID()))
	}
	if n := len(re.Context().Messages); n != 4 {
		t.Fatalf("%d messages, want 4", n)
	}
	if _, err := re.Append(ctx, session.UserText("continue")); err != nil {
		t.Fatal(err)
	}
}

// testSharedSession has two handles write to one session: nothing is
// lost, and each sees the other's entries after a reload.
func testSharedSession(t *testing.T, s session.Store) {
	ctx := context.Background()
	a, err := session.Create(ctx, s, &session.CreateOptions{ID: "s-shared"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := session.Open(ctx, s, "s-shared")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for k, h := range []*session.Session{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				if _, err := h.Append(ctx, session.UserText(fmt.Sprintf("writer %d message %d", k, i))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, h := range []*session.Session{a, b} {
		if err := h.Reload(ctx); err != nil {
			t.Fatal(err)
		}
		if h.Len() != 40 {
			t.Fatalf("handle sees %d entries, want 40", h.Len())
		}
		// Each handle's own branch holds its 20 messages in order.
		if n := len(h.Context().Messages); n != 20 {
			t.Fatalf("handle's branch has %d messages, want 20", n)
		}
	}
	if n := len(load(t, s, "s-shared").Entries); n != 40 {
		t.Fatalf("%d entries stored, want 40", n)
	}
}

// testConditionalRewrite: a rewrite decided on a log that has changed
// since fails with ErrConflict and changes nothing.
func testConditionalRewrite(t *testing.T, s session.Store) {
	ctx := context.Background()
	create(t, s, "s-cond")
	all := entries(t, "r", 3)
	if err := s.Append(ctx, "s-cond", session.AppendOptions{}, all...); err != nil {
		t.Fatal(err)
	}
	h := load(t, s, "s-cond").Header
	kept := all[:1]
	for _, o := range []session.RewriteOptions{
		{IfEmpty: true},
		{IfLast: "r0001"},
		{IfLast: "missing"},
		{IfLast: "r0002", IfEntries: 2},
		{IfLast: "r0002", IfEntries: 4},
	} {
		wantErr(t, s.Rewrite(ctx, "s-cond", o, h, kept), session.ErrConflict, fmt.Sprintf("Rewrite with %+v", o))
		if got := ids(load(t, s, "s-cond")); !slices.Equal(got, []string{"r0000", "r0001", "r0002"}) {
			t.Fatalf("a refused rewrite (%+v) changed the log: %v", o, got)
		}
	}
	if err := s.Rewrite(ctx, "s-cond", session.RewriteOptions{IfLast: "r0002", IfEntries: 3}, h, kept); err != nil {
		t.Fatalf("rewrite on the current log: %v", err)
	}
	if got := ids(load(t, s, "s-cond")); !slices.Equal(got, []string{"r0000"}) {
		t.Fatalf("log %v", got)
	}
	// Emptied, IfEmpty holds.
	if err := s.Rewrite(ctx, "s-cond", session.RewriteOptions{IfLast: "r0000", IfEntries: 1}, h, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Rewrite(ctx, "s-cond", session.RewriteOptions{IfEmpty: true}, h, kept); err != nil {
		t.Fatalf("IfEmpty on an empty session: %v", err)
	}
}

// testRewriteRacingAppends: writers append while a rewriter keeps
// dropping entries of its own, each rewrite conditional on the log it
// read; no writer's entry is ever lost, and their order holds.
func testRewriteRacingAppends(t *testing.T, s session.Store) {
	ctx := context.Background()
	create(t, s, "s-race")
	const writers, each = 4, 30
	var wg sync.WaitGroup
	errs := make(chan error, writers+1)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := s.Append(ctx, "s-race", session.AppendOptions{}, entry(t, fmt.Sprintf("w%d-%d", w, i), "", w, i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	rewrites, conflicts := 0, 0
	go func() {
		defer close(done)
		last := false // once the writers are done: until a rewrite succeeds
		for n := 0; ; n++ {
			select {
			case <-stop:
				if last = true; rewrites > 0 {
					return
				}
			default:
			}
			// Add an entry of its own, then rewrite the log without it.
			if err := s.Append(ctx, "s-race", session.AppendOptions{}, entry(t, fmt.Sprintf("tmp-%d", n), "", writers, n)); err != nil {
				errs <- err
				return
			}
			l, err := s.Load(ctx, "s-race")
			if err != nil {
				errs <- err
				return
			}
			var kept []session.Entry
			for _, e := range l.Entries {
				if !strings.HasPrefix(e.ID(), "tmp-") {
					kept = append(kept, e)
				}
			}
			o := session.RewriteOptions{IfLast: l.Entries[len(l.Entries)-1].ID(), IfEntries: len(l.Entries)}
			switch err := s.Rewrite(ctx, "s-race", o, l.Header, kept); {
			case err == nil:
				rewrites++
				if last {
					return
				}
			case errors.Is(err, session.ErrConflict):
				conflicts++
				if last {
					errs <- fmt.Errorf("a rewrite of a log no one else was writing to was refused: %w", err)
					return
				}
			default:
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-done
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	l := load(t, s, "s-race")
	var theirs []session.Entry
	for _, e := range l.Entries {
		if !strings.HasPrefix(e.ID(), "tmp-") {
			theirs = append(theirs, e)
		}
	}
	checkWriters(t, &session.Log{Entries: theirs}, writers, each)
	if rewrites == 0 {
		t.Fatal("no rewrite succeeded")
	}
	t.Logf("%d rewrites, %d refused, raced %d appends", rewrites, conflicts, writers*each)
}

// prunable makes a session whose log Prune shrinks: turns, then a
// compaction that keeps only the last of them.
func prunable(t *testing.T, s session.Store, id string) *session.Session {
	t.Helper()
	ctx := context.Background()
	h, err := session.Create(ctx, s, &session.CreateOptions{ID: id, Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	for k := range 4 {
		call := fmt.Sprintf("call_%d", k)
		for _, m := range []*session.Message{
			session.UserText(fmt.Sprintf("request %d %s", k, strings.Repeat("x", 200))),
			session.Assistant(session.ToolCall(call, "read", json.RawMessage(`{"path":"a.go"}`))),
			session.ToolResult(call, "read", strings.Repeat("y", 200)),
			session.AssistantText(fmt.Sprintf("answer %d", k)),
		} {
			if _, err := h.Append(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := h.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{KeepRecentTokens: 1}); err != nil {
		t.Fatal(err)
	}
	return h
}

// testPruneSeesOtherWriters: a handle that prunes without having seen
// what another handle appended keeps it.
func testPruneSeesOtherWriters(t *testing.T, s session.Store) {
	ctx := context.Background()
	a := prunable(t, s, "s-prune-other")
	b, err := session.Open(ctx, s, a.ID())
	if err != nil {
		t.Fatal(err)
	}
	mine, err := b.Append(ctx, session.UserText("appended by B, not seen by A"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Prune(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Dropped == 0 {
		t.Fatal("nothing pruned")
	}
	if !slices.Contains(ids(load(t, s, a.ID())), mine.ID()) {
		t.Fatal("the prune dropped an entry another handle appended")
	}
	if _, ok := a.Entry(mine.ID()); !ok {
		t.Fatal("the pruning handle did not learn of the other's entry")
	}
	if _, err := b.Append(ctx, session.AssistantText("still here")); err != nil {
		t.Fatal(err)
	}
}

// testPruneRacingAppends: handles append while another prunes and
// compacts again and again; every append that returned is kept.
func testPruneRacingAppends(t *testing.T, s session.Store) {
	ctx := context.Background()
	p := prunable(t, s, "s-prune-race")
	const writers, each = 3, 20
	var wg sync.WaitGroup
	acked := make(chan string, writers*each)
	errs := make(chan error, writers+1)
	for w := range writers {
		h, err := session.Open(ctx, s, p.ID())
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				e, err := h.Append(ctx, session.UserText(fmt.Sprintf("writer %d message %d", w, i)))
				if err != nil {
					errs <- err
					return
				}
				acked <- e.ID()
			}
		}()
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	prunes := 0
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := p.Prune(ctx, nil); err != nil {
				errs <- err
				return
			}
			prunes++
			_, err := p.Compact(ctx, session.ExtractiveSummarizer{}, &session.CompactionOptions{KeepRecentTokens: 1})
			if err != nil && !errors.Is(err, session.ErrNothingToCompact) {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-done
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	close(acked)
	stored := ids(load(t, s, p.ID()))
	for id := range acked {
		if !slices.Contains(stored, id) {
			t.Fatalf("acknowledged entry %s was dropped by a prune", id)
		}
	}
	t.Logf("%d prunes raced %d appends", prunes, writers*each)
}

// testLoadTail checks the TailLoader ability, for stores that have it.
func testLoadTail(t *testing.T, s session.Store) {
	tl, ok := s.(session.TailLoader)
	if !ok {
		t.Skipf("%T is no session.TailLoader: LoadTail not checked (sessions load whole)", s)
	}
	ctx := context.Background()
	if _, err := tl.LoadTail(ctx, "s-missing", 0, ""); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("LoadTail of a missing session: %v", err)
	}
	create(t, s, "s-tail")
	all := entries(t, "t", 5)
	if err := s.Append(ctx, "s-tail", session.AppendOptions{}, all[:3]...); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "s-tail", session.AppendOptions{}, all[3:]...); err != nil {
		t.Fatal(err)
	}
	whole := load(t, s, "s-tail")
	tail := func(n int, last string) *session.Log {
		t.Helper()
		l, err := tl.LoadTail(ctx, "s-tail", n, last)
		if err != nil {
			t.Fatalf("LoadTail(%d, %q): %v", n, last, err)
		}
		if encode(t, &session.Log{Header: l.Header}) != encode(t, &session.Log{Header: whole.Header}) {
			t.Fatalf("LoadTail(%d, %q): header differs from Load's", n, last)
		}
		return l
	}
	for _, c := range []struct {
		n    int
		last string
		want []string
	}{
		{0, "", []string{"t0000", "t0001", "t0002", "t0003", "t0004"}},
		{1, "t0000", []string{"t0001", "t0002", "t0003", "t0004"}},
		{3, "t0002", []string{"t0003", "t0004"}},
		{5, "t0004", []string{}},
	} {
		l := tail(c.n, c.last)
		if got := ids(l); !slices.Equal(got, c.want) {
			t.Fatalf("LoadTail(%d, %q) = %v, want %v", c.n, c.last, got, c.want)
		}
		for i, e := range l.Entries {
			if !bytes.Equal(e.JSON(), whole.Entries[c.n+i].JSON()) {
				t.Fatalf("LoadTail(%d): entry %s differs from Load's", c.n, e.ID())
			}
		}
	}
	for _, c := range []struct {
		n    int
		last string
	}{{3, "t0001"}, {6, "t0005"}, {2, "nope"}, {5, "t0003"}} {
		if _, err := tl.LoadTail(ctx, "s-tail", c.n, c.last); !errors.Is(err, session.ErrConflict) {
			t.Fatalf("LoadTail(%d, %q) on a log that does not start that way: %v, want ErrConflict", c.n, c.last, err)
		}
	}
	// A rewrite that drops an entry is noticed, though the last stays.
	kept := []session.Entry{all[0], all[2], all[3], all[4]}
	if err := s.Rewrite(ctx, "s-tail", session.RewriteOptions{IfLast: "t0004", IfEntries: 5}, whole.Header, kept); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.LoadTail(ctx, "s-tail", 5, "t0004"); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("LoadTail after a rewrite: %v, want ErrConflict", err)
	}
	if got := ids(tail(4, "t0004")); len(got) != 0 {
		t.Fatalf("LoadTail at the rewritten end: %v", got)
	}
	// Appends after it come in the tail.
	more := entry(t, "t0005", "t0004", 0, 5)
	if err := s.Append(ctx, "s-tail", session.AppendOptions{IfLast: "t0004"}, more); err != nil {
		t.Fatal(err)
	}
	if got := ids(tail(4, "t0004")); !slices.Equal(got, []string{"t0005"}) {
		t.Fatalf("LoadTail after an append: %v", got)
	}
}

// testUnusualStrings: every store takes a header whose strings hold NUL,
// other control characters, and bytes that are not UTF-8, and keeps them
// as a JSON string holds them (storekit.StoredString): the same in every
// store, so that a session moves between stores unchanged.
func testUnusualStrings(t *testing.T, s session.Store) {
	ctx := context.Background()
	h := header("s-odd", "/w/a\x00b\x01c\xffd/é\u2028")
	h.Title = "title \x00 \xfe\xff \t end"
	h.ParentSession = "s-parent\x00x"
	if err := s.Create(ctx, h); err != nil {
		t.Fatalf("Create: %v", err)
	}
	e := entry(t, "o1", "", 0, 0)
	if err := s.Append(ctx, "s-odd", session.AppendOptions{}, e); err != nil {
		t.Fatal(err)
	}
	want := h.Clone()
	want.Cwd, want.Title, want.ParentSession = storekit.StoredString(h.Cwd), storekit.StoredString(h.Title), storekit.StoredString(h.ParentSession)
	if want.Cwd != "/w/a\x00b\x01c\uFFFDd/é\u2028" || want.Title != "title \x00 \uFFFD\uFFFD \t end" {
		t.Fatalf("StoredString: %q %q", want.Cwd, want.Title)
	}
	l := load(t, s, "s-odd")
	if l.Header.Cwd != want.Cwd || l.Header.Title != want.Title || l.Header.ParentSession != want.ParentSession {
		t.Fatalf("loaded header %q %q %q, want %q %q %q", l.Header.Cwd, l.Header.Title, l.Header.ParentSession, want.Cwd, want.Title, want.ParentSession)
	}
	for _, cwd := range []string{h.Cwd, want.Cwd} {
		got := listAll(t, s, session.ListOptions{Cwd: cwd})
		if len(got) != 1 || got[0].ID != "s-odd" || got[0].Cwd != want.Cwd || got[0].Title != want.Title {
			t.Fatalf("listing by cwd %q: %+v", cwd, got)
		}
	}
	// It moves to another store and back unchanged.
	mem := session.NewMemoryStore()
	if err := session.Copy(ctx, mem, s, "s-odd"); err != nil {
		t.Fatalf("Copy out: %v", err)
	}
	if err := s.Delete(ctx, "s-odd"); err != nil {
		t.Fatal(err)
	}
	if err := session.Copy(ctx, s, mem, "s-odd"); err != nil {
		t.Fatalf("Copy back: %v", err)
	}
	if a, b := encode(t, load(t, s, "s-odd")), encode(t, l); a != b {
		t.Fatalf("after a round trip:\n got %s\nwant %s", a, b)
	}
}

// testRetriedAppend: an append whose entries are all in the log already,
// byte for byte, is the retry of one that happened (its answer was lost)
// and succeeds without writing anything, whatever its conditions; the
// same ids with other content, or some of them new, are a conflict. A
// Session whose store committed a turn and then failed stores it once
// when the host retries.
func testRetriedAppend(t *testing.T, s session.Store) {
	ctx := context.Background()
	create(t, s, "s-retry")
	first := entries(t, "r", 3)
	if err := s.Append(ctx, "s-retry", session.AppendOptions{IfEmpty: true}, first...); err != nil {
		t.Fatal(err)
	}
	other := entry(t, "o1", "r0002", 1, 9)
	if err := s.Append(ctx, "s-retry", session.AppendOptions{IfLast: "r0002"}, other); err != nil {
		t.Fatal(err)
	}
	want := []string{"r0000", "r0001", "r0002", "o1"}
	retries := []struct {
		name  string
		opts  session.AppendOptions
		batch []session.Entry
	}{
		{"same call, IfEmpty", session.AppendOptions{IfEmpty: true}, first},
		{"unconditional", session.AppendOptions{}, first},
		{"IfLast of before", session.AppendOptions{IfLast: "r0002"}, first[2:]},
		{"IfLast of now", session.AppendOptions{IfLast: "o1"}, []session.Entry{other}},
		{"part of an earlier append", session.AppendOptions{IfLast: "r0000"}, first[1:2]},
	}
	for _, c := range retries {
		if err := s.Append(ctx, "s-retry", c.opts, c.batch...); err != nil {
			t.Fatalf("%s: a retried append failed: %v", c.name, err)
		}
		if got := ids(load(t, s, "s-retry")); !slices.Equal(got, want) {
			t.Fatalf("%s: log %v, want %v", c.name, got, want)
		}
	}
	changed := entry(t, "r0001", "r0000", 7, 1) // same id, other bytes
	refused := []struct {
		name  string
		batch []session.Entry
	}{
		{"same id, other content", []session.Entry{changed}},
		{"some entries new", []session.Entry{first[2], entry(t, "n1", "r0002", 0, 10)}},
		{"new then stored", []session.Entry{entry(t, "n1", "o1", 0, 10), other}},
	}
	for _, c := range refused {
		wantErr(t, s.Append(ctx, "s-retry", session.AppendOptions{}, c.batch...), session.ErrConflict, c.name)
		if got := ids(load(t, s, "s-retry")); !slices.Equal(got, want) {
			t.Fatalf("%s: log %v, want %v", c.name, got, want)
		}
	}

	// Through a Session: the store commits, then its answer is lost.
	lossy := &LostReply{Store: s}
	sess, err := session.Create(ctx, lossy, &session.CreateOptions{ID: "s-retry-session"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Append(ctx, session.UserText("hello")); err != nil {
		t.Fatal(err)
	}
	turn := []*session.Message{
		session.AssistantText("Running.").WithModel("anthropic-messages", "anthropic", "m"),
		session.UserText("go on"),
	}
	lossy.Arm(1)
	if err := sess.SaveTurn(ctx, turn, nil); !errors.Is(err, ErrReplyLost) {
		t.Fatalf("SaveTurn with its reply lost: %v", err)
	}
	if err := sess.SaveTurn(ctx, turn, nil); err != nil {
		t.Fatalf("retried SaveTurn: %v", err)
	}
	lossy.Arm(1)
	if _, err := sess.Append(ctx, session.UserText("once")); !errors.Is(err, ErrReplyLost) {
		t.Fatalf("Append with its reply lost: %v", err)
	}
	if _, err := sess.Append(ctx, session.UserText("once")); err != nil {
		t.Fatalf("retried Append: %v", err)
	}
	lossy.Arm(1)
	if err := sess.SetTitle(ctx, "retried"); !errors.Is(err, ErrReplyLost) {
		t.Fatalf("SetTitle with its reply lost: %v", err)
	}
	if err := sess.SetTitle(ctx, "retried"); err != nil {
		t.Fatalf("retried SetTitle: %v", err)
	}
	path, _ := sess.PathTo(sess.LeafID())
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	re, err := session.Open(ctx, s, "s-retry-session")
	if err != nil {
		t.Fatal(err)
	}
	if re.Len() != 5 || len(re.Leaves()) != 1 || re.Title() != "retried" {
		t.Fatalf("after retries: %d entries, %d leaves, title %q; want 5, 1, retried", re.Len(), len(re.Leaves()), re.Title())
	}
	if got, _ := re.PathTo(re.LeafID()); len(got) != len(path) || got[len(got)-1].ID() != path[len(path)-1].ID() {
		t.Fatalf("reopened path ends at %s, the handle's at %s", got[len(got)-1].ID(), path[len(path)-1].ID())
	}
	var texts []string
	for _, m := range re.Context().Messages {
		texts = append(texts, m.Text())
	}
	if !slices.Equal(texts, []string{"hello", "Running.", "go on", "once"}) {
		t.Fatalf("context %q", texts)
	}
}

// ErrReplyLost is the error of a LostReply store whose append committed.
var ErrReplyLost = errors.New("storetest: the append committed, its answer was lost")

// LostReply is a Store whose next armed appends commit and then fail, as
// when a connection drops after the database committed: the host cannot
// tell the write happened.
type LostReply struct {
	session.Store
	mu    sync.Mutex
	armed int
}

// Arm makes the next n appends that succeed report ErrReplyLost.
func (l *LostReply) Arm(n int) {
	l.mu.Lock()
	l.armed = n
	l.mu.Unlock()
}

// Append implements session.Store.
func (l *LostReply) Append(ctx context.Context, id string, opts session.AppendOptions, entries ...session.Entry) error {
	err := l.Store.Append(ctx, id, opts, entries...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && l.armed > 0 {
		l.armed--
		return ErrReplyLost
	}
	return err
}
