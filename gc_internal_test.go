package session

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A put of a blob that a collection is deleting, just before it takes
// the blob aside (the put refreshes the file, which the collection then
// puts back) or just after (the put finds nothing and writes it again):
// either way the blob is there when the put has returned.
func TestDeleteBlobIfOlderBesideAPut(t *testing.T) {
	for _, stage := range []string{"before", "after"} {
		t.Run(stage, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "blobs")
			d := OpenBlobDir(dir, &BlobDirOptions{Sync: true})
			data := []byte("put again while a collection deletes it")
			ref, err := d.PutBlob(ctx, data)
			mustOK(t, err)
			name := ref[len(BlobPrefix):]
			old := time.Now().Add(-time.Hour)
			mustOK(t, os.Chtimes(filepath.Join(dir, name), old, old))
			puts := 0
			asideHook = func(s, n string) {
				if s == stage && n == name {
					_, err := d.PutBlob(ctx, data)
					mustOK(t, err)
					puts++
				}
			}
			defer func() { asideHook = nil }()
			deleted, err := d.DeleteBlobIfOlder(ctx, ref, time.Now().Add(-time.Minute))
			mustOK(t, err)
			if puts != 1 {
				t.Fatalf("%d puts beside the delete", puts)
			}
			// Before: the file the collection took aside was refreshed,
			// and put back. After: the collection removed the old file,
			// the put wrote a new one.
			if deleted != (stage == "after") {
				t.Fatalf("deleted: %v", deleted)
			}
			got, err := d.GetBlob(ctx, ref)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("GetBlob after the delete and the put: %q, %v", got, err)
			}
			names, err := os.ReadDir(dir)
			mustOK(t, err)
			if len(names) != 1 || names[0].Name() != name {
				t.Fatalf("the blob directory holds %v, want the blob alone", names)
			}
		})
	}
}

// A blob a collection took aside and never decided on (it crashed) is
// put back by the next store that opens the directory, or the next
// listing, whatever its time.
func TestBlobAsideIsPutBack(t *testing.T) {
	for _, via := range []string{"open", "list"} {
		t.Run(via, func(t *testing.T) {
			ctx := context.Background()
			base := t.TempDir()
			blobs := filepath.Join(base, "sessions", ".blobs") // the store's default
			d := OpenBlobDir(blobs, nil)
			ref, err := d.PutBlob(ctx, []byte("taken aside by a collection that crashed"))
			mustOK(t, err)
			name := ref[len(BlobPrefix):]
			mustOK(t, os.Rename(filepath.Join(blobs, name), filepath.Join(blobs, "."+name+".gc-zz9")))
			if _, err := d.GetBlob(ctx, ref); !errors.Is(err, ErrNotFound) {
				t.Fatalf("GetBlob of a blob aside: %v", err)
			}
			switch via {
			case "open":
				store, err := OpenFileStore(filepath.Join(base, "sessions"), nil)
				mustOK(t, err)
				mustOK(t, store.Close())
			case "list":
				mustOK(t, d.ListBlobs(ctx, func(BlobInfo) error { return nil }))
			}
			if _, err := d.GetBlob(ctx, ref); err != nil {
				t.Fatalf("GetBlob after the blob was put back: %v", err)
			}
			names, err := os.ReadDir(blobs)
			mustOK(t, err)
			if len(names) != 1 {
				t.Fatalf("the blob directory holds %v", names)
			}
		})
	}
}

// The changes a delete makes go through fsops.go, synced as the options
// say, so that the crash-state checker sees them.
func TestBlobDeletesAreRecorded(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "blobs")
	d := OpenBlobDir(dir, &BlobDirOptions{Sync: true})
	a, err := d.PutBlob(ctx, []byte("a"))
	mustOK(t, err)
	b, err := d.PutBlob(ctx, []byte("b"))
	mustOK(t, err)
	var kinds []string
	recordFS = func(o fsOp) { kinds = append(kinds, o.Kind) }
	defer func() { recordFS = nil }()
	mustOK(t, d.DeleteBlob(ctx, a))
	if want := []string{"unlink", "syncdir"}; !slices.Equal(kinds, want) {
		t.Fatalf("DeleteBlob: %v, want %v", kinds, want)
	}
	kinds = nil
	deleted, err := d.DeleteBlobIfOlder(ctx, b, time.Now().Add(time.Second))
	mustOK(t, err)
	if want := []string{"rename", "unlink", "syncdir"}; !deleted || !slices.Equal(kinds, want) {
		t.Fatalf("DeleteBlobIfOlder: deleted %v, %v; want %v", deleted, kinds, want)
	}
}

// Log.BlobRefs lists the references a FileStore resolved: the entries
// no longer show them.
func TestLogBlobRefs(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	store, err := OpenFileStore(filepath.Join(base, "sessions"), nil)
	mustOK(t, err)
	defer store.Close()
	s, err := Create(ctx, store, &CreateOptions{ID: "s-refs", Cwd: "/w"})
	mustOK(t, err)
	img := bytes.Repeat([]byte{9, 8, 7}, 1000)
	_, err = s.Append(ctx, User(Text("see"), Image("image/png", img)))
	mustOK(t, err)
	other := BlobRef([]byte("named in a custom entry, never put"))
	_, err = s.AppendCustom(ctx, "test.ref", map[string]string{"ref": other})
	mustOK(t, err)
	mustOK(t, s.Close())
	log, err := store.Load(ctx, "s-refs")
	mustOK(t, err)
	want := []string{BlobRef(img), other}
	slices.Sort(want)
	if !slices.Equal(log.BlobRefs, want) {
		t.Fatalf("BlobRefs: %v, want %v", log.BlobRefs, want)
	}
	for _, e := range log.Entries {
		if e.kind == kindMessage && bytes.Contains(e.bytes(), []byte(BlobRef(img))) {
			t.Fatal("the image's reference is still in the resolved entry")
		}
	}
	// ResolveBlobs on a log read without the store notes them too.
	path, err := store.Path("s-refs")
	mustOK(t, err)
	data, err := os.ReadFile(path)
	mustOK(t, err)
	raw, err := DecodeLog(data, nil)
	mustOK(t, err)
	if raw.BlobRefs != nil {
		t.Fatalf("BlobRefs of a log nothing resolved: %v", raw.BlobRefs)
	}
	if _, err := ResolveBlobs(ctx, raw, store); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(raw.BlobRefs, want) {
		t.Fatalf("BlobRefs after ResolveBlobs: %v, want %v", raw.BlobRefs, want)
	}
}

func TestScanRefs(t *testing.T) {
	h := func(c string) string { return string(bytes.Repeat([]byte(c), 64)) }
	in := `x blob:sha256:` + h("a") + ` "blob:sha256:` + h("0") + `" blob:sha256:` + h("A") +
		` blob:sha256:abc blob:sha256:` + h("f") + `ff blob:sha256:blob:sha256:` + h("1")
	var got []string
	scanRefs([]byte(in), func(r string) { got = append(got, r) })
	want := []string{BlobPrefix + h("a"), BlobPrefix + h("0"), BlobPrefix + h("f"), BlobPrefix + h("1")}
	if !slices.Equal(got, want) {
		t.Fatalf("scanRefs: %v, want %v", got, want)
	}
}

// A collection (another BlobDir on the directory) deleting a blob a
// writer pins: a pin taken just before the collection takes the blob
// aside is seen after it, and the blob put back; a release just after it
// was taken aside (the writer's append came meanwhile) finds the blob
// aside, and puts it back itself, refreshed, before the pin goes. Either
// way the blob is there, under its name, afterwards.
func TestDeleteBlobIfOlderBesideAPin(t *testing.T) {
	if !pinLocks {
		t.Skip("no pins of other BlobDirs on this system")
	}
	for _, release := range []bool{false, true} {
		t.Run(map[bool]string{false: "pin", true: "pin then release"}[release], func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "blobs")
			writer := OpenBlobDir(dir, nil)
			defer writer.Close()
			collector := OpenBlobDir(dir, nil)
			defer collector.Close()
			data := []byte("pinned while a collection deletes it")
			ref, err := collector.PutBlob(ctx, data)
			mustOK(t, err)
			name := ref[len(BlobPrefix):]
			old := time.Now().Add(-time.Hour)
			mustOK(t, os.Chtimes(filepath.Join(dir, name), old, old))
			var acts []string
			asideHook = func(s, n string) {
				if n != name {
					return
				}
				switch {
				case s == "before":
					mustOK(t, writer.PinBlobs(ctx, ref))
					acts = append(acts, "pin")
				case s == "after" && release:
					mustOK(t, writer.ReleaseBlobs(ctx, ref))
					acts = append(acts, "release")
				}
			}
			defer func() { asideHook = nil }()
			deleted, err := collector.DeleteBlobIfOlder(ctx, ref, time.Now().Add(-time.Minute))
			mustOK(t, err)
			if want := map[bool]int{false: 1, true: 2}[release]; deleted || len(acts) != want {
				t.Fatalf("deleted %v, %v beside the delete", deleted, acts)
			}
			got, err := collector.GetBlob(ctx, ref)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("GetBlob after the delete: %q, %v", got, err)
			}
			names, err := os.ReadDir(dir)
			mustOK(t, err)
			if len(names) != 1 || names[0].Name() != name {
				t.Fatalf("the blob directory holds %v, want the blob alone", names)
			}
			fi, err := os.Stat(filepath.Join(dir, name))
			mustOK(t, err)
			if release && !fi.ModTime().After(old) {
				t.Fatal("the release did not refresh the blob")
			}
		})
	}
}
