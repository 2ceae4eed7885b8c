package session

// Promises that rest on what was there before the call: a session file,
// a directory or a blob that another process (or one a crash cut short)
// put in place without making it durable, and the retry of an append
// whose first attempt was written and never synced. Each call must make
// durable what its answer relies on. The checks run the call recorded
// on a model of the disk (crashstate_test.go) in which that earlier
// work is not durable, and look at what a power loss right after the
// call leaves.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runRecorded runs f with every fs op recorded, starting from base (a
// model of what is on disk), and returns the state after.
func runRecorded(t *testing.T, base *fsState, f func()) (*fsState, []step) {
	t.Helper()
	rec := &recorder{}
	recordFS = rec.op
	f()
	recordFS = nil
	s := base.clone()
	for _, st := range rec.steps {
		if st.op != nil {
			s.apply(st.op, -1)
		}
	}
	return s, rec.steps
}

func opsString(steps []step) string {
	var b strings.Builder
	for _, st := range steps {
		if st.op != nil {
			b.WriteString(st.op.Kind + " " + st.op.Path)
			if st.op.To != "" {
				b.WriteString(" -> " + st.op.To)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// A session file whose directory entry is not durable yet (its Create
// was interrupted by a process crash after the link, before the sync of
// the directory): a later store opens it and appends with
// SyncEveryAppend. After a power loss, is the acknowledged append there?
func TestDurableAppendOnUnsyncedName(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	st, err := OpenFileStore(root, &FileStoreOptions{Sync: SyncEveryAppend, BlobDir: filepath.Join(base, "blobs")})
	mustOK(t, err)
	s, err := Create(ctx, st, &CreateOptions{ID: "s-x", Cwd: "/w"})
	mustOK(t, err)
	path, _ := st.Path("s-x")
	s.Close()
	st.Close()
	model := snapshot(t, base)
	// The crash came before the directory sync: the name is not on disk.
	delete(model.dnames, path)

	after, steps := runRecorded(t, model, func() {
		st, err := OpenFileStore(root, &FileStoreOptions{Sync: SyncEveryAppend, BlobDir: filepath.Join(base, "blobs")})
		mustOK(t, err)
		defer st.Close()
		s, err := Open(ctx, st, "s-x")
		mustOK(t, err)
		_, err = s.Append(ctx, UserText("acknowledged, durable"))
		mustOK(t, err)
		mustOK(t, s.Close())
	})
	t.Logf("ops:\n%s", opsString(steps))
	if _, ok := after.durable()[path]; !ok {
		t.Errorf("after power loss the session file %s is gone, with an append that returned under SyncEveryAppend", path)
	}
}

// Two archives at once (or a crash after mkdir .archive): the second
// finds .archive there and does not sync the root.
func TestDurableArchiveIntoUnsyncedDir(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	st, err := OpenFileStore(root, &FileStoreOptions{BlobDir: filepath.Join(base, "blobs")})
	mustOK(t, err)
	s, err := Create(ctx, st, &CreateOptions{ID: "s-y", Cwd: "/w"})
	mustOK(t, err)
	s.Close()
	st.Close()
	// Another goroutine/process has just made .archive (not yet synced).
	mustOK(t, os.Mkdir(filepath.Join(root, archiveDir), 0o700))
	model := snapshot(t, base)
	delete(model.ddirs, filepath.Join(root, archiveDir))

	after, steps := runRecorded(t, model, func() {
		st, err := OpenFileStore(root, &FileStoreOptions{BlobDir: filepath.Join(base, "blobs")})
		mustOK(t, err)
		defer st.Close()
		mustOK(t, st.Archive(ctx, "s-y"))
	})
	t.Logf("ops:\n%s", opsString(steps))
	d := after.durable()
	if _, ok := d[filepath.Join(root, archiveDir)+"/"]; !ok {
		t.Errorf("after power loss .archive is gone: the archived session (removed from --w-- durably) is lost")
	}
}

// A blob already in the directory but not durable (a concurrent put that
// has not synced yet, or one from a SyncNever store): a SyncEveryAppend
// append referring to it returns without making it durable.
func TestDurableBlobFoundInPlace(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root, blobs := filepath.Join(base, "sessions"), filepath.Join(base, "blobs")
	img := bytes.Repeat([]byte{9, 8, 7, 6, 5}, 1000)
	// The blob put by someone else, with no sync yet.
	nb := OpenBlobDir(blobs, &BlobDirOptions{Sync: false})
	_, err := nb.PutBlob(ctx, img)
	mustOK(t, err)
	st, err := OpenFileStore(root, &FileStoreOptions{Sync: SyncEveryAppend, BlobDir: blobs})
	mustOK(t, err)
	s, err := Create(ctx, st, &CreateOptions{ID: "s-z", Cwd: "/w"})
	mustOK(t, err)
	s.Close()
	st.Close()
	model := snapshot(t, base)
	bpath := filepath.Join(blobs, BlobRef(img)[len(BlobPrefix):])
	delete(model.dnames, bpath)

	after, steps := runRecorded(t, model, func() {
		st, err := OpenFileStore(root, &FileStoreOptions{Sync: SyncEveryAppend, BlobDir: blobs})
		mustOK(t, err)
		defer st.Close()
		s, err := Open(ctx, st, "s-z")
		mustOK(t, err)
		_, err = s.Append(ctx, User(Text("see"), Image("image/png", img)))
		mustOK(t, err)
		mustOK(t, s.Close())
	})
	t.Logf("ops:\n%s", opsString(steps))
	if _, ok := after.durable()[bpath]; !ok {
		t.Errorf("after power loss the blob of an append that returned under SyncEveryAppend is gone")
	}
}

// The retry of an append whose first attempt was written but not synced
// (the first process crashed before its fdatasync): the retry, under
// SyncEveryAppend, succeeds without writing - and without syncing.
func TestDurableRetry(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncEveryAppend, SyncOnFlush} {
		t.Run(policy.String(), func(t *testing.T) {
			ctx := context.Background()
			base := t.TempDir()
			root, blobs := filepath.Join(base, "sessions"), filepath.Join(base, "blobs")
			st, err := OpenFileStore(root, &FileStoreOptions{Sync: SyncNever, BlobDir: blobs})
			mustOK(t, err)
			mustOK(t, st.Create(ctx, Header{ID: "s-r", Cwd: "/w"}))
			path, _ := st.Path("s-r")
			e0, _ := NewEntry("custom", "e0", "", time.Unix(1700000000, 0), map[string]any{"customType": "x", "data": 0})
			mustOK(t, st.Append(ctx, "s-r", AppendOptions{}, e0))
			mustOK(t, st.Flush(ctx, "s-r"))
			hdr, _ := os.ReadFile(path)
			e1, _ := NewEntry("custom", "e1", "e0", time.Unix(1700000000, 0), map[string]any{"customType": "x", "data": 1})
			e2, _ := NewEntry("custom", "e2", "e1", time.Unix(1700000000, 0), map[string]any{"customType": "x", "data": 2})
			mustOK(t, st.Append(ctx, "s-r", AppendOptions{}, e1, e2))
			st.Close()
			model := snapshot(t, base)
			id := model.vnames[path]
			model.ddata[id] = hdr // the lines were never synced

			after, steps := runRecorded(t, model, func() {
				st, err := OpenFileStore(root, &FileStoreOptions{Sync: policy, BlobDir: blobs})
				mustOK(t, err)
				defer st.Close()
				mustOK(t, st.Append(ctx, "s-r", AppendOptions{IfLast: "e0"}, e1, e2)) // the retry
				mustOK(t, st.Flush(ctx, "s-r"))
			})
			t.Logf("ops:\n%s", opsString(steps))
			if d := after.durable()[path]; !bytes.Contains(d, []byte(`"e2"`)) {
				t.Errorf("the retried append returned (and was flushed) but after a power loss the file holds:\n%s", d)
			}
		})
	}
}

// Blobs put with PutBlobDeferred are durable once SyncBlobs returned,
// and it syncs each file once and the directory once, not a directory
// per blob.
func TestDurableBlobsAfterSyncBlobs(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root, blobs := filepath.Join(base, "sessions"), filepath.Join(base, "blobs")
	st, err := OpenFileStore(root, &FileStoreOptions{Sync: SyncEveryAppend, BlobDir: blobs})
	mustOK(t, err)
	_, err = st.PutBlob(ctx, []byte("made the directory")) // the directory is there, durable
	mustOK(t, err)
	st.Close()
	model := snapshot(t, base)
	var refs []string
	after, steps := runRecorded(t, model, func() {
		st, err := OpenFileStore(root, &FileStoreOptions{Sync: SyncEveryAppend, BlobDir: blobs})
		mustOK(t, err)
		defer st.Close()
		for i := range 20 {
			ref, err := st.PutBlobDeferred(ctx, []byte(strings.Repeat("x", i+1)))
			mustOK(t, err)
			refs = append(refs, ref)
		}
		mustOK(t, st.SyncBlobs(ctx))
	})
	d := after.durable()
	for _, ref := range refs {
		if _, ok := d[filepath.Join(blobs, ref[len(BlobPrefix):])]; !ok {
			t.Errorf("blob %s is not durable after SyncBlobs returned", ref)
		}
	}
	syncdirs, fsyncs := 0, 0
	for _, s := range steps {
		if s.op != nil && s.op.Kind == "syncdir" {
			syncdirs++
		}
		if s.op != nil && s.op.Kind == "fsync" {
			fsyncs++
		}
	}
	if syncdirs != 1 || fsyncs != 20 {
		t.Errorf("%d directory syncs and %d file syncs for 20 blobs, want 1 and 20:\n%s", syncdirs, fsyncs, opsString(steps))
	}
}
