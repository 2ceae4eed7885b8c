// Package opencodedb lets package importer read OpenCode's SQLite
// database: opencode.db, where OpenCode keeps its sessions from version
// 1.2 on ($XDG_DATA_HOME/opencode/opencode.db; opencode-<channel>.db for
// other release channels). Import it for its effect:
//
//	import _ "github.com/agentsession/session/importer/opencodedb"
//
// and importer.Import reads a database named to it, or found in a
// directory it imports, as it reads OpenCode's exports and its older
// storage tree: each session as `opencode export` would write it, with
// the same entries (see the notes in importer's opencode_db.go for the
// tables and the mapping). Without this package a program's imports
// name the database as not imported (importer.ErrOpenCodeDatabase).
//
// It is a module of its own so that its SQLite driver (the pure-Go
// modernc.org/sqlite, the one the search module uses) never becomes a
// dependency of the library.
//
// # What it reads, and how
//
// importer.Import never lets it open the user's database in place: it
// copies the database and its -wal through its import root, with a cap
// on their size, into a private temporary directory, and this package
// opens the copy read-only (immutable when there is no -wal to apply),
// so that nothing is written beside the user's files and OpenCode's
// locks are never waited on.
//
// The tables it needs are session, message and part (ErrNotOpenCode when
// one is missing); it reads only the columns it knows, so that a later
// version's columns and tables do not stop it. Sessions are read one at
// a time, parents before their children (a cycle of parents is broken
// where it is found), and handed to the importer, which stores each
// before the next is read. What it reads is bounded: a message's or
// part's data over MaxRecordBytes is left out and reported, as is a
// record that is not a JSON object, and a session whose messages and
// parts pass importer.OpenCodeMaxFileBytes is refused (reported, the
// other sessions import). Every query runs under the import's context.
//
// Importing it allows the standard library, modernc.org/sqlite and the
// importer package.
package opencodedb
