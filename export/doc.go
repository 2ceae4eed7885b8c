// Package export writes a session for people and for other programs: a
// versioned JSON envelope (read back by Read and by package importer), a
// Markdown transcript and a single self-contained HTML page.
//
// It imports the session package, package redact and the module's
// internal JSON cursor.
//
// # The JSON envelope
//
// JSON writes an Envelope (see its doc for the shape): the header line
// and every entry exactly as the session holds them, byte for byte, one
// entry a line, so that an import gives back the same log and the same
// context at every leaf. (A session opened from a FileStore holds its
// images inline: the store resolves the blob references it moved them
// to when it loads the log, so the export carries them.) "tree" repeats what the entries say (roots,
// leaves, labels) for viewers that do not walk parent links. Options
// narrow or complete it:
//
//   - Branch exports the path from the root to one entry only (an
//     unknown entry is ErrUnknownBranch).
//   - Blobs puts the data of every "blob:sha256:" reference still in the
//     entries (a store that loads logs without resolving them, or one a
//     host wrote itself) into "blobs" (base64), read from the session's
//     store when it is a session.BlobStore, so the file stands alone;
//     references it cannot read are listed in "unresolvedBlobs".
//   - Redactor passes everything that leaves the machine through a
//     redact.Redactor: every member of the header (title, directory,
//     parent session, the metadata, the host's members; its id only when
//     the rules take it for a secret, then replaced by a name made from
//     its hash), every string and member name of the entries (the
//     members that make the tree excepted), the base64 text of documents
//     and labels; with Blobs, a blob of text that holds a secret is left
//     out and listed in "withheldBlobs". The counts go in "redacted",
//     never the secrets.
//
// The envelope is written by streaming: exporting the W10k workload
// (30,000 entries, 67 MB of JSON) takes about 10 ms and 3.3 MB of
// allocations on the project's 2-core machine, 17 ms beside two CPU hogs
// (BenchmarkExportJSON/W10k, medians); reading it back about 0.24 s, 0.63
// s beside the hogs (BenchmarkReadJSON), one validating pass over the
// input. docs/export-import-search.md has the commands.
//
// # Versions and reading
//
// "format" is always "agentsession.export" and "version" the envelope
// version, Version. Read accepts every version up to Version and refuses
// a newer one with ErrNewerVersion; anything else that is not an
// envelope (a session log, another tool's export) is ErrNotEnvelope, and
// an envelope with a bad member a *ReadError naming it ("header",
// "entries[12]"). Entries are parsed as session.ParseEntry does. Read
// holds the whole input in memory and takes at most MaxReadBytes (1 GiB);
// ReadLimited takes another bound. A version-1 reader ignores members it
// does not know, so later additions that older readers may skip go in
// new optional members without a version change.
//
// # Markdown
//
// Markdown writes a transcript of the current branch (or Options.Branch):
// messages under their role, thinking folded in <details>, tool calls
// with their arguments as fenced JSON, tool results and command output
// folded past FoldLines lines or FoldBytes bytes, images as a note (or
// inline as data URIs with Options.Blobs), compaction and branch
// summaries marked as such, labels, model and thinking-level changes
// noted, and usage and cost under each assistant turn.
package export
