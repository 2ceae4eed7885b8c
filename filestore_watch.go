package session

import (
	"context"
	"fmt"
	"time"
)

// Events on a FileStore: Subscribe, and the watcher that makes the
// changes.
//
// Every change subscribers see, this process's and other processes'
// alike, comes from one place: a watcher that reads the session files
// as they change, one goroutine per store, started when the first
// subscriber comes (Hub.OnFirst) and stopped when the last goes
// (Hub.OnLast) or the store closes. Keeping one path for both is what
// gives each subscriber every entry once and in file order, with no
// de-duplication between what the store published itself and what it
// read back: the file is the one order every writer agrees on. The
// store's own writes nudge the watcher (nudge), so that they reach
// subscribers without waiting for the file system's notice; entries and
// operations this store made are marked as its own (markOwn), and the
// others' changes are reported with Change.Remote set.
//
// The watcher learns that files changed from fsnotify (inotify on Linux,
// kqueue on the BSDs and macOS, ReadDirectoryChangesW on Windows): it
// watches the root, each --<cwd>-- directory, .archive and its
// directories, adding directories as they appear. A notice costs nothing
// while no one writes, and comes within a millisecond of a write, where
// polling would cost a stat of every session file per round and add
// half a round of latency. When fsnotify cannot start (no inotify
// instances left, a file system it cannot watch) the watcher polls the
// tree every FileStoreOptions.PollInterval (default 50 ms) instead.
//
// Per session file it keeps a tail cursor: the file's identity, where
// its next line starts and the entries counted. On a change it reads
// only the whole lines after the cursor, leniently as Load does, and
// never the lines of an append of several entries before its last entry
// is there (scanAppends): a writer may be mid-line, or a crash may have
// cut its append short. What it sees gives:
//
//   - a new file: ChangeCreated (then ChangeAppended if it has entries);
//   - new lines: the changes ChangesOf makes of their entries;
//   - a file gone: ChangeDeleted, or ChangeArchived / ChangeUnarchived
//     when it is now at its place in (or out of) the archive;
//   - another file at the name (a new inode), or a shorter one: a
//     rewrite, ChangeRewritten, and the cursor starts again at its end
//     (except a file of a header only replaced by itself and entries,
//     which is how a first append of several entries is written: its
//     entries are appended ones);
//   - an error of the watcher: ChangeError (subscribers should reload).
//
// Subscribers never slow writers: the watcher reads after the writes,
// and the hub drops what a full buffer cannot take (Subscription.Dropped).

var (
	_ Subscriber = (*FileStore)(nil)
	_ Archiver   = (*FileStore)(nil)
)

// DefaultPollInterval is FileStoreOptions.PollInterval when it is zero.
const DefaultPollInterval = 50 * time.Millisecond

// Subscribe implements Subscriber: the changes of the sessions under the
// store's root, made by this process or by others (see the comment on
// the watcher above). A store opened on one file by path (OpenFile
// outside a store's layout) delivers none (ErrNoEvents).
func (s *FileStore) Subscribe(ctx context.Context, opts SubscribeOptions) (*Subscription, error) {
	if s.fileOnly {
		return nil, fmt.Errorf("%w: a store of one file opened by path", ErrNoEvents)
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	return s.hub.Subscribe(ctx, opts)
}

// Hub returns the store's hub, where Sessions on it publish the changes
// they make themselves (ChangeOperation).
func (s *FileStore) Hub() *Hub { return &s.hub }

// startWatch starts the watcher (Hub.OnFirst).
func (s *FileStore) startWatch() {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watch.Load() != nil || !s.hub.Active() {
		return
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return
	}
	w := newWatcher(s)
	s.watch.Store(w)
	go w.run()
}

// stopWatch stops the watcher when no one is subscribed any more
// (Hub.OnLast), or with force (Close).
func (s *FileStore) stopWatch(force bool) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	w := s.watch.Load()
	if w == nil || (!force && s.hub.Active()) {
		return // a subscriber came back meanwhile
	}
	s.watch.Store(nil)
	close(w.stop)
	<-w.done
	if w.fsw != nil {
		w.fsw.Close()
	}
}

// nudge tells the watcher, when one runs, that this store just changed
// the files at rels, for their changes to reach subscribers at once.
func (s *FileStore) nudge(rels ...string) {
	if w := s.watch.Load(); w != nil {
		w.poke(rels...)
	}
}

// markOwn notes, when a watcher runs, that this store is about to make
// a change of session id: the entries, or else an operation of kind, so
// that the watcher reports it without Remote. It is called before the
// write, for the watcher may read the file as soon as it is written.
func (s *FileStore) markOwn(id string, kind ChangeKind, entries []Entry) {
	w := s.watch.Load()
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.own) > maxOwnMarks {
		clear(w.own) // marks of changes that never came: forget them
	}
	if len(entries) == 0 {
		w.own[ownKey{id, string(kind)}] = struct{}{}
	}
	for _, e := range entries {
		w.own[ownKey{id, e.id}] = struct{}{}
	}
}

// maxOwnMarks bounds the marks of own changes the watcher has not read
// back (those of writes that failed stay until then).
const maxOwnMarks = 1 << 16

type ownKey struct{ session, what string }

// ownOp is a move or a delete this store made: the watcher reports it
// in the order they were made, however soon the next one came.
type ownOp struct {
	id   string
	kind ChangeKind // ChangeArchived, ChangeUnarchived, ChangeDeleted or ChangeCompacting
	to   string     // where the file is now (moves)
	at   time.Time  // ChangeCompacting's time
}

// opCompacting tells the watcher, when one runs, of a compaction mark
// this store set (or cleared, zero at) at rel.
func (s *FileStore) opCompacting(id string, at time.Time, rel string) {
	w := s.watch.Load()
	if w == nil {
		return
	}
	w.mu.Lock()
	w.ops = append(w.ops, ownOp{id: id, kind: ChangeCompacting, at: at})
	w.dirty[rel] = struct{}{}
	w.mu.Unlock()
	w.wake()
}

// settle has the watcher, when one runs, read what was written to rel
// so far, and waits for it: a move or a delete calls it first, for the
// entries before it to be reported before it (and those of a deleted
// file at all).
func (s *FileStore) settle(rel string) {
	w := s.watch.Load()
	if w == nil {
		return
	}
	done := make(chan struct{})
	w.mu.Lock()
	w.dirty[rel] = struct{}{}
	w.waiters = append(w.waiters, done)
	w.mu.Unlock()
	w.wake()
	select {
	case <-done:
	case <-w.done:
	}
}

// opDone tells the watcher, when one runs, of a move or a delete this
// store made.
func (s *FileStore) opDone(id string, kind ChangeKind, rels ...string) {
	w := s.watch.Load()
	if w == nil {
		return
	}
	w.mu.Lock()
	op := ownOp{id: id, kind: kind}
	if len(rels) > 0 {
		op.to = rels[len(rels)-1]
	}
	w.ops = append(w.ops, op)
	for _, rel := range rels {
		w.dirty[rel] = struct{}{}
	}
	w.mu.Unlock()
	w.wake()
}
