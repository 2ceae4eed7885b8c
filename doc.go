// Package session keeps the conversation state of an LLM agent: a tree of
// entries with a movable leaf, rebuilt into the exact message list the
// agent sends to its model, and persisted behind a pluggable Store.
//
// A host agent imports it instead of writing its own log. Nothing here
// talks to a model.
//
//	s := session.New() // or session.Create(ctx, store, opts)
//	s.Append(ctx, session.UserText("What files are in src?"))
//	s.Append(ctx, reply)                  // the model's answer, tool calls included
//	msgs, _ := s.Messages(ctx)            // what to send to the model next
//
// # The format
//
// A session is a log: a header line, then one JSON entry per line, each
// with an id and a parentId. It is the JSONL format of the pi and
// oh-my-pi coding agents (version 3), so their sessions load here and
// sessions written here load there. Versions 1 and 2 are migrated when
// read. Entry types are message, thinking_level_change, model_change,
// compaction, branch_summary, custom, custom_message, label, session_info,
// session_init, mode_change and ttsr_injection; an entry of any other type
// is kept and takes part in the tree. Every entry keeps the bytes it was
// read from, so writing a log back changes nothing that was not changed,
// and unknown fields survive every path through the package.
//
// Messages (the payload of message entries) mirror the seed format's
// agent-message JSON: roles user, assistant, toolResult, bashExecution and
// custom, content blocks text, thinking, image and toolCall. Message has
// typed fields and constructors (UserText, Assistant, ToolCall,
// ToolResult ...) and keeps members it does not model in Extra. Blocks
// also have homes for what the provider APIs have besides: documents,
// audio, refusals, a text's citations and redacted thinking (Document,
// Audio, Refusal, CitedText, RedactedThinking; see Block for which of
// them pi can read). Usage has pi's counters and, written only when not
// zero, the others providers report (reasoning, cache lifetimes, server
// tools, audio, predictions, service tier), under oh-my-pi's names where
// it has them. A message built in Go writes the members the seed agents
// always write, less the empty ones pi reads as well without (a tool
// result's toolName; an assistant message's api, provider and model); one
// decoded keeps its members as they were. A tool result answering no
// pending call is refused unless the handle allows it
// (SetStrictPairing).
//
// # The tree and the leaf
//
// Every append creates an entry whose parent is the current leaf, and the
// new entry becomes the leaf. Branch moves the leaf to any entry (the next
// append starts a new branch there), Branch to "" moves it before the first
// entry (the next append is a new root), and BranchWithSummary moves it
// and records a summary of the path left behind. Moving the leaf deletes
// nothing: the path left behind stays in the log, and Branch goes back to
// it. Only Prune removes entries, and only those no context needs any
// more (what a later compaction summarized on every branch that reaches
// them); Store.Delete removes a whole session.
//
// The seed format has no leaf pointer: its readers take the last entry of
// the file as the leaf. A leaf move is therefore persisted as a custom
// entry (customType "agentsession.leaf") whose parent is the new leaf.
// This package resolves such a marker to its parent; a seed reader follows
// it to the same path, since a custom entry adds nothing to the context.
// Markers are hidden from tree views unless something was appended under
// them, which only a seed agent does (appends here attach to the new leaf).
//
// Labels name entries; the newest label entry for a target wins and an
// empty one clears it. As in the seed format, label and session_info
// entries are appended under the leaf like any other entry.
//
// # Context reconstruction
//
// Context walks from the leaf to the root and applies the seed rules:
// the latest thinking level, model (a model_change entry or an assistant
// message's provider and model, whichever is later) and mode; messages and
// custom messages in order; non-empty branch summaries; and for the last
// compaction on the path its summary first, then the entries from its
// firstKeptEntryId up to it, then everything after it. The compat tests
// check this against the contexts pi itself builds.
//
// A Session keeps the context at its leaf up to date as entries are
// appended, so keeping it costs O(new entries), not O(history). Messages
// are decoded once; what Context, ContextAt, Messages and Resume return
// are deep copies that belong to the caller (the copy rule): editing them
// changes nothing in the session, and the copy of a whole context costs a
// few allocations and a pass over its bytes.
//
// # Tool-call pairing
//
// Real sessions hold aborted and failed turns whose tool calls never got
// a result, and a compaction or a hand-edited file can keep a result
// without its call. Context reproduces them as they are, because that is
// what the seed agents rebuild, and lists them (Context.Dangling, Pending,
// Orphans). Messages, the list an agent sends to its model, repairs them:
// a dangling call gets a synthesized error result right after the results
// its assistant message did get, an orphaned result is left out, and only
// the calls of the last assistant message may stay unanswered, because
// the agent is about to run them. A custom message an extension injects
// while tools run is moved after that run's results rather than cutting
// it short. Appending a tool result that answers no call awaiting one is
// refused with ErrUnpairedToolResult, unless the handle takes histories
// other frameworks store (SetStrictPairing(false)): then it is stored,
// left out of Messages and reported by Verify.
//
// A call the host suspends on purpose (Suspend: waiting for an approval
// or a long job) is no dangling call: it stays pending, a placeholder
// that is not an error holds its place if the conversation goes on, and
// its result replaces the placeholder when it comes, from any process
// (Suspended, Decide, EndSuspension).
//
// # Stores
//
// A Store keeps logs: create, append (all or nothing, optionally
// conditional on the last entry with AppendOptions.IfLast), load, rewrite
// (conditional on the log the caller read, RewriteOptions), list with
// cursor paging, delete. All tree logic lives in Session, so every Store
// behaves the same. MemoryStore is the store for tests and for New;
// FileStore keeps sessions on disk; the pgstore module
// (github.com/agentsession/session/pgstore) keeps them in PostgreSQL for
// agents on many machines; the storetest package is the conformance suite
// every Store must pass. Optional abilities are discovered by type
// assertion (Flusher, BlobStore, TailLoader). Copy moves a session between
// any two stores and never overwrites one. Every store applies the same
// Limits to what it reads and writes.
//
// # Several writers
//
// Handles on one session (in one process, several processes, or several
// machines on PostgreSQL) never lose or interleave each other's entries.
// Every write is conditional on the last entry the handle knows of; when
// another writer got there first the handle learns what was written (only
// what is new: LoadTail) and tries again under its own leaf, so writers
// end up on sibling branches. Handles of one session in one process take
// turns, and writers in other processes are waited out with randomized,
// growing pauses. A write never gives up while the other writers make
// progress; it fails with ErrConflict only after 32 conflicts in a row
// that showed it nothing new (about a second). Whole-log rewrites (Prune) are conditional too:
// one decided on a log that changed since is decided again, so a prune
// never drops what another writer appended. In a FileStore a session
// file's name changes (a rewrite, a move into the archive or out, a
// compression) only under the file's exclusive lock, and whoever takes
// that lock checks the name still leads to the file it locked, so no
// process replaces a file another has just moved.
//
// A closed Session does nothing: every method that returns an error
// returns ErrClosed, before calling a summarizer or creating a fork.
//
// # Retries
//
// A write can happen and its answer be lost (a database commits, then the
// connection drops), so a failed write may be in the log. Retrying is
// safe. A Session keeps the entries of a write that failed (ids, time and
// all) and, when the host calls the same method again with the same
// arguments, sends those very entries again; every store takes an append
// whose entries it holds already, byte for byte, for the retry of one
// that happened, and succeeds without writing. So SaveTurn, Append and
// the other writes store a turn once however often they are retried. If
// the host makes another call instead, the handle first finds out whether
// the failed write happened (it reads what is new); if it did, the handle
// takes it in as if it had returned (the leaf moves on to it), and Reload
// does the same.
//
// # FileStore
//
// OpenFileStore opens a directory of session files in the layout of the
// pi and oh-my-pi agents, one file per session:
//
//	<root>/--<cwd>--/<created>_<id>.jsonl   a session (the cwd with / \ : as -; the id escaped)
//	<root>/.archive/--<cwd>--/...           archived sessions (Archive, Unarchive), plain or zstd-compressed
//	<root>/.index                           the listing cache (rebuilt if lost)
//	<root>/.blobs/<sha256>                  images, stored once (BlobDir; <root>/../blobs is read too)
//
// Files written by those agents open here and files written here open
// there; versions 1 and 2 are migrated and rewritten atomically when
// opened. Directories are 0700 and files 0600, ids are validated before
// they touch a path and escaped in file names (ValidateID), files are
// opened through os.Root, and the store writes nothing outside its root.
// A session of the id asked for in a file the store does not own
// (another agent's format at <root>/<id>.jsonl, as Dive keeps them) makes
// Open and Create fail with ErrForeignFormat rather than start an empty
// one: import it (package importer).
//
// Appends are written whole lines at a time under an exclusive file lock,
// so several processes can share a session; SyncPolicy chooses when they
// are made durable (see it for what a crash can lose). A torn last line,
// what a crash in the middle of a write leaves, is cut off before the
// next append; an append of several entries (a turn) is all or nothing
// across crashes too (its lines are marked, and a reader takes them only
// when the last one made it; see Log.Partial); a failed write or sync is
// rolled back and its error latched (ErrWriteFailed), so every later call
// on the session through that store returns it until the store is opened
// again (SyncPolicy says how to go on). A file that cannot be read
// as a session is never written to. Rewrites go through a temporary file
// that is synced and renamed into place. Strings longer than
// FileStoreOptions.MaxStringChars are cut with a notice, and images of
// 1 KiB or more go to the blob store as "blob:sha256:<hex>" references,
// resolved when the session is read. A reference whose blob is missing or
// corrupt stays in place and is reported (Log.Unresolved,
// Context.Unresolved, Verify); the image is never sent to a model as data
// (Block.Unresolved). Blobs outlive the sessions that refer to them:
// CollectBlobs deletes those no session refers to (directly, or through
// the manifest of a workspace snapshot), once they are older than a
// grace that keeps a collection safe beside writers.
//
// Reading is fast and small: a file is read and decoded in chunks on all
// processors, each freed once decoded; a message is decoded as it is read
// and keeps its text once (its entry's bytes are rebuilt from it, byte
// for byte, when the file is rewritten), but for the messages before the
// last compaction, decoded only if a context needs them; and a listing
// reads only what was appended since the last one.
//
// # Compaction, branch summaries, checkpoints, fork
//
// These are plain methods a host calls; the host brings the model, as a
// Summarizer. ExtractiveSummarizer needs none: tests, examples and a host
// whose model is down use it.
//
// NeedsCompaction compares the context's size with a model's window minus
// a reserve. The size is the usage the model reported with the last
// assistant message plus an estimate of what follows it; the estimator is
// pluggable (DefaultTokenEstimator counts a token per four bytes, which
// errs on the side of compacting early); with MaxMessages it is also due
// past a number of messages (KeepRecentMessages bound what a compaction
// then keeps). PlanCompaction keeps about
// KeepRecentTokens of recent history and cuts at a turn boundary (a user
// message or bash command), or, when the last turn alone is longer than
// that, inside it at a point no tool call is separated from its result;
// the turn's first part is then summarized on its own. Compact runs the plan with the
// Summarizer, updating the previous compaction's summary, and appends a
// compaction entry listing the files read and modified (from tool calls
// and earlier details). The session is not locked while the model works.
//
// A compaction is an appended entry: the summarized history stays in the
// log, where other branches and checkpoints may still need it. Prune
// rewrites the log atomically without what no context needs any more,
// re-parenting what it keeps; the context of every branch end, of the
// leaf and of every labeled entry stays the same. The rewrite is
// conditional on the log the handle knows, and never drops a line it
// could not read unless told to (PruneOptions.DropUnreadable).
//
// SummarizeBranch moves the leaf elsewhere and records a summary of the
// path it leaves, newest messages first within a token budget. A
// Checkpoint is a label, idempotent, that never renames another one;
// CheckpointWith names any entry and stores the host's metadata with it.
// Resolve is the one rule for naming an entry, by id or checkpoint name.
// Rewind moves the leaf to a checkpoint or entry and says how many
// entries left the path (nothing is deleted: Branch back to redo);
// ReplayLastTurn goes back to just after the last user message. Fork
// copies the path to an entry or checkpoint into a new session, on any
// Store, created with its entries in one step (EntryCreator), whose
// header names the source as parentSession; ListChildren finds a
// session's forks and subsessions. ReplacePathSegment replaces a run of
// the path with a summary or new messages, append-only: the replacement
// and copies of what followed go on a new branch.
//
// # Resuming
//
// Resume gives, in one call, what a host needs to pick a session up: the
// last user and assistant messages, the state and settings at the leaf,
// the pending calls and the counts (Turns counts the user messages on the
// path). TurnSettings resolves a turn's model and thinking level: the
// turn's own, else the session's, else the host's default. A session
// created with CreateOptions.Deferred reaches its store only with its
// first assistant message (pi's CLI default), header and entries in one
// step; Persist writes it earlier.
//
// # Agent integration
//
// A host plugs a session into its agent through Agent, which *Session
// implements: Messages before each model call, SaveTurn after it. The
// usual shape is a Session field in the agent's options, a per-call
// WithSession option that takes priority, and a stateless agent when
// neither is set; examples/agent shows it, with a test against
// MemoryStore. The sub-packages provider/anthropic and provider/openai
// turn Messages into the request bodies of the Anthropic Messages, OpenAI
// Chat Completions and OpenAI Responses APIs, as plain structs with no
// SDK and append-style marshallers, and their
// responses (whole or streamed) back into the Message a turn saves, with
// usage, cost and stop reason mapped as pi maps them; the roles those
// APIs lack (summaries, the user's shell commands, custom messages) are
// rendered by UserContent. Usage and UsageAt total the
// usage the assistant messages report.
//
// # Lifecycle, metadata, state and events
//
// OpenOrCreate opens a session by id or creates it, race-free. Metadata
// (Meta: project, app version, user, app, a string map) is given in
// CreateOptions and changed by UpdateMeta, which appends a CustomMeta
// entry; stores fold such entries into their listings (InfoFold), so
// List shows and filters metadata without loading entries, with a title
// derived from the first user message for untitled sessions (AutoTitle
// writes one from a host's titler). State is recorded as CustomState
// entries and folded along a path, so the state at any entry is known
// (StateAt) and a rewind, branch or fork sees the state of its point;
// "user:" and "app:" keys go to a SharedStateStore. Optional store
// abilities, each found through wrappers: Archiver (Archive, Unarchive),
// CompactionMarker (SessionInfo.Compacting while Compact runs),
// SharedStateStore and Subscriber (Subscribe: Changes fanned out by a Hub,
// with a bounded buffer per subscriber that drops and counts rather than
// block a writer; FileStore and pgstore deliver other processes' changes
// too). DeleteSession deletes a session with its children and the blobs
// no other session refers to. ForUser gives a tenant's view of a store;
// Session.MessagePage pages a path's messages without decoding the rest.
// Redact puts a redactor (package redact) in front of a store, so that
// secrets never reach it; package encrypt seals sessions at rest; both
// are built on WrapStore, for Store middleware that changes entries.
//
// Retention: Sweep applies a SweepPolicy (age, the newest N per working
// directory or user, archive first and delete later, labeled sessions
// kept, blobs collected), conditional on each log being the one it read
// (ConditionalRemover), so a session written meanwhile is kept. A
// FileStore can keep archived sessions zstd-compressed
// (FileStoreOptions.CompressArchive, CompressArchived,
// SweepPolicy.Compress): one file at every point, read as before, written
// back plain when written to. Session.ClearedMessages lightens a long
// context without a summary: tool results older than the last turns, or
// beyond a token budget, give way to placeholders, in steps that keep the
// prompt-cache prefix, every call still paired, the log untouched.
//
// # Observability
//
// Observe wraps a Store so that an Observer receives an Event for each
// create, load, append, rewrite and delete, and, from every Session on
// the wrapper, each compaction, branch move, rewind and fork: with counts,
// a duration, and the error when it failed. SlogObserver logs them with
// log/slog. A session on an unwrapped store measures nothing (it checks a
// nil Observer and goes on).
//
// # Corrupt logs
//
// Reading never hangs or panics. A malformed line is skipped and counted
// (Log.Malformed; ReadOptions.Strict makes it an error; a lenient read
// leaves the escapes inside an entry's strings to be checked when it is
// decoded, see ReadOptions), a torn last line is reported (Log.Torn), a duplicated id resolves to the later line, a
// missing or self parent makes a root, and a parent cycle is cut at its
// earliest line. A file that cannot be a session at all (empty, no header
// on line 1, a newer version) gives an error and nothing else. Verify
// lists everything that was repaired. All errors are sentinels tested
// with errors.Is: ErrNotFound, ErrExists, ErrConflict, ErrCorrupt (with
// *CorruptError), ErrUnsupportedVersion, ErrClosed, ErrInvalidID,
// ErrUnpairedToolResult, ErrNothingToCompact, ErrUnclean.
//
// # Concurrency
//
// Every method of Session and of the stores in this module is safe for
// concurrent use.
//
// # Layout
//
// This package is what a host imports. It holds the format (message.go
// and its generated codec message_codec.go, entry.go, payload.go,
// header.go, log.go, stream.go, readfile.go, migrate.go), the tree and
// its contexts (tree.go, context.go), the handle (session.go,
// session_write.go, branch.go, fork.go, compaction.go, prune.go,
// tokens.go, fileops.go, summary.go, usage.go, retry.go, writers.go), the stores this module ships
// (store.go, memstore.go, filestore*.go, blob.go, fsops.go), the
// lifecycle (lifecycle.go, meta.go, state.go, events.go, tenant.go,
// page.go), the wrappers that observe, redact or transform one
// (observe.go, redact_store.go, store_wrap.go). It imports the standard
// library, uuid, klauspost/compress, fsnotify, package redact (the
// secret rules Redact applies; it imports nothing of the module but
// internal/jsonx) and two internal packages: internal/jsonx (the JSON
// scanner) and internal/names (ids, cursors and the seed layout's
// names). It never imports the other packages beside it:
//
//   - storekit: for those who write a Store (cursors, stored strings, the
//     checklist of what a store must do); storetest: the conformance
//     suite every store passes.
//   - provider/anthropic, provider/openai: request bodies from a
//     session's messages, and messages from responses, sharing
//     provider/internal/wire.
//   - export: JSON, Markdown and HTML exports; importer: sessions of
//     Claude Code, Codex, OpenCode, Dive and exports into any store;
//     encrypt: encryption at rest as a store middleware.
//   - pgstore: the PostgreSQL store, a module of its own; search: the
//     full-text index, a module of its own (SQLite); export/browsertest:
//     the HTML viewer's test in a real browser, a module of its own.
//   - integrations/dive, integrations/langchaingo: Dive's session
//     package and langchaingo's chat history over any store, each a
//     module of its own.
//   - cmd/agentsession: the command-line tool; examples/: runnable
//     examples.
//   - internal/codecgen: the generator of message_codec.go (go generate).
//
// TestImportRules (layout_test.go) holds each package to what its
// documentation says it may import.
package session
