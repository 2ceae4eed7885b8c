package session

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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

// listFiles calls add for each file of rels (each the file of session
// ids[k]), shared among goroutines each with its listDirs, and returns
// what they added and the ids of the files add found gone.
func (s *FileStore) listFiles(ctx context.Context, ids, rels []string, add func(dirs *listDirs, all *[]SessionInfo, rel string) (gone bool)) ([]SessionInfo, []string, error) {
	type result struct {
		all   []SessionInfo
		moved []string
		err   error
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), listWorkers, len(rels)/listChunk))
	results := make([]result, workers)
	var next atomic.Int64
	work := func(res *result) {
		dirs := newListDirs(s.r)
		defer dirs.close()
		res.all = make([]SessionInfo, 0, len(rels)/workers+listChunk)
		for {
			from := int(next.Add(listChunk)) - listChunk
			if from >= len(rels) {
				return
			}
			for k := from; k < min(from+listChunk, len(rels)); k++ {
				if err := ctx.Err(); err != nil {
					res.err = err
					return
				}
				if add(dirs, &res.all, rels[k]) {
					res.moved = append(res.moved, ids[k])
				}
			}
		}
	}
	if workers == 1 {
		work(&results[0])
	} else {
		var wg sync.WaitGroup
		for w := range results {
			wg.Go(func() { work(&results[w]) })
		}
		wg.Wait()
	}
	n := 0
	for _, r := range results {
		if r.err != nil {
			return nil, nil, r.err
		}
		n += len(r.all)
	}
	all := make([]SessionInfo, 0, n)
	var moved []string
	for _, r := range results {
		all = append(all, r.all...)
		moved = append(moved, r.moved...)
	}
	return all, moved, nil
}

// sortInfos returns infos sorted by compareInfo: keys sorted, not the
// large structs, which cost more to move than to compare.
func sortInfos(infos []SessionInfo) []SessionInfo {
	type key struct {
		updated time.Time
		id      string
		i       int
	}
	keys := make([]key, len(infos))
	for k := range infos {
		keys[k] = key{infos[k].Updated, infos[k].ID, k}
	}
	slices.SortFunc(keys, func(a, b key) int {
		return storerule.Compare(a.updated, a.id, b.updated, b.id) // compareInfo's
	})
	out := make([]SessionInfo, len(infos))
	for k, x := range keys {
		out[k] = infos[x.i]
	}
	return out
}
