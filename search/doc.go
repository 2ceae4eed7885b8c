// Package search is full-text search across the sessions of a Store: an
// index of the text of every entry (user prompts, and apart from them all
// other text), kept up to date incrementally, and ranked queries over it.
//
//	idx, err := search.Open(path, nil) // search.DefaultPath(root) for a FileStore's
//	stats, err := idx.Update(ctx, store)
//	hits, err := idx.Search(ctx, `"flaky test" parser`, nil)
//
// # The engine, and why a module of its own
//
// The index is an SQLite database with an FTS5 table, through
// modernc.org/sqlite: SQLite translated to Go, so no cgo and no C
// toolchain, with FTS5 compiled in (a test checks it); pi keeps its
// prompt history the same way. It adds about 5.5 MB to a binary (the
// agentsession command: 10.1 MB without it, 15.6 MB with it) and eight
// modules (the driver, modernc's libc and three helpers of theirs, four
// small ones), which is why it is a module of its own: the library and
// its other users never depend on it.
// Bleve, the pure-Go alternative, is heavier (dozens of modules, an index
// of many files, no multi-process writers) for what this needs: BM25
// ranking, phrases, prefixes and snippets, which FTS5 has.
//
// # What is indexed
//
// Every entry of every session, the archived ones included, on every
// branch: a user message's text is a prompt; the text of assistant
// messages (with thinking, tool calls' names and the string values of
// their arguments), tool results, bash executions, custom messages, and
// compaction and branch summaries goes in the body. Images and
// structural entries (labels, model changes, custom state) are not text.
// At most Options.MaxEntryText bytes of an entry are indexed. The text
// is kept deflated beside the index (an external content table), so the
// file is about the size of the text indexed, not twice it.
//
// # Updates
//
// Update lists the store's sessions and compares each with the
// fingerprint it recorded (update time, entry count, size, title): an
// Update when nothing changed reads no session. A session that grew is
// read from where the index stopped (session.TailLoader), a rewritten
// one whole, and the sessions the store no longer lists are dropped.
// Each session is written in its own transaction.
//
// # Queries
//
// A query is words and "quoted phrases", all of which must match; a word
// ending in * is a prefix. Matching ignores case and diacritics (FTS5's
// unicode61 tokenizer: words are runs of letters and digits). Chinese,
// Japanese and Korean text, written without spaces between words, is
// indexed a character a token, and a CJK word in a query is the phrase
// of its characters: 会话 finds 保存会话状态, and only where 会 and 话
// stand side by side (segment.go). Text of other scripts written
// without spaces (Thai, Lao, Khmer, Burmese) is matched by whole runs
// only. Every
// other character is text: the query is rewritten into FTS5 strings, so
// no input is an FTS5 syntax error (FuzzQuery checks it). Hits in user
// prompts come first, then the others, each group ranked by BM25.
//
// # Where the index lives, and concurrency
//
// The index is a cache: it can be deleted at any time and is rebuilt by
// the next Update. DefaultPath puts a FileStore's under the user's cache
// directory (os.UserCacheDir()/agentsession/search, one file per root),
// not inside the store: a store's directory is the agent's (pi's
// ~/.pi/agent/sessions), may be read-only or synced elsewhere, and the
// commands that read a store do not write to it. The database is in WAL
// mode with a busy timeout: several processes may update and search the
// same index at once, searches never wait for an update, and an update
// that finds the index changed under it (another process indexed the
// same session) reads the session again rather than index it twice.
package search
