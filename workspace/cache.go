package workspace

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The stat cache on disk (Options.CacheFile): a gob of the entries, with
// the directory it belongs to, behind the SHA-256 of the gob, written to
// a temporary file renamed over the old one. A cache that does not read
// back whole is ignored: the next snapshot reads every file.

const cacheMagic = "agentsession-workspace-cache 1\n"

type diskCache struct {
	Dir     string
	Entries []diskEntry
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
	for _, e := range dc.Entries {
		if !isHex64(e.Hash) {
			continue
		}
		c := cacheEntry{
			st:      statKey{size: e.Size, mtime: e.Mtime, ctime: e.Ctime, ino: e.Ino, dev: e.Dev, perm: fs.FileMode(e.Perm), typ: fileType(e.Typ)},
			hash:    e.Hash,
			trusted: e.Trusted,
		}
		if e.Stored != 0 {
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
	dc := diskCache{Dir: w.dir, Entries: make([]diskEntry, 0, len(w.cache))}
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
