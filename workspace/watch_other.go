//go:build !linux

package workspace

// No watcher: every walk stats every path.

type watcher struct{}

func newWatcher() *watcher                                   { return nil }
func (x *watcher) add(abs, rel string)                       {}
func (x *watcher) drain() (dirty map[string]bool, full bool) { return nil, true }
func (x *watcher) forget(rel string)                         {}
func (x *watcher) watched(rel string) bool                   { return false }
func (x *watcher) close()                                    {}
