package session

// The package's sentinel errors, in one place, grouped by what they are
// about. Test for them with errors.Is: they usually come wrapped with
// detail. The typed errors (CorruptError, LimitError, ...) stay beside
// the code that fills them in; each unwraps to one of these.

import (
	"errors"

	"github.com/agentsession/session/internal/names"
)

// ---- Stores and sessions: what any store or handle may answer. ----

// Errors returned by stores and sessions. Test with errors.Is: they are
// usually wrapped with detail.
var (
	ErrNotFound           = errors.New("session: not found")
	ErrExists             = errors.New("session: already exists")
	ErrConflict           = errors.New("session: conflict")
	ErrCorrupt            = errors.New("session: corrupt")
	ErrUnsupportedVersion = errors.New("session: unsupported format version")
	ErrClosed             = errors.New("session: closed")
	// ErrNilSession is what every method of a nil *Session returns (a
	// typed nil in a Conversation passes a != nil check): the host
	// passed no session where it meant to.
	ErrNilSession = errors.New("session: nil *Session (no session was given)")
	ErrInvalidID  = names.ErrInvalidID
	// ErrWriteFailed reports that a store could not write or sync a
	// session's appends; a FileStore then refuses every later call on
	// the session (see SyncPolicy).
	ErrWriteFailed = errors.New("session: write failed")
	// ErrUnpairedToolResult rejects a tool result that answers no tool
	// call awaiting one at the end of the current path.
	ErrUnpairedToolResult = errors.New("session: tool result answers no pending tool call")
)

// ---- Files: what a FileStore finds on disk. ----

// ErrForeignFormat reports that a session of the id asked for exists in a
// file the store does not own: another agent's format, or a session file
// outside the store's layout. The error is a *ForeignError.
var ErrForeignFormat = errors.New("session: a session in a format or place the store does not own")

// ErrTooLarge reports a line, a log or an append over its Limits.
var ErrTooLarge = errors.New("session: over the size limit")

// ErrBadTime refuses a time no store can keep as a session's Updated
// (SetUpdated): the zero time, or one a file's clock cannot hold (before
// 1678 or after 2262, which would wrap to another century).
var ErrBadTime = errors.New("session: not a time a store can keep")

// ErrZeroed is the error of a line in Log.Zeroed.
var ErrZeroed = errors.New("zero bytes a crash left where a lost write had been")

// ErrPartialAppend is the error of a line in Log.Partial.
var ErrPartialAppend = errors.New("part of an append a crash cut short (not all of its lines reached the file); not an entry")

// ---- Abilities a store lacks (see abilities.go). ----

// ErrNoEvents is Subscribe's error on a store that cannot deliver
// changes.
var ErrNoEvents = errors.New("session: the store delivers no events")

// ErrNoBlobCollector is CollectBlobs' error for a store that keeps no
// blobs, or keeps them where they cannot be listed and deleted (its blob
// store is no BlobCollector).
var ErrNoBlobCollector = errors.New("session: the store keeps no blobs it can list and delete")

// ErrNoSharedState is the error of an update of "user:" or "app:" keys
// that cannot be kept: the store shares no state, or the session has no
// Meta.User (or Meta.App).
var ErrNoSharedState = errors.New("session: no shared state")

// ---- Operations on the tree that were refused. ----

// ErrNothingToCompact says a compaction would summarize nothing: the
// whole context fits in what it keeps. When the context is over the
// window all the same (its last turn or message alone is too long), the
// error says so, with the sizes: the host must act (trim that message,
// keep fewer tokens, or move to a model with a larger window).
var ErrNothingToCompact = errors.New("session: nothing to compact")

// ErrCompactionSettings refuses CompactionOptions that cannot work: a
// reserve that leaves no room in the window, or a kept part as large as
// what the window allows, so that a compaction could never bring the
// context under it.
var ErrCompactionSettings = errors.New("session: compaction settings cannot work")

// ErrCompactionDoesNotFit refuses a compaction made to fit a window
// (CompactionOptions.ContextWindow set) that would not bring the context
// under it: the history it must keep is alone over what the window leaves
// (a turn with a huge tool output: refused before the summarizer is
// asked), or its summary and kept history would take as many tokens as
// the context, or more than the window leaves (a summarizer that wrote
// more than it was asked for). Nothing is applied; the error says the
// sizes. Without a window a compaction is applied whatever its size, and
// its result says when it grew (CompactionResult.Grew).
var ErrCompactionDoesNotFit = errors.New("session: the compaction would not bring the context under the window")

// ErrUnclean refuses an operation that rewrites the log of a session whose
// tree has structural problems (duplicate ids, cycles, missing parents):
// Verify lists them.
var ErrUnclean = errors.New("session: the tree has structural problems; see Verify")

// ErrPathEdit refuses a ReplacePathSegment that cannot be made: a run
// not on the path, or a replacement that would leave a tool call without
// its result or a result without its call.
var ErrPathEdit = errors.New("session: path segment replacement refused")

// ErrNotSuspended reports that the leaf has no suspended call to end or
// decide on, or no pending call to suspend.
var ErrNotSuspended = errors.New("session: no suspended tool call")
