package session

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompactionMarkSyncsNothing: a compaction on a FileStore syncs
// nothing for its mark in .compacting; what it appends to the log is
// made durable as the sync policy says. The mark is advisory (SessionInfo.Compacting, read by
// listings and watchers, which see it without a sync): making it durable
// cost two syncs a compaction (the mark's file and its directory), most
// of a compaction's time on a disk where a sync takes milliseconds.
func TestCompactionMarkSyncsNothing(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store, err := OpenFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s, err := Create(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		msgs := []*Message{
			UserText(strings.Repeat("question ", 200)),
			AssistantText(strings.Repeat("answer ", 400)),
		}
		if err := s.SaveTurn(ctx, msgs, nil); err != nil {
			t.Fatal(i, err)
		}
	}
	var syncs []fsOp
	recordFS = func(op fsOp) {
		switch op.Kind {
		case "fsync", "fdatasync", "syncdir":
			syncs = append(syncs, op)
		}
	}
	_, err = s.Compact(ctx, ExtractiveSummarizer{}, &CompactionOptions{KeepRecentTokens: 2000})
	recordFS = nil
	if err != nil {
		t.Fatal(err)
	}
	marks := filepath.Join(root, compactingDir)
	for _, op := range syncs {
		if strings.HasPrefix(op.Path, marks) {
			t.Errorf("the compaction's mark was synced: %s %s", op.Kind, op.Path)
		}
	}
	// The entry is durable as the policy says (SyncOnFlush: at Flush).
	syncs = nil
	recordFS = func(op fsOp) {
		if op.Kind == "fdatasync" || op.Kind == "fsync" {
			syncs = append(syncs, op)
		}
	}
	err = s.Flush(ctx)
	recordFS = nil
	if err != nil {
		t.Fatal(err)
	}
	if len(syncs) == 0 || !strings.HasSuffix(syncs[0].Path, ".jsonl") {
		t.Errorf("Flush after the compaction synced %v, not the log", syncs)
	}
}
