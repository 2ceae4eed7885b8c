package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	session "github.com/agentsession/session"
)

// Options configures a Workspace.
type Options struct {
	// Blobs is where the snapshots go (file contents and manifests): the
	// blob store of the sessions that will record them (session.BlobsOf
	// of their store), so that snapshots live where the sessions live.
	// Required.
	Blobs session.BlobStore
	// Ignore holds gitignore patterns relative to the directory, applied
	// after .gitignore files and .git/info/exclude (so they win: git's
	// order for patterns given on the command line).
	Ignore []string
	// MaxFileBytes is the size above which a file is recorded by its hash
	// and size (Oversized) but not stored. Default DefaultMaxFileBytes; it
	// must not exceed what the blob store accepts (session's
	// DefaultMaxBlobBytes for a BlobDir or FileStore).
	MaxFileBytes int64
	// CacheFile, when set, is where the stat cache is kept between
	// processes (written atomically after each snapshot), so that a new
	// process (a command-line tool) snapshots an unchanged tree without
	// reading it. It belongs to one directory (another's is ignored) and
	// vouches that contents are stored only in the blob store it was
	// written with: a blob directory (a FileStore's) by its path, another
	// store only in the process that wrote it. Default:
	// the cache lives in the Workspace only.
	CacheFile string
	// TrustStored is how long the cache vouches that a file's content is
	// in the blob store without putting it again. Putting a blob again
	// refreshes the time a collector sees it was last used, so this must
	// be shorter than the grace period of the blob collector that runs on
	// the store, by more than a Record takes from its snapshot to its
	// entry. Default DefaultTrustStored, half the collector's default
	// grace. A collection of this process
	// that sets out to delete blobs (session.BlobCollections) ends the
	// trust at once, whatever its grace.
	TrustStored time.Duration
	// Workers is how many goroutines walk and read; default GOMAXPROCS,
	// at least 2.
	Workers int
	// NoWatch turns the watcher off (Linux: inotify), so that every
	// snapshot stats every path. With it, a snapshot lists only the
	// directories where something happened since the last one.
	NoWatch bool
	// RescanEvery is the longest time between walks that stat every path
	// even with the watcher, for the changes it cannot see (a write
	// through a shared memory mapping or a hard link from outside the
	// directory, another machine's on a network file system). Default
	// DefaultRescanEvery.
	RescanEvery time.Duration
}

// Defaults of Options.
const (
	DefaultMaxFileBytes = 16 << 20
	DefaultTrustStored  = session.DefaultCollectGrace / 2 // strictly shorter than a collector's default grace, with room for a writer's latency
	DefaultRescanEvery  = time.Minute
)

// racyMargin is how close to a walk a file's modification or change time
// may be for the cache to vouch for its content: git's racy-timestamp
// rule, with the file system's timestamp tick taken as at most 2 s (FAT's
// granularity; Linux's coarse clock ticks every few ms). A file whose
// times are that recent is read again at the next snapshot, in case it
// changed again within the same tick, keeping its size.
const racyMargin = 2 * time.Second

// Workspace is a project directory whose state can be recorded
// (Snapshot), compared (Diff) and brought back (Restore). It keeps a stat
// cache: what each file's stat data was when its content was last read,
// and the content's hash. Its methods are safe for concurrent use; they
// run one at a time.
type Workspace struct {
	dir     string
	opts    Options
	extra   []gitignore.Pattern
	workers int
	now     func() time.Time

	mu          sync.Mutex
	watch       *watcher             // nil: none
	states      map[string]*dirState // the last walk's directories (nil: walk all)
	exclSt      statKey              // .git/info/exclude at the last walk
	lastFull    time.Time
	lastTree    *tree           // the last walk's result, as walked (with a watcher)
	pending     map[string]bool // directories the watcher saw change, not yet walked
	pendingFull bool
	// What the fast path of Snapshot needs: the last snapshot, when its
	// manifest was put, how many cache entries are racy, and the oldest
	// time a cached content was put.
	lastSnap     *Snapshot
	lastPut      time.Time
	racy         int
	oldestStored time.Time
	// walkedChanges tells that a walk since the last snapshot (of a diff,
	// a restore) saw something change, which the watcher will not report
	// again.
	walkedChanges bool
	// collections is session.BlobCollections when the cache's claims
	// that contents are stored were last checked.
	collections uint64
	cache       map[string]cacheEntry
	manifests   map[string]*Manifest // a few, by id
	mfOrder     []string
	last        string
}

// cacheEntry is what the stat cache knows of a file.
type cacheEntry struct {
	st      statKey
	hash    string
	trusted bool      // stat data older than the walk by racyMargin
	stored  time.Time // when its content was last put (zero: not stored)
}

// Open returns the workspace of dir (which must be a directory). Nothing
// is read until used.
func Open(dir string, opts *Options) (*Workspace, error) {
	if opts == nil || opts.Blobs == nil {
		return nil, errors.New("workspace: Options.Blobs is required")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace: %s is not a directory", abs)
	}
	w := &Workspace{dir: abs, opts: *opts, now: time.Now, cache: map[string]cacheEntry{}, manifests: map[string]*Manifest{},
		collections: session.BlobCollections()}
	if w.opts.MaxFileBytes <= 0 {
		w.opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if w.opts.TrustStored <= 0 {
		w.opts.TrustStored = DefaultTrustStored
	}
	if w.opts.RescanEvery <= 0 {
		w.opts.RescanEvery = DefaultRescanEvery
	}
	if !w.opts.NoWatch {
		w.watch = newWatcher()
	}
	w.workers = w.opts.Workers
	if w.workers <= 0 {
		w.workers = max(2, runtime.GOMAXPROCS(0))
	}
	for _, p := range w.opts.Ignore {
		w.extra = append(w.extra, parseIgnore([]byte(p), nil)...)
	}
	if w.opts.CacheFile != "" {
		w.loadCache()
	}
	return w, nil
}

// Close releases the watcher. The Workspace still works after it, every
// walk statting every path.
func (w *Workspace) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watch != nil {
		w.watch.close()
		w.watch, w.states = nil, nil
	}
	return nil
}

// Dir returns the workspace's directory (absolute).
func (w *Workspace) Dir() string { return w.dir }

// Last returns the id of the latest snapshot this Workspace took or
// restored ("" before the first).
func (w *Workspace) Last() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// Snapshot is the result of (*Workspace).Snapshot.
type Snapshot struct {
	// ID is the snapshot's id: the blob reference of its manifest.
	ID string
	// Files, Symlinks and Dirs (empty directories) count the entries
	// recorded; Bytes is the files' total size.
	Files, Symlinks, Dirs int
	Bytes                 int64
	// Read counts the files whose content was read (new, or their stat
	// data changed, or too recent for the cache to vouch for them),
	// ReadBytes their size; Reused the files the stat cache vouched for.
	Read      int
	ReadBytes int64
	Reused    int
	// Skipped lists what could not be recorded as it is (unreadable,
	// vanished, changed while read, not regular, too large to store);
	// none of it is fatal. Unreadable paths are in the manifest as such,
	// and Restore leaves them alone.
	Skipped []Problem
	// Manifest is the snapshot's manifest.
	Manifest *Manifest
}

// Snapshot records the tree: each file's content is put in the blob
// store (once per content: deduplicated across snapshots and sessions),
// then the manifest; it returns the snapshot, whose ID is the manifest's
// reference. With a store that has session.BlobBatcher, the contents are
// made durable together before the manifest is put, so that no reference
// is durable before what it names.
func (w *Workspace) Snapshot(ctx context.Context) (*Snapshot, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checkCollections()
	if res := w.unchanged(); res != nil {
		return res, nil
	}
	start := w.now()
	m, res, _, err := w.record(ctx, true)
	if err != nil {
		return nil, err
	}
	data := m.Encode()
	id, err := w.opts.Blobs.PutBlob(ctx, data)
	if err != nil {
		return nil, fmt.Errorf("workspace: put manifest: %w", err)
	}
	if want := session.BlobPrefix + hashOf(data); id != want {
		return nil, fmt.Errorf("workspace: the blob store named the manifest %s, not %s", id, want)
	}
	res.ID, res.Manifest = id, m
	w.remember(id, m)
	w.last = id
	w.lastSnap, w.lastPut = res, start
	w.walkedChanges = false
	w.saveCache()
	return res, nil
}

// checkCollections drops the cache's claims that contents are in the
// store, and the last snapshot (whose manifest is put again), when a
// collection of this process set out to delete blobs since they were
// made: with a grace shorter than TrustStored (a negative one, after
// sessions were deleted) it may have taken them, and a snapshot trusting
// the claims would name contents the store no longer has. Callers hold
// mu.
func (w *Workspace) checkCollections() {
	n := session.BlobCollections()
	if n == w.collections {
		return
	}
	w.collections = n
	for p, c := range w.cache {
		if !c.stored.IsZero() {
			c.stored = time.Time{}
			w.cache[p] = c
		}
	}
	w.lastSnap, w.oldestStored = nil, time.Time{}
}

// unchanged returns the last snapshot again when the watcher saw nothing
// change since it, no cached file is racy, nothing was skipped but for
// good (too large, not regular), and every content (and the manifest)
// was put recently enough; nil otherwise. Callers hold mu.
func (w *Workspace) unchanged() *Snapshot {
	if w.watch == nil || w.lastSnap == nil || w.lastTree == nil || w.racy > 0 || w.walkedChanges {
		return nil
	}
	now := w.now()
	if now.Sub(w.lastPut) >= w.opts.TrustStored || !w.oldestStored.IsZero() && now.Sub(w.oldestStored) >= w.opts.TrustStored {
		return nil
	}
	for _, p := range w.lastSnap.Skipped {
		if !errors.Is(p.Err, ErrTooLarge) && !errors.Is(p.Err, ErrNotRegular) {
			return nil
		}
	}
	if dirty, full := w.drain(now); full || len(dirty) > 0 {
		return nil
	}
	res := *w.lastSnap
	res.Read, res.ReadBytes, res.Reused = 0, 0, res.Files
	return &res
}

// record walks the tree and reads what the cache cannot vouch for; with
// store, the contents are put in the blob store (and made durable).
// Callers hold mu.
func (w *Workspace) record(ctx context.Context, store bool) (*Manifest, *Snapshot, *tree, error) {
	start := w.now()
	t, err := w.walk(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	res := &Snapshot{Skipped: t.problems}
	var jobs []int
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.Type != File {
			continue
		}
		if c, ok := w.cache[n.Path]; ok && c.trusted && c.st == n.st && (!store || n.Size > w.opts.MaxFileBytes || w.storedRecently(c, start)) {
			n.Hash = c.hash
			if n.Size > w.opts.MaxFileBytes {
				n.Type = Oversized
				res.Skipped = append(res.Skipped, Problem{Path: n.Path, Err: ErrTooLarge})
			}
			res.Reused++
			continue
		}
		jobs = append(jobs, i)
	}
	probs, err := w.readAll(ctx, t.nodes, jobs, store)
	if err != nil {
		return nil, nil, nil, err
	}
	if store && len(jobs) > 0 {
		if b, ok := w.opts.Blobs.(session.BlobBatcher); ok {
			if err := b.SyncBlobs(ctx); err != nil {
				return nil, nil, nil, fmt.Errorf("workspace: sync blobs: %w", err)
			}
		}
	}
	res.Skipped = append(res.Skipped, probs...)
	// The cache: what was read is remembered, trusted only when its times
	// are older than the walk by the racy margin.
	files := 0
	m := &Manifest{Entries: make([]Entry, 0, len(t.nodes))}
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.gone {
			continue
		}
		switch n.Type {
		case File, Oversized:
			files++
			c := w.cache[n.Path]
			if c.st != n.st || c.hash != n.Hash {
				c = cacheEntry{st: n.st, hash: n.Hash}
			}
			c.trusted = w.old(n.st, start)
			if store && n.Type == File && n.read {
				c.stored = start
			}
			w.cache[n.Path] = c
			if n.Type == File {
				res.Files++
			}
			res.Bytes += n.Size
		case Symlink:
			res.Symlinks++
		case Dir:
			res.Dirs++
		}
		m.Entries = append(m.Entries, n.Entry)
	}
	if len(w.cache) > files {
		// Files went: so do their entries.
		seen := make(map[string]struct{}, files)
		for i := range t.nodes {
			if n := &t.nodes[i]; !n.gone && (n.Type == File || n.Type == Oversized) {
				seen[n.Path] = struct{}{}
			}
		}
		for p := range w.cache {
			if _, ok := seen[p]; !ok {
				delete(w.cache, p)
			}
		}
	}
	w.racy, w.oldestStored = 0, time.Time{}
	for _, c := range w.cache {
		if !c.trusted {
			w.racy++
		}
		if !c.stored.IsZero() && (w.oldestStored.IsZero() || c.stored.Before(w.oldestStored)) {
			w.oldestStored = c.stored
		}
	}
	for _, i := range jobs {
		if t.nodes[i].read {
			res.Read++
			res.ReadBytes += t.nodes[i].Size
		}
	}
	return m, res, t, nil
}

func (w *Workspace) storedRecently(c cacheEntry, now time.Time) bool {
	return !c.stored.IsZero() && now.Sub(c.stored) < w.opts.TrustStored
}

// old reports whether stat data is older than the walk started at start
// by the racy margin (both times), so that any later change gives other
// stat data.
func (w *Workspace) old(st statKey, start time.Time) bool {
	limit := start.Add(-racyMargin).UnixNano()
	return st.mtime < limit && st.ctime < limit
}

// readAll reads the files t.nodes[jobs] with the workers, hashing them
// (and putting them in the store with store). A file that cannot be read
// becomes Unreadable, one over MaxFileBytes Oversized; an error of the
// store is fatal.
func (w *Workspace) readAll(ctx context.Context, nodes []node, jobs []int, store bool) ([]Problem, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	var (
		mu    sync.Mutex
		probs []Problem
		fatal error
		next  = make(chan int)
		wg    sync.WaitGroup
	)
	batch, _ := w.opts.Blobs.(session.BlobBatcher)
	for range min(w.workers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := reader{w: w}
			for i := range next {
				n := &nodes[i]
				p, err := r.read(ctx, n, store, batch)
				mu.Lock()
				if err != nil && fatal == nil {
					fatal = err
				}
				if p != nil {
					probs = append(probs, *p)
				}
				mu.Unlock()
			}
		}()
	}
	for _, i := range jobs {
		if ctx.Err() != nil {
			break
		}
		mu.Lock()
		stop := fatal != nil
		mu.Unlock()
		if stop {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if fatal == nil {
		fatal = ctx.Err()
	}
	return probs, fatal
}

// reader is one worker's state: its buffer, reused from file to file.
type reader struct {
	w   *Workspace
	buf []byte
}

// maxKeptBuffer bounds the buffer a reader keeps between files.
const maxKeptBuffer = 4 << 20

// read reads one file (retrying when it changes while read), hashes it
// and, with store, puts it. It returns the problem to report, if any,
// and an error only for a failure of the store or the context.
func (r *reader) read(ctx context.Context, n *node, store bool, batch session.BlobBatcher) (*Problem, error) {
	var lastErr error
	for try := 0; try < 3; try++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data, st, hash, err := r.readStable(n.Path)
		if err != nil {
			lastErr = err
			if errors.Is(err, errChanged) {
				continue
			}
			break
		}
		n.st, n.Mode, n.Size, n.Hash, n.read = st, st.perm, st.size, hash, true
		if data == nil { // over MaxFileBytes: hashed, not kept
			n.Type = Oversized
			return &Problem{Path: n.Path, Err: ErrTooLarge}, nil
		}
		if n.Hash == "" {
			n.Hash = hashOf(data)
		}
		if store {
			var ref string
			if batch != nil {
				ref, err = batch.PutBlobDeferred(ctx, data)
			} else {
				ref, err = r.w.opts.Blobs.PutBlob(ctx, data)
			}
			if err != nil {
				return nil, fmt.Errorf("workspace: put %s: %w", strconvQuote(n.Path), err)
			}
			if ref != session.BlobPrefix+n.Hash {
				return nil, fmt.Errorf("workspace: the blob store named %s %s, not %s", strconvQuote(n.Path), ref, session.BlobPrefix+n.Hash)
			}
		}
		if cap(r.buf) > maxKeptBuffer {
			r.buf = nil
		}
		return nil, nil
	}
	n.Type, n.Mode, n.Size, n.Hash = Unreadable, 0, 0, ""
	if errors.Is(lastErr, os.ErrNotExist) {
		n.gone = true
	}
	return &Problem{Path: n.Path, Err: lastErr}, nil
}

// readStable reads a file whole (or, past MaxFileBytes, hashes it as a
// stream and returns no data), with its stat data before and after,
// which must agree (errChanged otherwise). The file is opened without
// following a symlink and must still be a regular file.
func (r *reader) readStable(rel string) (data []byte, st statKey, hash string, err error) {
	f, err := openNoFollow(r.w.abs(rel))
	if err != nil {
		return nil, st, "", err
	}
	defer f.Close()
	st, err = statFile(f)
	if err != nil {
		return nil, st, "", err
	}
	if st.typ != typeFile {
		return nil, st, "", fmt.Errorf("%w: no longer a regular file", errChanged)
	}
	if st.size > r.w.opts.MaxFileBytes {
		h := sha256.New()
		k, err := io.Copy(h, f)
		if err != nil {
			return nil, st, "", err
		}
		after, err := statFile(f)
		if err != nil {
			return nil, st, "", err
		}
		if after != st || k != st.size {
			return nil, st, "", errChanged
		}
		return nil, st, hex.EncodeToString(h.Sum(nil)), nil
	}
	if int64(cap(r.buf)) < st.size+1 {
		r.buf = make([]byte, st.size+1)
	}
	buf := r.buf[:st.size+1]
	k, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, st, "", err
	}
	after, err := statFile(f)
	if err != nil {
		return nil, st, "", err
	}
	if int64(k) != st.size || after != st {
		return nil, st, "", errChanged
	}
	return buf[:k], st, "", nil
}

// Manifest returns the manifest of snapshot id, read from the blob store
// (and checked: it is untrusted) or from the few this Workspace keeps.
func (w *Workspace) Manifest(ctx context.Context, id string) (*Manifest, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.manifest(ctx, id)
}

// manifest is Manifest; callers hold mu.
func (w *Workspace) manifest(ctx context.Context, id string) (*Manifest, error) {
	if m, ok := w.manifests[id]; ok {
		return m, nil
	}
	m, err := w.fetchManifest(ctx, id)
	if err != nil {
		return nil, err
	}
	w.remember(id, m)
	return m, nil
}

// fetchManifest reads and decodes a manifest from the store.
func (w *Workspace) fetchManifest(ctx context.Context, id string) (*Manifest, error) {
	h, ok := strings.CutPrefix(id, session.BlobPrefix)
	if !ok || !isHex64(h) {
		return nil, fmt.Errorf("workspace: %q is not a snapshot id", id)
	}
	data, err := w.opts.Blobs.GetBlob(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("workspace: snapshot %s: %w", id, err)
	}
	if !verifies(w.opts.Blobs) && hashOf(data) != h {
		return nil, fmt.Errorf("workspace: snapshot %s: %w: content does not match its hash", id, session.ErrCorrupt)
	}
	m, err := DecodeManifest(data)
	if err != nil {
		return nil, fmt.Errorf("workspace: snapshot %s: %w", id, err)
	}
	return m, nil
}

// remember keeps a few manifests; callers hold mu.
func (w *Workspace) remember(id string, m *Manifest) {
	if _, ok := w.manifests[id]; ok {
		return
	}
	const keep = 4
	if len(w.mfOrder) >= keep {
		delete(w.manifests, w.mfOrder[0])
		w.mfOrder = w.mfOrder[1:]
	}
	w.manifests[id] = m
	w.mfOrder = append(w.mfOrder, id)
}

func strconvQuote(s string) string { return strconv.Quote(s) }

// verifies reports whether a blob store checks every content it gives
// against its hash (BlobDir and FileStore do), so that it need not be
// checked again; any other store's contents are.
func verifies(b session.BlobStore) bool {
	switch b.(type) {
	case *session.BlobDir, *session.FileStore:
		return true
	}
	return false
}
