package session

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Workspace snapshots in the log: what the workspace package records at
// each step of an agent, so that a session knows what the files it edited
// held at any entry. The snapshots themselves (manifests and file
// contents) are blobs of the session's store (see BlobsOf); the log holds
// a custom entry per snapshot, which seed readers (pi) skip like any
// custom entry and which travels with the entries: a fork keeps the
// snapshots of its path, a rewind goes back to the snapshot in force
// there.

// CustomSnapshot is the customType of the entries that record a
// workspace snapshot (see WorkspaceSnapshot).
const CustomSnapshot = "agentsession.snapshot"

// Kinds of WorkspaceSnapshot.
const (
	// SnapshotStep is a snapshot taken after a step of the agent.
	SnapshotStep = "step"
	// SnapshotRevert records that the workspace was brought back to
	// Snapshot, Previous being what it held just before (taken as a
	// snapshot first, so that the revert itself can be undone).
	SnapshotRevert = "revert"
)

// WorkspaceSnapshot is the data of a CustomSnapshot entry.
type WorkspaceSnapshot struct {
	Kind string `json:"kind"`
	// Snapshot is the snapshot's id: the blob reference of its manifest
	// ("blob:sha256:<hex>"), which lists every file and the references of
	// their contents. CollectBlobs follows it.
	Snapshot string `json:"snapshot"`
	// Previous, for a revert, is the snapshot the workspace held before
	// it; CollectBlobs follows it too.
	Previous string `json:"previous,omitempty"`
	// Dir is the workspace's directory, as the host named it.
	Dir string `json:"dir,omitempty"`
	// The change since the snapshot in force before this one (none for
	// the first): files added, deleted or changed, and lines added and
	// deleted (OpenCode's summary).
	Files     int `json:"files"`
	Additions int `json:"additions"`
	Deletions int `json:"deletions"`
}

// AppendSnapshot records a workspace snapshot under the leaf (a custom
// entry of type CustomSnapshot). The workspace package's Record takes the
// snapshot and calls it.
func (s *Session) AppendSnapshot(ctx context.Context, w WorkspaceSnapshot) (Entry, error) {
	if err := s.makeWhole(ctx); err != nil {
		return Entry{}, err
	}
	if err := s.closedErr(ctx); err != nil {
		return Entry{}, err
	}
	if w.Snapshot == "" {
		return Entry{}, fmt.Errorf("session: a workspace snapshot without its id")
	}
	if w.Kind == "" {
		w.Kind = SnapshotStep
	}
	return s.AppendCustom(ctx, CustomSnapshot, w)
}

// SnapshotAt returns the workspace snapshot in force at entry id (the
// leaf's for LeafID()): the latest recorded on the path from the root to
// it, and the entry that records it. ok is false when the path records
// none; err is ErrNotFound for an unknown id.
func (s *Session) SnapshotAt(id string) (w WorkspaceSnapshot, at Entry, ok bool, err error) {
	path, err := s.PathTo(id)
	if err != nil {
		return WorkspaceSnapshot{}, Entry{}, false, err
	}
	for i := len(path) - 1; i >= 0; i-- {
		if w, ok := SnapshotOf(path[i]); ok {
			return w, path[i], true, nil
		}
	}
	return WorkspaceSnapshot{}, Entry{}, false, nil
}

// SnapshotOf returns the workspace snapshot entry e records: ok is false
// when e is not a CustomSnapshot custom entry holding a snapshot id.
func SnapshotOf(e Entry) (WorkspaceSnapshot, bool) {
	if e.kind != kindCustom {
		return WorkspaceSnapshot{}, false
	}
	var c Custom
	if e.payload(&c); c.CustomType != CustomSnapshot {
		return WorkspaceSnapshot{}, false
	}
	var w WorkspaceSnapshot
	if json.Unmarshal(c.Data, &w) != nil || w.Snapshot == "" {
		return WorkspaceSnapshot{}, false
	}
	return w, true
}

// BlobInfo describes a stored blob.
type BlobInfo struct {
	Ref  string // "blob:sha256:<hex>"
	Size int64  // bytes stored (compressed, where the store compresses)
	// Touched is when the blob was last put: written, or put again by a
	// PutBlob of the same bytes, which every store that collects blobs
	// must refresh, so that a collection running beside a writer never
	// deletes what the writer is about to refer to (see CollectOptions).
	Touched time.Time
}
