package session

import (
	"cmp"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/agentsession/session/internal/storerule"
)

// listDirs stats and opens the files of one listing through a root of
// their own directory: os.Root resolves a path of two names by opening
// the directory, acting in it and closing it again (three system calls
// for a stat), once per file, and a listing of 10,000 sessions through
// their index is mostly stats. Anything a directory's root refuses or
// fails (a symbolic link out of the directory, a file gone) is asked of
// the store's root again, so that what a listing sees is what
// s.r.Stat and s.r.OpenFile see. Not for concurrent use.
type listDirs struct {
	r     *os.Root
	roots map[string]*os.Root // by directory; nil where it did not open
}

func newListDirs(r *os.Root) *listDirs {
	return &listDirs{r: r, roots: map[string]*os.Root{}}
}

// dir returns the root of rel's directory and rel's name in it; a nil
// root when there is none (rel in the store's root, or the directory
// would not open).
func (d *listDirs) dir(rel string) (*os.Root, string) {
	dir, base := filepath.Split(rel)
	if d == nil || dir == "" {
		return nil, base
	}
	sub, ok := d.roots[dir]
	if !ok {
		sub, _ = d.r.OpenRoot(dir) // nil on error
		d.roots[dir] = sub
	}
	return sub, base
}

// stat is r.Stat(rel), r the store's root.
func (d *listDirs) stat(r *os.Root, rel string) (fs.FileInfo, error) {
	if sub, base := d.dir(rel); sub != nil {
		if fi, err := sub.Stat(base); err == nil {
			return fi, nil
		}
	}
	return r.Stat(rel)
}

// openStat is openRegularStat(r, rel), r the store's root.
func (d *listDirs) openStat(r *os.Root, rel string) (*os.File, fs.FileInfo, error) {
	if sub, base := d.dir(rel); sub != nil {
		if f, fi, err := openRegularStat(sub, base); err == nil {
			return f, fi, nil
		}
	}
	return openRegularStat(r, rel)
}

// close closes the directories' roots.
func (d *listDirs) close() {
	for _, sub := range d.roots {
		if sub != nil {
			sub.Close()
		}
	}
}

// listWorkers bounds the goroutines a listing reads its files with
// (GOMAXPROCS bounds them too), and listChunk is the files each takes
// at a time: a listing of thousands of sessions is mostly stats, which
// wait on the system, and without an index, reads and decoding.
const (
	listWorkers = 4
	listChunk   = 64
)

// listFiles calls look for each of n files (by their number), shared
// among goroutines each with its listDirs, and returns the infos look
// listed, and the numbers of the files it found gone.
func (s *FileStore) listFiles(ctx context.Context, n int, look func(dirs *listDirs, k int) (info SessionInfo, listed, gone bool)) ([]SessionInfo, []int, error) {
	const (
		skipped = iota
		listed
		gone
	)
	infos := make([]SessionInfo, n) // each worker writes its own
	state := make([]uint8, n)
	workers := max(1, min(runtime.GOMAXPROCS(0), listWorkers, n/listChunk))
	errs := make([]error, workers)
	var next atomic.Int64
	work := func(w int) {
		dirs := newListDirs(s.r)
		defer dirs.close()
		for {
			from := int(next.Add(listChunk)) - listChunk
			if from >= n {
				return
			}
			for k := from; k < min(from+listChunk, n); k++ {
				if err := ctx.Err(); err != nil {
					errs[w] = err
					return
				}
				info, ok, g := look(dirs, k)
				switch {
				case ok:
					infos[k], state[k] = info, listed
				case g:
					state[k] = gone
				}
			}
		}
	}
	if workers == 1 {
		work(0)
	} else {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() { work(w) })
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	kept := 0
	var goneAt []int
	for k := range infos {
		switch state[k] {
		case listed:
			infos[kept] = infos[k]
			kept++
		case gone:
			goneAt = append(goneAt, k)
		}
	}
	clear(infos[kept:]) // nothing kept alive beyond the listing
	return infos[:kept], goneAt, nil
}

// sortInfos returns infos sorted by compareInfo: keys sorted, not the
// large structs, which cost more to move than to compare. Times without
// a monotonic clock reading (all but those of the sessions this store
// wrote) compare as their seconds and nanoseconds do.
func sortInfos(infos []SessionInfo) []SessionInfo {
	type key struct {
		sec  int64
		nsec int32
		i    int32
		id   string
	}
	keys := make([]key, len(infos))
	mono := false
	for k := range infos {
		u := infos[k].Updated
		mono = mono || u != u.Round(0) // Round(0) drops the monotonic reading alone
		keys[k] = key{u.Unix(), int32(u.Nanosecond()), int32(k), infos[k].ID}
	}
	if mono {
		slices.SortFunc(keys, func(a, b key) int {
			x, y := &infos[a.i], &infos[b.i]
			return storerule.Compare(x.Updated, x.ID, y.Updated, y.ID) // compareInfo's
		})
	} else {
		slices.SortFunc(keys, func(a, b key) int {
			// compareInfo's: the latest first, then the greater id.
			if a.sec != b.sec {
				return cmp.Compare(b.sec, a.sec)
			}
			if a.nsec != b.nsec {
				return cmp.Compare(b.nsec, a.nsec)
			}
			return cmp.Compare(b.id, a.id)
		})
	}
	out := make([]SessionInfo, len(infos))
	for k, x := range keys {
		out[k] = infos[x.i]
	}
	return out
}
