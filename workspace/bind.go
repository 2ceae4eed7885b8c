package workspace

import (
	"context"
	"errors"
	"fmt"

	session "github.com/agentsession/session"
)

// Binding snapshots to a session's entries: a CustomSnapshot entry
// (session.WorkspaceSnapshot) is appended at each step by Record; the
// snapshot in force at an entry is the latest on its path
// (Session.SnapshotAt); Rewind, Branch and Fork move the conversation and
// bring the files back with it, recording the revert (Kind "revert",
// Previous the snapshot of the workspace just before) so that Undo can
// take it back.

// ErrNoSnapshot is returned when an entry has no workspace snapshot on its
// path.
var ErrNoSnapshot = errors.New("workspace: no workspace snapshot at that entry")

// RecordOptions configures Record.
type RecordOptions struct {
	// Always appends an entry even when the workspace has not changed
	// since the snapshot in force at the leaf.
	Always bool
	// Dir is the directory as the host names it, kept in the entry;
	// default the workspace's absolute path.
	Dir string
}

// Recorded is the result of Record.
type Recorded struct {
	Snapshot *Snapshot
	// Diff is the change since the snapshot in force at the leaf before
	// (nil for the first); its totals are in the entry.
	Diff *DiffResult
	// Entry is the CustomSnapshot entry appended; zero when nothing
	// changed (and not Always).
	Entry session.Entry
}

// Record takes a snapshot of w, compares it with the snapshot in force at
// s's leaf, and appends a CustomSnapshot entry holding its id and the
// diff's totals under the leaf (unless nothing changed). The contents and
// the manifest are durable in the store before the entry names them. The
// workspace's blob store should be the one of s's store
// (session.BlobsOf), so that the snapshots live where the session does.
func Record(ctx context.Context, s *session.Session, w *Workspace, opts *RecordOptions) (*Recorded, error) {
	var o RecordOptions
	if opts != nil {
		o = *opts
	}
	prev, hasPrev, err := snapshotAt(s, s.LeafID())
	if err != nil {
		return nil, err
	}
	snap, err := w.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	r := &Recorded{Snapshot: snap}
	ws := session.WorkspaceSnapshot{Kind: session.SnapshotStep, Snapshot: snap.ID, Dir: dirOf(w, o.Dir)}
	if hasPrev {
		if prev.Snapshot == snap.ID && !o.Always {
			r.Diff = &DiffResult{From: prev.Snapshot, To: snap.ID}
			return r, nil
		}
		if r.Diff, err = w.Diff(ctx, prev.Snapshot, snap.ID, nil); err != nil {
			return nil, err
		}
		ws.Files, ws.Additions, ws.Deletions = len(r.Diff.Files), r.Diff.Additions, r.Diff.Deletions
	}
	if r.Entry, err = s.AppendSnapshot(ctx, ws); err != nil {
		return nil, err
	}
	return r, nil
}

func dirOf(w *Workspace, dir string) string {
	if dir != "" {
		return dir
	}
	return w.Dir()
}

// snapshotAt is Session.SnapshotAt, "" (an empty session's leaf) having
// none.
func snapshotAt(s *session.Session, id string) (session.WorkspaceSnapshot, bool, error) {
	if id == "" {
		return session.WorkspaceSnapshot{}, false, nil
	}
	ws, _, ok, err := s.SnapshotAt(id)
	return ws, ok, err
}

// SnapshotAt returns the id of the workspace snapshot in force at entry
// id of s (the leaf's for ""): ErrNoSnapshot when its path records none.
func SnapshotAt(s *session.Session, id string) (string, error) {
	if id == "" {
		id = s.LeafID()
	}
	ws, ok, err := snapshotAt(s, id)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrNoSnapshot, id)
	}
	return ws.Snapshot, nil
}

// DiffEntries compares the workspace at entry from with the workspace at
// entry to (the snapshots in force there); "" for either is the working
// tree now.
func DiffEntries(ctx context.Context, w *Workspace, s *session.Session, from, to string, opts *DiffOptions) (*DiffResult, error) {
	a, b := "", ""
	var err error
	if from != "" {
		if a, err = SnapshotAt(s, from); err != nil {
			return nil, err
		}
	}
	if to != "" {
		if b, err = SnapshotAt(s, to); err != nil {
			return nil, err
		}
	}
	return w.Diff(ctx, a, b, opts)
}

// RevertOptions configures Rewind, Branch, Fork and Undo.
type RevertOptions struct {
	// Paths restricts the files restored to these paths and what is under
	// them (the conversation moves whole).
	Paths []string
	// DryRun reports what would change, changing neither the files nor
	// the session.
	DryRun bool
	// Force restores even paths changed since the snapshot in force at
	// the leaf (by the user, say). What they held is not lost: it is in
	// the snapshot taken just before (Revert.Before), which the revert
	// record keeps as its Previous.
	Force bool
	// Sync: see RestoreOptions.Sync.
	Sync bool
	// Dir: see RecordOptions.Dir.
	Dir string
}

// Revert is the result of Rewind, Branch, Fork and Undo.
type Revert struct {
	// From is the leaf before, To the entry the leaf moved to (for Fork:
	// the fork's leaf; for Undo: the leaf, unmoved).
	From, To string
	// Snapshot is the snapshot the files were brought back to.
	Snapshot string
	// Before is the snapshot of the workspace just before the revert
	// (the revert record's Previous): Undo restores it.
	Before *Snapshot
	// Restore says what changed (or, dry, would change).
	Restore *RestoreResult
	// Diff is the change from Before to Snapshot (its totals are in the
	// record).
	Diff *DiffResult
	// Entry is the revert record appended (zero for a dry run or when the
	// files already were as at the target); After, when the files could
	// not all be brought back (Paths, or content that was never stored),
	// is a step entry recording what they hold instead.
	Entry, After session.Entry
}

// Rewind moves s's leaf back to an entry or checkpoint, as
// Session.Rewind does, and brings the workspace back to the snapshot in
// force there. It first takes a snapshot of the workspace (Before), so
// that nothing is lost, and checks the restore against the snapshot in
// force at the leaf (paths changed since, by someone else, are a
// *ConflictError unless Force) and the contents it needs (all present and
// whole) before it moves the leaf. Then it appends a revert record under
// the new leaf (Kind "revert", Snapshot the target's, Previous Before) and
// restores the files.
func Rewind(ctx context.Context, s *session.Session, w *Workspace, to string, opts *RevertOptions) (*Revert, error) {
	target, err := resolve(s, to)
	if err != nil {
		return nil, err
	}
	return revert(ctx, s, s, w, target, opts, func() (string, string, error) {
		res, err := s.Rewind(ctx, target)
		return res.From, res.To, err
	})
}

// Branch moves s's leaf to entry id, as Session.Branch does, and brings
// the workspace back to the snapshot in force there, as Rewind does.
func Branch(ctx context.Context, s *session.Session, w *Workspace, id string, opts *RevertOptions) (*Revert, error) {
	if _, ok := s.Entry(id); !ok {
		return nil, fmt.Errorf("%w: entry %s", session.ErrNotFound, id)
	}
	return revert(ctx, s, s, w, id, opts, func() (string, string, error) {
		from := s.LeafID()
		return from, id, s.Branch(ctx, id)
	})
}

// Undo takes back the revert recorded at s's leaf: the files go back to
// its Previous (what they held before it), recorded as another revert.
// The leaf does not move (Branch to Revert.From of the rewind for that).
func Undo(ctx context.Context, s *session.Session, w *Workspace, opts *RevertOptions) (*Revert, error) {
	ws, ok, err := snapshotAt(s, s.LeafID())
	if err != nil {
		return nil, err
	}
	if !ok || ws.Kind != session.SnapshotRevert || ws.Previous == "" {
		return nil, errors.New("workspace: the snapshot in force at the leaf is not a revert")
	}
	return revertTo(ctx, s, s, w, ws.Previous, opts, func() (string, string, error) {
		return s.LeafID(), s.LeafID(), nil
	})
}

// ForkOptions configures Fork.
type ForkOptions struct {
	session.ForkOptions
	RevertOptions
}

// Fork forks s (Session.Fork) and, with a workspace, brings the files
// back to the snapshot in force at the fork's point, recording the revert
// in the fork (checked against the snapshot in force at s's leaf, as
// Rewind does). The fork's snapshot entries are references: in the same
// store they name the same blobs; a fork into another store gets a copy
// of the blobs its snapshots name. A dry run forks nothing.
func Fork(ctx context.Context, s *session.Session, w *Workspace, opts *ForkOptions) (*session.Session, *Revert, error) {
	var o ForkOptions
	if opts != nil {
		o = *opts
	}
	at := o.At
	if at == "" {
		at = s.LeafID()
	}
	if w != nil && o.DryRun {
		want, err := SnapshotAt(s, at)
		if err != nil {
			return nil, nil, err
		}
		rv, err := revertTo(ctx, s, s, w, want, &o.RevertOptions, nil)
		return nil, rv, err
	}
	if err := copyBlobsFor(ctx, s, &o.ForkOptions); err != nil {
		return nil, nil, err
	}
	f, err := s.Fork(ctx, &o.ForkOptions)
	if err != nil {
		return nil, nil, err
	}
	if w == nil {
		return f, nil, nil
	}
	want, err := SnapshotAt(f, "")
	if err != nil {
		return f, nil, err
	}
	rv, err := revertTo(ctx, f, s, w, want, &o.RevertOptions, func() (string, string, error) {
		return f.LeafID(), f.LeafID(), nil
	})
	return f, rv, err
}

// resolve finds the entry Session.Rewind would go to: an entry by id, or
// the last checkpoint of that name.
func resolve(s *session.Session, to string) (string, error) {
	if _, ok := s.Entry(to); ok {
		return to, nil
	}
	id := ""
	for _, c := range s.Checkpoints() {
		if c.Name == to {
			id = c.EntryID
		}
	}
	if id == "" {
		return "", fmt.Errorf("%w: no checkpoint or entry %q", session.ErrNotFound, to)
	}
	return id, nil
}

func revert(ctx context.Context, s, expectFrom *session.Session, w *Workspace, target string, opts *RevertOptions, move func() (string, string, error)) (*Revert, error) {
	want, err := SnapshotAt(s, target)
	if err != nil {
		return nil, err
	}
	return revertTo(ctx, s, expectFrom, w, want, opts, move)
}

// revertTo brings w back to snapshot want, recording it in s; the
// expectation is the snapshot in force at expectFrom's leaf. move (nil
// for a dry run) moves the leaf once the restore is known to be
// possible.
func revertTo(ctx context.Context, s, expectFrom *session.Session, w *Workspace, want string, opts *RevertOptions, move func() (string, string, error)) (*Revert, error) {
	var o RevertOptions
	if opts != nil {
		o = *opts
	}
	leafSnap, hasLeafSnap, err := snapshotAt(expectFrom, expectFrom.LeafID())
	if err != nil {
		return nil, err
	}
	before, err := w.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	rv := &Revert{Snapshot: want, Before: before}
	expect := before.ID
	if hasLeafSnap && !o.Force {
		expect = leafSnap.Snapshot
	}
	ro := &RestoreOptions{Paths: o.Paths, Expect: expect, Sync: o.Sync, DryRun: true}
	// Everything is checked before anything moves: conflicts, contents.
	if rv.Restore, err = w.Restore(ctx, want, ro); err != nil || o.DryRun || move == nil {
		return rv, err
	}
	if rv.Diff, err = w.Diff(ctx, before.ID, want, &DiffOptions{Paths: o.Paths}); err != nil {
		return rv, err
	}
	if rv.From, rv.To, err = move(); err != nil {
		return rv, err
	}
	if want == before.ID {
		return rv, nil // the files already are as there: nothing to record
	}
	if rv.Entry, err = s.AppendSnapshot(ctx, session.WorkspaceSnapshot{
		Kind: session.SnapshotRevert, Snapshot: want, Previous: before.ID, Dir: dirOf(w, o.Dir),
		Files: len(rv.Diff.Files), Additions: rv.Diff.Additions, Deletions: rv.Diff.Deletions,
	}); err != nil {
		return rv, err
	}
	ro.DryRun = false
	rv.Restore, err = w.Restore(ctx, want, ro)
	if err != nil || len(o.Paths) > 0 || len(rv.Restore.Left) > 0 {
		// The files are not exactly as in want: record what they hold.
		after, serr := w.Snapshot(ctx)
		if serr == nil && after.ID != want {
			rv.After, serr = s.AppendSnapshot(ctx, session.WorkspaceSnapshot{Kind: session.SnapshotStep, Snapshot: after.ID, Dir: dirOf(w, o.Dir)})
		}
		if err == nil {
			err = serr
		}
	}
	return rv, err
}

// copyBlobsFor copies the blobs the snapshots of a fork name into the
// fork's store, when it is not the source's.
func copyBlobsFor(ctx context.Context, s *session.Session, o *session.ForkOptions) error {
	if o.Store == nil || o.Store == s.Store() {
		return nil
	}
	src, ok := session.BlobsOf(s.Store())
	if !ok {
		return nil
	}
	dst, ok := session.BlobsOf(o.Store)
	if !ok {
		return errors.New("workspace: the fork's store keeps no blobs, so it cannot keep the workspace snapshots")
	}
	if dst == src {
		return nil
	}
	at := o.At
	if at == "" {
		at = s.LeafID()
	}
	if at == "" {
		return nil
	}
	path, err := s.PathTo(at)
	if err != nil {
		return err
	}
	done := map[string]bool{}
	put := func(ref string, data []byte) error {
		got, err := dst.PutBlob(ctx, data)
		if err == nil && got != ref {
			err = fmt.Errorf("workspace: the fork's store named %s %s", ref, got)
		}
		return err
	}
	for _, e := range path {
		ws, ok := session.SnapshotOf(e)
		if !ok {
			continue
		}
		for _, id := range []string{ws.Snapshot, ws.Previous} {
			if id == "" || done[id] {
				continue
			}
			done[id] = true
			data, err := src.GetBlob(ctx, id)
			if err != nil {
				return fmt.Errorf("workspace: copy snapshot %s: %w", id, err)
			}
			m, err := DecodeManifest(data)
			if err != nil {
				return fmt.Errorf("workspace: copy snapshot %s: %w", id, err)
			}
			for i := range m.Entries {
				ref := m.Entries[i].Ref()
				if ref == "" || done[ref] {
					continue
				}
				done[ref] = true
				b, err := src.GetBlob(ctx, ref)
				if err != nil {
					return fmt.Errorf("workspace: copy %s: %w", ref, err)
				}
				if err := put(ref, b); err != nil {
					return err
				}
			}
			if err := put(id, data); err != nil {
				return err
			}
		}
	}
	return nil
}
