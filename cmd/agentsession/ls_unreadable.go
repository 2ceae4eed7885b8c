package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/storekit"
)

// What ls cannot list: the session files of the directories it lists
// that the store leaves out because they cannot be read. ls names each on
// stderr with the reason, as stats does, instead of omitting them in
// silence.

// unlistable returns, for each session file of the store in the scope of
// opts (its --cwd directory or all, live, archived or both) that the
// store does not list, the reason it cannot be read, as a line for
// stderr. all is what the store listed of the scope when that is every
// session of it (no filter, no --limit); else (nil) the scope is listed
// again without the filters, from the store's index.
func (c *call) unlistable(ctx context.Context, store *session.FileStore, opts session.ListOptions, all []session.SessionInfo) ([]string, error) {
	root, err := filepath.Abs(c.root)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, top := range []struct {
		dir      string
		archived bool
	}{{root, false}, {filepath.Join(root, ".archive"), true}} {
		if top.archived && !opts.Archived && !opts.OnlyArchived || !top.archived && opts.OnlyArchived {
			continue
		}
		var dirs []string
		if opts.Cwd != "" {
			dirs = []string{storekit.CwdDir(opts.Cwd)}
		} else {
			ents, _ := os.ReadDir(top.dir) // no directory: no file
			for _, e := range ents {
				if n := e.Name(); len(n) >= 4 && strings.HasPrefix(n, "--") && strings.HasSuffix(n, "--") {
					dirs = append(dirs, n)
				}
			}
		}
		for _, d := range dirs {
			ents, _ := os.ReadDir(filepath.Join(top.dir, d))
			for _, e := range ents {
				if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".jsonl") && !strings.HasPrefix(n, ".") {
					files = append(files, filepath.Join(top.dir, d, n))
				}
			}
		}
	}
	if len(files) == 0 {
		return nil, nil
	}
	if all == nil {
		scope := session.ListOptions{Cwd: opts.Cwd, Archived: opts.Archived, OnlyArchived: opts.OnlyArchived, Limit: 1000}
		for {
			p, err := store.List(ctx, scope)
			if err != nil {
				return nil, err
			}
			all = append(all, p.Sessions...)
			if p.Next == "" {
				break
			}
			scope.Cursor = p.Next
		}
	}
	if len(files) <= len(all) {
		return nil, nil // every file is a session listed
	}
	listed := make(map[string]bool, len(all))
	for _, info := range all {
		if p, err := store.Path(info.ID); err == nil {
			listed[p] = true
		}
	}
	var out []string
	for _, f := range files {
		if listed[f] || idOfFile(filepath.Base(f)) == "" && !strings.Contains(filepath.Base(f), "~") {
			continue // listed, or no session file's name (the store's own files)
		}
		// Why the store could not read it; a file read well now was
		// written since the listing (or is an archived copy of a live
		// session, left by a crash): nothing to say.
		if _, err := readHeader(f); err != nil {
			out = append(out, describe(err, f))
		} else if _, err := readLog(f); err != nil {
			out = append(out, describe(err, f))
		}
	}
	return out, nil
}
