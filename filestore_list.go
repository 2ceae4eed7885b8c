package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentsession/session/internal/names"
)

// Listing reads as little as it can. Each store keeps, per session file,
// what a listing shows of it with the file's identity (inode, size,
// modification time) and the end of the last line it read; the store's
// own appends keep that current. The record is saved in <root>/.index
// (a cache: lost or stale, it is rebuilt), so that another process lists
// with one stat per session too. A file that grew since is read from
// where the record ends, so a listing never reads more than what was
// appended since the last one, however long the sessions are; only a
// file never seen before, or replaced, is read whole.

// indexName is the listing index's file in the store's root.
const indexName = ".index"

// indexVersion is the version of the index file's format.
// Version 3 keeps each file's InfoFold and header metadata, and the time
// an archived file was archived.
const indexVersion = 3

// listReadBytes counts the bytes of session files listings read, for
// tests.
var listReadBytes atomic.Int64

// indexEntry caches what List shows of a file.
type indexEntry struct {
	ino   uint64
	size  int64 // file size when read
	mtime int64 // its modification time (Unix ns); 0 when this store wrote it
	end   int64 // where the next scan starts: after the last line counted
	lines int   // lines after the header up to end, for Limits.MaxEntries
	ok    bool  // the file has a readable header for the session it is named for
	// limited: left out for this store's Limits, which another store's
	// may not share (so not saved in the index file).
	limited bool

	info    SessionInfo     // what the listing shows: made by finish
	header  string          // the header's title
	hmeta   json.RawMessage // the header's metadata member (see HeaderMeta), nil if none
	fold    InfoFold        // the entries counted, folded
	entries int             // the entries counted
	// archivedAt is when the file was archived (its mark, see
	// filestore_archive.go); zero when not archived or not known.
	archivedAt time.Time
	compressed bool // the file holds the log compressed
	updated    time.Time
}

// indexRecord is an indexEntry as the index file holds it.
type indexRecord struct {
	Path    string          `json:"path"`
	Ino     uint64          `json:"ino"`
	Size    int64           `json:"size"`
	Mtime   int64           `json:"mtime"`
	End     int64           `json:"end"`
	Lines   int             `json:"lines"`
	OK      bool            `json:"ok"`
	ID      string          `json:"id,omitempty"`
	Cwd     string          `json:"cwd,omitempty"`
	Created time.Time       `json:"created"`
	Parent  string          `json:"parent,omitempty"`
	Header  string          `json:"header,omitempty"`
	Meta    json.RawMessage `json:"meta,omitempty"` // the header's metadata member
	Fold    InfoFold        `json:"fold"`
	Entries int             `json:"entries"`
	Updated time.Time       `json:"updated"`
	// Archived is when an archived file was archived, when known.
	Archived time.Time `json:"archived,omitzero"`
	// Compressed: the file holds the log compressed.
	Compressed bool `json:"compressed,omitempty"`
}

// touched records that this store just changed the session's file.
// It runs at every append, so it only notes the time: the listing entry
// is made from the session when a listing, a close or a save needs it
// (refreshIndex). Callers hold fsess.mu.
func (s *FileStore) touched(fsess *fileSession) {
	s.mu.Lock()
	fsess.updated = s.tick()
	fsess.changed = true
	s.indexDirty = true
	s.mu.Unlock()
}

// refreshIndex makes the listing entry of a session this store changed.
// Callers hold fsess.mu.
func (s *FileStore) refreshIndex(fsess *fileSession) {
	if !fsess.changed {
		return
	}
	fsess.changed = false
	if !fsess.loaded {
		// Changed and not read since (a rewrite): the listing reads the
		// file again.
		s.mu.Lock()
		delete(s.index, fsess.rel)
		s.indexDirty = true
		s.mu.Unlock()
		return
	}
	size := fsess.size + fsess.unwritten()
	ie := &indexEntry{ // a new entry each time: List reads entries without the lock
		ino: fsess.ino, size: size, end: size, lines: fsess.lines - 1, ok: true,
		header: fsess.header.Title, fold: fsess.fold.Clone(), entries: fsess.count,
		info: SessionInfo{
			ID: fsess.id, Cwd: fsess.header.Cwd, Created: fsess.header.Timestamp,
			ParentSession: fsess.header.ParentSession,
		},
	}
	ie.hmeta, _ = fsess.header.Extra.Get(headerMetaKey)
	s.mu.Lock()
	ie.updated = fsess.updated
	if old := s.index[fsess.rel]; old != nil {
		ie.archivedAt = old.archivedAt
	}
	ie.finish(fsess.rel)
	s.index[fsess.rel] = ie
	s.mu.Unlock()
}

// List implements Store: one stat per session file, and reads of only
// what changed since the store (or the index file) last saw it. Files
// that cannot be read as sessions are left out.
func (s *FileStore) List(ctx context.Context, opts ListOptions) (*ListPage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	after, err := parseCursor(opts.Cursor)
	if err != nil {
		return nil, err
	}
	// The index file is read (the first time) while the tree is: for
	// 10,000 sessions, each takes tens of milliseconds.
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		s.loadIndex()
	}()
	if !s.fileOnly {
		if err := s.scan(false); err != nil {
			<-loaded
			return nil, err
		}
	}
	<-loaded
	s.writeAllPending()
	wanted := func(rel string) bool {
		if filepath.IsAbs(rel) {
			return false
		}
		if !opts.Archived && !opts.OnlyArchived && strings.HasPrefix(rel, archiveDir+string(filepath.Separator)) {
			return false
		}
		// The flat layout filters by the headers', below.
		return opts.Cwd == "" || s.flat || filepath.Base(filepath.Dir(rel)) == names.CwdDir(opts.Cwd)
	}
	// Each file's listing entry is taken here, under one lock, rather than
	// by each worker per file: 10,000 lookups under the store's lock, by
	// several goroutines at once, were a tenth of such a listing.
	s.mu.Lock()
	ids := make([]string, 0, len(s.paths))
	rels := make([]string, 0, len(s.paths))
	known := make([]*indexEntry, 0, len(s.paths))
	for id, rel := range s.paths {
		if wanted(rel) {
			ids, rels, known = append(ids, id), append(rels, rel), append(known, s.index[rel])
		}
	}
	s.mu.Unlock()
	marks := s.compactingMarks()
	look := func(dirs *listDirs, rel string, ie *indexEntry) (info SessionInfo, listed, gone bool) {
		info, ok := s.infoIn(dirs, rel, ie)
		if !ok {
			_, err := s.r.Stat(rel)
			return SessionInfo{}, false, errors.Is(err, fs.ErrNotExist)
		}
		info.Compacting = marks[info.ID]
		return info, opts.Matches(info), false
	}
	all, gone, err := s.listFiles(ctx, len(rels), func(dirs *listDirs, k int) (SessionInfo, bool, bool) {
		return look(dirs, rels[k], known[k])
	})
	if err != nil {
		return nil, err
	}
	if len(gone) > 0 {
		moved := make([]string, len(gone)) // the sessions whose file was gone when read
		for k, i := range gone {
			moved[k] = ids[i]
		}
		dirs := newListDirs(s.r)
		defer dirs.close()
		// Moved since the scan (archived or brought back by another
		// process), or deleted: looked for again, and read, while no
		// move is halfway.
		err := s.whileNoMove(func() error {
			if err := s.scanFiles(false); err != nil {
				return err
			}
			for _, id := range moved {
				s.mu.Lock()
				rel, ok := s.paths[id]
				s.mu.Unlock()
				if ok && wanted(rel) {
					s.mu.Lock()
					ie := s.index[rel]
					s.mu.Unlock()
					if info, listed, _ := look(dirs, rel, ie); listed {
						all = append(all, info)
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	s.saveIndex()
	return page(sortInfos(all), after, opts.Limit), nil
}

// writeAllPending writes the lines this store holds back, so that the
// files show every append, and brings the listing entries of the sessions
// it changed up to date. Errors are latched on their sessions.
func (s *FileStore) writeAllPending() {
	s.mu.Lock()
	open := make([]*fileSession, 0, len(s.sessions))
	for _, fsess := range s.sessions {
		open = append(open, fsess)
	}
	s.mu.Unlock() // lock order: a session's mu before the store's
	for _, fsess := range open {
		fsess.mu.Lock()
		if fsess.locked {
			_ = s.writePending(fsess)
		}
		s.refreshIndex(fsess)
		fsess.mu.Unlock()
	}
}

// infoOf returns the listing of one file: from the index when the file
// is as it was, from the bytes appended since when it only grew, and from
// a read of the whole file otherwise.
func (s *FileStore) infoOf(rel string) (SessionInfo, bool) {
	s.mu.Lock()
	ie := s.index[rel]
	s.mu.Unlock()
	return s.infoIn(nil, rel, ie)
}

// infoIn is infoOf, its stats and opens through dirs (nil: the store's
// root), ie the file's listing entry as the caller took it (nil: none).
func (s *FileStore) infoIn(dirs *listDirs, rel string, ie *indexEntry) (SessionInfo, bool) {
	var ne *indexEntry
	var fi fs.FileInfo
	if ie == nil {
		// Nothing known of the file (no index, or one that never saw
		// it): read whole, its identity that of the file opened, with
		// no look at its name first.
		if ne, fi = readIndexEntry(dirs, s.r, rel, s.lim, s.flat); fi == nil {
			return SessionInfo{}, false
		}
	} else {
		var err error
		if fi, err = dirs.stat(s.r, rel); err != nil {
			return SessionInfo{}, false
		}
	}
	ino, _ := identity(fi)
	size, mtime := fi.Size(), fi.ModTime().UnixNano()
	same := ie != nil && ino != 0 && ie.ino == ino
	switch {
	case ne != nil:
	case same && ie.size == size && (ie.mtime == 0 || ie.mtime == mtime):
		return ie.view()
	case same && ie.ok && size > ie.size && ie.end <= ie.size:
		ne = ie.grown(s.r, rel, size, s.lim)
	}
	if ne == nil {
		if ne, fi = readIndexEntry(dirs, s.r, rel, s.lim, s.flat); fi == nil {
			return SessionInfo{}, false
		}
		ino, _ = identity(fi)
		mtime = fi.ModTime().UnixNano()
	}
	ne.ino, ne.mtime = ino, mtime
	ne.updated = fi.ModTime()
	if ie != nil && ie.updated.After(ne.updated) {
		ne.updated = ie.updated
	}
	s.mu.Lock()
	s.index[rel] = ne
	s.indexDirty = true
	s.mu.Unlock()
	return ne.view()
}

func (ie *indexEntry) view() (SessionInfo, bool) {
	info := ie.info
	info.Updated = ie.updated
	info.Metadata = maps.Clone(info.Metadata) // the caller's
	return info, ie.ok
}

// grown reads the lines appended to a file since ie was made, and returns
// the entry updated with them (nil if the file cannot be read).
func (ie *indexEntry) grown(r *os.Root, rel string, size int64, lim Limits) *indexEntry {
	f, err := openRegular(r, rel, os.O_RDONLY)
	if err != nil {
		return nil
	}
	defer f.Close()
	ne := *ie
	ne.size = size
	ne.fold = ie.fold.Clone()
	if size > lim.MaxLogBytes || !ne.scan(f, ne.end, size, lim) {
		return &indexEntry{size: size, limited: true} // a Load would refuse it
	}
	ne.finish(rel)
	return &ne
}

// readIndexEntry reads a whole file for its listing, as it reads it (the
// file is never held in memory, compressed or not: a line at a time),
// with the limits of a Load: a file Load would refuse is not listed. fi
// describes the file it opened; nil when it could not open it. It opens
// the file through dirs (nil: r).
func readIndexEntry(dirs *listDirs, r *os.Root, rel string, lim Limits, flat bool) (_ *indexEntry, fi fs.FileInfo) {
	f, fi, err := dirs.openStat(r, rel)
	if err != nil {
		return &indexEntry{}, nil
	}
	defer f.Close()
	return readIndexEntryOf(f, fi, rel, r, lim, flat), fi
}

// readIndexEntryOf is readIndexEntry of f, open at rel, which fi
// describes.
func readIndexEntryOf(f *os.File, fi fs.FileInfo, rel string, r *os.Root, lim Limits, flat bool) *indexEntry {
	ne := &indexEntry{}
	ne.size = fi.Size()
	if ne.size > lim.MaxLogBytes {
		ne.limited = true
		return ne
	}
	// One decoder reads the header and then the entries, its buffers
	// taken from a pool. An archived log kept compressed (it never
	// grows: see filestore_compress.go) is read as the decoder streams
	// it, a line at a time, never decompressed whole: the header first,
	// and the scan stops at the limits a Load stops at.
	d := newPooledDecoder(io.NewSectionReader(f, 0, ne.size), &ReadOptions{Limits: lim})
	defer d.release()
	h, err := d.Header()
	if err != nil {
		var le *LimitError
		return &indexEntry{size: ne.size, limited: errors.As(err, &le)}
	}
	ne.compressed = d.compressed
	if ValidateID(h.ID) != nil || !fileHolds(filepath.Base(rel), h.ID, flat) {
		return ne
	}
	ne.header = h.Title
	ne.hmeta, _ = h.Extra.Get(headerMetaKey)
	ne.info = SessionInfo{ID: h.ID, Cwd: h.Cwd, Created: h.Timestamp, ParentSession: h.ParentSession}
	ne.end, ne.lines = 0, 0
	listReadBytes.Add(ne.size)
	end, lines, ok := scanDecoder(d, 0, 0, lim, true, ne.add)
	ne.end, ne.lines = end, lines
	if !ok {
		return &indexEntry{size: ne.size, limited: true}
	}
	if ne.compressed {
		ne.end = ne.size // the file's end: nothing is read after it
	}
	ne.ok = true
	if isArchived(rel) {
		ne.archivedAt = readArchiveMark(r, rel)
	}
	ne.finish(rel)
	return ne
}

// finish derives what the listing shows of the file at rel from the
// header's title and metadata, the fold of its entries and what the
// store knows of the file.
func (ie *indexEntry) finish(rel string) {
	h := Header{Title: ie.header}
	if ie.hmeta != nil {
		h.Extra.Set(headerMetaKey, ie.hmeta)
	}
	ie.fold.Fill(&ie.info, h)
	ie.info.Entries, ie.info.Size = ie.entries, ie.size
	ie.info.Archived = isArchived(rel)
	ie.info.Compressed = ie.compressed
	ie.info.ArchivedAt = time.Time{}
	if ie.info.Archived {
		ie.info.ArchivedAt = ie.archivedAt
	}
}

// isArchived reports whether rel is under the archive.
func isArchived(rel string) bool {
	return strings.HasPrefix(rel, archiveDir+string(filepath.Separator))
}

// scan reads the lines of f in [from, size) (from at the start of a
// line; 0 for the header's) and counts them into ie the way Load reads
// them: entries (lines a lenient read accepts), less the lines of
// appends a crash cut short, each folded into ie.fold (see scanAppends).
// It sets ie.end where the next scan starts. It reports false for a file
// a Load would refuse (more lines than the limit).
func (ie *indexEntry) scan(f io.ReaderAt, from, size int64, lim Limits) bool {
	listReadBytes.Add(size - from)
	d := newPooledDecoder(io.NewSectionReader(f, from, size-from), &ReadOptions{Limits: lim})
	defer d.release()
	d.p.gotHeader = from > 0 // a scan from 0 reads the header first
	if from == 0 {
		if _, err := d.Header(); err != nil {
			ie.end = 0
			return false
		}
	}
	end, lines, ok := scanDecoder(d, from, ie.lines, lim, true, ie.add)
	ie.end, ie.lines = end, lines
	return ok
}

// add counts the entries of an append into ie. They are borrowed (see
// scanDecoder): what the fold keeps of one (a name, a title, metadata)
// is taken from a copy of its own.
func (ie *indexEntry) add(run []Entry) {
	for _, e := range run {
		ie.entries++
		if foldKeeps(&ie.fold, e) {
			e = ownEntry(e)
		}
		ie.fold.Add(e)
	}
}

// foldKeeps reports whether InfoFold.Add may keep something of e: the
// entries it reads (session names, the first user message, custom
// metadata); it ignores the others.
func foldKeeps(f *InfoFold, e Entry) bool {
	switch e.kind {
	case kindSessionInfo, kindCustom:
		return true
	case kindMessage:
		return f.FirstUser == "" && messageRole(e) == RoleUser
	}
	return false
}

// loadIndex reads the index file into the store's index, once; entries
// the store already has win.
func (s *FileStore) loadIndex() {
	s.mu.Lock()
	if s.indexLoaded {
		s.mu.Unlock()
		return
	}
	s.indexLoaded = true
	s.mu.Unlock()
	data, err := readFileRoot(s.r, indexName)
	if err != nil {
		return
	}
	// The entries are made in blocks (an allocation for many; a block
	// stays while any of its entries is in the index, a few hundred
	// bytes a session).
	var (
		block []indexEntry
		made  []*indexEntry
		paths []string
	)
	start := func() { made, paths = nil, nil }
	each := func(r *indexRecord) {
		if r.Mtime == 0 || r.End > r.Size || !filepath.IsLocal(r.Path) {
			return // not trustworthy from another process
		}
		if len(block) == cap(block) {
			block = make([]indexEntry, 0, 256)
		}
		block = append(block, indexEntry{ino: r.Ino, size: r.Size, mtime: r.Mtime, end: r.End, lines: r.Lines, ok: r.OK,
			header: r.Header, hmeta: r.Meta, fold: r.Fold, entries: r.Entries, archivedAt: r.Archived, compressed: r.Compressed, updated: r.Updated,
			info: SessionInfo{ID: r.ID, Cwd: r.Cwd, Created: r.Created, ParentSession: r.Parent}})
		ie := &block[len(block)-1]
		ie.finish(r.Path)
		made, paths = append(made, ie), append(paths, r.Path)
	}
	if v, err := decodeIndexFile(data, start, each); err != nil || v != indexVersion {
		return // a cache: start again
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.index) == 0 {
		s.index = make(map[string]*indexEntry, len(made)) // grown once
	}
	for k, rel := range paths {
		if _, ok := s.index[rel]; !ok {
			s.index[rel] = made[k]
		}
	}
}

// saveIndex writes the index file if the index changed, for the stores of
// other processes. It is a cache: errors are ignored. Entries this store
// wrote itself get their file's modification time first.
func (s *FileStore) saveIndex() {
	if s.fileOnly {
		return // nothing is written beside a file opened alone
	}
	s.loadIndex() // keep what other processes recorded
	s.mu.Lock()
	if !s.indexDirty || !s.scanned {
		// Not scanned: paths holds some sessions only, and the file would
		// lose the others' records. (Every change that dirties the index
		// looks its session up first, which scans.)
		s.mu.Unlock()
		return
	}
	s.indexDirty = false
	recs := make([]indexRecord, 0, len(s.paths))
	for _, rel := range s.paths {
		ie := s.index[rel]
		if ie == nil || ie.limited || filepath.IsAbs(rel) {
			continue
		}
		recs = append(recs, indexRecord{Path: rel, Ino: ie.ino, Size: ie.size, Mtime: ie.mtime, End: ie.end, Lines: ie.lines, OK: ie.ok,
			ID: ie.info.ID, Cwd: ie.info.Cwd, Created: ie.info.Created, Parent: ie.info.ParentSession,
			Header: ie.header, Meta: ie.hmeta, Fold: ie.fold, Entries: ie.entries, Updated: ie.updated, Archived: ie.archivedAt, Compressed: ie.compressed})
	}
	s.mu.Unlock()
	for k := range recs {
		if recs[k].Mtime == 0 {
			// Written by this store: record the file as it is now, if it
			// still has the size the store knows.
			if fi, err := s.r.Stat(recs[k].Path); err == nil && fi.Size() == recs[k].Size {
				recs[k].Mtime = fi.ModTime().UnixNano()
			}
		}
	}
	slices.SortFunc(recs, func(a, b indexRecord) int { return strings.Compare(a.Path, b.Path) })
	data, err := json.Marshal(indexFile{indexVersion, recs})
	if err != nil {
		return
	}
	if _, err := writeAtomic(s.r, indexName, data, true, false, 0o600); err != nil && !errors.Is(err, fs.ErrClosed) {
		return
	}
}

func readFileRoot(r *os.Root, rel string) ([]byte, error) {
	f, err := openRegular(r, rel, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if fi, err := f.Stat(); err == nil && fi.Size() < maxIndexBytes {
		buf.Grow(int(fi.Size()) + bytes.MinRead) // read without growing
	}
	_, err = buf.ReadFrom(io.LimitReader(f, maxIndexBytes+1))
	data := buf.Bytes()
	if err == nil && len(data) > maxIndexBytes {
		return nil, errors.New("the listing index is larger than any this package writes")
	}
	return data, err
}

// maxIndexBytes bounds the listing index read: a few hundred bytes a
// session, for far more sessions than a store holds.
const maxIndexBytes = 256 << 20

// openRegularStat is openRegular for reading, returning what the stat
// of the open file said (a listing takes the file's identity from it).
func openRegularStat(r *os.Root, rel string) (*os.File, fs.FileInfo, error) {
	f, err := r.OpenFile(rel, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: rel, Err: errNotRegular}
	}
	return f, fi, nil
}
