// Command agentsession looks inside, checks and edits the session files
// of LLM coding agents (the pi / oh-my-pi JSONL format, versions 1 to 3).
// Only compact, fork, migrate, title, label, rewind, archive, unarchive,
// delete, gc and import write sessions, and restore writes the files of the
// directory it is given; the other commands never write to anything
// they read.
//
// Usage:
//
//	agentsession context [--leaf ID] [--for-model] [--limit N] [--json] FILE|ID
//	agentsession tree [--compact] [--limit N] [--json] FILE|ID
//	agentsession verify [--strict] [--json] FILE|ID... | --all [--limit N]
//	agentsession checkpoints [--limit N] [--json] FILE|ID
//	agentsession snapshots [--limit N] [--json] FILE|ID
//	agentsession diff [--from ENTRY] [--to ENTRY] [--dir DIR] [--ignore PATTERN]... [--stat] [--json] FILE|ID
//	agentsession ls [--cwd DIR | --all] [--archived | --only-archived] [--project ID] [--user NAME] [--app NAME] [--meta KEY=VALUE]... [--since DATE|DURATION] [--limit N] [--json]
//	agentsession show [--json] FILE|ID
//	agentsession stats [--since DATE] [--daily] [--json]
//	agentsession watch [--json] [ID]
//	agentsession search [--index FILE] [--limit N] [--json] QUERY...
//	agentsession compact [--dry-run] [--keep-tokens N] [--instructions TEXT] [--json] FILE|ID
//	agentsession fork [--at ID] [--title TEXT] [--labels] [--out DIR] [--json] FILE|ID
//	agentsession restore --to ENTRY --dir DIR [--expect ENTRY] [--ignore PATTERN]... [--dry-run] [--force] [--json] FILE|ID
//	agentsession migrate [--dry-run] [--backup] [--json] FILE|ID...
//	agentsession title [--json] FILE|ID TEXT
//	agentsession label [--json] FILE|ID ENTRY NAME
//	agentsession rewind [--json] FILE|ID TO
//	agentsession archive [--compress] [--json] ID
//	agentsession unarchive [--json] ID
//	agentsession delete [--children] [--keep-blobs] [--dry-run] [--yes] [--json] ID
//	agentsession gc --older-than AGE [--keep N] [--group cwd|user] [--archive-only] [--delete-archived-after AGE] [--include-labeled] [--keep-blobs] [--compress] [--dry-run] [--json]
//	agentsession export [--format json|md|html] [--branch ENTRY] [--redact] [-o FILE] [--json] FILE|ID
//	agentsession import [--from claude|codex|dive|json|opencode] [--dry-run] [--json] FILE|DIR...
//	agentsession mirror --to URL [--s3-endpoint URL] [--watch [--interval D]] [--json] [ID...]
//	agentsession bench [--turns N] [--dir DIR] [--ws-tree DIR] [--pg DSN] [--busy] [--json]
//	agentsession help [COMMAND]
//	agentsession version [--json]
//
// A session is named by its file, or by its id in the store (FileStore
// root) at --root DIR, default $AGENTSESSION_ROOT, else
// ~/.pi/agent/sessions; a unique prefix of an id will do, as with git's
// short hashes, archived sessions included. An entry is named by its id,
// a checkpoint (label) name, or a unique prefix of an id. Exact matches
// win over prefixes; an ambiguous prefix is an error that lists what it
// matches. Images stored as blob references are resolved from the blob
// directory beside the root (or --blobs DIR).
//
// Every command takes -h or --help (its usage on stdout, exit status 0),
// and all but help take --json; `agentsession --version` prints the
// version. JSON keys are
// camelCase, numbers are numbers, times RFC 3339; a command about one
// thing prints one object, a command that lists prints one object per
// item and line (JSON Lines), as it goes. Each command's shape is below.
//
// Text output is for people: tables are aligned by the columns a
// terminal gives each character (a CJK character two), colors are used only
// when stdout is a terminal and neither NO_COLOR (non-empty) nor
// TERM=dumb is set, and long output to a terminal goes through $PAGER
// (default "less -FRX"; --no-pager or PAGER=cat to not). Commands that
// list take --limit N. Work that takes more than a second (bench, verify
// --all, ls, stats, delete and gc over a large store) shows a progress line
// on stderr when stderr is a terminal. Warnings and hints go to stderr.
//
// Exit statuses: 0 for success; 1 when verify finds an error (any
// finding with --strict), restore refuses to overwrite changed files or
// search finds nothing;
// 2 for a usage error (an unknown command or flag, a missing argument,
// delete without --yes) or a file or session that cannot be read, which
// gives a one-line error and is never written to.
//
// It may import any package of the module; nothing imports it. Each
// command's section below is also its --help text.
//
// # context
//
// Prints the context rebuilt at the leaf (the last entry, or the entry
// --leaf names) as a readable transcript. --for-model prints the list an
// agent sends to its model, with tool pairing repaired; --limit N keeps
// the last N messages.
//
// A session in a store's tree (by its id, or a file under --root's
// layout) is read through the store: a long one through the path index
// the store keeps, its current path alone, the rest of its history not
// read (nor checked: verify reads it all). --leaf, an archived session or
// any other file reads the whole file.
//
// --json prints one object {"leafId", "thinkingLevel", "model",
// "messages"}: model is {"provider", "modelId"} or null, the messages are
// in the seed format's agent-message JSON, and "omitted" (how many
// earlier messages --limit left out) is there when there are some.
//
// # tree
//
// Prints one entry per line, indented by depth, with labels and the leaf
// marked; --compact indents only where the conversation branches, which
// keeps long sessions readable. --limit N prints the first N entries.
//
// --json prints one object per entry and line, depth first: {"id",
// "parentId", "type", "timestamp", "depth", "children", "label", "leaf",
// "summary"}; parentId is null for a root, label "" for none.
//
// # verify
//
// Lists what is wrong in each file, one finding per line, graded: an
// error is damage or a broken link the reader had to repair (malformed
// lines, orphans, duplicate ids, cycles, missing blobs); a warning is
// what crashes, aborted turns and older writers leave in real sessions (a
// torn tail, a cut append, tool calls an aborted turn left without
// results); info is a state a session may well be in (a call awaiting its
// result). It reads each file as it checks it, in memory that does not
// grow with the size of its lines. --all checks every session file of the
// store, the most recently changed first (--limit N: the first N).
//
// Exit status 1 when a file has an error, or with --strict any finding;
// 2 when a file cannot be read as a session; else 0.
//
// --json prints one object per file and line: {"path", "entries",
// "errors", "warnings", "infos", "findings"}, each finding {"severity",
// "kind", "line", "entryId", "detail"} (line 0 and entryId "" where they
// do not apply); a file that cannot be read gives {"path", "error"}.
//
// # checkpoints
//
// Lists the named entries (labels) to rewind to, oldest first, marking
// those on the current path; --limit N lists the last N.
//
// --json prints one object per checkpoint and line: {"name", "entryId",
// "time", "onPath"}.
//
// # snapshots
//
// Lists the workspace snapshots the session recorded (its
// agentsession.snapshot custom entries, which the workspace package's
// Record appends at each step of an agent, and its Rewind, Branch and
// Fork when they bring the files back), in tree order: the entry, its
// time, its kind (step, or revert: the files brought back to an earlier
// snapshot), the snapshot's id (the first 12 hex digits of its hash),
// the change since the snapshot in force before it (files, lines added
// and deleted; "(first)" for the first on its path) and the directory.
// The snapshot in force at the leaf is marked; those off the current
// path are dimmed. --limit N lists the last N.
//
// --json prints one object per snapshot and line: {"entryId", "time",
// "kind", "snapshot", "previous", "files", "additions", "deletions",
// "dir", "first", "onPath", "inForce"}: snapshot and previous (a revert's
// snapshot of the files before it, "" for none) are full ids
// ("blob:sha256:<hex>"), inForce marks the snapshot in force at the leaf.
//
// # diff
//
// Prints how the workspace changed between the snapshots in force at two
// entries (the latest recorded on the path to each), as git diff does:
// each file's header and unified diff, colored on a terminal. --from
// defaults to the first snapshot on the path to --to's entry, and --to
// to the leaf, so that with neither the diff is all the session changed.
// With --dir DIR (the workspace's directory), --to defaults to the files
// in DIR as they are now, and an empty ENTRY (--from "" or --to "")
// stands for them: what changed since a snapshot, nothing recorded.
// Without --dir only the blob directory is read. --stat prints a line
// per file (lines added and deleted, a bar of + and -) and the totals,
// as git diff --stat does. Renames are a deletion and an addition; a
// binary file (a NUL in its first 8000 bytes) has no lines.
//
// --json prints one object: {"path", "id", "dir", "from", "to",
// "fromEntryId", "toEntryId", "files", "additions", "deletions"}: from
// and to are the snapshot ids ("" for the files in DIR, which dir then
// names), the entry ids the ENTRYs named; each of files is {"path",
// "status", "oldType", "newType", "oldMode", "newMode", "binary",
// "additions", "deletions", "note", "unified"}: status is added,
// deleted, modified, mode or type; a type is file, symlink, dir,
// oversized or unreadable, a mode octal ("0644"), both "" on the side
// where the path is absent; note says why lines were not counted, and
// unified is the file's unified diff ("" with --stat).
//
// # ls
//
// Lists the sessions of the store at --root, most recently updated first:
// those of the current directory, of --cwd DIR, or --all; --archived
// includes archived ones, --only-archived lists only them; --limit N
// lists the first N. --project ID, --user NAME and --app NAME keep the
// sessions whose metadata (as show prints it) have these values, --meta
// KEY=VALUE (repeatable) those whose metadata map has every pair given,
// and --since those updated on or after DATE (as stats reads it:
// YYYY-MM-DD from local midnight, or an RFC 3339 time) or within the
// DURATION before now (90m, 12h, 7d); all the filters given must match.
// A PROJECT column is shown when a session listed has a project. A
// long title is cut with an ellipsis (never inside a character or an
// emoji; --json gives it whole): on a terminal to what the line leaves of
// its width ($COLUMNS, else the terminal's), 20 columns at least;
// elsewhere to 60 columns. A
// session file of the directories listed that cannot be read (damaged,
// of a newer format version, over the size limits) is left out with a
// warning on stderr that names it and says why, as stats warns; the exit
// status stays 0, as stats'.
//
// --json prints one object per session and line: {"id", "title",
// "titleDerived", "cwd", "created", "updated", "parentSession",
// "entries", "size", "archived", "archivedAt", "compressed",
// "compacting", "projectId", "appVersion", "user", "app", "metadata",
// "path"}, size in bytes (on disk: compressed for a session archived
// compressed); archivedAt is when the session was archived, null when it
// is not (or the store does not know when); compacting when the compaction
// running on it started, null when none is; metadata an object of
// strings ({} for none); titleDerived as in show.
//
// # show
//
// Prints everything known of one session, reading it only: its info
// (title, and whether it was derived from the first user message; cwd;
// created and updated times; whether it is archived, and since when;
// whether a compaction runs, since when, as the store records it: one
// that stays set is a compaction whose process died; entries, the leaf, size, parent, file),
// its metadata (project, app version, user, app and the metadata map),
// the state at the leaf (the session state of the path to it, and the
// user and app state under their "user:" and "app:" keys when the store
// shares some), the tokens and cost its assistant messages recorded, by
// model, on every branch, and its children (the sessions forked from
// it, archived ones included).
//
// --json prints one object: {"id", "path", "title", "titleDerived",
// "cwd", "created", "updated", "parentSession", "entries", "size",
// "leafId", "archived", "archivedAt", "compacting", "meta", "state",
// "usage", "children"}: archivedAt and compacting are times or null;
// meta is {"projectId", "appVersion", "user", "app", "metadata"},
// metadata an object of strings; state an object of the keys' JSON
// values; usage {"models", "total"}, each model and the total
// {"provider", "model", "messages", "input", "output", "cacheRead",
// "cacheWrite", "totalTokens", "cost"} (cost in the provider's unit, as
// recorded); each child {"id", "title", "updated", "entries",
// "archived"}.
//
// # stats
//
// Counts what the store at --root holds, archived sessions included, as
// ccusage does for Claude Code: sessions, entries, bytes, and the
// tokens and cost the assistant messages recorded, by model. --since
// DATE (YYYY-MM-DD, from local midnight, or an RFC 3339 time) counts
// the entries at or after it and their usage, and the sessions that
// have such entries (with the whole size of their files). A message a
// fork copied (the same entry id and time in both sessions) is counted
// once, as it was paid for once. --daily
// breaks the usage down by day (local time). Files that cannot be read
// are left out, with a warning each.
//
// --json prints one object: {"root", "since", "sessions", "archived",
// "unreadable", "entries", "size", "models", "total", "days"}: since is
// a time or null; each model and the total {"provider", "model",
// "messages", "input", "output", "cacheRead", "cacheWrite",
// "totalTokens", "cost"}, as in show's usage; days (empty without
// --daily) one {"date", "models", "total"} per day, oldest first.
//
// # watch
//
// Prints the changes of the sessions of the store at --root (or of the
// session ID names) as they happen, one line each, until interrupted
// (Ctrl-C, SIGTERM; exit status 0): the time, the session, the kind
// (created, appended, title, metadata, state, leaf, compacting,
// compacted, archived, unarchived, rewritten, deleted, error) and what
// changed (the entries appended, the new title, the state keys, the new
// leaf, since when a compaction runs or that it ended). Changes made by
// other processes are seen through the store's watcher of its root.
// When watch falls behind, the changes it missed are counted in a
// warning on stderr.
//
// --json prints one object per change and line: {"time", "session",
// "kind", "entries", "title", "keys", "leaf", "compacting", "op",
// "error", "remote"}: each entry {"id", "parentId", "type",
// "customType", "role"}; title, keys and leaf are those of their kinds
// ("" and [] otherwise), compacting the start of a running compaction
// (null when it ended, and for the other kinds), op the operation of an
// "operation" change, error that of an "error" one, and remote tells a
// change another process made.
//
// # search
//
// Finds the entries of the sessions of the store at --root (archived ones
// included) whose text holds every word and "quoted phrase" of QUERY (the
// arguments, joined by spaces; quote a phrase for the shell too:
// '"flaky test"'). A word ending in * matches the words it begins; case
// and diacritics are ignored; any other character is text, never syntax.
// Matches in user prompts come first, then those in all other text
// (assistant replies, thinking, tool calls and results, bash executions,
// custom messages, summaries), each group best first (BM25), --limit N
// entries in all (default 20). Hits are printed by session, in the order
// of its best hit: the session's id and title, then each matching entry's
// id, role and time, and the matching part of its text with the matches
// marked.
//
// It first brings the index up to date: the first run reads every
// session, later runs only the sessions that changed since (a progress
// line on a terminal). The index is a cache kept outside the store, in
// --index FILE, default a file named after the root under the user's
// cache directory ($XDG_CACHE_HOME or ~/.cache on Linux, then
// agentsession/search); deleting it is safe. It writes only the index,
// never the store. Several processes may search at once. A session that
// cannot be read is left out with a warning, and tried again next time.
//
// Exit status, as grep's: 0 when an entry matches, 1 when none does
// (said on stderr; with --json, no line), 2 for an error (a usage error,
// a query with no words, an index that cannot be opened).
//
// --json prints one object per hit and line: {"sessionId", "title",
// "cwd", "entryId", "role", "prompt", "time", "snippet", "score"}: prompt
// tells a match in a user prompt, snippet marks each match with « and »,
// and score is higher for better matches.
//
// # compact
//
// Summarizes the history of the context at the leaf with the offline
// extractive summarizer (no model) and appends a compaction entry to the
// file, through a FileStore (its file lock, whole lines), keeping about
// --keep-tokens of recent history; it prints the file and the new leaf.
// --dry-run prints the plan instead (what would be summarized, where the
// kept history starts, a split turn, the files) and writes nothing. A
// file of an older format version is refused (migrate it first).
//
// --json prints one object: {"path", "id", "dryRun", "compacted",
// "leafId", "entryId", "firstKeptEntryId", "summarized", "splitTurn",
// "tokensBefore", "tokensKept", "tokensAfter", "filesRead",
// "filesModified", "reason"}: leafId is where the plan was made, entryId
// the compaction entry written (the new leaf; "" with --dry-run),
// tokensAfter 0 with --dry-run, reason why nothing was compacted ("" when
// something was or would be).
//
// # fork
//
// Copies the path from the root to --at (default the leaf) into a new
// session whose header names the source as parentSession, and prints the
// file it wrote. The source is only read.
//
// The fork goes to the store (FileStore root) --out DIR names; else, for
// a source in a store's layout (<root>/--cwd--/FILE.jsonl), to that
// store, beside the source; else to the store an explicit --root DIR
// names. A file outside any store with neither is refused, so that
// nothing goes to the default store unasked.
//
// --json prints one object: {"source", "sourceId", "at", "path", "id",
// "title", "entries"}; path and id are the new session's.
//
// # restore
//
// Brings the files of DIR back to the workspace snapshot in force at
// ENTRY: contents, modes and symlinks as recorded, files created since
// removed, files deleted since recreated; ignored files (.gitignore,
// .git/info/exclude, --ignore) are left alone. Each file is replaced
// atomically, and every content is fetched and checked before any file
// changes. It prints what it changed (create, update, delete, mode,
// mkdir, rmdir and the path); --dry-run lists what it would change and
// changes nothing.
//
// It restores files only: the session is read, never written, and its
// leaf does not move (the library's workspace.Rewind moves the
// conversation and the files together, and records the revert). The
// files of DIR are checked against the snapshot in force at the leaf,
// which is what they held when the agent last recorded them: if a file
// restore would overwrite or delete changed since (by you, say), it
// changes nothing, lists those files and exits with status 1; --force
// restores them too, and their changes are lost. As nothing is recorded,
// after a restore to an entry the files are those of its snapshot, not
// the leaf's: --expect ENTRY checks against the snapshot in force at
// ENTRY instead (to go back to the leaf after a restore to ENTRY, say).
// Give the host's ignore patterns with --ignore, which the session does
// not record: files they match are otherwise taken for files to restore.
//
// --json prints one object: {"path", "id", "dir", "entryId",
// "snapshotEntryId", "snapshot", "expect", "dryRun", "force", "changes",
// "left"}: entryId is the entry --to named, snapshotEntryId the entry
// that recorded the snapshot, expect the snapshot the files were checked
// against ("" with --force), each change {"op", "path"}, and left the
// paths that could not be restored and were left as they are ({"path",
// "reason"}: content too large to have been stored, or unreadable).
//
// # migrate
//
// Upgrades session files of format version 1 and 2 to version 3 in place,
// atomically, under the file's lock, and says what it did to each. The
// file keeps its permission bits. --backup first copies each file it will
// rewrite to FILE.bak, with the same permissions, and refuses a file
// whose FILE.bak exists; --dry-run only says what it would do.
//
// --json prints one object per file and line: {"path", "from", "to",
// "migrated", "dryRun", "backup", "mode"}: from and to are format
// versions, backup the copy's path ("" for none), mode the file's
// permission bits in octal ("0644"); a file that cannot be migrated gives
// {"path", "error"}.
//
// # title
//
// Sets the session's title (its display name): appends a session_info
// entry, as the seed agents do, through a FileStore as compact does.
//
// --json prints one object: {"path", "id", "title", "previous",
// "entryId"}: previous is the title before ("" for none: a title show
// derives from the first user message is none), entryId the entry
// written.
//
// # label
//
// Names ENTRY (an id, a unique prefix of one, or a checkpoint name) NAME:
// appends a label entry, which makes it a checkpoint to rewind to; an
// empty NAME ("") clears the entry's label.
//
// --json prints one object: {"path", "id", "entryId", "label",
// "previous"}: previous is the entry's label before ("" for none).
//
// # rewind
//
// Moves the session's leaf back to TO (an entry id, a unique prefix of
// one, or a checkpoint name), as Session.Rewind does: nothing is
// deleted, and the path left behind stays reachable from the old leaf,
// which it prints (rewind to it to go back).
//
// --json prints one object: {"path", "id", "from", "to", "left"}: from
// is the leaf before, to the new leaf, left how many entries of the old
// path are not on the new one.
//
// # archive
//
// Archives the session ID names (in the store at --root, or a file in a
// store's layout): the store moves it under <root>/.archive, out of
// listings (ls --archived shows it) and of the seed agents' sight; it
// can still be read, written and unarchived. The log is not changed.
// --compress then keeps it zstd-compressed (one file; W10k's 67 MB take
// 9.7 MB): every command reads it as before, and writing to it again
// unarchives it.
//
// --json prints one object: {"id", "path", "archived", "compressed",
// "changed"}: path is the session's file now, changed false when it was
// archived already.
//
// # unarchive
//
// Brings an archived session back into listings (a compressed one
// written back plain).
//
// --json prints one object: {"id", "path", "archived", "compressed",
// "changed"}, as archive does (compressed false); changed is false when
// it was not archived.
//
// # delete
//
// Deletes the session ID names (in the store at --root, or a file in a
// store's layout) for good: its file, and the blobs (images) no other
// session of the store refers to, unless --keep-blobs; --children
// deletes the sessions forked from it, theirs and so on, first. It
// prints each session deleted and how many blobs were freed; children
// left without --children are named on stderr.
//
// It asks no questions, on a terminal or not, so that it behaves the
// same in a script; instead, without --yes (-y) it deletes nothing,
// lists on stderr what it would delete and exits with status 2.
// --dry-run lists it on stdout, exit status 0. archive is the way to
// put a session out of sight that can be undone.
//
// --json prints one object: {"id", "dryRun", "sessions", "blobs",
// "childrenLeft"}: each of sessions (children first) is {"id",
// "title", "path"}, blobs how many were deleted (0 with --dry-run), and
// childrenLeft the ids of the children not deleted.
//
// # gc
//
// Applies a retention policy to the store at --root (session.Sweep):
// the sessions not updated for --older-than AGE (30d, 12h) are deleted,
// with the blobs no remaining session refers to (unless --keep-blobs),
// or archived with --archive-only. --keep N keeps the newest N sessions
// of each working directory (--group user: of each user) expired or
// not; sessions with a label or a checkpoint are kept unless
// --include-labeled. --delete-archived-after AGE deletes the archived
// sessions neither archived nor updated for AGE: with --archive-only,
// sessions are archived first and deleted later. --compress keeps every
// archived session zstd-compressed, those archived before included. A
// child session expires by its own time; deleting its parent leaves it.
//
// Agents may go on writing meanwhile: a session written to after gc
// listed the store is left as it is (skipped). --dry-run lists what
// would be archived or deleted and changes nothing. It prints each
// session archived or deleted, then a summary line; on a terminal, a
// progress line. A session that fails is named on stderr, the others
// are swept, and the exit status is 2.
//
// --json prints one object: {"dryRun", "listed", "deleted", "archived",
// "compressed", "kept", "skipped", "blobs", "errors"}: deleted,
// archived, compressed and skipped are session ids, each of kept is {"id", "reason"} (reason young,
// newest, labeled or archived), blobs how many were freed, and each of
// errors {"id", "error"}.
//
// # export
//
// Writes the session (every branch, or with --branch ENTRY only the path
// from the root to ENTRY) as one of three formats: json, the versioned
// envelope of package export (header, entries as stored, the tree's
// roots, leaves and labels), which import reads back; md, a Markdown
// transcript of the current branch (or ENTRY's), tool results folded
// past a length; html, one self-contained page that needs no network,
// with the whole tree to navigate. --format picks it, else the
// extension of -o FILE (.md, .html), else json. -o FILE is replaced
// only once the export is whole; without it the export goes to
// standard output.
//
// --redact replaces API keys and tokens of the common providers,
// private keys, JWTs, password= and token= values, high-entropy values
// of env-like lines and home directories (package redact) before
// anything is written, and says on stderr how many of each rule it
// replaced, never what.
//
// --json makes what goes to standard output JSON, and never conflicts
// with --format json. Without -o (or with -o -) the export is the
// output, so --json prints it in the json format, the same bytes as
// --format json (and as no flag at all); --json with --format md or html
// and no -o is a usage error, as JSON and Markdown or HTML cannot share
// standard output. With -o FILE the export goes to the file, and --json
// describes it, as other commands' --json describe what they did: one
// object {"id", "format", "out", "bytes", "branch", "redacted"}, where
// redacted (with --redact) counts the replacements by rule.
//
// # import
//
// Reads sessions of other agents into the store at --root: Claude Code
// transcripts (~/.claude/projects/*/*.jsonl, subagents as child
// sessions), Codex rollout files (~/.codex/sessions/...), OpenCode's
// exports (opencode export), its storage directory (up to 1.1:
// ~/.local/share/opencode/storage, or one session's file in it,
// session/<project>/<id>.json, which brings its messages, parts, to-do
// list and subagents' sessions) and its SQLite database (1.2 on:
// ~/.local/share/opencode/opencode.db, copied with its -wal and read
// from the copy, never in place), Dive session files (its FileStore's
// <dir>/<id>.jsonl; a suspended turn's pending calls stay pending) and
// this tool's JSON export. The format is detected per file (--from names
// it). A directory imports every session file under it, with a progress
// line on a terminal. A session already in the store (the same id and
// entries) is skipped, so an import can be run again; one cut short is
// completed. Records of types the importer does not model are kept as
// custom entries and counted; a malformed line is reported with its
// number, as is a line read with a repair (a parent missing from the
// file), and the rest imports. --dry-run reads and reports, and writes
// nothing. It reads nothing outside what it is given: no symbolic link
// below a directory (or beside a file) is followed, no FIFO or device is
// opened, and ids in a file never become paths. A directory's files
// that were not read are each named on stderr with the reason (not a
// session of a known format, a link, another format than --from, ...).
// It ends with a summary: imported, skipped, errors, files not imported;
// the exit status is 2 when a file failed, else 1 when a file of a
// directory was not imported.
//
// --json prints one object per session and line: {"status" ("imported",
// "skipped", "error" or "not-imported": a file not read, with the
// reason in "error"), "id", "parentSession", "format", "source",
// "entries", "resumed" (the entries an earlier import cut short had
// stored), "warnings", "unknown" (counts by record type), "malformed"
// (one "file:line: why" each), "error"}. --dry-run reads the store (and
// creates no --root) to say what would be imported, skipped or refused.
//
// # mirror
//
// Keeps the sessions of the store at --root the same in a remote store
// (--to): s3://BUCKET/PREFIX (a bucket on AWS, or on the S3-compatible
// server --s3-endpoint names; credentials as the AWS SDK reads them),
// postgres://… (a DSN: pgstore, its schema migrated first) or
// file:///DIR (another session folder). It mirrors the sessions ID...
// names, or every session of either side, once: a session on one side
// only is created on the other, one that is behind on a side gets what
// it lacks, and one written on both sides since they last agreed keeps
// the remote's conversation, with this machine's turns added to it as a
// branch (nothing is lost; see package mirror), this side then taking
// the remote's log. With --watch it goes on until interrupted (Ctrl-C,
// SIGTERM; exit status 0), mirroring each change as the stores report
// it, and comparing their listings every --interval. Another machine
// picks a session up with the same command.
//
// It prints a line per session that changed (or failed, on stderr;
// exit status 2); --json prints one object per session and line: {"id",
// "createdRemote", "createdLocal", "pushed", "pulled", "branched",
// "error"}.
//
// # bench
//
// Builds the W10k workload (or --turns N turns) in a new temporary
// directory (inside --dir DIR if given; removed afterwards), measures
// appends, syncs, opening and listing on that disk, and prints a table of
// the measures.
//
// Then the workspace measures, against the shadow git repository
// OpenCode keeps, timed in the same run on a copy of the same tree
// (--ws-tree DIR, default $(go env GOROOT)/src/net; skipped with a
// message when no Go distribution is found): the first snapshot into an empty store
// (git add -A and git write-tree into an empty repository), a snapshot
// with nothing changed (with the watcher, on Linux, and without), a snapshot after
// editing 10 files, the diff of the two snapshots 10 files apart as the
// diff command makes it (git diff --stat of the two trees), restoring the
// 10 files (git read-tree and git checkout-index -a -f), and the bytes
// stored for the tree (git's object store). Git's figures are left out,
// with a message, when git is not on PATH.
//
// --pg DSN measures pgstore too, on the PostgreSQL server DSN names
// (postgres://user@host:port/db), in a schema of its own that the run
// creates and drops, so the user needs CREATE on the database: 16
// agents save W10k turns, each to a session of its own, 3,000 turns
// among them, as pgstore's BenchmarkAppend/sessions does. It prints the
// entries stored per second and a turn's p50 and p99. The server must
// answer before anything is measured (within 10 seconds unless the DSN
// sets connect_timeout); an interrupt during the run ends it, and the
// schema is dropped all the same (an error names it if it cannot be).
//
// --busy measures beside a CPU hog: a process of this program spinning
// on one core for the whole run, as another program would on a busy
// machine.
//
// Run it with GOMAXPROCS=1 in the environment to measure on one core.
//
// --json prints one object: {"turns", "dir", "busy", "procs",
// "fileBytes", "appendNsPerEntry", "writeThroughNsPerEntry",
// "writeFloorNsPerEntry", "writeThroughPerFloor", "fsyncTurnP50Ns",
// "rawFdatasyncP50Ns", "readFloorNs", "openNs", "openContextNs",
// "peakResidentGrowthBytes", "heapSharedBytes", "heapLiveBytes", "list1000Ns",
// "list1000NewStoreNs", "forkNs", "forkFloorNs", "forkPerFloor",
// "compactNs", "resumeTurns", "resumeFileBytes", "resumeMessages",
// "resumeNs", "resumePeakResidentGrowthBytes", "openContextPerReadFloor",
// "fsyncTurnPerRawFdatasync"}:
// durations in nanoseconds (medians, or p50), sizes in bytes, the last
// two ratios (and writeThroughPerFloor and forkPerFloor);
// appendNsPerEntry is an append gathered (SyncNever),
// writeThroughNsPerEntry one written before Append returns
// (SyncOnFlush without Flush, what pi's appendFileSync does), and
// writeFloorNsPerEntry one write(2) of each entry's line, its floor;
// rawFdatasyncP50Ns writes the lines of a turn and syncs them; procs is
// GOMAXPROCS; forkNs forks the session at its middle entry (written, not
// flushed), forkFloorNs writes the fork's bytes to a new file and syncs
// it, and compactNs compacts the session (the offline summarizer);
// peakResidentGrowthBytes (how much resident memory opening the session took at
// its peak, in a child process) is null where it is not measured
// (Windows); heapSharedBytes is the heap that child keeps with the
// session open and its messages shared (SharedMessages, as pi holds its
// context), heapLiveBytes the same with a Context() held too (the
// caller's deep copy). resumeNs resumes a session of resumeTurns turns
// (twice --turns, compacted every fifth of --turns but after the last;
// a file of resumeFileBytes, resumeMessages messages in its context) in
// a new process, as an agent does: a store, Open, Context and Messages,
// through the path index its first open left; the median of five
// processes, and resumePeakResidentGrowthBytes the largest growth of
// their resident memory (null where not measured).
//
// "postgres" is null without --pg, else {"agents", "turns",
// "entriesPerSec", "turnP50Ns", "turnP99Ns"}.
//
// "workspace" is null when the workspace measures are skipped, else
// {"tree", "files", "treeBytes", "snapshotFirstNs",
// "snapshotUnchangedNs", "snapshotUnchangedNoWatchNs",
// "snapshotEdit10Ns", "diff10Ns", "restore10Ns", "storedBytes", "git",
// "perGit", "gitSkipped"}: tree is the tree copied; git holds git's
// figures under the same names (snapshotUnchangedNoWatchNs aside),
// perGit each of ours over git's ({"snapshotFirst", "snapshotUnchanged",
// "snapshotEdit10", "diff10", "restore10", "storedBytes"}), both null
// and gitSkipped saying why when git is not on PATH.
//
// # help
//
// Prints the list of commands, or the usage, description and flags of
// COMMAND, as COMMAND --help does.
//
// # version
//
// Prints the module version the tool was built from ("(devel)" for a
// build of a working tree), as --version does.
//
// --json prints one object: {"version", "goVersion"}.
package main

import (
	_ "embed"
	"strings"

	// import reads OpenCode's SQLite database (opencode.db) too.
	_ "github.com/agentsession/session/importer/opencodedb"
)

// doc is this file: its package comment is the help text of the
// commands, one section ("# NAME") each.
//
//go:embed main.go
var doc string

// docSection returns the text of the package comment's section "# name".
func docSection(name string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "package ") {
			break
		}
		text := strings.TrimPrefix(strings.TrimPrefix(strings.TrimRight(line, "\r"), "//"), " ")
		if h, ok := strings.CutPrefix(text, "# "); ok {
			in = h == name
			continue
		}
		if in {
			b.WriteString(strings.ReplaceAll(text, "\t", "    ") + "\n")
		}
	}
	return strings.TrimSpace(b.String())
}
