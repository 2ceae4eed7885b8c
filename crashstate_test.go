package session

// The crash-state checker.
//
// A workload runs against a FileStore with every change it makes to the
// file system recorded (fsops.go: mkdir, create, write, truncate, fsync,
// fdatasync, rename, link, unlink, and the sync of a directory), and with
// what each call promised once it returned (an acknowledgement). A model
// of a POSIX file system then rebuilds each state a crash could leave
// after each prefix of those changes, in the manner of ALICE ("All File
// Systems Are Not Created Equal", OSDI '14):
//
//   - everything done so far, as a crash of the process leaves it;
//   - only what was made durable: a file's data once fsync'd or
//     fdatasync'd, a directory's entries (new files, renames, removals,
//     new directories) once that directory was synced;
//   - everything but one change not yet made durable, for each such
//     change;
//   - everything but the end of one write not yet made durable, cut at
//     each 512-byte boundary.
//
// Each state is written out as a real directory, opened with a new
// FileStore, and checked: it opens, nothing acknowledged is lost, every
// entry is one that was appended, byte for byte, an append of several
// entries is there whole or not at all, a rewrite left the old or the new
// log, and the session takes a new append and reads back clean.
//
// A state a crash of the process leaves is also a disk with parts not yet
// durable that the next process builds on: the recovery on it (the
// store opened, each session appended to and closed, a new session
// created) is recorded too, applied to the model of that state, and the
// durable part of the result opened: a power loss right after the
// recovery must keep what it read and appended, and what it created.
//
// The mutants prove the checker: each breaks one durability rule of the
// store (fsops.go, filestore_*.go), and the checker must find a violation
// in each.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsession/session/internal/longtest"
)

// ---- Recording ----

// step is a recorded change, or an acknowledgement.
type step struct {
	op  *fsOp
	ack *ack
}

// ack is what a call promised when it returned.
type ack struct {
	kind    string   // create, append, flush, rewrite, archive, blob
	id      string   // the session
	entries []string // append: the ids; rewrite: the ids of the new log
	durable bool     // the promise holds after a power loss
	written bool     // append: it holds after a crash of the process
	ref     string   // blob
}

type recorder struct {
	mu    sync.Mutex
	steps []step
}

func (r *recorder) op(o fsOp) {
	r.mu.Lock()
	r.steps = append(r.steps, step{op: &o})
	r.mu.Unlock()
}

func (r *recorder) ack(a ack) {
	r.mu.Lock()
	r.steps = append(r.steps, step{ack: &a})
	r.mu.Unlock()
}

// at is where the next step goes.
func (r *recorder) at() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.steps)
}

// ackAt puts an acknowledgement at step i, for what is only known once a
// call returned but held from its start.
func (r *recorder) ackAt(i int, a ack) {
	r.mu.Lock()
	r.steps = slices.Insert(r.steps, i, step{ack: &a})
	r.mu.Unlock()
}

// ---- The model of the file system ----

// fsState is the file system as the model knows it: directories, names
// bound to files, and the files' contents, each in the volatile view
// (what the running system shows) and the durable one (what survives a
// power loss).
type fsState struct {
	next        int
	vnames      map[string]int // path -> file, as the system shows it
	dnames      map[string]int // as the disk holds it
	vdirs       map[string]bool
	ddirs       map[string]bool
	vdata       map[int][]byte
	ddata       map[int][]byte
	initialized bool
}

func newFSState() *fsState {
	return &fsState{vnames: map[string]int{}, dnames: map[string]int{}, vdirs: map[string]bool{}, ddirs: map[string]bool{},
		vdata: map[int][]byte{}, ddata: map[int][]byte{}}
}

func (s *fsState) clone() *fsState {
	c := &fsState{next: s.next, vnames: mapsClone(s.vnames), dnames: mapsClone(s.dnames), vdirs: mapsClone(s.vdirs),
		ddirs: mapsClone(s.ddirs), vdata: map[int][]byte{}, ddata: map[int][]byte{}}
	for k, v := range s.vdata {
		c.vdata[k] = slices.Clone(v)
	}
	for k, v := range s.ddata {
		c.ddata[k] = slices.Clone(v)
	}
	return c
}

func mapsClone[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// apply makes one change in the volatile view, and in the durable one
// what a sync makes durable. cut, when not negative, keeps only that much
// of a write.
func (s *fsState) apply(o *fsOp, cut int) {
	switch o.Kind {
	case "mkdir":
		s.vdirs[o.Path] = true
	case "create":
		s.next++
		s.vnames[o.Path] = s.next
		s.vdata[s.next] = nil
	case "write":
		id, ok := s.vnames[o.Path]
		if !ok {
			return
		}
		data := o.Data
		if cut >= 0 {
			data = data[:cut]
		}
		b := s.vdata[id]
		if end := int(o.Off) + len(data); end > len(b) {
			b = append(b, make([]byte, end-len(b))...)
		}
		copy(b[o.Off:], data)
		s.vdata[id] = b
	case "truncate":
		id, ok := s.vnames[o.Path]
		if !ok {
			return
		}
		b := s.vdata[id]
		if int(o.Size) <= len(b) {
			b = b[:o.Size]
		} else {
			b = append(b, make([]byte, int(o.Size)-len(b))...)
		}
		s.vdata[id] = b
	case "fsync", "fdatasync":
		if id, ok := s.vnames[o.Path]; ok {
			s.ddata[id] = slices.Clone(s.vdata[id])
		}
	case "rename":
		if id, ok := s.vnames[o.Path]; ok {
			s.vnames[o.To] = id
			delete(s.vnames, o.Path)
		}
	case "link":
		if id, ok := s.vnames[o.Path]; ok {
			s.vnames[o.To] = id
		}
	case "unlink":
		delete(s.vnames, o.Path)
	case "syncdir":
		for p := range s.dnames {
			if filepath.Dir(p) == o.Path {
				delete(s.dnames, p)
			}
		}
		for p, id := range s.vnames {
			if filepath.Dir(p) == o.Path {
				s.dnames[p] = id
			}
		}
		for p := range s.vdirs {
			if filepath.Dir(p) == o.Path {
				s.ddirs[p] = true
			}
		}
	}
}

// volatile is the state a crash of the process leaves: all of it.
func (s *fsState) volatile() map[string][]byte {
	out := withLinks(s.vnames, s.vdata)
	for d := range s.vdirs {
		out[d+"/"] = nil
	}
	return out
}

// durable is the state a power loss leaves when nothing unsynced made it:
// a name only if its directory was synced, and its file with the data
// last synced (a file never synced is empty); a directory only if its
// parent was synced, and its parents are there.
func (s *fsState) durable() map[string][]byte {
	out := map[string][]byte{}
	for d := range s.ddirs {
		out[d+"/"] = nil
	}
	for p, data := range withLinks(s.dnames, s.ddata) {
		out[p] = data
	}
	return out
}

// linkMark joins, in a state's key, a name to the first name (in order)
// of the same file: materialize makes it a hard link to that one.
const linkMark = "\x00link\x00"

// withLinks returns each name's contents by path; the second and later
// names of one file (a rename across directories a power loss left
// half done, say) as path+linkMark+first name.
func withLinks(names map[string]int, data map[int][]byte) map[string][]byte {
	byFile := map[int][]string{}
	for p, id := range names {
		byFile[id] = append(byFile[id], p)
	}
	out := map[string][]byte{}
	for id, ps := range byFile {
		sort.Strings(ps)
		out[ps[0]] = data[id]
		for _, p := range ps[1:] {
			out[p+linkMark+ps[0]] = data[id]
		}
	}
	return out
}

// ---- Crash states ----

// syncedAfter reports whether op k of steps[:p] was made durable by a
// later sync before p: a file's data by an fsync of the file, a
// directory entry by a sync of its directory.
func syncedAfter(steps []step, k, p int, files map[int]int) bool {
	o := steps[k].op
	for j := k + 1; j < p; j++ {
		q := steps[j].op
		if q == nil {
			continue
		}
		switch o.Kind {
		case "write", "truncate":
			if (q.Kind == "fsync" || q.Kind == "fdatasync") && files[j] == files[k] && files[k] != 0 {
				return true
			}
		case "create", "mkdir", "unlink":
			if q.Kind == "syncdir" && q.Path == filepath.Dir(o.Path) {
				return true
			}
		case "link", "rename":
			// Durable once the new name's directory is synced (and, for a
			// rename, the old one's too).
			if q.Kind == "syncdir" && q.Path == filepath.Dir(o.To) && (o.Kind == "link" || syncedDir(steps[k+1:p], filepath.Dir(o.Path))) {
				return true
			}
		default:
			return true // syncs: nothing to lose
		}
	}
	return false
}

func syncedDir(steps []step, dir string) bool {
	for _, st := range steps {
		if st.op != nil && st.op.Kind == "syncdir" && st.op.Path == dir {
			return true
		}
	}
	return false
}

// fileIDs gives, for each write, truncate and sync, the file it touched
// (by the model's numbering), to tell whose data a sync made durable.
func fileIDs(base *fsState, steps []step) map[int]int {
	s := base.clone()
	out := map[int]int{}
	for k, st := range steps {
		if st.op == nil {
			continue
		}
		out[k] = s.vnames[st.op.Path]
		s.apply(st.op, -1)
	}
	return out
}

// crashState is one state a crash could leave after steps[:p].
type crashState struct {
	p     int
	how   string
	files map[string][]byte // path -> contents; a path ending in / is a directory
	// model, for the state a crash of the process leaves, is the model
	// of the disk under it: what is durable of it and what is not, so
	// that the recovery that follows can be checked against a power loss
	// too (see recoverAndLosePower).
	model *fsState
}

// crashStates enumerates the states of every prefix.
func crashStates(base *fsState, steps []step) []crashState {
	files := fileIDs(base, steps)
	var out []crashState
	seen := map[[32]byte]bool{}
	add := func(p int, how string, f map[string][]byte) *crashState {
		h := stateHash(f)
		if seen[h] {
			return nil
		}
		seen[h] = true
		out = append(out, crashState{p: p, how: how, files: f})
		return &out[len(out)-1]
	}
	replay := func(p, skip, cutStep, cutBytes int) *fsState {
		s := base.clone()
		for k := 0; k < p; k++ {
			if st := steps[k]; st.op != nil && k != skip {
				c := -1
				if k == cutStep {
					c = cutBytes
				}
				s.apply(st.op, c)
			}
		}
		return s
	}
	for p := 0; p <= len(steps); p++ {
		full := replay(p, -1, -1, 0)
		if st := add(p, "process crash", full.volatile()); st != nil {
			st.model = full
		}
		add(p, "power loss, nothing unsynced kept", full.durable())
		for k := 0; k < p; k++ {
			o := steps[k].op
			if o == nil || o.Kind == "fsync" || o.Kind == "fdatasync" || o.Kind == "syncdir" || syncedAfter(steps, k, p, files) {
				continue
			}
			add(p, fmt.Sprintf("power loss, all but %s %s (step %d)", o.Kind, filepath.Base(o.Path), k), replay(p, k, -1, 0).volatile())
			if o.Kind == "write" {
				for c := 512; c < len(o.Data); c += 512 {
					add(p, fmt.Sprintf("power loss, %s cut at %d of %d bytes (step %d)", filepath.Base(o.Path), c, len(o.Data), k), replay(p, -1, k, c).volatile())
				}
			}
		}
	}
	return out
}

func stateHash(f map[string][]byte) [32]byte {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s\x00%d\x00", k, len(f[k]))
		h.Write(f[k])
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// snapshot reads a directory tree into a model state, all durable: what
// a workload starts from.
func snapshot(t *testing.T, base string) *fsState {
	t.Helper()
	s := newFSState()
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != base {
				s.vdirs[p], s.ddirs[p] = true, true
			}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s.next++
		s.vnames[p], s.dnames[p] = s.next, s.next
		s.vdata[s.next], s.ddata[s.next] = data, slices.Clone(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// materialize writes a state out under dir, its paths moved from base.
func materialize(t *testing.T, st crashState, base, dir string) {
	t.Helper()
	keys := make([]string, 0, len(st.files))
	for k := range st.files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	made := map[string]bool{base: true} // the directories there, by their recorded path
	for _, k := range keys {
		path := strings.TrimSuffix(k, "/")
		path, first, linked := strings.Cut(path, linkMark)
		rel, err := filepath.Rel(base, path)
		if err != nil || !filepath.IsLocal(rel) || !made[filepath.Dir(path)] {
			continue // outside, or in a directory a crash left out
		}
		p := filepath.Join(dir, rel)
		if strings.HasSuffix(k, "/") {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			made[path] = true
			continue
		}
		if linked {
			if r, err := filepath.Rel(base, first); err == nil && os.Link(filepath.Join(dir, r), p) == nil {
				continue
			}
		}
		if err := os.WriteFile(p, st.files[k], 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// ---- Workloads ----

// workload is a run against a store under root (sessions) and blobs,
// acknowledging what each call promised.
type workload struct {
	name   string
	policy SyncPolicy
	setup  func(t *testing.T, root string) // before recording
	run    func(t *testing.T, root, blobs string, r *recorder, appended map[string][][]byte)
}

// expected collects, for the checks, every version of every entry a
// workload wrote (an entry a rewrite changed has two), by id.
type expected map[string][][]byte

func (x expected) add(es ...Entry) {
	for _, e := range es {
		b := bytes.Clone(e.bytes())
		if !slices.ContainsFunc(x[e.id], func(v []byte) bool { return bytes.Equal(v, b) }) {
			x[e.id] = append(x[e.id], b)
		}
	}
}

func ids(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.id
	}
	return out
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func workloads() []workload {
	var out []workload
	for _, policy := range []SyncPolicy{SyncEveryAppend, SyncOnFlush, SyncNever} {
		durable := policy == SyncEveryAppend
		out = append(out, workload{
			name: "appends/" + policy.String(), policy: policy,
			run: func(t *testing.T, root, blobs string, r *recorder, x map[string][][]byte) {
				a := r.ack
				ctx := context.Background()
				store, err := OpenFileStore(root, &FileStoreOptions{Sync: policy, BlobDir: blobs})
				mustOK(t, err)
				defer store.Close()
				s, err := Create(ctx, store, &CreateOptions{ID: "s-a", Cwd: "/w"})
				mustOK(t, err)
				a(ack{kind: "create", id: "s-a", durable: true})
				for k := range 3 {
					e, err := s.Append(ctx, UserText(fmt.Sprintf("message %d %s", k, strings.Repeat("m", 700))))
					mustOK(t, err)
					expected(x).add(e)
					a(ack{kind: "append", id: "s-a", entries: []string{e.id}, durable: durable, written: policy != SyncNever})
				}
				mustOK(t, s.Flush(ctx))
				a(ack{kind: "flush", id: "s-a", durable: policy == SyncOnFlush})
				e, err := s.Append(ctx, AssistantText("after the flush"))
				mustOK(t, err)
				expected(x).add(e)
				a(ack{kind: "append", id: "s-a", entries: []string{e.id}, durable: durable, written: policy != SyncNever})
				mustOK(t, s.Close())
				a(ack{kind: "flush", id: "s-a", durable: policy == SyncOnFlush})
			},
		})
		out = append(out, workload{
			name: "turns/" + policy.String(), policy: policy,
			run: func(t *testing.T, root, blobs string, r *recorder, x map[string][][]byte) {
				a := r.ack
				ctx := context.Background()
				store, err := OpenFileStore(root, &FileStoreOptions{Sync: policy, BlobDir: blobs})
				mustOK(t, err)
				defer store.Close()
				s, err := Create(ctx, store, &CreateOptions{ID: "s-t", Cwd: "/w"})
				mustOK(t, err)
				a(ack{kind: "create", id: "s-t", durable: true})
				for k := range 2 {
					call := fmt.Sprintf("c%d", k)
					turn := []*Message{
						UserText(fmt.Sprintf("turn %d %s", k, strings.Repeat("u", 600))),
						Assistant(ToolCall(call, "read", json.RawMessage(`{"path":"a"}`))),
						ToolResult(call, "read", strings.Repeat("r", 900)),
						AssistantText("done"),
					}
					es, err := s.appendMessages(ctx, turn, nil)
					mustOK(t, err)
					expected(x).add(es...)
					a(ack{kind: "append", id: "s-t", entries: ids(es), durable: durable, written: policy != SyncNever})
				}
				mustOK(t, s.Flush(ctx))
				a(ack{kind: "flush", id: "s-t", durable: policy == SyncOnFlush})
			},
		})
	}
	out = append(out, workload{
		name: "prune", policy: SyncOnFlush,
		run: func(t *testing.T, root, blobs string, r *recorder, x map[string][][]byte) {
			a := r.ack
			ctx := context.Background()
			store, err := OpenFileStore(root, &FileStoreOptions{BlobDir: blobs})
			mustOK(t, err)
			defer store.Close()
			s, err := Create(ctx, store, &CreateOptions{ID: "s-p", Cwd: "/w"})
			mustOK(t, err)
			a(ack{kind: "create", id: "s-p", durable: true})
			for k := range 3 {
				es, err := s.appendMessages(ctx, []*Message{UserText(fmt.Sprintf("q%d %s", k, strings.Repeat("q", 300))), AssistantText("a")}, nil)
				mustOK(t, err)
				expected(x).add(es...)
				a(ack{kind: "append", id: "s-p", entries: ids(es), written: true})
			}
			res, err := s.Compact(ctx, ExtractiveSummarizer{}, &CompactionOptions{KeepRecentTokens: 1})
			mustOK(t, err)
			expected(x).add(res.Entry)
			a(ack{kind: "append", id: "s-p", entries: []string{res.Entry.id}, written: true})
			mustOK(t, s.Flush(ctx))
			a(ack{kind: "flush", id: "s-p", durable: true})
			start := r.at()
			_, err = s.Prune(ctx, nil)
			mustOK(t, err)
			expected(x).add(s.Log().Entries...)
			r.ackAt(start, ack{kind: "rewrite-start", id: "s-p", entries: ids(s.Log().Entries)})
			a(ack{kind: "rewrite", id: "s-p", entries: ids(s.Log().Entries), durable: true})
			e, err := s.Append(ctx, UserText("after the prune"))
			mustOK(t, err)
			expected(x).add(e)
			mustOK(t, s.Flush(ctx))
			a(ack{kind: "append", id: "s-p", entries: []string{e.id}, durable: true, written: true})
		},
	})
	out = append(out, workload{
		name: "fork, archive, listing", policy: SyncOnFlush,
		run: func(t *testing.T, root, blobs string, r *recorder, x map[string][][]byte) {
			a := r.ack
			ctx := context.Background()
			store, err := OpenFileStore(root, &FileStoreOptions{BlobDir: blobs})
			mustOK(t, err)
			defer store.Close()
			s, err := Create(ctx, store, &CreateOptions{ID: "s-src", Cwd: "/w"})
			mustOK(t, err)
			a(ack{kind: "create", id: "s-src", durable: true})
			for k := range 4 {
				e, err := s.Append(ctx, UserText(fmt.Sprintf("line %d %s", k, strings.Repeat("l", 400))))
				mustOK(t, err)
				expected(x).add(e)
			}
			mustOK(t, s.Flush(ctx))
			a(ack{kind: "flush", id: "s-src", durable: true})
			f, err := s.Fork(ctx, &ForkOptions{ID: "s-fork"})
			mustOK(t, err)
			expected(x).add(f.Log().Entries...)
			a(ack{kind: "create", id: "s-fork", durable: true})
			a(ack{kind: "append", id: "s-fork", entries: ids(f.Log().Entries), durable: true, written: true})
			mustOK(t, f.Close())
			_, err = store.List(ctx, ListOptions{}) // writes the listing index
			mustOK(t, err)
			mustOK(t, store.Archive(ctx, "s-src"))
			a(ack{kind: "archive", id: "s-src", durable: true})
		},
	})
	out = append(out, workload{
		// The log is compressed in the archive, then written to again,
		// which writes it back plain and out of the archive: at every
		// point one file holds it (the copies check in checkState).
		name: "compressed archive", policy: SyncOnFlush,
		run: func(t *testing.T, root, blobs string, r *recorder, x map[string][][]byte) {
			a := r.ack
			ctx := context.Background()
			store, err := OpenFileStore(root, &FileStoreOptions{BlobDir: blobs, CompressArchive: true})
			mustOK(t, err)
			defer store.Close()
			s, err := Create(ctx, store, &CreateOptions{ID: "s-z", Cwd: "/w"})
			mustOK(t, err)
			a(ack{kind: "create", id: "s-z", durable: true})
			for k := range 4 {
				e, err := s.Append(ctx, UserText(fmt.Sprintf("line %d %s", k, strings.Repeat("z", 400))))
				mustOK(t, err)
				expected(x).add(e)
				a(ack{kind: "append", id: "s-z", entries: []string{e.id}, written: true})
			}
			mustOK(t, s.Close())
			a(ack{kind: "flush", id: "s-z", durable: true})
			mustOK(t, store.Archive(ctx, "s-z"))
			a(ack{kind: "archive", id: "s-z", durable: true})
			s, err = Open(ctx, store, "s-z")
			mustOK(t, err)
			a(ack{kind: "unarchive-start", id: "s-z"})
			e, err := s.Append(ctx, AssistantText("written again"))
			mustOK(t, err)
			expected(x).add(e)
			a(ack{kind: "append", id: "s-z", entries: []string{e.id}, written: true})
			a(ack{kind: "unarchive", id: "s-z", durable: true})
			mustOK(t, s.Close())
			a(ack{kind: "flush", id: "s-z", durable: true})
		},
	})
	out = append(out, workload{
		name: "blob", policy: SyncEveryAppend,
		run: func(t *testing.T, root, blobs string, r *recorder, x map[string][][]byte) {
			a := r.ack
			ctx := context.Background()
			store, err := OpenFileStore(root, &FileStoreOptions{Sync: SyncEveryAppend, BlobDir: blobs})
			mustOK(t, err)
			defer store.Close()
			s, err := Create(ctx, store, &CreateOptions{ID: "s-b", Cwd: "/w"})
			mustOK(t, err)
			a(ack{kind: "create", id: "s-b", durable: true})
			img := bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, 400)
			e, err := s.Append(ctx, User(Text("see"), Image("image/png", img)))
			mustOK(t, err)
			expected(x).add(e)
			a(ack{kind: "append", id: "s-b", entries: []string{e.id}, durable: true, written: true})
			a(ack{kind: "blob", ref: BlobRef(img), durable: true})
		},
	})
	out = append(out, workload{
		name: "blob collection", policy: SyncEveryAppend,
		run: func(t *testing.T, root, blobs string, r *recorder, x map[string][][]byte) {
			// A collection deletes a blob no session refers to, and takes
			// aside one that a put refreshes meanwhile, which it puts back
			// (see DeleteBlobIfOlder): the blob the put returned survives
			// a crash at any point, and so does the one an entry holds.
			a := r.ack
			ctx := context.Background()
			store, err := OpenFileStore(root, &FileStoreOptions{Sync: SyncEveryAppend, BlobDir: blobs})
			mustOK(t, err)
			defer store.Close()
			s, err := Create(ctx, store, &CreateOptions{ID: "s-b", Cwd: "/w"})
			mustOK(t, err)
			a(ack{kind: "create", id: "s-b", durable: true})
			img := bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, 400)
			e, err := s.Append(ctx, User(Text("see"), Image("image/png", img)))
			mustOK(t, err)
			expected(x).add(e)
			a(ack{kind: "append", id: "s-b", entries: []string{e.id}, durable: true, written: true})
			a(ack{kind: "blob", ref: BlobRef(img), durable: true})
			_, err = store.PutBlob(ctx, []byte("garbage"))
			mustOK(t, err)
			reused := []byte("put again while the collection deletes it")
			ref, err := store.PutBlob(ctx, reused)
			mustOK(t, err)
			asideHook = func(stage, name string) {
				if stage == "before" && name == ref[len(BlobPrefix):] {
					_, err := store.PutBlob(ctx, reused)
					mustOK(t, err)
					a(ack{kind: "blob", ref: ref, durable: true})
				}
			}
			defer func() { asideHook = nil }()
			res, err := CollectBlobs(ctx, store, &CollectOptions{Grace: -1})
			mustOK(t, err)
			if len(res.Deleted) != 1 || res.Young != 1 {
				t.Fatalf("collection: deleted %v, %d young; want the garbage deleted, the blob put again kept", res.Deleted, res.Young)
			}
		},
	})
	out = append(out, workload{
		// A session opened by its path: its index built, opened through
		// it, appended to, opened again over the appends. The index is
		// a cache, never synced: whatever a crash leaves of it, the
		// recovery's open (by path where it can) must give what a whole
		// read gives (checkState compares their contexts).
		name: "open by path", policy: SyncOnFlush,
		run: func(t *testing.T, root, blobs string, r *recorder, x map[string][][]byte) {
			a := r.ack
			ctx := context.Background()
			old := pathIndexMin
			pathIndexMin = 0
			defer func() { pathIndexMin = old }()
			store, err := OpenFileStore(root, &FileStoreOptions{BlobDir: blobs})
			mustOK(t, err)
			defer store.Close()
			s, err := Create(ctx, store, &CreateOptions{ID: "s-x", Cwd: "/w"})
			mustOK(t, err)
			a(ack{kind: "create", id: "s-x", durable: true})
			turn := func(k int) {
				es, err := s.appendMessages(ctx, []*Message{UserText(fmt.Sprintf("q%d %s", k, strings.Repeat("q", 300))), AssistantText("a")}, nil)
				mustOK(t, err)
				expected(x).add(es...)
				a(ack{kind: "append", id: "s-x", entries: ids(es), written: true})
			}
			for k := range 3 {
				turn(k)
			}
			res, err := s.Compact(ctx, ExtractiveSummarizer{}, &CompactionOptions{KeepRecentTokens: 1})
			mustOK(t, err)
			expected(x).add(res.Entry)
			a(ack{kind: "append", id: "s-x", entries: []string{res.Entry.id}, written: true})
			turn(3)
			mustOK(t, s.Flush(ctx))
			a(ack{kind: "flush", id: "s-x", durable: true})
			mustOK(t, s.Close())
			rel, err := store.Path("s-x")
			mustOK(t, err)
			rel, err = filepath.Rel(root, rel)
			mustOK(t, err)
			store.buildIndex("s-x", rel) // here, not in the background: the steps stay in order
			for round := range 2 {
				s, err = Open(ctx, store, "s-x")
				mustOK(t, err)
				if !s.pathOnly {
					t.Fatalf("round %d: the session was not opened by its path", round)
				}
				turn(4 + round)
				mustOK(t, s.Flush(ctx))
				a(ack{kind: "flush", id: "s-x", durable: true})
				mustOK(t, s.Close())
			}
		},
	})
	out = append(out, workload{
		name: "migration on open", policy: SyncOnFlush,
		setup: func(t *testing.T, root string) {
			dir := filepath.Join(root, "--w--")
			mustOK(t, os.MkdirAll(dir, 0o700))
			v2 := `{"type":"session","version":2,"id":"s-m","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}
{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}
{"type":"message","id":"m2","parentId":"m1","timestamp":"2026-01-15T10:00:02.000Z","message":{"role":"hookMessage","content":"x","timestamp":2}}
`
			mustOK(t, os.WriteFile(filepath.Join(dir, "2026-01-15T10-00-00-000Z_s-m.jsonl"), []byte(v2), 0o600))
		},
		run: func(t *testing.T, root, blobs string, r *recorder, x map[string][][]byte) {
			a := r.ack
			ctx := context.Background()
			store, err := OpenFileStore(root, &FileStoreOptions{BlobDir: blobs})
			mustOK(t, err)
			defer store.Close()
			s, err := Open(ctx, store, "s-m")
			mustOK(t, err)
			expected(x).add(s.Log().Entries...)
			a(ack{kind: "create", id: "s-m", durable: true})
			a(ack{kind: "rewrite", id: "s-m", entries: ids(s.Log().Entries), durable: true})
		},
	})
	return out
}

// ---- Checking ----

// violation is a state a crash could leave that breaks a promise.
type violation struct {
	state crashState
	what  string
}

// checkWorkload records w, enumerates its crash states and checks each,
// returning the violations and the number of states checked.
func checkWorkload(t *testing.T, w workload) ([]violation, int) {
	t.Helper()
	base := t.TempDir()
	root, blobs := filepath.Join(base, "sessions"), filepath.Join(base, "blobs")
	if w.setup != nil {
		mustOK(t, os.MkdirAll(root, 0o700))
		w.setup(t, root)
	}
	start := snapshot(t, base)
	rec := &recorder{}
	x := expected{}
	recordFS = rec.op
	w.run(t, root, blobs, rec, x)
	recordFS = nil
	states := crashStates(start, rec.steps)
	var out []violation
	for _, st := range states {
		dir := t.TempDir()
		materialize(t, st, base, dir)
		if what := checkState(t, w, rec.steps[:st.p], x, dir, st, base); what != "" {
			out = append(out, violation{st, what})
		}
		os.RemoveAll(dir)
	}
	return out, len(states)
}

// checkState opens the state in dir and checks it against the promises
// acknowledged in steps; "" when it keeps them all. A state a crash of
// the process leaves keeps the stronger promise of appends written
// before they returned, and what the store does on it next (the
// recovery: an open, an append, a new session) is recorded and checked
// against a power loss that follows it (base is where the model's paths
// lie).
func checkState(t *testing.T, w workload, steps []step, x expected, dir string, cs crashState, base string) string {
	ctx := context.Background()
	// The state is in new files: a path index left there describes them.
	pathIndexAnyIno = true
	defer func() { pathIndexAnyIno = false }()
	processCrash := cs.how == "process crash"
	var rec *recorder
	if cs.model != nil && w.policy != SyncNever {
		rec = &recorder{}
		recordFS = rec.op
		defer func() { recordFS = nil }()
	}
	recovered := map[string][]string{} // by session: the entries a recovery saw and appended
	root, blobs := filepath.Join(dir, "sessions"), filepath.Join(dir, "blobs")
	// What must be there, by session, from the acknowledgements in order.
	created, archived, unarchived := map[string]bool{}, map[string]bool{}, map[string]bool{}
	dropped := map[string][]string{} // by an acknowledged rewrite
	mayDrop := map[string]bool{}     // by a rewrite begun
	appends := map[string][][]string{}
	must := map[string]map[string]bool{}
	pending := map[string][]string{} // acknowledged, durable at the next flush
	var blobRefs []string
	have := func(id string) map[string]bool {
		if must[id] == nil {
			must[id] = map[string]bool{}
		}
		return must[id]
	}
	for _, st := range steps {
		a := st.ack
		if a == nil {
			continue
		}
		switch a.kind {
		case "create":
			created[a.id] = true
		case "append":
			appends[a.id] = append(appends[a.id], a.entries)
			if a.durable || processCrash && a.written {
				for _, id := range a.entries {
					have(a.id)[id] = true
				}
			} else {
				pending[a.id] = append(pending[a.id], a.entries...)
			}
		case "flush":
			if a.durable {
				for _, id := range pending[a.id] {
					have(a.id)[id] = true
				}
				pending[a.id] = nil
			}
		case "rewrite-start":
			// From here the log may be the old one or the new one: what
			// the rewrite drops is no longer required.
			keep := map[string]bool{}
			for _, id := range a.entries {
				keep[id] = true
			}
			for id := range have(a.id) {
				if !keep[id] {
					delete(must[a.id], id)
					mayDrop[id] = true
				}
			}
			for _, g := range appends[a.id] {
				for _, id := range g {
					if !keep[id] {
						mayDrop[id] = true
					}
				}
			}
		case "rewrite":
			m := map[string]bool{}
			for _, id := range a.entries {
				m[id] = true
			}
			must[a.id] = m
			for _, g := range appends[a.id] {
				for _, id := range g {
					if !m[id] {
						dropped[a.id] = append(dropped[a.id], id)
					}
				}
			}
		case "archive":
			archived[a.id] = true
		case "unarchive-start":
			delete(archived, a.id) // from here, either
		case "unarchive":
			unarchived[a.id] = true
		case "blob":
			if a.durable {
				blobRefs = append(blobRefs, a.ref)
			}
		}
	}
	if _, err := os.Stat(root); err != nil {
		if len(created) > 0 {
			return "the store's root is gone after a create returned"
		}
		return ""
	}
	before := treeBytes(dir)
	store, err := OpenFileStore(root, &FileStoreOptions{Sync: w.policy, BlobDir: blobs})
	if err != nil {
		return "the store does not open: " + err.Error()
	}
	defer store.Close()
	if _, err := store.List(ctx, ListOptions{Archived: true}); err != nil {
		return "the store does not list: " + err.Error()
	}
	for _, ref := range blobRefs {
		if _, err := store.Blobs().GetBlob(ctx, ref); err != nil {
			return "a blob whose append returned is lost: " + err.Error()
		}
	}
	if what := copiesOf(root); what != "" {
		return what
	}
	sessions := []string{"s-a", "s-t", "s-p", "s-src", "s-fork", "s-b", "s-m", "s-z", "s-x"}
	for _, id := range sessions {
		log, err := store.Load(ctx, id)
		if err != nil {
			if created[id] && errors.Is(err, ErrNotFound) {
				return fmt.Sprintf("session %s, whose create returned, is gone", id)
			}
			if !errors.Is(err, ErrNotFound) {
				if !bytes.Equal(before, treeBytes(dir)) {
					return fmt.Sprintf("session %s is refused (%v) and its files were changed", id, err)
				}
				return fmt.Sprintf("session %s does not open: %v", id, err)
			}
			continue
		}
		if len(log.Malformed) > 0 {
			return fmt.Sprintf("session %s has malformed lines: %v", id, log.Malformed)
		}
		have := map[string]bool{}
		for _, e := range log.Entries {
			if !slices.ContainsFunc(x[e.id], func(v []byte) bool { return bytes.Equal(v, e.bytes()) }) {
				return fmt.Sprintf("session %s: entry %s is not one that was written: %s", id, e.id, e.bytes())
			}
			if have[e.id] {
				return fmt.Sprintf("session %s: entry %s is there twice", id, e.id)
			}
			have[e.id] = true
		}
		for eid := range must[id] {
			if !have[eid] {
				return fmt.Sprintf("session %s: acknowledged entry %s is lost", id, eid)
			}
		}
		for _, group := range appends[id] {
			n, kept := 0, 0
			for _, eid := range group {
				if have[eid] {
					n++
				}
				if !mayDrop[eid] {
					kept++
				}
			}
			if n != 0 && n != len(group) && n != kept {
				return fmt.Sprintf("session %s: %d of the %d entries of one append", id, n, len(group))
			}
		}
		for _, eid := range dropped[id] {
			if have[eid] {
				return fmt.Sprintf("session %s: entry %s, which the acknowledged rewrite dropped, is back", id, eid)
			}
		}
		if archived[id] {
			if p, err := store.Path(id); err != nil || !strings.Contains(p, archiveDir) {
				return fmt.Sprintf("session %s, whose archive returned, is not archived (%v)", id, err)
			}
		}
		if unarchived[id] {
			if p, err := store.Path(id); err != nil || strings.Contains(p, archiveDir) {
				return fmt.Sprintf("session %s, whose unarchive returned, is archived (%v)", id, err)
			}
		}
		// The session goes on: a new append after whatever the crash
		// left, and everything reads back clean.
		s, err := Open(ctx, store, id)
		if err != nil {
			return fmt.Sprintf("session %s opens as a log but not as a session: %v", id, err)
		}
		if got, want := s.Context(), OpenLog(log).Context(); !slices.Equal(got.EntryIDs, want.EntryIDs) || got.LeafID != want.LeafID {
			return fmt.Sprintf("session %s opens (partial: %v) with the context %v, a whole read gives %v", id, s.pathOnly, got.EntryIDs, want.EntryIDs)
		}
		e, err := s.Append(ctx, UserText("after the crash"))
		if err != nil {
			return fmt.Sprintf("session %s takes no append after the crash: %v", id, err)
		}
		mustOK(t, s.Close())
		recovered[id] = append(ids(log.Entries), e.id)
		again, err := OpenFileStore(root, &FileStoreOptions{BlobDir: blobs})
		if err != nil {
			return "the store does not open again: " + err.Error()
		}
		l2, err := again.Load(ctx, id)
		again.Close()
		if err != nil {
			return fmt.Sprintf("session %s does not open after an append: %v", id, err)
		}
		if len(l2.Malformed) > 0 || l2.Torn != nil || len(l2.Partial) != len(log.Partial) {
			return fmt.Sprintf("session %s reads back unclean after an append: malformed %v torn %v partial %v", id, l2.Malformed, l2.Torn, l2.Partial)
		}
		if len(l2.Entries) != len(log.Entries)+1 || l2.Entries[len(l2.Entries)-1].id != e.id {
			return fmt.Sprintf("session %s: %d entries after an append to %d", id, len(l2.Entries), len(log.Entries))
		}
	}
	if rec == nil {
		return ""
	}
	// A new session beside the ones the crash left, in a directory that
	// may be there without being durable.
	fresh, err := Create(ctx, store, &CreateOptions{ID: "s-new", Cwd: "/w"})
	if err != nil {
		return "no session can be created after the crash: " + err.Error()
	}
	mustOK(t, fresh.Close())
	recovered["s-new"] = nil
	recordFS = nil
	return recoverAndLosePower(t, w, cs.model, rec.steps, dir, base, recovered)
}

// copiesOf returns what is wrong if a session is in more than one file
// under root (in the archive and out of it, say), "" otherwise.
func copiesOf(root string) string {
	seen := map[string]string{}
	var what string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || what != "" {
			return nil
		}
		name := d.Name()
		if strings.HasPrefix(name, ".") || !isSessionFile(name, false) {
			return nil // temporary files, marks, the index
		}
		id := idOfFile(name, false)
		if other, dup := seen[id]; dup {
			what = fmt.Sprintf("session %s is in two files: %s and %s", id, other, p)
		}
		seen[id] = p
		return nil
	})
	return what
}

// recoverAndLosePower checks what a power loss right after the recovery
// leaves: the model of the crash state (paths under base) with the
// recovery's changes (recorded under dir) applied, its durable part
// opened. Every entry the recovery read and then built on with an
// append that returned (durable under the policy, Close flushing it) is
// there, and so is every session it created.
func recoverAndLosePower(t *testing.T, w workload, model *fsState, steps []step, dir, base string, recovered map[string][]string) string {
	ctx := context.Background()
	m := model.clone()
	move := func(p string) string {
		if rel, err := filepath.Rel(dir, p); err == nil && filepath.IsLocal(rel) {
			return filepath.Join(base, rel)
		}
		return p
	}
	for _, st := range steps {
		if st.op == nil {
			continue
		}
		o := *st.op
		o.Path, o.To = move(o.Path), move(o.To)
		if st.op.To == "" {
			o.To = ""
		}
		m.apply(&o, -1)
	}
	after := t.TempDir()
	defer os.RemoveAll(after)
	materialize(t, crashState{files: m.durable()}, base, after)
	root, blobs := filepath.Join(after, "sessions"), filepath.Join(after, "blobs")
	if _, err := os.Stat(root); err != nil {
		return "power loss after the recovery: the store's root is gone"
	}
	store, err := OpenFileStore(root, &FileStoreOptions{BlobDir: blobs})
	if err != nil {
		return "power loss after the recovery: the store does not open: " + err.Error()
	}
	defer store.Close()
	for id, want := range recovered {
		log, err := store.Load(ctx, id)
		if err != nil {
			return fmt.Sprintf("power loss after the recovery: session %s, created or appended to (and closed), does not open: %v", id, err)
		}
		have := map[string]bool{}
		for _, e := range log.Entries {
			have[e.id] = true
		}
		for _, eid := range want {
			if !have[eid] {
				return fmt.Sprintf("power loss after the recovery: session %s lost entry %s, which the recovery read or appended (the append returned and was flushed)", id, eid)
			}
		}
	}
	return ""
}

// treeBytes is every file under dir, to tell whether it changed.
func treeBytes(dir string) []byte {
	var b bytes.Buffer
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "%s %d\n", p, len(data))
			b.Write(data)
		}
		return nil
	})
	return b.Bytes()
}

// TestCrashStates runs every workload and checks every crash state.
func TestCrashStates(t *testing.T) {
	longtest.Skip(t, "every crash state of the FileStore workloads")
	if testing.Short() || RaceEnabled {
		t.Skip("thousands of crash states (run without -short and the race detector)")
	}
	total := 0
	start := time.Now()
	for _, w := range workloads() {
		t.Run(w.name, func(t *testing.T) {
			v, n := checkWorkload(t, w)
			total += n
			for i, x := range v {
				if i == 5 {
					t.Errorf("... and %d more", len(v)-5)
					break
				}
				t.Errorf("after step %d, %s: %s", x.state.p, x.state.how, x.what)
			}
			t.Logf("%d crash states checked", n)
		})
	}
	t.Logf("%d crash states in all, %v", total, time.Since(start).Round(time.Millisecond))
}

// TestCrashCheckerCatchesMutants breaks the store's durability rules one
// at a time, on purpose, and requires the checker to find a violation in
// each: a checker that cannot fail proves nothing.
func TestCrashCheckerCatchesMutants(t *testing.T) {
	longtest.Skip(t, "the crash-state checker against eight broken libraries")
	if testing.Short() || RaceEnabled {
		t.Skip("thousands of crash states (run without -short and the race detector)")
	}
	for _, m := range []string{"datasync-skip", "fsync-skip", "syncdir-skip", "mkdir-nosync", "rename-before-sync", "no-torn-cut", "no-marks", "name-nosync",
		"no-aside-recovery", "putback-nosync"} {
		t.Run(m, func(t *testing.T) {
			mutant = m
			defer func() { mutant = "" }()
			found, states := 0, 0
			var first string
			for _, w := range workloads() {
				v, n := checkWorkload(t, w)
				states += n
				if len(v) > 0 && first == "" {
					first = fmt.Sprintf("%s, after step %d, %s: %s", w.name, v[0].state.p, v[0].state.how, v[0].what)
				}
				found += len(v)
			}
			if found == 0 {
				t.Fatalf("the mutant %s broke nothing the checker sees, over %d crash states", m, states)
			}
			t.Logf("%d violations over %d crash states; the first: %s", found, states, first)
		})
	}
}
