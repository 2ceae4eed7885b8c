// Package storekit is for those who write a Store: what a store needs to
// behave like the ones this module ships, beyond the session package's
// interfaces. Hosts do not need it.
//
// A Store keeps bytes; every tree rule lives in session.Session. To be
// one:
//
//   - implement session.Store, and pass storetest.Run (storetest holds
//     the conformance suite every backend of this module passes);
//   - return the session package's sentinel errors, wrapped with %w
//     (session.ErrNotFound, ErrExists, ErrConflict, ErrCorrupt, ...), and
//     set the file of a *session.CorruptError with session.WithPath when
//     the store reads files;
//   - page listings with Cursor and ParseCursor, so that a cursor means
//     the same in every store;
//   - keep a header's strings as StoredString gives them, and filter
//     listings by the same form;
//   - implement the optional interfaces it can: session.Flusher (appends
//     are buffered), session.TailLoader (loading only what is new),
//     session.BlobStore (content-addressed blobs), session.SessionCloser
//     (resources held per session, let go at Session.Close);
//   - accept session.ValidateID's ids, and no others;
//   - migrate raw lines of an older format it holds with session.Migrate
//     (what it reads through session.DecodeLog is migrated already).
//
// It imports the session package and the module's internal rules.
package storekit

import (
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/names"
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
