package importer

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// The formats Import reads, in one table: the order in which Detect and
// Import try them is the table's, written here, never the order in which
// the files of the package happen to be initialised.

// readers is every kind of file Import reads, in detection order.
//
// A file is first offered to the readers that recognise a file by its
// place in a tree (claims: OpenCode's storage tree, an SQLite database's
// -wal or -journal), then to each reader's sniff of its first 64 KiB, in
// this order. The sniffs do not overlap (each looks for what only its
// agent writes first: a Claude Code record's top-level parentUuid, a Codex
// session_meta, a Dive header line, this module's envelope "format", an
// OpenCode export's leading "info", SQLite's magic, an OpenCode record's
// leading "id"), and the order puts the narrower test before the
// broader: OpenCode's storage records, recognised by a leading "id" and
// the members of their kind, come last.
var readers = []reader{
	{format: Claude, reads: "Claude Code transcripts: ~/.claude/projects/<project>/<session>.jsonl (its subagents' transcripts read along, as child sessions)",
		sniff: claudeSniff, owned: claudeOwned, read: readClaude},
	{format: Codex, reads: "Codex rollout files: ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl",
		sniff: sniffCodex, read: readCodex},
	{format: Dive, reads: "Dive session files: its FileStore's <dir>/<id>.jsonl",
		sniff: sniffDive, read: readDive, owned: diveTemp},
	{format: JSON, reads: "this module's JSON export envelope (package export; agentsession export --format json)",
		sniff: sniffJSON, read: readJSON},
	{format: OpenCode, reads: "OpenCode exports: the JSON `opencode export` writes",
		sniff: sniffOpenCode, read: readOpenCode},
	{format: OpenCode, reads: "OpenCode's SQLite database (1.2 on): ~/.local/share/opencode/opencode.db, with its -wal, read from a copy",
		available: func() bool { return openCodeDB() != nil },
		sniff:     sniffSQLite, claims: dbClaims, owned: dbOwned, each: readOpenCodeDB,
		read: func(context.Context, *root, string) ([]*Parsed, error) { return nil, ErrOpenCodeDatabase }},
	{format: OpenCode, reads: "OpenCode's storage tree (up to 1.1): ~/.local/share/opencode/storage, or one session's file in it, session/<project>/<id>.json",
		sniff: sniffOpenCodeStorage, claims: ocClaims, owned: ocOwned, rootOf: ocRootOf, each: eachOpenCodeStorage},
}

// FormatInfo describes one kind of file Import reads.
type FormatInfo struct {
	// Format is its format's name, the one Options.Format takes (the
	// agentsession CLI's import --from). Several kinds of file may share
	// a format: OpenCode's export, database and storage tree.
	Format Format
	// Reads says which files, and where their agent keeps them, for a
	// person.
	Reads string
}

// Formats returns the kinds of file Import reads, in the order Detect
// and Import try them: a file whose place in a tree marks it as one
// kind's (a file of OpenCode's storage tree, an SQLite database's -wal)
// is that kind's; any other is the first kind whose test of its first
// 64 KiB recognises it. The order is fixed, the same in every program.
//
// OpenCode's SQLite database is listed only when a reader of it is
// registered (RegisterOpenCodeDB: a program that imports package
// github.com/agentsession/session/importer/opencodedb, as the
// agentsession CLI does); without one such a file is still recognised,
// and refused with ErrOpenCodeDatabase. The slice is the caller's.
func Formats() []FormatInfo {
	out := make([]FormatInfo, 0, len(readers))
	for _, r := range readers {
		if r.available == nil || r.available() {
			out = append(out, FormatInfo{Format: r.format, Reads: r.reads})
		}
	}
	return out
}

// FormatNames returns the names Options.Format takes, each once, in the
// order Formats first lists them.
func FormatNames() []Format {
	var out []Format
	for _, f := range Formats() {
		if !slices.Contains(out, f.Format) {
			out = append(out, f.Format)
		}
	}
	return out
}

// checkFormat refuses an Options.Format that names no format, before
// anything is read.
func checkFormat(f Format) error {
	if f == "" || slices.ContainsFunc(readers, func(r reader) bool { return r.format == f }) {
		return nil
	}
	names := make([]string, 0, len(readers))
	for _, n := range FormatNames() {
		names = append(names, string(n))
	}
	return fmt.Errorf("%w: no format %q (the formats: %s)", ErrUnknownFormat, f, strings.Join(names, ", "))
}
