// Package workspace records the project directory a coding agent edits,
// step by step, and brings it back: snapshots of the tree stored in the
// blob store of the agent's sessions, diffs between them (OpenCode's
// summary of files, additions and deletions, and unified diffs), and
// restores that go with the session's Rewind, Branch and Fork.
//
//	blobs, _ := session.BlobsOf(store)        // the sessions' store
//	w, _ := workspace.Open(dir, &workspace.Options{Blobs: blobs})
//	defer w.Close()
//	workspace.Record(ctx, s, w, nil)          // at each step: snapshot + entry
//	d, _ := workspace.DiffEntries(ctx, w, s, fromID, "", nil) // an entry against the files now
//	workspace.Rewind(ctx, s, w, "before-refactor", nil)       // conversation and files back
//
// It is a module of its own (github.com/agentsession/session/workspace),
// so that its dependencies (go-git's gitignore matcher, go-udiff) stay out
// of the session module. It imports the session module, never the other
// way round.
//
// # Snapshots
//
// A snapshot is a manifest, stored as a blob, whose reference is the
// snapshot's id. Each file's content is a blob of its own, stored once
// by SHA-256 (deduplicated across snapshots and sessions; zstd-compressed
// where the store compresses, as BlobDir and FileStore do). With a store
// that is a session.BlobBatcher, the contents are put with
// PutBlobDeferred and made durable together by SyncBlobs before the
// manifest is put, and the manifest before Record appends the entry that
// names it: no reference is ever durable before what it names.
//
// Recorded: regular files (content and permission bits, the executable
// bit among them), symlinks as their target text (never followed), empty
// directories, and path names as the file system has them, valid UTF-8
// or not. Not recorded: what .gitignore files (with git's semantics:
// nested files, negation, directory-only patterns, anchoring, **),
// .git/info/exclude and Options.Ignore exclude, and .git itself at any
// depth. Sockets, FIFOs and devices are reported, not recorded. A file
// that cannot be read is reported in Snapshot.Skipped and recorded as
// Unreadable, which Restore leaves alone; a file larger than
// Options.MaxFileBytes is recorded by hash and size (Oversized), not
// stored.
//
// # The manifest
//
// Text, one line per entry after the magic line
// "agentsession-workspace-manifest 1", sorted by the bytes of the paths:
//
//	f 644 1234 blob:sha256:<64 hex> "src/main.go"
//	f 755 80 blob:sha256:<64 hex> "bin/run"
//	l 777 7 - "link" "target"
//	d 755 0 - "empty/dir"
//	o 644 99999999 sha256:<64 hex> "big.iso"
//	u 0 0 - "unreadable"
//
// (type, octal mode, size, content reference, path and a symlink's
// target quoted as strconv.Quote quotes them, which keeps any bytes).
// A stored content is spelled exactly as its blob reference, so that the
// session module's blob collector, which marks every such token of the
// manifests that snapshot entries name, keeps them; an oversized file's
// hash is spelled without the blob: prefix, as nothing is stored. The
// encoding is canonical (one manifest, one id) and DecodeManifest is
// strict: a manifest read from a store is untrusted, and one with an
// absolute path, a "..", "." or empty segment, a NUL, a .git segment, a
// path under a file, symlink or empty directory of the manifest, a
// duplicate or unsorted path, or anything not written as Encode writes
// it, is refused.
//
// # Incremental snapshots
//
// The Workspace keeps a stat cache: for each file, the stat data (size,
// modification and change times, inode, device, mode) it had when its
// content was last read, and the content's hash. A snapshot reads only
// the files whose stat data changed, with git's racy-timestamp rule: a
// file whose times are within 2 s of the walk that read it may change
// again in the same timestamp tick without its stat data changing, so it
// is read again at the next snapshot. On Linux the Workspace also
// watches the tree (inotify: a watch per directory, added before the
// directory is listed): a snapshot lists again only the directories
// where something happened, and when nothing did, and no file is racy,
// it is the last snapshot again, taken in microseconds. Every
// Options.RescanEvery (default a minute) a walk stats everything anyway,
// for the changes inotify does not report (writes through a shared
// mapping or a hard link from outside, other machines on a network file
// system); an overflowing event queue makes the next walk a full one.
// Options.CacheFile keeps the stat cache between processes. A cached
// claim that a content is in the store is trusted for
// Options.TrustStored (default half an hour, half the collector's default grace), after which the file is read and
// put again: putting refreshes the time a blob collector sees it was last
// used, so that a collector whose grace period is longer never removes a
// content a new snapshot refers to.
//
// # Diffs
//
// Diff compares two snapshots, or a snapshot and the working tree ("");
// renames are a deletion and an addition. Lines are counted with
// github.com/aymanbagabas/go-udiff (the Go team's internal diff package,
// exported), which also writes the unified diffs. A file with a NUL in
// its first 8000 bytes is binary, as git decides.
//
// # Restores
//
// Restore plans every change from the working tree to the snapshot
// first, checks it against RestoreOptions.Expect (the snapshot the caller
// believes the tree holds: a path it would overwrite, delete or chmod that
// differs from Expect is a *ConflictError, unless Force), and fetches and
// checks (present, hash) every content it needs into a staging directory
// in the workspace, before it changes anything: a missing or corrupt
// content fails the restore with the tree untouched. Then each file is
// renamed into place (a temporary file and a rename), so that a restore
// killed at any point leaves every file either old or new; a later
// restore removes what a killed one left. All changes go through an
// os.Root of the directory, so no path can make it write or delete
// outside; symlinks are created as links, a symlink in the way of a
// directory is removed, not followed. Ignored files are not touched: a
// directory that holds some stays, and one in the way of a snapshot's
// path fails the restore (ErrInTheWay) before anything changed.
//
// # Sessions
//
// Record appends a session.CustomSnapshot entry (session.WorkspaceSnapshot:
// the snapshot's id, the totals of the diff against the snapshot in force
// at the leaf before). The snapshot in force at an entry is the latest on
// the path to it (Session.SnapshotAt, SnapshotAt here), so a host records
// once before the first message and after each step. Rewind, Branch and
// Fork move the conversation and restore the files to the snapshot in
// force at the target; they first take a snapshot of the files (kept as
// the revert record's Previous, so that nothing is lost and Undo can take
// the revert back) and check the restore, then move the leaf, append the
// revert record (Kind "revert") and restore. A fork in the same store
// shares the blobs; into another store, the blobs its snapshots name are
// copied.
package workspace
