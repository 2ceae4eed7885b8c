// Package session keeps the sessions of Dive agents
// (github.com/deepnoodle-ai/dive) in agentsession: a program using Dive's
// session package changes one import path,
//
//	github.com/deepnoodle-ai/dive/session → github.com/agentsession/session/integrations/dive
//
// and nothing else. The package is named session, as Dive's is, and has
// its API: Session (ID, Messages, AllMessages, SaveTurn, the suspend and
// resume methods, Title, Metadata, EventCount, TotalUsage, Fork, Compact,
// CompactionHistory), the Store interface, FileStore, MemoryStore, New,
// ForkSession and the errors. A Session is a dive.Session and a
// dive.SuspendableSession. Dive's own types are used as they are
// (llm.Message, llm.Usage, dive.SuspensionState).
//
//	store, _ := session.NewFileStore("~/.myapp/sessions") // <dir>/<id>.jsonl
//	sess, _ := store.Open(ctx, "user:42")
//	agent, _ := dive.NewAgent(dive.AgentOptions{Model: model, Session: sess})
//
// Underneath, a session is an agentsession session (Session.Unwrap returns
// it): a tree of entries in the JSONL format of the pi coding agent, kept
// in any agentsession Store: NewFileStore and NewMemoryStore use
// agentsession's, NewStore takes any other (PostgreSQL with pgstore, a
// redacting or encrypting wrapper, a per-user view). What agentsession adds
// comes with it: several processes (or machines) may write one session
// without losing each other's turns, a turn is stored all or nothing
// across crashes, nothing is ever deleted but by Delete, and the CLI
// (agentsession verify, show, export ...) reads Dive's sessions.
//
// # How Dive's sessions are stored
//
// A turn (SaveTurn: one of Dive's "events") is its messages, saved in one
// append with a record of the turn: Dive's event id, its usage and its
// metadata. Dive's messages become agentsession messages and back without
// loss (see the mapping below). Messages is the context at the leaf, as
// agentsession rebuilds it; EventCount and TotalUsage count the turns and
// compactions on the path to the leaf.
//
// Compact appends a compaction entry: Messages then starts with the summary
// messages the CompactFunc returned (kept in the entry's details, under
// "dive"; the entry's summary is their text, for other readers), and
// AllMessages and CompactionHistory still hold every message before it.
//
// SaveSuspendedTurn saves the partial turn and a suspension (agentsession's
// Suspend): the calls of its last assistant message that have no result
// stay pending (Messages gives them no error result), and the
// SuspensionState is kept whole as the suspension's state but for
// TurnMessages, which are the turn's stored messages. A turn with no call
// awaiting a result cannot be suspended (ErrNothingPending). The suspension
// is the session's, not the process's: any process may LoadSuspension and
// resume. SaveResumedTurn ends the suspension and replaces the suspended
// turn with the completed one (TotalUsage counts both attempts' usage, as
// Dive does; each stays recorded once, on its own branch, for
// agentsession's Usage); CancelSuspension ends it and moves back to
// before the turn. Neither deletes: the suspended turn stays in the log
// on a branch of its own, marked ended. A partial resume
// (SaveSuspendedTurn while suspended) replaces the turn and suspends
// again.
//
// The title is a session_info entry and the metadata agentsession's
// metadata (a string value as it is; any other as JSON, its key listed
// under "dive.json"), so agentsession's listings show and filter them.
// Both are stored when set.
//
// # The message mapping
//
// Text (with its citations), thinking (with its signature), redacted
// thinking, refusals, base64 images, documents (base64, text, URL or file
// id, with title, context and citation settings), a tool result's audio,
// and tool calls become agentsession's typed blocks; a Dive user message
// holding tool results becomes a toolResult message per result (what
// agentsession pairs with its call), then a user message with the blocks
// after them. Whatever has no typed home is kept under the member "dive"
// of the block or message (cache control, provider metadata, message ids,
// the pieces of a split message ...), and blocks of other types (an image
// by URL or file id, a document of content chunks, server tools, summary
// and reminder blocks ...) as blocks of type "dive.<type>" holding Dive's
// JSON. Reading gives back the messages Dive saved, block for block
// (TestMessageRoundTrip). A turn's usage keeps Dive's counters beyond
// agentsession's (reasoning and tool-use tokens, modalities, speed, the
// flags) under the usage's member "dive".
//
// # Differences from Dive's stores
//
//   - Session ids are agentsession's: any UTF-8 without control
//     characters, up to 512 bytes ("user:42", "chat 7"); a FileStore
//     escapes what a file name cannot hold.
//   - A file Dive's FileStore wrote in the directory is listed by
//     FileStore.List (SessionInfo.DiveFile names it), so a picker shows
//     the user's history, but not read as a session: Open fails with an
//     error wrapping agentsession's ErrForeignFormat, or, after
//     FileStore.ImportOnOpen(true), imports it; FileStore.ImportDive (or
//     ImportDive, into any store) imports it at once. Dive's file is kept
//     beside, as <id>.jsonl.dive (a backup is never overwritten).
//   - FileStore is safe for several processes; Dive's is single-writer.
//     Appends return once written to the file (NewFileStoreWithSync(dir,
//     true) makes each durable); long strings are never cut; a malformed
//     line inside a file fails Open, as in Dive.
//   - SetTitle and SetMetadata write at once (Dive's FileStore writes them
//     with the next full rewrite); a title is stored trimmed.
//   - Put of a session of another store (or none) copies its whole log,
//     replacing a session of that id; a session already in the store is
//     left as it is.
//   - Messages is agentsession's model view: a tool call left without a
//     result before the conversation went on (a fork of a suspended
//     session, continued) gets an error result, where Dive's would send
//     the call unanswered, and a tool result whose call is not pending is
//     left out (AllMessages has it). Dive's agent writes neither.
//   - Delete removes the session from the store and closes the instance
//     Open returned: its methods fail from then on (Dive's keeps working
//     in memory, orphaned); Put of it stores it again. So does Put of
//     another session of the same id.
//   - Fork's new session names its parent in its header.
package session
