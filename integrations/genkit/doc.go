// Package genkitstore keeps the sessions of Firebase Genkit
// (github.com/firebase/genkit/go, its experimental core/x/session
// package) in agentsession: Store[S] is a Genkit session store
// (session.Store[S]: Get and Save of session.Data[S]) over any
// agentsession store (FileStore in pi's JSONL format, MemoryStore,
// pgstore's PostgreSQL, a redacting or encrypting wrapper, a per-user
// view). Hand it to Genkit where its InMemoryStore or Firestore store
// would go:
//
//	files, _ := session.OpenFileStore(dir, nil) // agentsession
//	store, _ := genkitstore.New[Cart](files, nil)
//	defer store.Close()
//	sess, _ := gksession.New(ctx, gksession.WithID[Cart]("user-42"), gksession.WithStore(store))
//
// The package is named genkitstore, not genkit, so that it does not
// shadow Genkit's own genkit package in a program that imports both. It
// is a module of its own (github.com/agentsession/session/integrations/genkit),
// so that the root module does not depend on Genkit; it imports Genkit's
// core/x/session package only.
//
// # How Genkit's sessions are stored
//
// A Genkit session is the agentsession session of the same id, created
// by its first Save (with Options.Create). Its data, session.Data[S] as
// JSON, is the session's state under one key (Options.StateKey,
// "genkit" by default): each Save is an agentsession state update
// (Session.UpdateState: one state entry appended under the leaf) and
// Get is the state at the leaf. So
//
//   - nothing a Save replaced is lost: History lists the values on the
//     session's path, oldest first, each with the id of its entry, which
//     Session.StateAt, labels, checkpoints, a rewind or a fork can name;
//     until the host prunes the session (agentsession's Session.Prune),
//     which drops the values later Saves replaced but for those of
//     labeled entries, so that the file stops growing with the history;
//   - a Get reads the state at the leaf as agentsession folds it (only
//     when the Store does not know it already: after an open, or another
//     writer's change), so it costs what the fold costs, not a read of
//     the history;
//   - a session can hold a conversation and Genkit's data side by side (a
//     host's turns and its state): Get of a session no data was saved in
//     is nil, as for an unknown id, and a Save adds to it;
//   - the CLI (agentsession show, verify, export ...) reads the data.
//
// Save flushes: under a FileStore's default sync policy (SyncOnFlush) a
// Save that returned survives a machine crash. A Save is one append,
// stored whole or not at all.
//
// A Store keeps the sessions it used open (at most Options.MaxOpen, the
// least recently used closed past it), so that Get and Save read only
// what is new. Several Stores, in one process or many, may share one
// agentsession store: each Get and Save first reads what others appended
// and goes on from the latest Save of any of them, so a Get returns the
// latest Save and consecutive Saves stand on one path. Saves that race
// each other on one session both land, in the order the store took
// them (the later one is what Get returns); the earlier may then stand on
// a branch of its own, off History's path (Session.Tree shows it).
//
// # Ids and errors
//
// Session ids are agentsession's: any UTF-8 without control characters,
// 1 to 512 bytes ("user:42", "chat 7", a UUID as Genkit makes them). A
// FileStore escapes what a file name cannot hold: an id such as "../x",
// "a/b" or "/abs" names a file inside the store's directory like any
// other, never a path beside it. Any other id is refused by Get, Save
// and History with an error wrapping session.ErrInvalidID, before
// anything is read or written. Errors wrap the package's sentinels
// (ErrNilStore, ErrStateKey, ErrNilData, ErrUndecodable),
// session.ErrClosed after Close, the context's error, or the store's.
//
// # Differences from Genkit's stores
//
//   - Get of data saved with another state type fails with
//     ErrUndecodable (the data stays), where Genkit's InMemoryStore would
//     hand back the value it holds.
//   - Save(ctx, id, nil) fails with ErrNilData, where InMemoryStore stores
//     nil.
//   - Nothing expires: agentsession's session.DeleteSession removes a
//     session, Session.Prune the values Saves replaced.
package genkitstore
