package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	session "github.com/agentsession/session"
)

// The commands on a session as a whole, through the store it is in:
// archive, unarchive and delete.

// storeSession opens the store (FileStore) that holds the session arg
// names, an id (or a unique prefix) in the store at --root or a file in
// a store's layout (<root>/--cwd--/FILE), and returns it with the
// session's id and file. A file outside any store is refused: archiving
// and deleting are the store's.
func (c *call) storeSession(arg string) (store *session.FileStore, id, path string, err error) {
	if path, err = c.locate(arg); err != nil {
		return nil, "", arg, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, "", path, err
	}
	root, ok := layoutRoot(path)
	if !ok {
		return nil, "", path, errors.New("not in a session store (<root>/--cwd--/FILE); name the session by its id in the store at --root")
	}
	if id = idOfFile(filepath.Base(path)); id == "" {
		h, err := readHeader(path)
		if err != nil {
			return nil, "", path, err
		}
		id = h.ID
	}
	var opts *session.FileStoreOptions
	if c.blobs != "" {
		opts = &session.FileStoreOptions{BlobDir: c.blobs}
	}
	if store, err = session.OpenFileStore(root, opts); err != nil {
		return nil, "", path, err
	}
	if _, err := store.Path(id); err != nil {
		store.Close()
		return nil, "", path, err
	}
	return store, id, path, nil
}

var cmdArchive = &command{
	name:    "archive",
	summary: "archive a session: out of listings, kept whole",
	usage:   "[--compress] [--json] ID",
	common:  withJSON | withRoot,
	nargs:   [2]int{1, 1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		compress := fs.Bool("compress", false, "keep it zstd-compressed in the archive (reads stay transparent; an append unarchives it)")
		return func(args []string) int { return c.archive(args[0], true, *compress) }
	},
}

var cmdUnarchive = &command{
	name:    "unarchive",
	summary: "bring an archived session back",
	usage:   "[--json] ID",
	common:  withJSON | withRoot,
	nargs:   [2]int{1, 1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		return func(args []string) int { return c.archive(args[0], false, false) }
	},
}

// archiveJSON is what archive and unarchive --json print.
type archiveJSON struct {
	ID         string `json:"id"`
	Path       string `json:"path"`
	Archived   bool   `json:"archived"`
	Compressed bool   `json:"compressed"`
	Changed    bool   `json:"changed"`
}

func (c *call) archive(arg string, archive, compress bool) int {
	store, id, path, err := c.storeSession(arg)
	if err != nil {
		return c.fail("%s", describe(err, path))
	}
	defer store.Close()
	if archive {
		err = session.Archive(c.ctx, store, id)
	} else {
		err = session.Unarchive(c.ctx, store, id)
	}
	if err == nil && compress {
		err = store.CompressArchived(c.ctx, id)
	}
	if err != nil {
		return c.fail("%s", describe(err, path))
	}
	now, err := store.Path(id)
	if err != nil {
		return c.fail("%s", describe(err, path))
	}
	out := archiveJSON{ID: id, Path: now, Archived: archive, Compressed: compress, Changed: now != path}
	if c.json {
		return c.printJSON(out)
	}
	verb := map[bool]string{true: "archived", false: "unarchived"}[archive]
	switch {
	case !out.Changed && archive && compress:
		fmt.Fprintf(c.stdout, "session %s was archived already, and is compressed: %s\n", id, now)
	case !out.Changed && archive:
		fmt.Fprintf(c.stdout, "session %s was archived already: %s\n", id, now)
	case compress:
		fmt.Fprintf(c.stdout, "archived session %s, compressed: moved to %s\n", id, now)
	case !out.Changed:
		fmt.Fprintf(c.stdout, "session %s is not archived: %s\n", id, now)
	default:
		fmt.Fprintf(c.stdout, "%s session %s: moved to %s\n", verb, id, now)
	}
	return exitOK
}

var cmdDelete = &command{
	name:    "delete",
	summary: "delete a session (and its children) with the blobs only it used",
	usage:   "[--children] [--keep-blobs] [--dry-run] [--yes] [--json] ID",
	common:  withJSON | withRoot | withBlobs,
	nargs:   [2]int{1, 1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		children := fs.Bool("children", false, "delete the sessions forked from it (and theirs) too")
		keep := fs.Bool("keep-blobs", false, "leave the blobs of the deleted sessions in the store")
		dry := fs.Bool("dry-run", false, "list what would be deleted, delete nothing")
		var yes bool
		fs.BoolVar(&yes, "yes", false, "delete: without it (or --dry-run) delete refuses and lists what it would delete")
		fs.BoolVar(&yes, "y", false, "the same as --yes")
		return func(args []string) int {
			return c.delete(args[0], &session.DeleteOptions{Children: *children, KeepBlobs: *keep}, *dry, yes)
		}
	},
}

// deleteJSON is what delete --json prints.
type deleteJSON struct {
	ID           string        `json:"id"`
	DryRun       bool          `json:"dryRun"`
	Sessions     []deletedJSON `json:"sessions"`
	Blobs        int           `json:"blobs"`
	ChildrenLeft []string      `json:"childrenLeft"`
}

type deletedJSON struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Path  string `json:"path"`
}

func (c *call) delete(arg string, opts *session.DeleteOptions, dry, yes bool) int {
	if dry && yes {
		return c.usageError("--dry-run and --yes do not go together")
	}
	store, id, path, err := c.storeSession(arg)
	if err != nil {
		return c.fail("%s", describe(err, path))
	}
	defer store.Close()
	out := deleteJSON{ID: id, DryRun: dry, Sessions: []deletedJSON{}, ChildrenLeft: []string{}}
	// What would go, children first, as DeleteSession deletes them.
	infos := listAll(store)
	var walk func(p string, seen map[string]bool)
	walk = func(p string, seen map[string]bool) {
		kids, err := session.ListChildren(c.ctx, store, p)
		if err == nil {
			for _, k := range kids {
				if seen[k.ID] {
					continue
				}
				seen[k.ID] = true
				if opts.Children {
					walk(k.ID, seen)
				} else {
					out.ChildrenLeft = append(out.ChildrenLeft, k.ID)
				}
			}
		}
		where, _ := store.Path(p)
		out.Sessions = append(out.Sessions, deletedJSON{p, infos[p].Title, where})
	}
	walk(id, map[string]bool{id: true})
	if !dry && !yes {
		fmt.Fprintf(c.stderr, "agentsession delete: not deleting without --yes; it would delete:\n")
		for _, d := range out.Sessions {
			fmt.Fprintf(c.stderr, "  %s  %s\n", d.ID, titleOr(d.Title))
		}
		if n := len(out.ChildrenLeft); n > 0 {
			fmt.Fprintf(c.stderr, "and leave %s (%s); --children deletes them too.\n", plural(n, "child session"), strings.Join(out.ChildrenLeft, ", "))
		}
		fmt.Fprintf(c.stderr, "Run it again with --yes to delete (archive hides a session and can be undone).\n")
		return exitError
	}
	if !dry {
		prog := c.progress("deleting " + id)
		res, err := session.DeleteSession(c.ctx, store, id, opts)
		prog.end()
		if res != nil {
			done := map[string]bool{}
			for _, d := range res.Sessions {
				done[d] = true
			}
			kept := out.Sessions[:0]
			for _, d := range out.Sessions {
				if done[d.ID] {
					kept = append(kept, d)
				}
			}
			out.Sessions, out.Blobs = kept, res.Blobs
		}
		if err != nil {
			c.printDeleted(out)
			return c.fail("%s", describe(err, path))
		}
	}
	if c.json {
		return c.printJSON(out)
	}
	c.printDeleted(out)
	return exitOK
}

func (c *call) printDeleted(out deleteJSON) {
	if c.json {
		return
	}
	verb := "deleted"
	if out.DryRun {
		verb = "would delete"
	}
	for _, d := range out.Sessions {
		fmt.Fprintf(c.stdout, "%s %s  %s  %s\n", verb, cell(d.ID), cell(titleOr(d.Title)), cell(d.Path))
	}
	if !out.DryRun {
		fmt.Fprintf(c.stdout, "%s, %s freed\n", plural(len(out.Sessions), "session")+" deleted", plural(out.Blobs, "blob"))
	}
	if n := len(out.ChildrenLeft); n > 0 {
		fmt.Fprintf(c.stderr, "agentsession: %s of %s left (%s); --children deletes them too\n",
			plural(n, "child session"), out.ID, strings.Join(out.ChildrenLeft, ", "))
	}
}

// titleOr is a title, or "(no title)".
func titleOr(t string) string {
	if t == "" {
		return "(no title)"
	}
	return t
}
