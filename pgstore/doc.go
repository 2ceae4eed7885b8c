// Package pgstore keeps agentsession sessions in PostgreSQL, for agents
// that run on many machines and resume a session on whichever node takes
// the request.
//
// It is a module of its own (github.com/agentsession/session/pgstore), so
// that importers of the root module never pull a database driver. It uses
// a pgx v5 pool:
//
//	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	...
//	if err := pgstore.Migrate(ctx, pool); err != nil { ... } // every replica may call it
//	store, err := pgstore.New(ctx, pool, nil)
//	...
//	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/srv/app"})
//
// # Semantics
//
// A Store behaves as the root package's MemoryStore and FileStore do, and
// passes the same conformance suite (storetest):
//
//   - Append is all or nothing and in order, in one round trip: a call of
//     the agentsession_append SQL function, which locks the session row,
//     checks AppendOptions (IfLast, IfEmpty) and the uniqueness of the new
//     entry ids and the limits, and inserts. Appends to one session are serialised by that
//     lock; appends to different sessions run in parallel. A failed
//     condition is session.ErrConflict, never a silent merge.
//     The function relies on READ COMMITTED, PostgreSQL's default: on a
//     server whose default_transaction_isolation is stricter, an append
//     that waited for the lock fails with ErrConflict (a Session retries
//     it). Migrate and Rewrite set READ COMMITTED themselves.
//   - Group commit: appends of messages go together when the store is
//     busy. While Options.AppendFlights appends or batches are in flight
//     (two by default), the appends of messages that come wait, and go as
//     soon as one is back, in one call of agentsession_append_batch: one
//     statement, one transaction, one commit (on a small server, the
//     statements an append runs cost it more than the commit). An append
//     that finds a flight free goes at once, alone: nothing waits on a
//     timer. It keeps every guarantee of an append made alone: each
//     member is checked (conditions, duplicates, limits) and answered as
//     agentsession_append would, under its session row's lock, in the
//     order of the batch; a refusal is an answer, which leaves the other
//     members alone; a member whose row another transaction holds is made
//     alone instead, so a batch waits for no row lock; a database error
//     rolls the whole batch back, and every member is then made alone;
//     and no caller hears of its append before the commit. A caller
//     whose context ends returns at once (its append, if already sent,
//     may commit, as any append whose context ended). Appends that change
//     the fold (titles, metadata, compactions) and those of
//     CreateWithEntries are made alone.
//   - Load reads the header and the entries in one repeatable-read
//     snapshot. Each entry's seed-format JSON is stored as bytea and comes
//     back byte for byte, unknown types and fields included, over the
//     binary protocol and over the simple protocol poolers need alike.
//   - LoadTail (session.TailLoader) returns the header and the entries
//     after the first n, in one snapshot as Load, if the n-th entry still
//     has the id the caller knows (session.ErrConflict otherwise: the log
//     was rewritten, or is shorter). It reads through the (session_id,
//     seq) primary key, so a handle catching up pays for what is new, not
//     for the length of the log. (A session whose header is of an older
//     format version is migrated whole, as Load does.)
//   - LoadPath (session.PathLoader, which session.Open uses) reads,
//     in one query, the entries the context at the default leaf reads:
//     its path back to the latest compaction's first kept entry, and the
//     settings and the assistant message naming a model before it (see
//     Version 9 below), so that resuming a long compacted session costs
//     what its context holds. A session with no compaction on that path,
//     or whose rows have no known place, is read whole, as Load does.
//   - Rewrite replaces header and entries in one transaction, only if
//     session.RewriteOptions still hold: they are checked against the
//     stored last entry and entry count under the session row's lock, so
//     a prune never drops an entry another writer appended meanwhile
//     (session.ErrConflict, nothing changed). The store keeps no
//     unreadable lines, so DropUnreadable changes nothing here.
//   - List reads only the session rows, most recently updated first,
//     with cursor paging and every filter of session.ListOptions in SQL
//     (cwd, parent, update times, archived or not, project, user, app,
//     metadata pairs), and fills every field of session.SessionInfo as
//     session.InfoFold.Fill does: the store keeps each session's InfoFold
//     (the fold column) and its metadata (the header's with the updates
//     applied), written in the transaction of every append that changes
//     them (the fold read under the row's lock, the entries folded in
//     Go) and recomputed by Rewrite. Appends of messages stay one
//     statement: the function sets the first user message itself.
//   - Archiver: Archive and Unarchive (Restore is its deprecated alias)
//     set and clear archived_at; neither the log nor the update time
//     changes; archiving an archived session keeps its first time.
//     CompactionMarker keeps compacting_at beside the log the same way.
//   - SharedStateStore: user and app state in agentsession_state, a row
//     per key; UpdateState is one statement, so updates of other keys
//     from any connection are all kept (null deletes). Values are jsonb:
//     the same JSON comes back, not the same bytes, and jsonb refuses
//     "\u0000" in a string.
//   - Subscriber: every write (create, append, rewrite, delete,
//     archive, unarchive, compaction mark) sends pg_notify on the channel
//     "agentsession" in its own transaction, with a small payload (schema,
//     session, kind, entry counts, generation, origin), never entries,
//     while a Store of its schema listens (or when the write runs under
//     repeatable read or serializable): PostgreSQL runs the commits of
//     transactions that notified one at a time, which would cost every
//     append with nobody listening (see Schema, version 6). The
//     first subscriber starts a listener on a connection of its own; it
//     reads the entries an append added by their seq and publishes
//     session.ChangesOf, every entry once, in commit order, for this
//     process's writes and others' alike (Remote for the latter). A lost
//     connection is a ChangeError (store-wide, Session ""), then a
//     reconnection with backoff. Close stops it. See Store.Subscribe.
//   - A Session handle on a deleted session gets session.ErrNotFound:
//     an append finds no row to lock and never creates one.
//   - A header's strings (Cwd, Title, ParentSession) are kept as every
//     store keeps them, as its JSON holds them (storekit.StoredString):
//     NUL and other control characters included, a byte that is not
//     UTF-8 as U+FFFD. The header line is stored as bytea; the columns
//     List reads and filters by hold the strings' UTF-8 bytes (bytea,
//     which unlike text holds NUL), and ListOptions.Cwd is compared
//     after StoredString, so a session moves between stores unchanged.
//   - Limits (Options.Limits, session.Limits; the zero value is the
//     defaults every reader applies): nothing is written that a reader
//     would refuse. Create refuses a header line over MaxLineBytes,
//     Rewrite a new log over any limit, Append a line over MaxLineBytes
//     (checked before anything is sent) and an append that would take the
//     session past MaxEntries entries or MaxLogBytes bytes (checked by
//     agentsession_append under the session row's lock, so that appends
//     running together cannot push a session past a limit between them).
//     The error is a *session.LimitError (errors.Is session.ErrTooLarge),
//     and nothing changed. Load and LoadTail read with the same limits: a
//     store opened with raised limits reads what it wrote, one with lower
//     limits refuses a session over them (ErrTooLarge), as a FileStore
//     does. Give every replica the same limits.
//   - Errors: session.ErrNotFound, ErrExists, ErrConflict (also for
//     serialization failures and deadlocks), ErrInvalidID (checked before
//     any query), session.ErrTooLarge (see Limits), ctx.Err() when the context is done, ErrSchema when the
//     schema is missing or of another version, and ErrUnavailable when
//     the database cannot be reached or the connection broke (server
//     down or restarting, backend terminated, network failure, pool
//     closed), with the driver's error in the chain too. Calls never
//     panic on a broken connection.
//
// # When the database goes away
//
// ErrUnavailable is worth retrying once the server is back; the pool
// replaces broken connections by itself. A write that failed with it, or
// with a context error, may or may not have been committed: the answer
// was lost, not necessarily the write. Retrying is safe. A Store.Append
// whose entries are all stored already, byte for byte, succeeds without
// writing (one more query, made only when the append was refused), and a
// Session sends the very entries of a failed write again when the host
// retries the same call, so the turn is stored once (see the session
// package, "Retries"). The same ids with other content are ErrConflict.
//
// Images stay inline in the entries: PostgreSQL compresses large bytea
// values itself (TOAST; with lz4 since version 8, where the server has
// it). The store is a session.BlobStore all the same,
// for the manifests and file contents of workspace snapshots: a row per
// blob in agentsession_blobs, by reference, checked against its SHA-256
// when read (session.ErrCorrupt), at most Options.MaxBlobBytes each. A
// put of bytes already stored sets the row's touched_at, by the server's
// clock; ListBlobs, DeleteBlob and DeleteBlobIfOlder (one DELETE
// conditional on touched_at, which the row lock orders with the puts
// under READ COMMITTED) let session.CollectBlobs free the blobs no
// session refers to. A put pins its blob until the append that refers
// to it (session.BlobPinner: an advisory lock of a connection of the
// Store's own, which the server ends with the writer), and a collection
// through another Store spares it whatever its age (see pins.go). The
// collection compares touched_at with its own clock, so the grace it is
// given must cover how far the clocks of the database server and of the
// machine that collects may disagree.
//
// # Schema
//
// Migrate creates the tables agentsession_sessions, agentsession_entries,
// agentsession_blobs, agentsession_state and agentsession_schema (the
// version table) and the functions agentsession_append and
// agentsession_notify in the connection's current schema: the first
// schema of search_path. To keep them apart from an application's own
// tables, give the pool a search_path (pgxpool.Config.ConnConfig.
// RuntimeParams["search_path"]). The SQL is embedded (migrations/*.sql)
// and applied under an advisory lock in one transaction, so replicas that
// start together migrate once; Migrate upgrades an older schema in place.
//
// Version 2 gives agentsession_append the store's limits as parameters.
// The function's version 1 signature stays, and appends within the
// default limits, so that replicas still running a version 1 package
// keep working during a rolling upgrade without writing what a reader
// would refuse (they report such an append as an unexpected answer, an
// error). New refuses a schema of another version, so a replica that
// restarts needs the package of the schema.
//
// Version 3 keeps a header's strings exactly: the text
// columns cwd, title and parent_session become bytea columns of their
// UTF-8 bytes, named cwd_utf8, title_utf8 and parent_session_utf8 (their
// values converted as they are, the cwd index rebuilt on the new column),
// and agentsession_append takes the title as bytea. The migration
// rewrites agentsession_sessions (one row per session, not the entries)
// under its exclusive lock. During a rolling upgrade, replicas still
// running a version 1 or 2 package keep loading (Load, LoadTail),
// appending (their agentsession_append signatures stay, and name a
// session as before), deleting, archiving and restoring; their Create,
// Rewrite and List fail with an error (column "cwd" does not exist, not
// ErrSchema) until they are upgraded. That is on purpose: under the old
// names their strings would be bound to bytea columns as bytea's text
// input, which reads backslashes as escapes, and stored changed.
//
// Version 4 adds the table agentsession_blobs (ref,
// data, size, touched_at) and changes nothing else: replicas running a
// version 3 package keep working beside it, and keep no blobs. New
// refuses a version 3 schema as any other, so a replica that restarts
// needs this package.
//
// Version 5 (migrations/0005_lifecycle.sql) is issue 16:
// archived_at replaces the boolean archived (a session archived before
// gets its updated_at as archive time; archived stays as a column
// generated from archived_at, so that version 4 replicas keep listing,
// while their Archive and Restore fail), compacting_at, the fold and
// the metadata columns (bytea, since metadata may hold NUL, which text
// and jsonb cannot: metadata_pairs, one element per key, with a GIN
// index; project_id, user_id and app with btree indexes), the table
// agentsession_state, agentsession_notify, and an agentsession_append
// that takes the fold and notifies. Migrate computes the fold of every
// existing session in Go, in the migration's transaction, reading each
// session's entries once: it takes as long as reading the database. The
// older function signatures forward to the new one, so that version 1
// to 4 replicas keep appending (notified) during a rolling upgrade; they
// do not fold, so a title or metadata they append shows in listings
// after the session's next rewrite.
//
// Version 6 (migrations/0006_listeners.sql) notifies only
// while someone listens. The table agentsession_listeners has a row per
// listening connection (its backend pid), which holds the advisory lock
// (24940, pid) for as long as it lives; agentsession_notify takes the
// shared advisory lock (24935, hashtext(schema)) and then notifies only
// if a row's lock is held (pg_try_advisory_xact_lock_shared fails), so
// the row of a listener that died turns nothing on, and the next
// listener deletes it. A listener, after LISTEN and its row, takes the
// exclusive lock (24935, hashtext(schema)) once, so that the writes that
// looked for listeners before its row was there have committed when
// Subscribe returns: every change committed after that is notified. The
// lock is the last one a write waits for (the notification is each
// write's last statement), so a listener waiting for pgstore's writes
// is not in a deadlock with them; while it waits, new writes wait behind it. A
// transaction under repeatable read or serializable (a server or role
// default; pgstore's own transactions are read committed) always
// notifies: its snapshot may predate the lock. The signature of
// agentsession_notify is unchanged: version 5 replicas, which call it,
// get the new behavior, and their listeners hear nothing of others'
// writes until upgraded (New refuses the version 6 schema when they
// restart). Applications must keep the advisory keys 24935 and 24940
// (first of two int4 keys) free.
//
// Version 7 (migrations/0007_append_batch.sql) adds
// agentsession_append_batch, the function of group commit, and changes
// nothing else: replicas running a version 6 package keep working beside
// it (their appends are made one by one), and New refuses a version 6
// schema, so a replica that restarts needs this package.
//
// Version 8 (migrations/0008_lz4.sql) has the entries
// written from then on compressed with lz4 rather than pglz, on a
// server that has it (PostgreSQL 14 and later, built with lz4; on
// others it changes nothing): compressing a large line costs the server
// several times less, and the line takes some 10% more room. Nothing is
// rewritten (each value records its method, and the entries stored
// before read as they did); replicas running a version 7 package keep
// working beside it, their entries compressed with lz4 too.
//
// Version 9 (SchemaVersion, migrations/0009_path.sql) keeps each
// entry's place in its session's tree beside it (its parent's row, its
// depth, its nearest setting, assistant message naming a model and
// compaction, the run of consecutive rows it ends), written by new
// signatures of agentsession_append and agentsession_append_batch (one
// round trip per append, as before) and by Rewrite, so that LoadPath
// (session.PathLoader, which session.Open uses) reads the default
// leaf's path back to its latest compaction in one query, not the whole
// session. The columns are added NULL, without a table rewrite: the
// rows written before, or by a replica running a version 8 package (its
// function signatures stay, and write NULL), have no known place, and
// LoadPath reads such a session whole, as Load does, then fills the
// places of its rows in the background (one repeatable-read transaction
// that reads the session and updates the rows still NULL; a rewrite
// meanwhile makes it fail, and the next open tries again). Replicas
// running a version 8 package keep working beside it; New refuses a
// version 8 schema, so a replica that restarts needs this package.
//
// Version 10 (migrations/0010_longest.sql) keeps each session's
// longest entry line, raised by triggers on the entries (their inserts,
// whatever package version makes them, and updates that lengthen a
// line) and set again by Rewrite: a
// store whose MaxLineBytes is below it reads the session whole in
// LoadPath, as Load does, which reports the line. Before, a store with a
// lower limit than the writer's opened such a session from the lines of
// its path alone. The migration reads the length of every stored entry
// once (not its bytes); appends measured the same with the trigger
// (BenchmarkAppend/sessions, 16 agents: 5,528 entries/s before and
// 5,903 after, medians of 6 runs interleaved, within the noise).
//
// It imports the session package, storekit and pgx; the session package
// never imports it.
package pgstore
