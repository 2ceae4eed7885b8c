package workspace

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	session "github.com/agentsession/session"
)

// The stat cache on disk (Options.CacheFile): a gob of the entries, with
// the directory it belongs to, behind the SHA-256 of the gob, written to
// a temporary file renamed over the old one. A cache that does not read
// back whole is ignored: the next snapshot reads every file. Its claims
// that contents are stored are kept only for the blob store they were
// made about (storeID): read with another store, the cache still knows
// the contents' hashes, but the next snapshot puts them.

const cacheMagic = "agentsession-workspace-cache 1\n"

type diskCache struct {
	Dir     string
	Store   string // storeID of the blob store
	Entries []diskEntry
}

// processToken tells this process's in-memory stores from another's.
var processToken = rand.Uint64()

// storeID names a blob store for the cache file: a blob directory (a
// FileStore's) by its path, which another process opening it shares; any
// other store by its address in this process, which no other process
// shares (a MemoryStore is gone with its process; a store of another
// kind cannot be told from another of its kind elsewhere).
func storeID(b session.BlobStore) string {
	var dir string
	switch s := b.(type) {
	case *session.BlobDir:
		dir = s.Dir()
	case *session.FileStore:
		dir = s.Blobs().Dir()
	}
	if dir != "" {
		if abs, err := filepath.Abs(dir); err == nil {
			return "dir:" + abs
		}
	}
	return fmt.Sprintf("%T@%p#%x", b, b, processToken)
}

type diskEntry struct {
	Path               string
	Size, Mtime, Ctime int64
	Ino, Dev           uint64
	Perm               uint32
	Typ                uint8
	Hash               string
	Trusted            bool
	Stored             int64 // unix nanoseconds, 0: not stored
}

func (w *Workspace) loadCache() {
	data, err := os.ReadFile(w.opts.CacheFile)
	if err != nil || !bytes.HasPrefix(data, []byte(cacheMagic)) || len(data) < len(cacheMagic)+sha256.Size {
		return
	}
	data = data[len(cacheMagic):]
	sum, body := data[:sha256.Size], data[sha256.Size:]
	if s := sha256.Sum256(body); !bytes.Equal(s[:], sum) {
		return
	}
	var dc diskCache
	if gob.NewDecoder(bytes.NewReader(body)).Decode(&dc) != nil || dc.Dir != w.dir {
		return
	}
	sameStore := dc.Store == storeID(w.opts.Blobs)
	for _, e := range dc.Entries {
		if !isHex64(e.Hash) {
			continue
		}
		c := cacheEntry{
			st:      statKey{size: e.Size, mtime: e.Mtime, ctime: e.Ctime, ino: e.Ino, dev: e.Dev, perm: fs.FileMode(e.Perm), typ: fileType(e.Typ)},
			hash:    e.Hash,
			trusted: e.Trusted,
		}
		if e.Stored != 0 && sameStore {
			c.stored = time.Unix(0, e.Stored)
		}
		w.cache[e.Path] = c
	}
}

// saveCache writes the cache file, if there is one; a failure only costs
// the next process a full read. Callers hold mu.
func (w *Workspace) saveCache() {
	if w.opts.CacheFile == "" {
		return
	}
	dc := diskCache{Dir: w.dir, Store: storeID(w.opts.Blobs), Entries: make([]diskEntry, 0, len(w.cache))}
	for p, c := range w.cache {
		e := diskEntry{Path: p, Size: c.st.size, Mtime: c.st.mtime, Ctime: c.st.ctime, Ino: c.st.ino, Dev: c.st.dev,
			Perm: uint32(c.st.perm), Typ: uint8(c.st.typ), Hash: c.hash, Trusted: c.trusted}
		if !c.stored.IsZero() {
			e.Stored = c.stored.UnixNano()
		}
		dc.Entries = append(dc.Entries, e)
	}
	var body bytes.Buffer
	if gob.NewEncoder(&body).Encode(&dc) != nil {
		return
	}
	sum := sha256.Sum256(body.Bytes())
	out := make([]byte, 0, len(cacheMagic)+len(sum)+body.Len())
	out = append(append(append(out, cacheMagic...), sum[:]...), body.Bytes()...)
	tmp := filepath.Join(filepath.Dir(w.opts.CacheFile), "."+filepath.Base(w.opts.CacheFile)+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return
	}
	if os.Rename(tmp, w.opts.CacheFile) != nil {
		os.Remove(tmp)
	}
}
