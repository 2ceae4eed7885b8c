// Package eino keeps the checkpoints of CloudWeGo Eino
// (github.com/cloudwego/eino) in agentsession: Store implements Eino's
// compose.CheckPointStore, the interface its graphs (compose) and agent
// runners (adk.RunnerConfig.CheckPointStore) save their interrupt and
// resume state through, over any agentsession store.
//
//	files, _ := session.OpenFileStore(dir, nil)
//	cps, _ := eino.New(files, nil)
//	defer cps.Close()
//	run, _ := graph.Compile(ctx, compose.WithCheckPointStore(cps))
//	_, err := run.Invoke(ctx, in, compose.WithCheckPointID("thread-7"))
//
// It is a module of its own
// (github.com/agentsession/session/integrations/eino), and needs nothing
// of Eino to build: the interface is two methods, which Store has.
//
// # How checkpoints are stored
//
// Each checkpoint id has a session of its own, whose id is the prefix
// (Options.Prefix, DefaultPrefix "eino:") and the checkpoint id, created
// by its first Set. Set is one session state update
// (Session.UpdateState) of the key StateKey: one custom entry appended
// under the leaf, durable as every append of the store is. Get is the
// value of StateKey in the state at the leaf (Session.State). So every
// earlier value stays in the log, on the path to the leaf: History lists
// them, Session.StateAt(entry) gives the state at any of them, and the
// agentsession CLI shows them.
//
// The bytes are kept exactly. Eino's serializer writes JSON: a checkpoint
// that is JSON which encoding/json writes back unchanged (compact, with
// no '<', '>' or '&' to escape) is kept as that JSON, {"json": ...},
// readable in the log; any other bytes (another Serializer's, or JSON
// with spaces) as {"base64": "..."}. A stored value of any other shape
// fails Get with an error wrapping ErrCorruptCheckPoint.
//
// # Checkpoint ids
//
// Any id a session can have, prefixed, is a checkpoint id: 1 to
// session.MaxIDLength bytes of UTF-8 without control characters. An
// empty id or any other fails Get and Set with an error wrapping
// ErrInvalidCheckPointID and session.ErrInvalidID, before the store is
// asked. Other ids are kept byte for byte: "../../etc/passwd" or "a/b"
// name sessions like any other, and a FileStore's file names escape what
// a name cannot hold, so that no id reaches outside its directory.
//
// # Handles and other writers
//
// A Store opens each checkpoint's session once and keeps the handle
// until Close; each Get and Set first reads what other writers appended
// since (Session.Reload: on a FileStore, the bytes after what it read),
// and when another writer (another Store, another process) set the
// checkpoint meanwhile, opens the session afresh, so that Get returns the
// latest value and a Set goes after it (TestOtherProcessSetIsSeen). Two
// writers setting one checkpoint at the same moment both succeed; the
// later append is the value, the other stays on a branch of the session.
// Calls for one checkpoint id are serialized within a Store.
//
// # Cost
//
// Get reads the state at the leaf, which agentsession keeps up to date
// as entries are appended: for a 16 KiB checkpoint, about 26
// allocations and 100 KB (copies of the value) whether it was set 1,000
// or 10,000 times (BenchmarkCheckpoint). Set appends one entry of about
// the value's size (10,000 Sets of 16 KiB of JSON: a 165 MB file). The
// first Get of a process opens the session, whose path holds every Set:
// that costs what the history holds, as Store does not compact or prune
// it.
//
// The adapter's tests run on MemoryStore, FileStore and (with
// AGENTSESSION_PG_DSN) pgstore; Eino's own tests of its checkpoint
// users run on MemoryStore and FileStore (TestEinoSuite).
package eino
