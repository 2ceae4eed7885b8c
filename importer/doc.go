// Package importer reads the sessions of other coding agents (Claude
// Code, Codex, OpenCode, Dive) and this module's own JSON export into any
// session.Store, keeping the tree, timestamps, models, usage, tool calls
// and results, and subagents as child sessions.
//
// It imports the session package, package export (its envelope),
// provider/anthropic (Claude Code's assistant lines are Anthropic
// responses, read as live replies are) and the module's internal JSON
// cursor.
//
// # Importing
//
// Import takes a file or a directory. Each file's format is detected from
// its first 64 KiB (Detect), or forced with Options.Format; a directory
// imports every session file under it, skipping files that are no
// session and files another file reads along (a subagent's transcript),
// and reports progress through Options.Progress. Options.DryRun reads and
// reports without writing.
//
// An import reads only what it is given (see root.go for the rule every
// format follows): the file and the files its agent keeps for it beside
// it, or the directory's tree. Below that no symbolic link is followed
// (ErrSymlink), no FIFO, socket or device is opened (ErrNotRegular), an
// id taken from a file's contents becomes a path element only when it
// is one plain name (else ErrOutsideRoot), and every file is opened with
// a cap on its size (session.ErrTooLarge). A directory import names every
// file it did not read, and why, in Report.NotImported.
//
// Nothing is dropped silently: a record of a type a reader does not model
// is kept as a custom entry (or, where it has no place in the tree,
// counted) and reported in Session.Unknown; a line that is not JSON is
// reported with its number in Session.Malformed and the rest imports. A
// file that cannot be read at all is one LineError in Report.Errors, and
// the other files import.
//
// # Importing twice, resuming, conflicts
//
// Import never overwrites. A session whose id the store holds already is
// compared with the one read, entry by entry, byte for byte (an image's
// blob reference and its data count as the same, and so does an entry
// whose long strings the store cut to its limit with a notice, as a
// FileStore does past MaxStringChars, and one that is the same JSON with
// its objects' members in another order, as a record OpenCode keeps
// reads from its storage tree and from its database):
//
//   - the same entries: it is skipped (Report.Skipped), so importing a
//     directory again stores nothing twice;
//   - the stored entries are the first ones of the import: an earlier
//     import stopped half way, or the session grew in its agent since,
//     and the rest is appended (Session.Resumed says how many were
//     there);
//   - anything else: a *ConflictError (matching session.ErrConflict), and
//     the stored session is left as it is.
//
// Entries go to the store in appends of at most 1,000, each conditional
// on the last one stored (a log that repeats an entry id goes in one
// Rewrite). When one fails, the session is reported with a *PartialError
// saying how many entries were stored; importing the same file again
// completes it. The header's members are not compared: the entries are
// the session.
//
// # Formats
//
// Formats lists the kinds of file Import reads, in the order Detect
// tries them (the table of formats.go). The notes on each format (what
// its records are and how they map to
// entries) are in the comments of the files that read it: claude*.go,
// codex*.go, opencode*.go, dive*.go, and json.go below.
//
// # JSON: this module's export envelope
//
// The envelope written by export.JSON (format "agentsession.export", see
// package export for its shape). It is recognised by its "format"
// member, which the writer puts first. The header and the entries are
// imported as they are, byte for byte, so export then import gives the
// same log and the same context at every leaf; the blobs it carries
// ("blobs", written with export.Options.Blobs) are put into the store
// first when it is a session.BlobStore (a store that keeps none keeps the
// references, and Session.Warnings says so). The envelope is read with
// export.Read: at most export.MaxReadBytes, and a file that is not a
// well-formed envelope, or of a newer version (export.ErrNewerVersion),
// is an error for that file as a whole: the envelope is written by a
// program, so a bad entry in it means the file is damaged, not that one
// record is unusual.
package importer
