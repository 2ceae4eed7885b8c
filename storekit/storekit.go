// Package storekit is what a new Store is written from: the rules the
// module's stores share, and the checklist below. Hosts do not need it.
//
// A Store keeps bytes; every tree rule lives in session.Session. The
// in-tree stores (MemoryStore, FileStore, pgstore) follow these rules
// through this package's functions; a new one should too.
//
// # The rules, as functions
//
//   - CheckEntries, before anything of an append or a creation with
//     entries is written: no zero Entry, no id twice in one append.
//   - CheckAppend, under the same lock or transaction as the write: the
//     IfEmpty and IfLast conditions, after recognising a retried append
//     of entries the session holds already (that append succeeds and
//     writes nothing).
//   - CompareInfo, the order of every listing; Cursor and ParseCursor, a
//     position in it; Page, a page of a listing made in memory.
//   - StoredString, a header's strings as stored, and the strings a
//     listing is filtered by; CwdDir, the seed (pi) layout's directory.
//
// # The checklist
//
// Implement session.Store, return the session package's sentinel errors
// wrapped with %w (ErrNotFound, ErrExists, ErrConflict, ErrCorrupt,
// ErrTooLarge, ErrInvalidID ...; set the file of a *session.CorruptError
// with session.WithPath when the store reads files), accept exactly
// session.ValidateID's ids, apply session.Limits, and migrate raw lines
// of an older format with session.Migrate. Then pass storetest.Run
// (the conformance suite): every case of the Store contract runs on every
// store. The optional abilities (session's abilities.go) are each checked
// where the store has them; where it lacks one, the cases below skip
// with a message naming it (a case that checks more, partly, logs what
// it left unchecked):
//
//	ability                      storetest cases (skipped when absent)
//	session.TailLoader           LoadTail
//	session.EntryCreator         CreateWithEntries
//	session.BlobStore (BlobsOf)  Blobs, BlobTouch, CollectBlobs*; parts of
//	                             DeleteWithBlobsAndChildren, TenantIsolation
//	session.BlobCollector        CollectBlobs, CollectBlobsDeletedSession,
//	                             CollectBlobsConcurrentWriter
//	session.BlobSweeper          part of BlobTouch and of
//	                             CollectBlobsConcurrentWriter (logged)
//	session.SharedStateStore     StateAtEntry/SharedScopes
//	session.Archiver             Archive, SweepArchive; part of Events
//	session.CompactionMarker     Compacting
//	session.ConditionalRemover   ConditionalRemover
//	session.Subscriber           Events, SlowSubscriber
//
// Abilities storetest does not check on their own, used by Session and
// CollectBlobs when present: session.Flusher (appends are buffered:
// Session.Flush, and the SyncOnFlush policy, call it),
// session.SessionCloser (resources per session, let go at
// Session.Close), session.ArchiveCompressor (Sweep's compression of
// archived sessions), session.BlobBatcher and session.BlobPinner (blob
// writes made durable in batches, and pins that spare a writer's blobs
// from a collection: a store with blobs beside writers in other
// processes needs them).
//
// A store that wraps another (a middleware) implements only the
// abilities its job allows it to pass on, each by a method; it has an
// Unwrap() Store method only if it changes nothing that an ability
// reads or writes, since the session package then looks through it (see
// abilities.go).
//
// It imports the session package and the module's internal rules.
package storekit

import (
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/names"
	"github.com/agentsession/session/internal/storerule"
)

// Cursor returns the cursor that continues a listing after info:
// "<unix nanos>.<id>". Stores use it so that cursors mean the same
// everywhere.
func Cursor(info session.SessionInfo) string { return names.Cursor(info.Updated, info.ID) }

// ParseCursor reads a cursor made by Cursor: the update time and id of
// the last session of the previous page, for stores that page in a
// query (WHERE (updated, id) < (...)); "" is not a cursor.
func ParseCursor(c string) (updated time.Time, id string, err error) { return names.ParseCursor(c) }

// StoredString returns s as every store keeps a header's strings (the
// working directory, the title, the parent): as a JSON string holds it,
// so the same in a file, in memory and in a database. Valid UTF-8 is kept
// as it is, NUL and other control characters included; each byte of s
// that is not valid UTF-8 becomes U+FFFD, as JSON encoding makes it.
// Stores apply it to what they are given, and to the strings a listing
// is filtered by.
func StoredString(s string) string { return names.StoredString(s) }

// CwdDir returns the directory name the seed layout (FileStore, pi)
// gives the sessions of the working directory cwd: cwd without its
// leading separator, '/', '\' and ':' turned into '-', between "--" and
// "--" (control characters turned into '-' too; bytes that are not UTF-8
// become U+FFFD, as in the header). A name longer than file systems allow
// (255 bytes), for a deep working directory, keeps its first bytes and
// ends with '-', 16 hexadecimal digits of the SHA-256 of cwd, and "--":
// pi, which has no such rule, cannot create sessions for such a
// directory at all.
func CwdDir(cwd string) string { return names.CwdDir(cwd) }

// CheckEntries rejects the entries of an append (or of a creation with
// entries) that no store keeps: a zero Entry (an error), or an id twice
// in the one append (an error wrapping session.ErrConflict). Stores call
// it before anything is written.
func CheckEntries(entries []session.Entry) error {
	return storerule.CheckEntries(session.ErrConflict, entries, session.Entry.IsZero, session.Entry.ID)
}

// CheckAppend applies the conditions of an append (opts.IfEmpty,
// opts.IfLast) to a session whose last stored entry is last ("" when it
// has none): nil, or an error wrapping session.ErrConflict that says
// what was expected and found. A store checks under the same lock or
// transaction as its write, after it has recognised a retried append of
// entries it holds already (which succeeds; see storetest).
func CheckAppend(opts session.AppendOptions, last string) error {
	return storerule.CheckAppend(session.ErrConflict, opts.IfEmpty, opts.IfLast, last)
}

// CompareInfo is the order of every listing: the most recently updated
// session first, then by id, descending. A cursor (Cursor) names a
// position in this order.
func CompareInfo(a, b session.SessionInfo) int {
	return storerule.Compare(a.Updated, a.ID, b.Updated, b.ID)
}

// Page cuts one page out of the sessions of a listing, already filtered
// and sorted by CompareInfo, as the in-tree stores that list in memory
// do: the sessions after opts.Cursor, at most opts.Limit of them
// (session.DefaultListLimit when it is 0 or less), with the cursor of
// the next page when there is one. A cursor that Cursor did not make is
// an error. A store that pages in a query uses ParseCursor instead.
func Page(sorted []session.SessionInfo, opts session.ListOptions) (*session.ListPage, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = session.DefaultListLimit
	}
	page, next, err := storerule.Page(sorted, func(i session.SessionInfo) (time.Time, string) { return i.Updated, i.ID }, opts.Cursor, limit)
	if err != nil {
		return nil, err
	}
	return &session.ListPage{Sessions: page, Next: next}, nil
}
