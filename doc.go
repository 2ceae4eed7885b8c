// Package session keeps the conversation state of an LLM agent: a tree of
// entries with a movable leaf, rebuilt into the exact message list the
// agent sends to its model, and persisted behind a pluggable Store. A
// host agent imports it instead of writing its own log; nothing here
// talks to a model.
//
// Sessions are kept in the JSONL session format of the pi and oh-my-pi
// coding agents (version 3, a header line and one entry per line, each
// with an id and a parentId; "the seed format" in this module's comments
// means this format). Their sessions load here and sessions written here
// load there; versions 1 and 2 are migrated when read, and members this
// package does not model survive every read and write.
//
// # A store
//
// A Store keeps sessions. MemoryStore (NewMemoryStore) is the store for
// tests and for New; FileStore (OpenFileStore) keeps one file per
// session in pi's directory layout, shared safely by several processes;
// the pgstore module keeps sessions in PostgreSQL and the s3store module
// on an S3-compatible bucket, for agents on many machines (package
// mirror keeps a local session the same on such a store). Middleware
// wraps any store: Redact keeps secrets out of it,
// package encrypt seals sessions at rest, Observe reports every
// operation, ForUser gives one tenant's view.
//
//	store, err := session.OpenFileStore(dir, nil)
//
// # A session
//
// A *Session is a handle on one session. Create starts one, Open opens
// one by id, OpenOrCreate does either without a race, Continue opens the
// latest session of a working directory (or starts one), and New makes
// one in memory. Close it when done; it is safe for concurrent use.
//
//	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: dir})
//	defer s.Close()
//
// # Turns: the Conversation an agent holds
//
// Conversation is what an agent loop holds of a session, and *Session
// implements it: Messages before each model call (the history, every
// tool call paired with a result, ready for the provider/anthropic and
// provider/openai conversions); SaveTurn after it (the user's message,
// the replies and the tool results in one all-or-nothing append); Flush
// at the end of the turn (a FileStore's default SyncPolicy, SyncOnFlush,
// makes appends durable only then); NeedsCompaction and Compact. Each
// reply carries the usage its model call reported (Message.Usage, which
// the provider packages fill in); give SaveTurn a usage only for a turn
// whose replies have none, never a sum of several calls, which would
// overstate the context's size. A nil *Session held in a Conversation
// returns ErrNilSession rather than panic.
//
//	history, err := s.Messages(ctx)
//	reply := callModel(ctx, history, input) // the host's
//	err = s.SaveTurn(ctx, []*session.Message{session.UserText(input), reply}, nil)
//	err = s.Flush(ctx)
//
// A failed write may still have happened (a database commits, then the
// connection drops): calling the same method again with the same
// arguments stores the turn once. Several handles, processes or machines
// writing one session never lose each other's entries.
//
// # The context
//
// Context returns the state at the leaf: the messages as stored, the
// model, thinking level and mode, and what was repaired or left pending;
// ContextAt does it for any entry, Resume gives what a host needs to pick
// a session up. They follow pi's rules (the compat tests check them
// against the contexts pi builds), and what they return is a deep copy
// that belongs to the caller.
//
// # The tree: branches, checkpoints, forks
//
// Every append's parent is the leaf, and the new entry becomes the leaf.
// Branch moves the leaf to any entry, so the next append starts a new
// branch there; nothing is deleted, and Branch goes back. Checkpoint
// names a point and Rewind returns to it; BranchWithSummary and
// SummarizeBranch leave a summary of the path left behind; Fork copies a
// path into a new session, in any store; Label names entries.
//
// # Compaction
//
// NeedsCompaction says when the context outgrows a model's window minus
// a reserve (CompactionOptions). Compact then summarizes the older
// history with the host's Summarizer (ExtractiveSummarizer needs no
// model) and appends a compaction entry; later contexts start from its
// summary. The summarized history stays in the log, for other branches,
// until Prune removes what no context needs. ClearedMessages lightens a
// context without a summary.
//
// # Lifecycle
//
// Store.List pages sessions with their metadata (Meta, UpdateMeta) and a
// title; UpdateState and StateAt keep a host's state along the path;
// Archive, DeleteSession, Sweep (retention) and CollectBlobs (images
// kept once in a blob store) manage what is kept; Subscribe delivers
// changes as they happen, from other processes too.
//
// # Errors
//
// Errors are sentinels, usually wrapped with detail: test them with
// errors.Is (ErrNotFound, ErrExists, ErrConflict, ErrCorrupt with
// *CorruptError, ErrUnsupportedVersion, ErrClosed, ErrNilSession,
// ErrInvalidID, ErrUnpairedToolResult, ErrWriteFailed, ErrForeignFormat,
// ErrNothingToCompact ...). Reading never hangs or panics: a malformed
// or torn line is skipped and counted, and Verify lists every repair. A
// file that is corrupt, newer or another agent's is never overwritten.
//
// # Where to read more
//
// The README says what the module does and how to try it. The guides in
// docs/ cover one area each: agent-loop.md (providers, history,
// compaction, resuming), files-and-crashes.md (FileStore, durability,
// blobs), postgresql.md, workspaces.md, lifecycle-and-events.md,
// export-import-search.md, redaction.md, frameworks.md (Dive,
// langchaingo), cli.md, performance.md, compatibility.md, migrating.md,
// features.md (everything, in full). ARCHITECTURE.md, for those who
// change the module, maps every file, lists *Session's methods by task
// and gives the design decisions.
//
// The packages beside this one:
//
//   - provider/anthropic, provider/openai: request bodies from a
//     session's messages, and messages from responses, with no SDK.
//   - export: JSON, Markdown and HTML exports; importer: sessions of
//     Claude Code, Codex, OpenCode and Dive into any store.
//   - redact: the secret rules Redact applies; encrypt: encryption at
//     rest.
//   - storekit: for those who write a Store; storetest: the conformance
//     suite every store passes; mirror: a session's copies on two
//     stores kept the same.
//   - Modules of their own: pgstore (PostgreSQL), s3store (object
//     storage), search (full-text
//     search, SQLite), workspace (the project's files, step by step),
//     integrations/dive and integrations/langchaingo, cmd/agentsession
//     (the command-line tool); runnable programs in examples/.
package session
